//! The error type of curation.

use curator_model::BoxError;

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while building or running a strategy.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An option of a strategy has a value it cannot work with.
    #[error("{strategy}: option `{option}` {reason}")]
    InvalidOption {
        /// The strategy, as named in configuration.
        strategy: &'static str,
        /// The option.
        option: &'static str,
        /// What is wrong with its value.
        reason: String,
    },
    /// A token budget smaller than what must always be sent.
    #[error(
        "token budget of {available} tokens (after the reserve) cannot hold {what} ({needed} tokens)"
    )]
    BudgetTooSmall {
        /// Tokens that must be sent at least (with the reply priming).
        needed: u64,
        /// Tokens the budget leaves after its reserve.
        available: u64,
        /// What does not fit: the system messages, the task, or the newest message.
        what: &'static str,
    },
    /// A redaction pattern that does not compile.
    #[error("redaction pattern `{name}` is not a valid regular expression")]
    Pattern {
        /// The pattern's name.
        name: String,
        /// What the regex compiler reported.
        #[source]
        source: Box<regex::Error>,
    },
    /// A summarizer could not summarize.
    #[error("summarizer `{summarizer}` failed: {message}")]
    Summarizer {
        /// The summarizer's name.
        summarizer: String,
        /// What went wrong, where the summarizer could tell.
        message: String,
        /// The underlying error (a network or HTTP error, the closure's error), if any.
        #[source]
        source: Option<BoxError>,
    },
    /// A strategy configuration that cannot be read or built.
    #[error("strategy configuration: {message}")]
    Config {
        /// What is wrong.
        message: String,
        /// The parser's error, when the text could not be read.
        #[source]
        source: Option<BoxError>,
    },
    /// A strategy defined outside this crate failed.
    #[error("strategy `{strategy}` failed")]
    Custom {
        /// The strategy's name.
        strategy: String,
        /// Its error.
        #[source]
        source: BoxError,
    },
}

impl Error {
    /// A [`Config`](Error::Config) error with no underlying cause.
    pub(crate) fn config(message: impl Into<String>) -> Self {
        Error::Config { message: message.into(), source: None }
    }
}

/// `error` with its causes, joined as `anyhow` shows them with `{:#}`: for events and logs,
/// which carry text.
pub(crate) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}
