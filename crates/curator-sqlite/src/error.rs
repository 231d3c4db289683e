//! The error type of opening a SQLite session file.

use std::path::PathBuf;

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a session file could not be opened. Every variant but [`Error::Sqlite`] is detected
/// before anything is written, so the file is left byte-for-byte as it was.
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
    /// SQLite itself failed.
    #[error("{path}: {context}: {message}")]
    Sqlite {
        /// The file.
        path: PathBuf,
        /// What was being done.
        context: &'static str,
        /// What SQLite reported.
        message: String,
    },
}

impl From<Error> for curator_session::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::Sqlite { .. } => {
                curator_session::Error::Store { backend: "sqlite", message: e.to_string() }
            }
            other => curator_session::Error::Incompatible {
                backend: "sqlite",
                message: other.to_string(),
            },
        }
    }
}
