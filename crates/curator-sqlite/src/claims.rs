//! Claims on a SQLite file: an exclusive file lock per session key, in a folder beside the
//! file, so that they hold across the processes of one machine and end when a process dies.

use std::fs::{File, OpenOptions};
use std::time::Duration;

use curator_session::{Claim, ClaimStore, Lease, SessionKey};

use crate::SqliteStore;
use crate::locks::{folder, io_error, lock_file};

type SessionResult<T> = curator_session::Result<T>;

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
        std::fs::create_dir_all(folder(self.path()))
            .map_err(|e| io_error("creating the folder of claim locks", e))?;
        let path = lock_file(self.path(), key);
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
