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
    /// A token budget smaller than what is never dropped: every system message, the tool
    /// schemas and the reserve, the task shortened as far as it goes and the newest unit
    /// shortened as far as it goes. The [`Shortfall`] names each size.
    #[error("{0}")]
    BudgetTooSmall(Box<Shortfall>),
    /// A strategy's view lost what curation never loses (a system message, the task, the
    /// newest unit) or edited a system message it may not edit. Built-in strategies never
    /// do; this names a custom strategy (or a defect) instead of sending a view without it.
    #[error(
        "strategy `{strategy}` {what} (history position {position}), which curation never loses"
    )]
    Lost {
        /// The strategy (or pipeline) whose view it was.
        strategy: String,
        /// What it did: "dropped the system message", "edited the system message",
        /// "dropped the task", "dropped a message of the newest unit".
        what: &'static str,
        /// Its position in the history.
        position: usize,
    },
    /// The price data has no price for a model.
    #[error("no price for model `{model}`: {reason}")]
    UnknownModel {
        /// The model, as given.
        model: String,
        /// What the price data said.
        reason: String,
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

/// What a budget must always hold and what it had: the numbers of
/// [`Error::BudgetTooSmall`]. The view could not fit because [`needed`](Shortfall::needed) is
/// over [`max_tokens`](Shortfall::max_tokens).
///
/// # Examples
///
/// ```
/// use curator::model::Message;
/// use curator::strategies::{CurationContext, Error, HistoryManagerExt, TokenBudget};
///
/// let messages = vec![Message::system("Answer in French. ".repeat(50)), Message::user("hi")];
/// let Err(Error::BudgetTooSmall(shortfall)) =
///     TokenBudget::new(40).curate_messages(&messages, &CurationContext::default())
/// else { panic!("40 tokens cannot hold the system message") };
/// assert!(shortfall.needed() > shortfall.max_tokens);
/// assert!(shortfall.system > 40);
/// assert!(shortfall.to_string().starts_with("token budget of 40 tokens cannot hold"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Shortfall {
    /// The budget.
    pub max_tokens: u64,
    /// Tokens held back for the reply and what else is sent besides the messages.
    pub reserve: u64,
    /// Tokens of the tool schemas sent with the request (counted apart from the reserve
    /// where the caller told them apart).
    pub tools: u64,
    /// Tokens of the system messages as they must be sent (whole, unless
    /// [`shorten_system`](crate::CurationContext::shorten_system)).
    pub system: u64,
    /// The fewest tokens the task can be shortened to (0 when no task is kept).
    pub task: u64,
    /// The fewest tokens the newest unit can be shortened to (its calls, the notes of its
    /// cut results, its images and thinking blocks, which are never cut).
    pub newest: u64,
    /// Tokens every request costs besides its messages (the reply's priming).
    pub priming: u64,
}

impl Shortfall {
    /// Tokens the request needs at least.
    pub fn needed(&self) -> u64 {
        self.reserve + self.tools + self.system + self.task + self.newest + self.priming
    }
}

impl std::fmt::Display for Shortfall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "token budget of {} tokens cannot hold what is never dropped ({} tokens):",
            self.max_tokens,
            self.needed()
        )?;
        let parts = [
            ("system messages", self.system),
            ("tool schemas", self.tools),
            ("reserve", self.reserve),
            ("the task at least", self.task),
            ("the newest unit at least", self.newest),
            ("reply priming", self.priming),
        ];
        let mut first = true;
        for (name, tokens) in parts.into_iter().filter(|(_, tokens)| *tokens > 0) {
            let sep = if std::mem::replace(&mut first, false) { " " } else { ", " };
            write!(f, "{sep}{name} {tokens}")?;
        }
        Ok(())
    }
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
