//! The `SessionStore` trait: the authoritative, append-only record.

use chrono::{DateTime, Utc};
use curator_model::{Entry, EvaluationId, PromptRef};
use serde_json::Value;

use crate::{Checkpoint, Result, Snapshot};

/// What an append did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Appended {
    /// The entry was new and is now recorded.
    New,
    /// An entry with this message id was already recorded; nothing changed.
    Duplicate,
}

/// One evaluation as listed by [`SessionStore::evaluations`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct EvaluationSummary {
    /// The evaluation.
    pub evaluation_id: EvaluationId,
    /// The prompt of its first entry that names one.
    pub prompt: Option<PromptRef>,
    /// Number of recorded messages.
    pub messages: u64,
    /// The highest turn recorded.
    pub turns: u32,
    /// Time of the first message.
    pub first_at: DateTime<Utc>,
    /// Time of the last message.
    pub last_at: DateTime<Utc>,
}

impl EvaluationSummary {
    /// A summary of an evaluation whose first message was at `first_at`, with no messages
    /// counted yet (stores fill in the rest).
    pub fn new(evaluation_id: EvaluationId, first_at: DateTime<Utc>) -> Self {
        Self { evaluation_id, prompt: None, messages: 0, turns: 0, first_at, last_at: first_at }
    }
}

/// The authoritative record of conversations: every message, appended the moment it exists.
///
/// Implementations must keep these rules, which the conformance suite
/// (`curator_session::testing`, feature `testing`) checks:
///
/// - Appends are idempotent by [`MessageId`](curator_model::MessageId): a second append of an
///   id is ignored and reported as [`Appended::Duplicate`], never doubled. The check is O(1).
/// - A different message claiming an `(evaluation, sequence)` that is taken is refused with
///   [`Error::SequenceTaken`](crate::Error::SequenceTaken).
/// - A batch is atomic: all of it is recorded or none.
/// - [`entries`](SessionStore::entries) returns an evaluation's entries ordered by sequence,
///   whatever order they were appended in.
/// - An append returns only once the entry is stored (durably, for persistent stores).
/// - Restoring a snapshot replaces the store's content, or fails and changes nothing.
///
/// Methods take `&self`: stores synchronise internally, so one store can be shared.
pub trait SessionStore: Send + Sync {
    /// Appends one entry.
    ///
    /// # Errors
    ///
    /// [`Error::SequenceTaken`](crate::Error::SequenceTaken), or a backend error.
    fn append(&self, entry: &Entry) -> Result<Appended>;

    /// Appends entries atomically, reporting what happened to each.
    ///
    /// # Errors
    ///
    /// As [`append`](SessionStore::append); on error nothing of the batch is recorded.
    fn append_batch(&self, entries: &[Entry]) -> Result<Vec<Appended>>;

    /// The entries of one evaluation, ordered by sequence (empty when unknown).
    ///
    /// # Errors
    ///
    /// A backend error.
    fn entries(&self, evaluation: EvaluationId) -> Result<Vec<Entry>>;

    /// Every evaluation, ordered by the time of its first message.
    ///
    /// # Errors
    ///
    /// A backend error.
    fn evaluations(&self) -> Result<Vec<EvaluationSummary>>;

    /// The evaluation whose first message is the most recent.
    ///
    /// # Errors
    ///
    /// A backend error.
    fn latest_evaluation(&self) -> Result<Option<EvaluationId>> {
        Ok(self.evaluations()?.last().map(|e| e.evaluation_id))
    }

    /// Saves a new version of the checkpoint `name`, returning its version.
    ///
    /// # Errors
    ///
    /// A backend error.
    fn put_checkpoint(&self, name: &str, document: &Value) -> Result<u64>;

    /// The latest version of the checkpoint `name`.
    ///
    /// # Errors
    ///
    /// A backend error.
    fn checkpoint(&self, name: &str) -> Result<Option<Checkpoint>>;

    /// Everything the store holds, as a [`Snapshot`].
    ///
    /// # Errors
    ///
    /// A backend error.
    fn snapshot(&self) -> Result<Snapshot>;

    /// Replaces everything the store holds with the snapshot's content.
    ///
    /// # Errors
    ///
    /// [`Error::SnapshotRestore`](crate::Error::SnapshotRestore) when the snapshot is not
    /// consistent (duplicate ids, taken sequences); the store is then unchanged.
    fn restore(&self, snapshot: &Snapshot) -> Result<()>;

    /// The snapshot as JSON text; stores may write it without building a [`Snapshot`].
    ///
    /// # Errors
    ///
    /// A backend error.
    fn snapshot_json(&self) -> Result<String> {
        self.snapshot()?.to_json()
    }

    /// Restores from snapshot JSON text; see [`Snapshot::from_json`] and
    /// [`restore`](SessionStore::restore).
    ///
    /// # Errors
    ///
    /// [`Error::SnapshotRestore`](crate::Error::SnapshotRestore); the store is then unchanged.
    fn restore_json(&self, json: &str) -> Result<()> {
        self.restore(&Snapshot::from_json(json)?)
    }
}

macro_rules! forward_store {
    ($($ty:ty),*) => {$(
        impl<S: SessionStore + ?Sized> SessionStore for $ty {
            fn append(&self, entry: &Entry) -> Result<Appended> { (**self).append(entry) }
            fn append_batch(&self, entries: &[Entry]) -> Result<Vec<Appended>> { (**self).append_batch(entries) }
            fn entries(&self, evaluation: EvaluationId) -> Result<Vec<Entry>> { (**self).entries(evaluation) }
            fn evaluations(&self) -> Result<Vec<EvaluationSummary>> { (**self).evaluations() }
            fn latest_evaluation(&self) -> Result<Option<EvaluationId>> { (**self).latest_evaluation() }
            fn put_checkpoint(&self, name: &str, document: &Value) -> Result<u64> { (**self).put_checkpoint(name, document) }
            fn checkpoint(&self, name: &str) -> Result<Option<Checkpoint>> { (**self).checkpoint(name) }
            fn snapshot(&self) -> Result<Snapshot> { (**self).snapshot() }
            fn restore(&self, snapshot: &Snapshot) -> Result<()> { (**self).restore(snapshot) }
            fn snapshot_json(&self) -> Result<String> { (**self).snapshot_json() }
            fn restore_json(&self, json: &str) -> Result<()> { (**self).restore_json(json) }
        }
    )*};
}

forward_store!(&S, Box<S>, std::sync::Arc<S>);
