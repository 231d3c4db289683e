//! The error type of opening a SQLite session file.

use std::path::PathBuf;

use curator_model::BoxError;
use curator_session::StoreErrorKind;

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a session file could not be opened. Every variant but [`Error::Sqlite`] is detected
/// before anything is written, so the file is left byte-for-byte as it was. Once open, the
/// store reports failures as [`curator_session::Error::Store`], with the same
/// [`StoreErrorKind`] as [`Error::kind`].
///
/// # Examples
///
/// ```
/// use curator::session::StoreErrorKind;
/// use curator::sqlite::{Error, SqliteStore};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("notes.txt");
/// std::fs::write(&path, "not a database, just text that is long enough to look at")?;
/// let error = SqliteStore::open(&path).unwrap_err();
/// assert!(matches!(error, Error::NotADatabase { .. }));
/// assert_eq!(error.kind(), StoreErrorKind::Corrupt);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file is not a SQLite database at all.
    #[error("{path}: not a SQLite database")]
    NotADatabase {
        /// The file.
        path: PathBuf,
    },
    /// Something that is not a regular file is at the path (a FIFO, a device, a folder, a
    /// socket): refused at once, before anything reads or writes it.
    #[error("{path}: not a regular file but {what}: a session file is a regular file")]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What is there.
        what: &'static str,
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
    /// The file is a curator session file, but damaged (truncated, or a table or index that
    /// does not read back); nothing was written to it.
    #[error("{path}: the file is damaged: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong, or what failed on it.
        reason: String,
        /// What SQLite reported, when it reported an error.
        #[source]
        source: Option<BoxError>,
    },
    /// SQLite (or the file system under it) failed. Of kind
    /// [`ReadOnly`](StoreErrorKind::ReadOnly) when [`open`](crate::SqliteStore::open) met a
    /// file or folder it cannot write (its message then names
    /// [`open_read_only`](crate::SqliteStore::open_read_only), which reads such files).
    #[error("{path}: {context}: {kind}{}", read_only_hint(*.kind))]
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
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::sqlite::Error;
    ///
    /// assert!(!Error::NotADatabase { path: "x.db".into() }.is_retryable());
    /// ```
    pub fn is_retryable(&self) -> bool {
        self.kind().is_retryable()
    }

    /// What kind of failure this is, in the session layer's terms: a file that is not a
    /// curator session file of this build is [`Corrupt`](StoreErrorKind::Corrupt) (not a
    /// database, damaged) or [`Other`](StoreErrorKind::Other) (another application's, a newer
    /// schema).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::session::StoreErrorKind;
    /// use curator::sqlite::Error;
    ///
    /// let damaged = Error::Corrupt { path: "x.db".into(), reason: "truncated".into(), source: None };
    /// assert_eq!(damaged.kind(), StoreErrorKind::Corrupt);
    /// ```
    pub fn kind(&self) -> StoreErrorKind {
        match self {
            Error::Sqlite { kind, .. } => *kind,
            Error::NotADatabase { .. } | Error::Corrupt { .. } => StoreErrorKind::Corrupt,
            Error::NotAFile { .. } | Error::ForeignDatabase { .. } | Error::NewerSchema { .. } => {
                StoreErrorKind::Other
            }
        }
    }

    pub(crate) fn sqlite(
        path: &std::path::Path,
        context: &'static str,
        e: rusqlite::Error,
    ) -> Self {
        Error::Sqlite { path: path.to_owned(), context, kind: kind_of(&e), source: Box::new(e) }
    }
}

/// What to do about a file that cannot be written, appended to an opening error of kind
/// `ReadOnly`.
fn read_only_hint(kind: StoreErrorKind) -> &'static str {
    if kind == StoreErrorKind::ReadOnly {
        " (the file or its folder cannot be written; `SqliteStore::open_read_only` reads it without writing)"
    } else {
        ""
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
        // A column of another type than the store writes there, text that is not UTF-8, a
        // number out of range: the stored row is not what was written.
        rusqlite::Error::InvalidColumnType(..)
        | rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::IntegralValueOutOfRange(..)
        | rusqlite::Error::Utf8Error(..) => StoreErrorKind::Corrupt,
        _ => StoreErrorKind::Other,
    }
}

impl From<Error> for curator_session::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::Sqlite { path, context, kind, source } => curator_session::Error::Store {
                backend: "sqlite",
                kind,
                message: format!("{}: {context}{}", path.display(), read_only_hint(kind)),
                source: Some(source),
            },
            Error::Corrupt { path, reason, source } => curator_session::Error::Store {
                backend: "sqlite",
                kind: StoreErrorKind::Corrupt,
                message: format!("{}: {reason}", path.display()),
                source,
            },
            other => {
                curator_session::Error::Incompatible { backend: "sqlite", source: Box::new(other) }
            }
        }
    }
}

/// How rows are checked and decoded, with errors naming this store.
pub(crate) const CODEC: curator_session::rows::RowCodec =
    curator_session::rows::RowCodec::new("sqlite");

/// A SQLite failure as a session-layer store error, with its kind.
pub(crate) fn store_error(e: rusqlite::Error) -> curator_session::Error {
    curator_session::Error::store("sqlite", kind_of(&e), "the database failed", Some(Box::new(e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_only_file_points_to_open_read_only() {
        let error = Error::Sqlite {
            path: "s.db".into(),
            context: "reading the header",
            kind: StoreErrorKind::ReadOnly,
            source: "attempt to write a readonly database".into(),
        };
        assert!(error.to_string().starts_with("s.db: reading the header: read-only (the file or its folder cannot be written; `SqliteStore::open_read_only`"), "{error}");
        let session = curator_session::Error::from(error);
        assert_eq!(session.to_string().matches("open_read_only").count(), 1, "{session}");
        let busy = Error::Sqlite {
            path: "s.db".into(),
            context: "migrating",
            kind: StoreErrorKind::Busy,
            source: "locked".into(),
        };
        assert_eq!(busy.to_string(), "s.db: migrating: busy or locked by another writer");
    }
}
