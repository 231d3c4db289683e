//! The error type of the session layer.

use curator_model::{EvaluationId, MessageId, PromptRef};

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while recording, reading, resuming or restoring.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// There is no conversation to resume (or not the one asked for).
    #[error("no conversation to resume{}", .evaluation.map(|e| format!(" with evaluation id {e}")).unwrap_or_default())]
    ConversationNotFound {
        /// The evaluation asked for, if one was.
        evaluation: Option<EvaluationId>,
    },
    /// The recorded conversation was started by another prompt.
    #[error("cannot resume: the conversation was recorded for prompt {}, not {expected}", .found.as_ref().map_or_else(|| "(none)".to_owned(), ToString::to_string))]
    PromptMismatch {
        /// The prompt the caller resumes with.
        expected: PromptRef,
        /// The prompt the record names.
        found: Option<PromptRef>,
    },
    /// A snapshot that cannot be restored; the store was left unchanged.
    #[error("cannot restore snapshot: {reason}")]
    SnapshotRestore {
        /// Why.
        reason: String,
    },
    /// A different message claims a sequence number that is taken.
    #[error("evaluation {evaluation}: sequence {sequence} is already taken by message {existing}")]
    SequenceTaken {
        /// The evaluation.
        evaluation: EvaluationId,
        /// The sequence number.
        sequence: u64,
        /// The message that holds it.
        existing: MessageId,
    },
    /// A tool result for a call that is not waiting for one.
    #[error("no pending tool call with id `{call_id}`")]
    UnknownToolCall {
        /// The id given.
        call_id: String,
    },
    /// A message that cannot be recorded while tool calls wait for their results: the record
    /// would no longer be accepted by providers.
    #[error("tool calls {} are still waiting for results", .calls.join(", "))]
    PendingToolCalls {
        /// The ids of the waiting calls.
        calls: Vec<String>,
    },
    /// A message of the wrong kind for the record call (a user message given as the
    /// assistant's reply, say).
    #[error("{call}: expected a {expected} message, got a {found} message")]
    WrongRole {
        /// The call that was made.
        call: &'static str,
        /// The role it takes.
        expected: &'static str,
        /// The role it was given.
        found: curator_model::Role,
    },
    /// The provider closure of [`run_blocking`](crate::run_blocking) failed.
    #[error("provider call failed: {0}")]
    Provider(String),
    /// The storage backend failed.
    #[error("session store ({backend}): {message}")]
    Store {
        /// Which backend.
        backend: &'static str,
        /// What it reported.
        message: String,
    },
    /// The stored data is not what this build can read (a file of another application, a
    /// newer schema, a corrupt row).
    #[error("session store ({backend}): {message}")]
    Incompatible {
        /// Which backend.
        backend: &'static str,
        /// What is wrong.
        message: String,
    },
    /// Curation failed while building a request.
    #[error(transparent)]
    Curation(#[from] curator_strategies::Error),
    /// A message or entry could not be built.
    #[error(transparent)]
    Model(#[from] curator_model::Error),
}
