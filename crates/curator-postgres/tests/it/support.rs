//! A store in a schema of its own on the shared test server.

use std::sync::atomic::{AtomicU32, Ordering};

use curator_model::{Entry, EvaluationId, PromptRef};
use curator_postgres::{PgOptions, PgStore};
use curator_session::{
    Appended, Checkpoint, Claim, ClaimStore, EvaluationSummary, SessionKey, SessionStore, Snapshot,
};
use curator_testkit::postgres::PgServer;
use serde_json::Value;

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A fresh schema name.
pub(crate) fn fresh_schema() -> String {
    format!("t{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A [`PgStore`] in a fresh schema of the shared server, or `None` when there is no server
/// (the harness said why).
pub(crate) fn store() -> Option<PgStore> {
    let server = PgServer::shared()?;
    let options = PgOptions::from_url(&server.url()).unwrap().with_schema(&fresh_schema()).unwrap();
    Some(PgStore::open(options).unwrap())
}

/// A store for the conformance suites, which need a value even without a server: without
/// one, every call fails (and the harness printed why the suite cannot run).
pub(crate) struct TestStore(Option<PgStore>);

impl TestStore {
    pub(crate) fn new() -> Self {
        Self(store())
    }

    fn get(&self) -> &PgStore {
        match &self.0 {
            Some(store) => store,
            None => panic!("no PostgreSQL server (see the message above)"),
        }
    }
}

type R<T> = curator_session::Result<T>;

impl SessionStore for TestStore {
    fn append(&self, key: &SessionKey, entry: &Entry) -> R<Appended> {
        self.get().append(key, entry)
    }
    fn append_batch(&self, key: &SessionKey, entries: &[Entry]) -> R<Vec<Appended>> {
        self.get().append_batch(key, entries)
    }
    fn append_batch_fenced(
        &self,
        key: &SessionKey,
        entries: &[Entry],
        fence: &curator_session::Fence,
    ) -> R<Vec<Appended>> {
        self.get().append_batch_fenced(key, entries, fence)
    }
    fn delete_evaluations(&self, key: &SessionKey, evaluations: &[EvaluationId]) -> R<u64> {
        self.get().delete_evaluations(key, evaluations)
    }
    fn delete_checkpoints(&self, names: &[&str]) -> R<u64> {
        self.get().delete_checkpoints(names)
    }
    fn entries(&self, evaluation: EvaluationId) -> R<Vec<Entry>> {
        self.get().entries(evaluation)
    }
    fn entries_from(&self, evaluation: EvaluationId, from: u64) -> R<Vec<Entry>> {
        self.get().entries_from(evaluation, from)
    }
    fn evaluations(&self) -> R<Vec<EvaluationSummary>> {
        self.get().evaluations()
    }
    fn evaluations_of(&self, key: &SessionKey) -> R<Vec<EvaluationSummary>> {
        self.get().evaluations_of(key)
    }
    fn evaluation(&self, evaluation: EvaluationId) -> R<Option<EvaluationSummary>> {
        self.get().evaluation(evaluation)
    }
    fn latest_evaluation(&self) -> R<Option<EvaluationId>> {
        self.get().latest_evaluation()
    }
    fn latest_evaluation_of(
        &self,
        key: &SessionKey,
        prompt: &PromptRef,
    ) -> R<Option<EvaluationId>> {
        self.get().latest_evaluation_of(key, prompt)
    }
    fn snapshot_json(&self) -> R<String> {
        self.get().snapshot_json()
    }
    fn restore_json(&self, json: &str) -> R<()> {
        self.get().restore_json(json)
    }
    fn put_checkpoint(&self, name: &str, document: &Value) -> R<u64> {
        self.get().put_checkpoint(name, document)
    }
    fn put_checkpoint_fenced(
        &self,
        name: &str,
        document: &Value,
        fence: &curator_session::Fence,
    ) -> R<u64> {
        self.get().put_checkpoint_fenced(name, document, fence)
    }
    fn checkpoint(&self, name: &str) -> R<Option<Checkpoint>> {
        self.get().checkpoint(name)
    }
    fn snapshot(&self) -> R<Snapshot> {
        self.get().snapshot()
    }
    fn restore(&self, snapshot: &Snapshot) -> R<()> {
        self.get().restore(snapshot)
    }
}

impl ClaimStore for TestStore {
    fn claim(&self, key: &SessionKey, lease: std::time::Duration) -> R<Claim> {
        self.get().claim(key, lease)
    }
}
