//! The `SessionStore` trait: the authoritative, append-only record.

use chrono::{DateTime, Utc};
use curator_model::{Entry, EvaluationId, PromptRef};
use serde_json::Value;

use crate::{Checkpoint, Result, SessionKey, Snapshot};

/// What an append did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Appended {
    /// The entry was new and is now recorded.
    New,
    /// An entry with this message id was already recorded (by an earlier call whose outcome
    /// was unknown, say); nothing changed.
    Duplicate,
}

/// A stamp of a store's content, as [`SessionStore::change_stamp`] gives it: two stamps of
/// one store are equal only if nothing was committed to it between them. Stamps of two
/// stores, or of two handles on one database, are not comparable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChangeStamp(u128);

impl ChangeStamp {
    /// A stamp from the numbers a store keeps of its commits.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::session::ChangeStamp;
    ///
    /// assert_ne!(ChangeStamp::new(1, 2), ChangeStamp::new(2, 1));
    /// ```
    #[must_use]
    pub fn new(high: u64, low: u64) -> Self {
        Self((u128::from(high) << 64) | u128::from(low))
    }
}

/// One evaluation as listed by [`SessionStore::evaluations`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct EvaluationSummary {
    /// The evaluation.
    pub evaluation_id: EvaluationId,
    /// The session key it belongs to.
    pub key: SessionKey,
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
    /// A summary of an evaluation of `key` whose first message was at `first_at`, with no
    /// messages counted yet (stores fill in the rest).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::EvaluationId;
    /// use curator::session::{EvaluationSummary, SessionKey};
    ///
    /// let summary = EvaluationSummary::new(EvaluationId::new(), SessionKey::new("job-1"), chrono::Utc::now());
    /// assert_eq!((summary.messages, summary.first_at), (0, summary.last_at));
    /// ```
    pub fn new(evaluation_id: EvaluationId, key: SessionKey, first_at: DateTime<Utc>) -> Self {
        Self {
            evaluation_id,
            key,
            prompt: None,
            messages: 0,
            turns: 0,
            first_at,
            last_at: first_at,
        }
    }
}

/// The authoritative record of conversations: every message, appended the moment it exists,
/// each evaluation under the [`SessionKey`] its caller chose.
///
/// Implementations must keep these rules, which the conformance suite
/// (`curator_session::testing`, feature `testing`) checks:
///
/// - Appends are idempotent by [`MessageId`](curator_model::MessageId): a second append of an
///   id is ignored and reported as [`Appended::Duplicate`], never doubled. The check is O(1).
/// - A different message claiming an `(evaluation, sequence)` that is taken is refused with
///   [`Error::SequenceTaken`](crate::Error::SequenceTaken).
/// - An evaluation belongs to the key of its first append; an append under another key is
///   refused with [`Error::KeyMismatch`](crate::Error::KeyMismatch).
/// - A batch is atomic: all of it is recorded or none.
/// - [`entries`](SessionStore::entries) returns an evaluation's entries ordered by sequence,
///   whatever order they were appended in.
/// - [`latest_evaluation_of`](SessionStore::latest_evaluation_of) costs an index lookup, not a
///   scan of the record, for persistent stores.
/// - An append returns only once the entry is stored (durably, for persistent stores).
/// - Restoring a snapshot checks it as [`Snapshot::validate`] does and replaces the store's
///   content, or fails with [`Error::SnapshotRestore`](crate::Error::SnapshotRestore) and
///   changes nothing.
///
/// Methods take `&self`: stores synchronise internally, so one store can be shared.
pub trait SessionStore: Send + Sync {
    /// Appends one entry under `key`.
    ///
    /// # Errors
    ///
    /// [`Error::SequenceTaken`](crate::Error::SequenceTaken),
    /// [`Error::KeyMismatch`](crate::Error::KeyMismatch), or a backend error.
    fn append(&self, key: &SessionKey, entry: &Entry) -> Result<Appended>;

    /// Appends entries under `key` atomically, reporting what happened to each.
    ///
    /// # Errors
    ///
    /// As [`append`](SessionStore::append); on error nothing of the batch is recorded.
    fn append_batch(&self, key: &SessionKey, entries: &[Entry]) -> Result<Vec<Appended>>;

    /// Appends entries under `key` as [`append_batch`](SessionStore::append_batch) does, made
    /// under the claim `fence` names: the store checks, in the same transaction as the
    /// append, that the fence's token is the session's current claim token, and refuses the
    /// whole batch otherwise. A worker that stalled past its lease (a pause, a partition)
    /// and comes back after another worker claimed the session can then never append to it.
    ///
    /// Stores whose claims carry tokens (PostgreSQL, SQLite, memory) implement it; the default
    /// refuses every fenced append (a store without such claims cannot check one).
    ///
    /// # Errors
    ///
    /// [`Error::Fenced`](crate::Error::Fenced) when another claim took the session, or the
    /// claim was released and none holds it (nothing was appended); as
    /// [`append_batch`](SessionStore::append_batch). A lease that ran out with no other
    /// claim taken since still appends: its token is still the session's newest, so no other
    /// worker can have appended in between (the fencing-token model).
    fn append_batch_fenced(
        &self,
        key: &SessionKey,
        entries: &[Entry],
        fence: &crate::Fence,
    ) -> Result<Vec<Appended>> {
        let _ = (key, entries);
        Err(cannot_fence(fence))
    }

    /// Deletes evaluations of `key` with every entry of them and their start marks
    /// (checkpoints `curator.started/<evaluation>`), in one transaction; returns how many
    /// messages went. Evaluations of other keys among `evaluations` are left alone. For
    /// retention: see [`prune`](crate::prune), which holds a claim on the key meanwhile.
    ///
    /// The stores of this workspace implement it; the default refuses.
    ///
    /// # Errors
    ///
    /// A backend error (nothing deleted).
    fn delete_evaluations(&self, key: &SessionKey, evaluations: &[EvaluationId]) -> Result<u64> {
        let _ = evaluations;
        Err(crate::Error::store(
            "session store",
            crate::StoreErrorKind::Other,
            format!("this store cannot delete the evaluations of session `{key}`"),
            None,
        ))
    }

    /// The entries of one evaluation, ordered by sequence (empty when unknown).
    ///
    /// # Errors
    ///
    /// A backend error.
    fn entries(&self, evaluation: EvaluationId) -> Result<Vec<Entry>>;

    /// The entries of one evaluation whose sequence is `from` or later, ordered by sequence
    /// (empty when there is none): what another process appended since a reader last read,
    /// so that keeping a history up to date costs what was appended, not a re-read of the
    /// record.
    ///
    /// The stores of this workspace answer from their `(evaluation, sequence)` index; the
    /// default reads every entry and keeps the later ones.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{Conversation, MemoryStore, SessionStore};
    ///
    /// let store = MemoryStore::new();
    /// let mut conversation = Conversation::start(&store, "job-1", PromptRef::new("d", "a"), Message::system("s"))?;
    /// conversation.add_user("one")?;
    /// conversation.add_user("two")?;
    /// let later = store.entries_from(conversation.evaluation_id(), 2)?;
    /// assert_eq!(later.iter().map(|e| e.sequence).collect::<Vec<_>>(), [2]);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A backend error.
    fn entries_from(&self, evaluation: EvaluationId, from: u64) -> Result<Vec<Entry>> {
        let mut entries = self.entries(evaluation)?;
        entries.retain(|e| e.sequence >= from);
        Ok(entries)
    }

    /// Reads an evaluation's entries in sequence order, at most `page` at a time, handing each
    /// page to `each` until it returns [`ControlFlow::Break`](std::ops::ControlFlow::Break):
    /// memory holds one page, not the whole record, so a record of a million messages is
    /// read in the memory of a few thousand. `each` may use the store.
    ///
    /// The SQLite store reads page by page and checks, after the last, that the rows read
    /// are every row of the evaluation (as [`entries`](SessionStore::entries) does); the
    /// default reads the whole record and hands it over in pages.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::ops::ControlFlow;
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{Conversation, MemoryStore, SessionStore};
    ///
    /// let store = MemoryStore::new();
    /// let mut conversation = Conversation::start(&store, "job-1", PromptRef::new("d", "a"), Message::system("s"))?;
    /// for text in ["one", "two", "three", "four"] {
    ///     conversation.add_user(text)?;
    /// }
    /// let mut pages = Vec::new();
    /// store.entries_in_pages(conversation.evaluation_id(), 2, &mut |page| {
    ///     pages.push(page.len());
    ///     ControlFlow::Continue(())
    /// })?;
    /// assert_eq!(pages, [2, 2, 1]);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A backend error; `Corrupt` when the rows read are not the evaluation's rows.
    fn entries_in_pages(
        &self,
        evaluation: EvaluationId,
        page: usize,
        each: &mut dyn FnMut(Vec<Entry>) -> std::ops::ControlFlow<()>,
    ) -> Result<()> {
        let mut entries = self.entries(evaluation)?.into_iter().peekable();
        while entries.peek().is_some() {
            let chunk: Vec<Entry> = entries.by_ref().take(page.max(1)).collect();
            if each(chunk).is_break() {
                break;
            }
        }
        Ok(())
    }

    /// Every evaluation, ordered by the time of its first message.
    ///
    /// # Errors
    ///
    /// A backend error.
    fn evaluations(&self) -> Result<Vec<EvaluationSummary>>;

    /// The evaluations of one key, ordered by the time of their first message.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{Conversation, MemoryStore, SessionKey, SessionStore};
    ///
    /// let store = MemoryStore::new();
    /// for key in ["alice", "bob", "alice"] {
    ///     Conversation::start(&store, key, PromptRef::new("d", "a"), Message::system("s"))?;
    /// }
    /// assert_eq!(store.evaluations_of(&SessionKey::new("alice"))?.len(), 2);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A backend error.
    fn evaluations_of(&self, key: &SessionKey) -> Result<Vec<EvaluationSummary>> {
        Ok(self.evaluations()?.into_iter().filter(|e| &e.key == key).collect())
    }

    /// One evaluation's summary (`None` when the store holds no entry of it).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{EvaluationId, Message, PromptRef};
    /// use curator::session::{Conversation, MemoryStore, SessionStore};
    ///
    /// let store = MemoryStore::new();
    /// let id = Conversation::start(&store, "job-7", PromptRef::new("d", "a"), Message::system("s"))?.evaluation_id();
    /// assert_eq!(store.evaluation(id)?.map(|e| e.key.to_string()), Some("job-7".to_owned()));
    /// assert_eq!(store.evaluation(EvaluationId::new())?, None);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A backend error.
    fn evaluation(&self, evaluation: EvaluationId) -> Result<Option<EvaluationSummary>> {
        Ok(self.evaluations()?.into_iter().find(|e| e.evaluation_id == evaluation))
    }

    /// The evaluation whose first message is the most recent, whatever its key.
    ///
    /// # Errors
    ///
    /// A backend error.
    fn latest_evaluation(&self) -> Result<Option<EvaluationId>> {
        Ok(self.evaluations()?.last().map(|e| e.evaluation_id))
    }

    /// The most recently started evaluation of `key` recorded for `prompt`: the one
    /// [`Conversation::open`](crate::Conversation::open) resumes. Only evaluations that have
    /// their first message (sequence 0) count.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{Conversation, MemoryStore, SessionKey, SessionStore};
    ///
    /// let store = MemoryStore::new();
    /// let prompt = PromptRef::new("d", "a");
    /// Conversation::start(&store, "alice", prompt.clone(), Message::system("s"))?;
    /// let latest = Conversation::start(&store, "alice", prompt.clone(), Message::system("s"))?.evaluation_id();
    /// Conversation::start(&store, "bob", prompt.clone(), Message::system("s"))?;
    /// assert_eq!(store.latest_evaluation_of(&SessionKey::new("alice"), &prompt)?, Some(latest));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A backend error.
    fn latest_evaluation_of(
        &self,
        key: &SessionKey,
        prompt: &PromptRef,
    ) -> Result<Option<EvaluationId>> {
        let mut found = None;
        for summary in self.evaluations_of(key)? {
            if summary.prompt.as_ref() == Some(prompt)
                && self.entries(summary.evaluation_id)?.first().is_some_and(|e| e.sequence == 0)
            {
                found = Some(summary.evaluation_id);
            }
        }
        Ok(found)
    }

    /// Saves a new version of the checkpoint `name`, returning its version.
    ///
    /// # Errors
    ///
    /// A backend error.
    fn put_checkpoint(&self, name: &str, document: &Value) -> Result<u64>;

    /// Saves a new version of the checkpoint `name` as [`put_checkpoint`](SessionStore::put_checkpoint)
    /// does, made under the claim `fence` names: the store checks, in the same transaction
    /// as the write (under the same lock, for the memory store), that the fence's token is
    /// the current claim token of the fence's session key, as
    /// [`append_batch_fenced`](SessionStore::append_batch_fenced) does, and writes nothing
    /// otherwise. The checkpoint's name is free: the claim checked is the one on
    /// `fence.key`, whatever the name. [`Conversation::mark_started`](crate::Conversation::mark_started)
    /// writes its start marks so, so that a worker taken over can never overwrite the marks
    /// of the session's new holder.
    ///
    /// Stores whose claims carry tokens (PostgreSQL, SQLite, memory) implement it; the default
    /// refuses every fenced write (a store without such claims cannot check one).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use curator::session::{ClaimStore, Error, MemoryStore, SessionKey, SessionStore};
    /// use serde_json::json;
    ///
    /// let store = MemoryStore::new();
    /// let key = SessionKey::new("job-1");
    /// let claim = store.claim(&key, Duration::from_secs(30))?;
    /// let fence = claim.fence().ok_or("memory claims carry tokens")?;
    /// assert_eq!(store.put_checkpoint_fenced("marks", &json!(1), &fence)?, 1);
    /// claim.release()?;
    /// let refused = store.put_checkpoint_fenced("marks", &json!(2), &fence);
    /// assert!(matches!(refused, Err(Error::Fenced { .. })));
    /// assert_eq!(store.checkpoint("marks")?.map(|c| c.document), Some(json!(1)));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Fenced`](crate::Error::Fenced) when another claim took the session, or the
    /// claim was released and none holds it (nothing was written); as
    /// [`put_checkpoint`](SessionStore::put_checkpoint). A lease that ran out with no other
    /// claim taken since still writes, as with [`append_batch_fenced`](SessionStore::append_batch_fenced).
    fn put_checkpoint_fenced(
        &self,
        name: &str,
        document: &Value,
        fence: &crate::Fence,
    ) -> Result<u64> {
        let _ = (name, document);
        Err(cannot_fence(fence))
    }

    /// Saves new versions of several checkpoints at once, returning their versions in order.
    ///
    /// The stores of this workspace save them in one transaction (one commit, so one sync
    /// to disk for a durable store): a crash leaves all of them or none. The default saves
    /// them one after another, which a store without transactions may keep.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::session::{MemoryStore, SessionStore};
    /// use serde_json::json;
    ///
    /// let store = MemoryStore::new();
    /// let versions = store.put_checkpoints(&[("a", &json!(1)), ("b", &json!(2)), ("a", &json!(3))])?;
    /// assert_eq!(versions, [1, 1, 2]);
    /// assert_eq!(store.checkpoint("a")?.map(|c| c.document), Some(json!(3)));
    /// # Ok::<(), curator::session::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A backend error; nothing is saved then by the stores of this workspace.
    fn put_checkpoints(&self, checkpoints: &[(&str, &Value)]) -> Result<Vec<u64>> {
        checkpoints.iter().map(|(name, document)| self.put_checkpoint(name, document)).collect()
    }

    /// The latest version of the checkpoint `name`.
    ///
    /// # Errors
    ///
    /// A backend error.
    fn checkpoint(&self, name: &str) -> Result<Option<Checkpoint>>;

    /// A stamp of the store's content that changes whenever anything is committed to it, by
    /// this handle or by any other (another connection, another process), or `None` when the
    /// store cannot tell cheaply (the default; PostgreSQL). A reader that holds what it read
    /// after taking a stamp knows, while the stamp stays equal, that reading again would
    /// give the same: it can skip the reads. A stamp may also change when nothing did (a
    /// rolled-back write); it never stays equal across a commit.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::session::{MemoryStore, SessionStore};
    ///
    /// // The memory store has no stamp: its readers read.
    /// assert_eq!(MemoryStore::new().change_stamp()?, None);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A backend error.
    fn change_stamp(&self) -> Result<Option<ChangeStamp>> {
        Ok(None)
    }

    /// Deletes the checkpoints `names` (every version of each), in one transaction in the
    /// stores of this workspace, returning how many there were; a name that is not there is
    /// skipped. Retention uses it to erase what a session saved as checkpoints (a loop's
    /// turns).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::session::{MemoryStore, SessionStore};
    ///
    /// let store = MemoryStore::new();
    /// store.put_checkpoints(&[("a", &1.into()), ("b", &2.into())])?;
    /// assert_eq!(store.delete_checkpoints(&["a", "missing"])?, 1);
    /// assert_eq!(store.checkpoint_names("")?, ["b"]);
    /// # Ok::<(), curator::session::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A backend error (nothing is deleted then); the default refuses, as a store that does
    /// not implement it cannot delete.
    fn delete_checkpoints(&self, names: &[&str]) -> Result<u64> {
        Err(crate::Error::store(
            "session store",
            crate::StoreErrorKind::Other,
            format!("this store cannot delete checkpoints ({} asked)", names.len()),
            None,
        ))
    }

    /// The names of the checkpoints that begin with `prefix`, sorted (`""` lists all).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::session::{MemoryStore, SessionStore};
    ///
    /// let store = MemoryStore::new();
    /// store.put_checkpoints(&[("loop/a", &1.into()), ("loop/b", &2.into()), ("other", &3.into())])?;
    /// assert_eq!(store.checkpoint_names("loop/")?, ["loop/a", "loop/b"]);
    /// # Ok::<(), curator::session::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A backend error.
    fn checkpoint_names(&self, prefix: &str) -> Result<Vec<String>> {
        let mut names: Vec<String> = self
            .snapshot()?
            .checkpoints
            .into_iter()
            .map(|c| c.name)
            .filter(|n| n.starts_with(prefix))
            .collect();
        names.sort();
        Ok(names)
    }

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
    /// [`Error::SnapshotRestore`](crate::Error::SnapshotRestore) when the snapshot breaks a
    /// rule of [`Snapshot::validate`]; the store is then unchanged.
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

/// The refusal of the fenced writes' defaults, by a store whose claims carry no token.
fn cannot_fence(fence: &crate::Fence) -> crate::Error {
    crate::Error::store(
        "session store",
        crate::StoreErrorKind::Other,
        format!(
            "this store cannot check the fencing token {} of session `{}`: its claims carry none",
            fence.token, fence.key
        ),
        None,
    )
}

macro_rules! forward_store {
    ($($ty:ty),*) => {$(
        impl<S: SessionStore + ?Sized> SessionStore for $ty {
            fn append(&self, key: &SessionKey, entry: &Entry) -> Result<Appended> { (**self).append(key, entry) }
            fn append_batch(&self, key: &SessionKey, entries: &[Entry]) -> Result<Vec<Appended>> { (**self).append_batch(key, entries) }
            fn append_batch_fenced(&self, key: &SessionKey, entries: &[Entry], fence: &crate::Fence) -> Result<Vec<Appended>> { (**self).append_batch_fenced(key, entries, fence) }
            fn delete_evaluations(&self, key: &SessionKey, evaluations: &[EvaluationId]) -> Result<u64> { (**self).delete_evaluations(key, evaluations) }
            fn entries(&self, evaluation: EvaluationId) -> Result<Vec<Entry>> { (**self).entries(evaluation) }
            fn entries_from(&self, evaluation: EvaluationId, from: u64) -> Result<Vec<Entry>> { (**self).entries_from(evaluation, from) }
            fn entries_in_pages(&self, evaluation: EvaluationId, page: usize, each: &mut dyn FnMut(Vec<Entry>) -> std::ops::ControlFlow<()>) -> Result<()> { (**self).entries_in_pages(evaluation, page, each) }
            fn evaluations(&self) -> Result<Vec<EvaluationSummary>> { (**self).evaluations() }
            fn evaluations_of(&self, key: &SessionKey) -> Result<Vec<EvaluationSummary>> { (**self).evaluations_of(key) }
            fn evaluation(&self, evaluation: EvaluationId) -> Result<Option<EvaluationSummary>> { (**self).evaluation(evaluation) }
            fn latest_evaluation(&self) -> Result<Option<EvaluationId>> { (**self).latest_evaluation() }
            fn latest_evaluation_of(&self, key: &SessionKey, prompt: &PromptRef) -> Result<Option<EvaluationId>> { (**self).latest_evaluation_of(key, prompt) }
            fn put_checkpoint(&self, name: &str, document: &Value) -> Result<u64> { (**self).put_checkpoint(name, document) }
            fn put_checkpoint_fenced(&self, name: &str, document: &Value, fence: &crate::Fence) -> Result<u64> { (**self).put_checkpoint_fenced(name, document, fence) }
            fn put_checkpoints(&self, checkpoints: &[(&str, &Value)]) -> Result<Vec<u64>> { (**self).put_checkpoints(checkpoints) }
            fn checkpoint(&self, name: &str) -> Result<Option<Checkpoint>> { (**self).checkpoint(name) }
            fn change_stamp(&self) -> Result<Option<ChangeStamp>> { (**self).change_stamp() }
            fn delete_checkpoints(&self, names: &[&str]) -> Result<u64> { (**self).delete_checkpoints(names) }
            fn checkpoint_names(&self, prefix: &str) -> Result<Vec<String>> { (**self).checkpoint_names(prefix) }
            fn snapshot(&self) -> Result<Snapshot> { (**self).snapshot() }
            fn restore(&self, snapshot: &Snapshot) -> Result<()> { (**self).restore(snapshot) }
            fn snapshot_json(&self) -> Result<String> { (**self).snapshot_json() }
            fn restore_json(&self, json: &str) -> Result<()> { (**self).restore_json(json) }
        }
    )*};
}

forward_store!(&S, Box<S>, std::sync::Arc<S>);
