//! The error type of curator-tasks.

use crate::history::StepId;

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong with a task history.
///
/// The messages are written to be returned to the model as a tool's answer, so each is
/// complete on its own (it quotes its cause); programs can still walk
/// [`source`](std::error::Error::source) to the cause itself.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An event or a tool call names a step the history does not have.
    #[error("step {step_id} not found; known steps: {known}")]
    UnknownStep {
        /// The step asked for.
        step_id: StepId,
        /// The steps the history has, comma-separated.
        known: String,
    },
    /// A step added twice.
    #[error("step {step_id} already exists")]
    DuplicateStep {
        /// The repeated id.
        step_id: StepId,
    },
    /// A plan that cannot be followed: a step id listed twice, two steps in progress.
    #[error("invalid plan: {reason}")]
    InvalidPlan {
        /// What is wrong with it.
        reason: String,
    },
    /// The request, after compaction, does not fit the window: the active step (which is
    /// never summarized while it receives turns) and what else must be sent are larger. It
    /// is not cut: summarize or split the step, or give a larger window.
    #[error(
        "the request is {tokens} tokens, more than the window of {max_tokens}, after compaction{}",
        match active_step { Some(step) => format!(" (the active step {step} alone is {active_tokens} tokens)"), None => String::new() }
    )]
    WindowExceeded {
        /// The request's size.
        tokens: u64,
        /// The window.
        max_tokens: u64,
        /// The active step, if any.
        active_step: Option<StepId>,
        /// What the active step's section takes.
        active_tokens: u64,
    },
    /// A turn with no step to go to: no active step and none named.
    #[error("no active step: set one, or name the step the turn belongs to")]
    NoActiveStep,
    /// A turn whose id is not after the last turn of its step.
    #[error("turn {turn_id} is out of order in step {step_id}, whose last turn is {last}")]
    TurnOutOfOrder {
        /// The step.
        step_id: StepId,
        /// The rejected turn's id.
        turn_id: u64,
        /// The id of the step's last turn.
        last: u64,
    },
    /// A summary that is empty once trimmed.
    #[error("summary must not be empty")]
    EmptySummary,
    /// A summary over the length limit.
    #[error("summary must be at most {max} characters (got {len})")]
    SummaryTooLong {
        /// Its length in characters, trimmed.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A summary of the step that is still receiving turns: every later turn would be hidden
    /// behind it.
    #[error(
        "step {step_id} is the active step and cannot be summarized while it receives turns; \
         summarize a completed step, or finish this one first"
    )]
    ActiveStep {
        /// The active step.
        step_id: StepId,
    },
    /// The active step shown other than in full: it shows every turn while it receives
    /// them.
    #[error(
        "step {step_id} is the active step and shows in full while it receives turns; \
         choose how a finished step shows"
    )]
    ActiveStepShown {
        /// The active step.
        step_id: StepId,
    },
    /// A step shown as its summary before it has one.
    #[error("step {step_id} has no summary yet: call summarize_step first")]
    NoSummary {
        /// The step.
        step_id: StepId,
    },
    /// An expand of a step that is not summarized: it already shows in full.
    #[error("step {step_id} is not summarized: its turns already show in full")]
    NotSummarized {
        /// The step.
        step_id: StepId,
    },
    /// An expand the window cannot hold: shown in full, the step would take the request
    /// over the window even with every other finished step summarized, so automatic
    /// compaction would summarize it again before the model saw it. The step stays
    /// summarized.
    #[error(
        "step {step_id} stays summarized: in full it would take the request to {needed} \
         tokens, over the window of {max_tokens}, even with every other finished step \
         summarized"
    )]
    ExpandOverWindow {
        /// The step.
        step_id: StepId,
        /// The tokens the request would need with the step in full.
        needed: u64,
        /// The window.
        max_tokens: u64,
    },
    /// A summary that would not make the task history shorter than the step's turns shown
    /// in full (for a `summarize_step` call, with the call and its answer counted).
    #[error(
        "summarizing step {step_id} would not make the task history shorter ({summary} \
         {unit} with the summary against {full} in full); keep only the outcomes, errors and \
         numbers"
    )]
    SummaryNotShorter {
        /// The step.
        step_id: StepId,
        /// The size of the step rendered with the summary (and, for a `summarize_step`
        /// call, of the call and its answer).
        summary: u64,
        /// The size of the step rendered in full.
        full: u64,
        /// What the sizes count: `characters` or `tokens`.
        unit: &'static str,
    },
    /// A history read from a document that holds a summary the reducer would refuse.
    #[error("step {step_id} holds an invalid summary: {problem}")]
    StoredSummary {
        /// The step.
        step_id: StepId,
        /// What is wrong with it.
        problem: String,
    },
    /// Tool arguments that are not what the tool's schema asks for.
    #[error("invalid arguments for {tool}: {reason}")]
    InvalidArguments {
        /// The tool.
        tool: &'static str,
        /// What is wrong, naming the field.
        reason: String,
        /// The parser's error, when the arguments could not be read.
        #[source]
        source: Option<serde_json::Error>,
    },
    /// The summarizer failed.
    #[error("summarizing step {step_id} failed: {source}")]
    Summarizer {
        /// The step being summarized.
        step_id: StepId,
        /// The summarizer's error.
        source: curator_strategies::Error,
    },
    /// Saving or loading through the session store failed.
    #[error("task history checkpoint `{name}`: {source}")]
    Store {
        /// The checkpoint name.
        name: String,
        /// The store's error.
        source: curator_session::Error,
    },
    /// Recording the conversation a task history follows failed.
    #[error("recording the conversation failed")]
    Conversation {
        /// The session's error.
        #[from]
        source: curator_session::Error,
    },
    /// The provider call of a loop failed; what was recorded so far stays recorded.
    #[error("the provider call failed")]
    Provider {
        /// The provider's error.
        source: curator_model::BoxError,
    },
    /// A checkpoint that does not hold a task history.
    #[error("task history checkpoint `{name}` cannot be read: {source}")]
    Document {
        /// The checkpoint name.
        name: String,
        /// Why the document does not parse.
        source: serde_json::Error,
    },
}
