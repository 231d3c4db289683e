//! The error type of curator-coalesce.

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong when a program's names are resolved, when a compression is configured,
/// or when a run is recorded through a session conversation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No user definition, tool or input has this name.
    #[error("undefined symbol '{name}'")]
    Undefined {
        /// The name as the program wrote it.
        name: String,
    },
    /// A bare name that is both a tool and an input, with no user definition to prefer.
    #[error("ambiguous reference '{name}': both tool/{name} and data/{name} exist")]
    Ambiguous {
        /// The bare name.
        name: String,
    },
    /// A message budget too small for the markers that say what the budget cut.
    #[error("a message budget of {max_chars} characters is below the minimum of {minimum}")]
    BudgetTooSmall {
        /// The budget asked for.
        max_chars: usize,
        /// The smallest budget accepted.
        minimum: usize,
    },
    /// Recording the conversation a run follows failed.
    #[error("recording the conversation failed")]
    Conversation {
        /// The session's error.
        #[from]
        source: curator_session::Error,
    },
    /// Saving or reading the run's turns beside the record failed.
    #[error("the turns checkpoint `{name}` cannot be {action}")]
    Checkpoint {
        /// The checkpoint name.
        name: String,
        /// `read` or `written`.
        action: &'static str,
        /// The store's or the parser's error.
        source: curator_model::BoxError,
    },
    /// The record holds more executions than the saved turns: the turns of this evaluation
    /// were lost or belong to another run.
    #[error(
        "the record holds {recorded} executions but the checkpoint `{name}` only {saved} turns"
    )]
    TurnsBehindRecord {
        /// The checkpoint name.
        name: String,
        /// Executions in the record.
        recorded: usize,
        /// Turns in the checkpoint.
        saved: usize,
    },
    /// The saved turns are more than the record's executions can account for (a crash can
    /// leave one turn saved and unrecorded, after its reply, never more): the record of this
    /// evaluation was lost or belongs to another run.
    #[error(
        "the checkpoint `{name}` holds {saved} turns but the record only {recorded} executions"
    )]
    TurnsAheadOfRecord {
        /// The checkpoint name.
        name: String,
        /// Executions in the record.
        recorded: usize,
        /// Turns in the checkpoint.
        saved: usize,
    },
    /// An execution recorded with no reply waiting for it: every execution follows the
    /// reply whose program it ran. Nothing was saved.
    #[error(
        "no reply is waiting for its execution ({executions} executions recorded): record the \
         model's reply with `record_reply` first"
    )]
    NoPendingReply {
        /// The executions recorded so far.
        executions: usize,
    },
    /// A reply recorded while the previous one's program has not been executed: its program
    /// would be lost. Nothing was recorded.
    #[error(
        "the reply of turn {turn} has not been executed yet: record its execution with \
         `record_execution` before the next reply"
    )]
    ReplyPending {
        /// The turn whose reply waits for its execution.
        turn: usize,
    },
    /// A reply that calls provider tools: a code-executing agent answers with a program.
    #[error(
        "the reply calls {calls} provider tool(s); a code-executing agent answers with a program"
    )]
    ToolCallsInReply {
        /// How many calls it made.
        calls: usize,
    },
    /// The provider call of a loop failed; what was recorded so far stays recorded.
    #[error("the provider call failed")]
    Provider {
        /// The provider's error.
        source: curator_model::BoxError,
    },
    /// The caller's execution of a program failed (not the program: the interpreter).
    #[error("executing turn {turn} failed")]
    Execution {
        /// The turn being executed.
        turn: u32,
        /// The executor's error.
        source: curator_model::BoxError,
    },
}
