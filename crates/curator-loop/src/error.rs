//! The error type of curator-loop.

use curator_model::BoxError;

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while configuring, running or resuming a conversational loop.
///
/// Control flow (a pause for a human, an abort asked for by a step) is never an error: it is
/// a [`LoopOutcome`](crate::LoopOutcome).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A run's [`Quota`](crate::Quota) has less left than an iteration reserves: the
    /// iteration did not start, and nothing of it is recorded. A new run starts with the
    /// whole quota.
    #[error(
        "the run's quota is spent: {used} of {limit} tokens used, and an iteration reserves {reserve}; the iteration did not start"
    )]
    QuotaExhausted {
        /// The quota's tokens a run.
        limit: u64,
        /// What the run used.
        used: u64,
        /// What an iteration reserves.
        reserve: u64,
    },
    /// A configuration document that cannot be read: not TOML or JSON, an unknown key, a
    /// value of the wrong type (the source, the parser's error, names the key).
    #[error("cannot read the loop configuration ({format}): {source}")]
    ConfigSyntax {
        /// `toml` or `json`.
        format: &'static str,
        /// The parser's error.
        #[source]
        source: BoxError,
    },
    /// A configuration that reads but cannot work: an impossible combination or a value out
    /// of range.
    #[error("invalid loop configuration: `{key}`: {reason}")]
    InvalidConfig {
        /// The key at fault, as a dotted path (`history_management.summarizer`).
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A history template that does not compile, or that failed to render.
    #[error("history template: {reason}")]
    Template {
        /// What went wrong, with the line when the engine knows it.
        reason: String,
        /// The template engine's error.
        #[source]
        source: BoxError,
    },
    /// A strategy of the history management failed (a summarizer with `on_error = propagate`,
    /// a budget that cannot hold anything).
    #[error("history management failed before step `{step}`")]
    History {
        /// The step the history was prepared for.
        step: String,
        /// The strategy's error.
        #[source]
        source: curator_strategies::Error,
    },
    /// The current message (the newest user turn, the agent step's input) does not fit the
    /// history budget: it is never cut unless `history_management.cut_current_message` says
    /// so. The iteration was rolled back; when the message is a human's answer given to
    /// `resume`, nothing of it is kept and the loop is paused again, so that `resume` can be
    /// called with a shorter one.
    #[error(
        "the current message to step `{step}` is {tokens} tokens, and the history budget of {max_tokens} cannot send it whole (the budget also counts each message's framing, the reply's priming and room for a note of what it leaves out): it is not cut (raise `history_management.max_tokens` (`curator chat --max-tokens`), shorten the message, or set `history_management.cut_current_message = true` to allow cutting it)"
    )]
    MessageTooLong {
        /// The agent step.
        step: String,
        /// The message's size (its text, by the history's tokenizer).
        tokens: u64,
        /// `history_management.max_tokens`.
        max_tokens: u64,
    },
    /// The loop's session is driven by another process (or this one lost its claim): a loop
    /// with a store claims its session, so two processes never overwrite each other.
    #[error("loop session `{session}`: {source}")]
    Claim {
        /// The loop's session (its key and name).
        session: String,
        /// [`Claimed`](curator_session::Error::Claimed) when another process holds it,
        /// [`ClaimLost`](curator_session::Error::ClaimLost) when this one lost it.
        #[source]
        source: curator_session::Error,
    },
    /// A step failed: the iteration was rolled back and the history is as it was before it.
    #[error("step `{step}` failed in iteration {iteration}")]
    Step {
        /// The step's name.
        step: String,
        /// The iteration (1 for the first).
        iteration: u64,
        /// The step's error.
        #[source]
        source: BoxError,
    },
    /// The session store failed to save or read the loop state.
    #[error("session store, checkpoint `{checkpoint}`")]
    Store {
        /// The checkpoint being read or written.
        checkpoint: String,
        /// The store's error.
        #[source]
        source: curator_session::Error,
    },
    /// A checkpoint that does not hold a loop state this build can read, or one whose parts
    /// disagree.
    #[error("checkpoint `{checkpoint}` is not a usable loop state: {reason}")]
    BadCheckpoint {
        /// The checkpoint.
        checkpoint: String,
        /// What is wrong with it.
        reason: String,
    },
    /// `resume` on a loop that is not paused, or `run` on one that is.
    #[error("the loop is {state}: {hint}")]
    WrongState {
        /// What the loop is: paused at a step, or not paused.
        state: String,
        /// What to call instead.
        hint: &'static str,
    },
    /// A model step's call failed: the client's error, with the provider's own words
    /// where it gave them.
    #[error(transparent)]
    Model(#[from] curator_client::ClientError),
    /// A step failed (`failed`), and saving the completed iteration before it, left to this
    /// one, failed too (`source`): that iteration is still in the loop's memory and the next
    /// successful save writes it; a process that ends now loses it.
    #[error("{failed}; and the last completed iteration could not be saved")]
    NotSaved {
        /// The step's error.
        failed: Box<Error>,
        /// The store's error.
        #[source]
        source: Box<Error>,
    },
    /// The async face's blocking task ended without an answer (it panicked or the runtime
    /// shut down).
    #[error("the loop's blocking task did not finish")]
    Join(#[source] BoxError),
}

/// The session layer's errors as the loop reports them: a blocking task of the async face
/// that did not finish is [`Error::Join`]; any other is the store's.
impl From<curator_session::Error> for Error {
    fn from(source: curator_session::Error) -> Self {
        match source {
            curator_session::Error::Join(source) => Error::Join(source),
            source => Error::Store { checkpoint: String::new(), source },
        }
    }
}

impl Error {
    pub(crate) fn invalid(key: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidConfig { key: key.into(), reason: reason.into() }
    }
}
