//! The error type of curation.

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
    /// A token budget smaller than the messages that must always be kept.
    #[error(
        "token budget of {available} tokens (after the reserve) cannot hold the system message, which needs {needed}"
    )]
    BudgetTooSmall {
        /// Tokens the pinned system messages need.
        needed: u64,
        /// Tokens the budget leaves after its reserve.
        available: u64,
    },
    /// A redaction pattern that does not compile.
    #[error("redaction pattern `{name}` is not a valid regular expression: {source}")]
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
        /// What went wrong.
        message: String,
    },
    /// A strategy configuration that cannot be read or built.
    #[error("strategy configuration: {0}")]
    Config(String),
    /// A strategy defined outside this crate failed.
    #[error("{strategy}: {message}")]
    Custom {
        /// The strategy's name.
        strategy: String,
        /// What went wrong.
        message: String,
    },
}
