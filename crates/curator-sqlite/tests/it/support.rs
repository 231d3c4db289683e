//! A store in a temporary directory that is removed with it.

use curator_model::{Entry, EvaluationId, PromptRef};
use curator_session::{
    Appended, Checkpoint, EvaluationSummary, SessionKey, SessionStore, Snapshot,
};
use curator_sqlite::SqliteStore;
use serde_json::Value;

/// A [`SqliteStore`] on a file in its own temporary directory.
pub(crate) struct TempStore {
    pub(crate) store: SqliteStore,
    _dir: tempfile::TempDir,
}

impl TempStore {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("sessions.db")).unwrap();
        Self { store, _dir: dir }
    }
}

type R<T> = curator_session::Result<T>;

impl SessionStore for TempStore {
    fn append(&self, key: &SessionKey, entry: &Entry) -> R<Appended> {
        self.store.append(key, entry)
    }
    fn append_batch(&self, key: &SessionKey, entries: &[Entry]) -> R<Vec<Appended>> {
        self.store.append_batch(key, entries)
    }
    fn append_batch_fenced(
        &self,
        key: &SessionKey,
        entries: &[Entry],
        fence: &curator_session::Fence,
    ) -> R<Vec<Appended>> {
        self.store.append_batch_fenced(key, entries, fence)
    }
    fn delete_evaluations(&self, key: &SessionKey, evaluations: &[EvaluationId]) -> R<u64> {
        self.store.delete_evaluations(key, evaluations)
    }
    fn delete_checkpoints(&self, names: &[&str]) -> R<u64> {
        self.store.delete_checkpoints(names)
    }
    fn entries(&self, evaluation: EvaluationId) -> R<Vec<Entry>> {
        self.store.entries(evaluation)
    }
    fn entries_from(&self, evaluation: EvaluationId, from: u64) -> R<Vec<Entry>> {
        self.store.entries_from(evaluation, from)
    }
    fn change_stamp(&self) -> R<Option<curator_session::ChangeStamp>> {
        self.store.change_stamp()
    }
    fn evaluations(&self) -> R<Vec<EvaluationSummary>> {
        self.store.evaluations()
    }
    fn evaluations_of(&self, key: &SessionKey) -> R<Vec<EvaluationSummary>> {
        self.store.evaluations_of(key)
    }
    fn evaluation(&self, evaluation: EvaluationId) -> R<Option<EvaluationSummary>> {
        self.store.evaluation(evaluation)
    }
    fn latest_evaluation(&self) -> R<Option<EvaluationId>> {
        self.store.latest_evaluation()
    }
    fn latest_evaluation_of(
        &self,
        key: &SessionKey,
        prompt: &PromptRef,
    ) -> R<Option<EvaluationId>> {
        self.store.latest_evaluation_of(key, prompt)
    }
    fn snapshot_json(&self) -> R<String> {
        self.store.snapshot_json()
    }
    fn restore_json(&self, json: &str) -> R<()> {
        self.store.restore_json(json)
    }
    fn put_checkpoint(&self, name: &str, document: &Value) -> R<u64> {
        self.store.put_checkpoint(name, document)
    }
    fn put_checkpoint_fenced(
        &self,
        name: &str,
        document: &Value,
        fence: &curator_session::Fence,
    ) -> R<u64> {
        self.store.put_checkpoint_fenced(name, document, fence)
    }
    fn checkpoint(&self, name: &str) -> R<Option<Checkpoint>> {
        self.store.checkpoint(name)
    }
    fn snapshot(&self) -> R<Snapshot> {
        self.store.snapshot()
    }
    fn restore(&self, snapshot: &Snapshot) -> R<()> {
        self.store.restore(snapshot)
    }
}

impl curator_session::ClaimStore for TempStore {
    fn claim(&self, key: &SessionKey, lease: std::time::Duration) -> R<curator_session::Claim> {
        self.store.claim(key, lease)
    }
}
