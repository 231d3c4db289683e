//! The lock files of claims on a SQLite file: where they are, and whether one is held. Both
//! the claims (which take them) and the store's fenced appends (which check them) use these.

use std::fs::File;
use std::path::{Path, PathBuf};

use curator_session::{SessionKey, StoreErrorKind};

type SessionResult<T> = curator_session::Result<T>;

/// The folder of a session file's claim locks: `sessions.db` → `sessions.db-claims/`.
pub(crate) fn folder(file: &Path) -> PathBuf {
    crate::schema::sibling(file, "-claims")
}

/// The lock file of `key`: named by a UUID derived from the key (version 5), so that any key
/// makes a valid, fixed-length file name, the same in every process.
pub(crate) fn lock_file(file: &Path, key: &SessionKey) -> PathBuf {
    let name = uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, key.as_str().as_bytes());
    folder(file).join(format!("{name}.lock"))
}

pub(crate) fn io_error(what: &str, e: std::io::Error) -> curator_session::Error {
    let kind = match e.kind() {
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
            StoreErrorKind::ReadOnly
        }
        std::io::ErrorKind::StorageFull => StoreErrorKind::Full,
        _ => StoreErrorKind::Io,
    };
    curator_session::Error::store("sqlite", kind, what.to_owned(), Some(Box::new(e)))
}

/// Whether a claim on `key` is held now, by any process (this one included): its lock file
/// cannot be locked through another open file. A fenced append checks it, so that a worker
/// whose claim ended (released, or dropped with its process) cannot append under its token
/// even while no other claim has taken a newer one.
pub(crate) fn is_held(file: &Path, key: &SessionKey) -> SessionResult<bool> {
    let file = match File::open(lock_file(file, key)) {
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
