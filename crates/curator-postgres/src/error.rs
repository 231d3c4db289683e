//! The error type of connecting to PostgreSQL and opening the store, and how PostgreSQL's
//! failures map to the session layer's kinds.

use curator_model::BoxError;
use curator_session::StoreErrorKind;

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why the store could not be opened. Once open, the store reports failures as
/// [`curator_session::Error::Store`], with the same [`StoreErrorKind`] as [`Error::kind`].
///
/// # Examples
///
/// ```
/// use curator::postgres::{Error, PgOptions};
/// use curator::session::StoreErrorKind;
///
/// let error = PgOptions::from_url("postgres://db.example/x?sslmode=sometimes").unwrap_err();
/// assert!(matches!(error, Error::Config { .. }));
/// assert_eq!(error.kind(), StoreErrorKind::Other);
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The connection settings (a URL, or the `PG*` environment variables) cannot be used.
    #[error("bad connection settings: {reason}")]
    Config {
        /// What is wrong.
        reason: String,
        /// What the parser reported, when it did.
        #[source]
        source: Option<BoxError>,
    },
    /// The schema holds tables but no curator schema version: it belongs to another
    /// application, and nothing was written to it.
    #[error(
        "schema `{schema}` holds {tables} tables of another application (no curator schema version)"
    )]
    ForeignSchema {
        /// The schema.
        schema: String,
        /// How many tables it holds.
        tables: i64,
    },
    /// The database holds no curator schema of that name: a store opened read-only
    /// ([`PgStore::open_read_only`](crate::PgStore::open_read_only)) never creates one, so
    /// nothing was written (a mistyped URL names a database that is not a curator store).
    #[error(
        "no curator schema `{schema}` in database `{database}`: not a curator store (nothing was created)"
    )]
    NoSchema {
        /// The schema looked for.
        schema: String,
        /// The database connected to.
        database: String,
    },
    /// The schema was written by a newer curator whose layout this build does not know.
    #[error(
        "schema `{schema}`: version {found} is newer than this build supports ({supported}); upgrade curator"
    )]
    NewerSchema {
        /// The schema.
        schema: String,
        /// Its version.
        found: i32,
        /// The newest version this build knows.
        supported: i32,
    },
    /// PostgreSQL (or the connection to it) failed.
    #[error("{context}: {kind}: {}", detail(.source.as_ref()))]
    Postgres {
        /// What was being done.
        context: &'static str,
        /// What kind of failure, for callers that act on it (retry when unavailable).
        kind: StoreErrorKind,
        /// What PostgreSQL or the operating system reported.
        #[source]
        source: BoxError,
    },
}

impl Error {
    /// What kind of failure this is, in the session layer's terms: bad settings, a foreign
    /// or newer schema are [`Other`](StoreErrorKind::Other), a missing schema (opened
    /// read-only) is [`NotFound`](StoreErrorKind::NotFound).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::postgres::Error;
    /// use curator::session::StoreErrorKind;
    ///
    /// let newer = Error::NewerSchema { schema: "curator".into(), found: 9, supported: 1 };
    /// assert_eq!(newer.kind(), StoreErrorKind::Other);
    /// ```
    pub fn kind(&self) -> StoreErrorKind {
        match self {
            Error::Postgres { kind, .. } => *kind,
            Error::NoSchema { .. } => StoreErrorKind::NotFound,
            Error::Config { .. } | Error::ForeignSchema { .. } | Error::NewerSchema { .. } => {
                StoreErrorKind::Other
            }
        }
    }

    /// Whether opening may succeed when tried again unchanged (the server was unavailable
    /// or busy).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::postgres::Error;
    ///
    /// assert!(!Error::Config { reason: "no user".into(), source: None }.is_retryable());
    /// ```
    pub fn is_retryable(&self) -> bool {
        self.kind().is_retryable()
    }

    pub(crate) fn postgres(context: &'static str, e: postgres::Error) -> Self {
        Error::Postgres { context, kind: kind_of(&e), source: Box::new(e) }
    }
}

/// What went wrong, in PostgreSQL's or the operating system's words: the server's message
/// for an error it reported (`password authentication failed for user "x"`), else the
/// innermost cause (`invalid peer certificate: UnknownIssuer`, `Connection refused`).
pub(crate) fn detail(source: &(dyn std::error::Error + 'static)) -> String {
    if let Some(db) =
        source.downcast_ref::<postgres::Error>().and_then(postgres::Error::as_db_error)
    {
        return db.message().to_owned();
    }
    let mut innermost = source;
    while let Some(next) = innermost.source() {
        innermost = next;
    }
    innermost.to_string()
}

/// Whether `e` means the connection is gone (closed, refused, reset, or ended by the
/// server), so that it must not be used again. A TLS handshake the client refused (an
/// untrusted certificate) is not: connecting again would be refused again.
pub(crate) fn connection_lost(e: &postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    match e.code() {
        Some(code) => {
            let code = code.code();
            code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03")
        }
        None => io_source(e).is_some_and(|io| io.kind() != std::io::ErrorKind::InvalidData),
    }
}

/// The I/O error under `e`, if any.
fn io_source(e: &postgres::Error) -> Option<&std::io::Error> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        source = s.source();
    }
    None
}

/// The kind of a PostgreSQL failure, from its SQLSTATE code (or, without one, from whether
/// the connection failed).
pub(crate) fn kind_of(e: &postgres::Error) -> StoreErrorKind {
    if connection_lost(e) {
        return StoreErrorKind::Unavailable;
    }
    let Some(code) = e.code() else { return StoreErrorKind::Other };
    match code.code() {
        // Serialization failure, deadlock, lock not available, too many connections, out of
        // memory, statement timeout, cancelled: trying again may succeed.
        "40001" | "40P01" | "55P03" | "53300" | "53200" | "57014" => StoreErrorKind::Busy,
        "53100" => StoreErrorKind::Full,
        "XX001" | "XX002" => StoreErrorKind::Corrupt,
        "25006" | "42501" => StoreErrorKind::ReadOnly,
        "3D000" | "3F000" | "42P01" => StoreErrorKind::NotFound,
        c if c.starts_with("58") => StoreErrorKind::Io,
        _ => StoreErrorKind::Other,
    }
}

/// A session-layer store error for a PostgreSQL failure met while doing `what`.
pub(crate) fn store_error(what: &'static str, e: postgres::Error) -> curator_session::Error {
    let message = format!("{what}: {}", detail(&e));
    curator_session::Error::store("postgres", kind_of(&e), message, Some(Box::new(e)))
}

impl From<Error> for curator_session::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::Postgres { context, kind, source } => curator_session::Error::Store {
                backend: "postgres",
                kind,
                message: format!("{context}: {}", detail(source.as_ref())),
                source: Some(source),
            },
            missing @ Error::NoSchema { .. } => curator_session::Error::Store {
                backend: "postgres",
                kind: StoreErrorKind::NotFound,
                message: missing.to_string(),
                source: None,
            },
            Error::Config { reason, source } => curator_session::Error::Store {
                backend: "postgres",
                kind: StoreErrorKind::Other,
                message: format!("bad connection settings: {reason}"),
                source,
            },
            other => curator_session::Error::Incompatible {
                backend: "postgres",
                source: Box::new(other),
            },
        }
    }
}
