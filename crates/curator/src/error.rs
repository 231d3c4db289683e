//! The facade's error: one type that every module's error converts into.

/// Any error of curator's modules, for programs that use several of them with `?`.
///
/// Each variant keeps the module's own error whole, boxed so that a `Result` of this type
/// stays small (`source()` walks into it, and `match` reaches its variants through the box);
/// [`Error::is_retryable`] says whether trying again may succeed.
///
/// # Examples
///
/// ```
/// use curator::prelude::*;
///
/// fn curated(json: &str) -> Result<Vec<Message>, curator::Error> {
///     let messages = curator::model::formats::openai::parse(json)?; // a model error
///     curator::model::validate::openai(&messages)?; // a provider would refuse it
///     Ok(TokenBudget::new(1_000).curate_messages(&messages, &CurationContext::default())?)
/// }
///
/// let error = curated(r#"[{"role": "tool", "tool_call_id": "x", "content": "?"}]"#).unwrap_err();
/// assert!(matches!(error, curator::Error::Invalid(_)));
/// assert_eq!(error.to_string(), "message 0: tool result for `x` answers no open tool call");
/// assert!(!error.is_retryable());
/// assert!(std::mem::size_of::<curator::Error>() <= 16);
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Building, reading or converting messages failed.
    #[error(transparent)]
    Model(Box<curator_model::Error>),
    /// A message list would be refused by a provider.
    #[error(transparent)]
    Invalid(Box<curator_model::validate::Violation>),
    /// A strategy failed (a summarizer, a bad setting).
    #[error(transparent)]
    Strategy(Box<curator_strategies::Error>),
    /// Recording, resuming or a store failed.
    #[error(transparent)]
    Session(Box<curator_session::Error>),
    /// A model call failed.
    #[error(transparent)]
    Client(Box<curator_client::ClientError>),
    /// Opening a SQLite store failed.
    #[cfg(feature = "sqlite")]
    #[error(transparent)]
    Sqlite(Box<curator_sqlite::Error>),
    /// Connecting to PostgreSQL or opening its store failed.
    #[cfg(feature = "postgres")]
    #[error(transparent)]
    Postgres(Box<curator_postgres::Error>),
    /// The coalesced compressor failed.
    #[cfg(feature = "coalesce")]
    #[error(transparent)]
    Coalesce(Box<curator_coalesce::Error>),
    /// Task history failed.
    #[cfg(feature = "tasks")]
    #[error(transparent)]
    Tasks(Box<curator_tasks::Error>),
    /// A conversational loop failed.
    #[cfg(feature = "loop")]
    #[error(transparent)]
    Loop(Box<curator_loop::Error>),
}

/// `From` each module's error, boxing it.
macro_rules! from_module_errors {
    ($($(#[$cfg:meta])* $variant:ident($error:ty)),* $(,)?) => {$(
        $(#[$cfg])*
        impl From<$error> for Error {
            fn from(error: $error) -> Self {
                Error::$variant(Box::new(error))
            }
        }
    )*};
}

from_module_errors!(
    Model(curator_model::Error),
    Invalid(curator_model::validate::Violation),
    Strategy(curator_strategies::Error),
    Session(curator_session::Error),
    Client(curator_client::ClientError),
    #[cfg(feature = "sqlite")]
    Sqlite(curator_sqlite::Error),
    #[cfg(feature = "postgres")]
    Postgres(curator_postgres::Error),
    #[cfg(feature = "coalesce")]
    Coalesce(curator_coalesce::Error),
    #[cfg(feature = "tasks")]
    Tasks(curator_tasks::Error),
    #[cfg(feature = "loop")]
    Loop(curator_loop::Error),
);

/// A spawned task that panicked or was cancelled (`tokio::spawn(agent.ask_async(..)).await?`):
/// a session's [`Join`](curator_session::Error::Join) error.
#[cfg(feature = "tokio")]
impl From<curator_session::JoinError> for Error {
    fn from(error: curator_session::JoinError) -> Self {
        Error::Session(Box::new(curator_session::Error::Join(Box::new(error))))
    }
}

impl Error {
    /// Whether the same call may succeed if tried again: a store that was busy or briefly
    /// unreachable, wherever the store error sits in the chain of causes (an adapter's or a
    /// loop's error wraps the session's), or a model call refused for a while (a 429, a 5xx,
    /// a timeout: `ClientError::is_retryable`).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::session::{Error as SessionError, StoreErrorKind};
    ///
    /// let busy = SessionError::store("sqlite", StoreErrorKind::Busy, "appending", None);
    /// assert!(curator::Error::from(busy).is_retryable());
    /// ```
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Session(e) => return e.is_retryable(),
            Error::Client(e) => return e.is_retryable(),
            #[cfg(feature = "sqlite")]
            Error::Sqlite(e) => return e.is_retryable(),
            #[cfg(feature = "postgres")]
            Error::Postgres(e) => return e.is_retryable(),
            _ => {}
        }
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            if let Some(e) = cause.downcast_ref::<curator_session::Error>() {
                return e.is_retryable();
            }
            // A step or a tool that returned this facade's error, wrapped by a loop.
            if let Some(e) = cause.downcast_ref::<Error>() {
                return e.is_retryable();
            }
            source = cause.source();
        }
        false
    }
}
