//! The error type of opening a SQLite session file.

use std::path::PathBuf;

use curator_model::BoxError;
use curator_session::StoreErrorKind;

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a session file could not be opened. Every variant but [`Error::Sqlite`] is detected
/// before anything is written, so the file is left byte-for-byte as it was. Once open, the
/// store reports failures as [`curator_session::Error::Store`], with the same
/// [`StoreErrorKind`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file is not a SQLite database at all.
    #[error("{path}: not a SQLite database")]
    NotADatabase {
        /// The file.
        path: PathBuf,
    },
    /// The file is a SQLite database of some other application.
    #[error(
        "{path}: a SQLite database of another application (application id {application_id:#x}, {tables} tables)"
    )]
    ForeignDatabase {
        /// The file.
        path: PathBuf,
        /// Its `PRAGMA application_id`.
        application_id: i32,
        /// How many tables it holds.
        tables: i64,
    },
    /// The file was written by a newer curator whose schema this build does not know.
    #[error(
        "{path}: schema version {found} is newer than this build supports ({supported}); upgrade curator"
    )]
    NewerSchema {
        /// The file.
        path: PathBuf,
        /// The file's schema version.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// SQLite (or the file system under it) failed.
    #[error("{path}: {context}: {kind}")]
    Sqlite {
        /// The file.
        path: PathBuf,
        /// What was being done.
        context: &'static str,
        /// What kind of failure, for callers that act on it (retry when busy).
        kind: StoreErrorKind,
        /// What SQLite or the operating system reported.
        #[source]
        source: BoxError,
    },
}

impl Error {
    /// Whether opening may succeed when tried again unchanged (the file was busy).
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Sqlite { kind, .. } if kind.is_retryable())
    }

    pub(crate) fn sqlite(
        path: &std::path::Path,
        context: &'static str,
        e: rusqlite::Error,
    ) -> Self {
        Error::Sqlite { path: path.to_owned(), context, kind: kind_of(&e), source: Box::new(e) }
    }
}

/// The kind of a SQLite failure, from its error code.
pub(crate) fn kind_of(e: &rusqlite::Error) -> StoreErrorKind {
    use rusqlite::ErrorCode as C;
    match e {
        rusqlite::Error::SqliteFailure(failure, _) => match failure.code {
            C::DatabaseBusy | C::DatabaseLocked => StoreErrorKind::Busy,
            C::DiskFull => StoreErrorKind::Full,
            C::DatabaseCorrupt | C::NotADatabase => StoreErrorKind::Corrupt,
            C::ReadOnly | C::PermissionDenied => StoreErrorKind::ReadOnly,
            C::SystemIoFailure | C::CannotOpen => StoreErrorKind::Io,
            _ => StoreErrorKind::Other,
        },
        rusqlite::Error::QueryReturnedNoRows => StoreErrorKind::NotFound,
        _ => StoreErrorKind::Other,
    }
}

impl From<Error> for curator_session::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::Sqlite { path, context, kind, source } => curator_session::Error::Store {
                backend: "sqlite",
                kind,
                message: format!("{}: {context}", path.display()),
                source: Some(source),
            },
            other => {
                curator_session::Error::Incompatible { backend: "sqlite", source: Box::new(other) }
            }
        }
    }
}
