//! Claims on a SQLite file: an exclusive file lock per session key, in a folder beside the
//! file, so that they hold across the processes of one machine and end when a process dies.

use std::fs::{File, OpenOptions};
use std::path::PathBuf;
use std::time::Duration;

use curator_session::{Claim, ClaimStore, Lease, SessionKey, StoreErrorKind};

use crate::SqliteStore;

type SessionResult<T> = curator_session::Result<T>;

/// The folder of a session file's claim locks: `sessions.db` → `sessions.db-claims/`.
fn folder(store: &SqliteStore) -> PathBuf {
    crate::schema::sibling(store.path(), "-claims")
}

/// The lock file of `key`: named by a UUID derived from the key (version 5), so that any key
/// makes a valid, fixed-length file name, the same in every process.
fn lock_file(store: &SqliteStore, key: &SessionKey) -> PathBuf {
    let name = uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, key.as_str().as_bytes());
    folder(store).join(format!("{name}.lock"))
}

fn io_error(what: &str, e: std::io::Error) -> curator_session::Error {
    let kind = match e.kind() {
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
            StoreErrorKind::ReadOnly
        }
        std::io::ErrorKind::StorageFull => StoreErrorKind::Full,
        _ => StoreErrorKind::Io,
    };
    curator_session::Error::store("sqlite", kind, what.to_owned(), Some(Box::new(e)))
}

/// Claims across the processes of one machine: claiming a key takes an exclusive lock
/// (`flock`) on a file of the folder `<file>-claims/` beside the session file. The lock is
/// held until the claim is released or dropped, and the operating system drops it the moment
/// its process dies, so a killed worker's session can be claimed again at once; the lease is
/// not needed for that and is not enforced (renewing always succeeds while the lock is held).
/// The lock files stay in the folder (removing one while another process opens it would let
/// two processes lock different files for one key).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use curator::session::{ClaimStore, Error, SessionKey};
/// use curator::sqlite::SqliteStore;
///
/// let dir = tempfile::tempdir()?;
/// let store = SqliteStore::open(dir.path().join("s.db"))?;
/// let key = SessionKey::new("job-1");
/// let claim = store.claim(&key, Duration::from_secs(30))?;
/// assert!(matches!(store.claim(&key, Duration::from_secs(30)), Err(Error::Claimed { .. })));
/// drop(claim);
/// store.claim(&key, Duration::from_secs(30))?;
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl ClaimStore for SqliteStore {
    fn claim(&self, key: &SessionKey, lease: Duration) -> SessionResult<Claim> {
        key.check()?;
        std::fs::create_dir_all(folder(self))
            .map_err(|e| io_error("creating the folder of claim locks", e))?;
        let path = lock_file(self, key);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| io_error("opening a claim lock", e))?;
        match file.try_lock() {
            Ok(()) => {
                // Dropped with the file (and its lock) when the token cannot be taken.
                let token = self.next_claim_token(key)?;
                Ok(Claim::new(key.clone(), lease, Box::new(FileLease { file })).with_token(token))
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                Err(curator_session::Error::Claimed { key: key.clone(), expires_in: None })
            }
            Err(std::fs::TryLockError::Error(e)) => Err(io_error("locking a claim lock", e)),
        }
    }
}

/// Whether a claim on `key` is held now, by any process (this one included): its lock file
/// cannot be locked through another open file. A fenced append checks it, so that a worker
/// whose claim ended (released, or dropped with its process) cannot append under its token
/// even while no other claim has taken a newer one.
pub(crate) fn is_held(store: &SqliteStore, key: &SessionKey) -> SessionResult<bool> {
    let file = match File::open(lock_file(store, key)) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(io_error("opening a claim lock", e)),
    };
    match file.try_lock_shared() {
        Ok(()) => {
            file.unlock().map_err(|e| io_error("releasing a claim lock", e))?;
            Ok(false)
        }
        Err(std::fs::TryLockError::WouldBlock) => Ok(true),
        Err(std::fs::TryLockError::Error(e)) => Err(io_error("checking a claim lock", e)),
    }
}

/// A held lock.
#[derive(Debug)]
struct FileLease {
    file: File,
}

impl Lease for FileLease {
    fn renew(&self) -> SessionResult<()> {
        // The lock lasts as long as the open file: nothing can take it over.
        Ok(())
    }

    fn release(&self) -> SessionResult<()> {
        self.file.unlock().map_err(|e| io_error("releasing a claim lock", e))
    }
}
