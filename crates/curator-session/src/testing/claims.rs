//! The conformance checks of claims ([`ClaimStore`](crate::ClaimStore)): exclusive per key,
//! ended by release or drop, pruning under claims, and fenced writes.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    clippy::missing_panics_doc,
    reason = "test code fails loudly"
)]

use curator_model::{Entry, EvaluationId, Message};
use serde_json::json;

use super::{at, entry};
use crate::{Appended, Error, EvaluationSummary, SessionKey, SessionStore, Snapshot};

const LEASE: std::time::Duration = std::time::Duration::from_secs(30);

/// One live claim per key: a second claim on it is refused with `Claimed`, other keys are
/// free, and a live claim renews.
pub fn claims_are_exclusive_per_key<S: crate::ClaimStore>(factory: &dyn Fn() -> S) {
    let store = factory();
    let (job, other) = (SessionKey::new("job"), SessionKey::new("other job"));
    let claim = store.claim(&job, LEASE).unwrap();
    assert_eq!(claim.key(), &job);
    match store.claim(&job, LEASE) {
        Err(Error::Claimed { key, .. }) => assert_eq!(key, job),
        other => panic!("a second claim on a claimed key: expected Claimed, got {other:?}"),
    }
    let second = store.claim(&other, LEASE).unwrap();
    claim.renew().unwrap();
    second.renew().unwrap();
    assert!(
        matches!(store.claim(&other, LEASE), Err(Error::Claimed { .. })),
        "the other key is claimed too now"
    );
}

/// A claim ends when it is released or dropped, and the key can be claimed again.
pub fn a_claim_ends_when_released_or_dropped<S: crate::ClaimStore>(factory: &dyn Fn() -> S) {
    let store = factory();
    let job = SessionKey::new("job");
    let claim = store.claim(&job, LEASE).unwrap();
    claim.release().unwrap();
    let again = store.claim(&job, LEASE).unwrap();
    drop(again);
    let third = store.claim(&job, LEASE).unwrap();
    assert!(matches!(store.claim(&job, LEASE), Err(Error::Claimed { .. })));
    drop(third);
}

/// `claim_within` waits for another worker's claim to be released, and gives up with
/// `Claimed` when it is not released in time.
pub fn a_waiting_claim_gets_the_key_once_it_is_released<S: crate::ClaimStore>(
    factory: &dyn Fn() -> S,
) {
    let store = factory();
    let job = SessionKey::new("job");
    let held = store.claim(&job, LEASE).unwrap();
    let short = std::time::Duration::from_millis(100);
    assert!(matches!(store.claim_within(&job, LEASE, short), Err(Error::Claimed { .. })));
    std::thread::scope(|scope| {
        scope.spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(150));
            drop(held);
        });
        let claim = store.claim_within(&job, LEASE, std::time::Duration::from_secs(10)).unwrap();
        claim.renew().unwrap();
    });
}

/// Three evaluations for `key`, started at `starts` (seconds), of two messages each.
fn evaluations_of<S: SessionStore>(store: &S, key: &str, starts: &[i64]) -> Vec<EvaluationId> {
    let key = SessionKey::new(key);
    starts
        .iter()
        .map(|start| {
            let evaluation = EvaluationId::new();
            let mut first = entry(evaluation, 0, Message::system("s"));
            first.created_at = at(*start);
            let mut second = entry(evaluation, 1, Message::user("hi"));
            second.created_at = at(*start + 1);
            store.append_batch(&key, &[first, second]).unwrap();
            store
                .put_checkpoint(
                    &crate::retention::started_checkpoint(evaluation),
                    &serde_json::json!({"reply": 0, "calls": []}),
                )
                .unwrap();
            store
                .put_checkpoint(
                    &crate::conversation::usage_checkpoint(evaluation),
                    &serde_json::json!({"calls": []}),
                )
                .unwrap();
            evaluation
        })
        .collect()
}

/// Pruning a session deletes its evaluations, their messages and start marks, leaves other
/// sessions whole, and never touches a session under a live claim; a dry run deletes
/// nothing.
pub fn pruning_deletes_what_it_names_and_never_a_claimed_session<
    S: SessionStore + crate::ClaimStore,
>(
    factory: &dyn Fn() -> S,
) {
    use crate::{Prune, prune};
    let store = factory();
    let ann = evaluations_of(&store, "ann", &[0, 100]);
    let bob = evaluations_of(&store, "bob", &[50]);
    let rule = Prune::Session(SessionKey::new("ann"));
    let dry = prune(&store, &rule, true).unwrap();
    assert_eq!((dry.evaluations.len(), dry.messages, dry.dry_run), (2, 4, true));
    assert_eq!(store.evaluations().unwrap().len(), 3);
    let held = store.claim(&SessionKey::new("ann"), LEASE).unwrap();
    let refused = prune(&store, &rule, false).unwrap();
    assert_eq!(refused.claimed, [SessionKey::new("ann")]);
    assert!(refused.evaluations.is_empty());
    assert_eq!(store.evaluations().unwrap().len(), 3);
    drop(held);
    let done = prune(&store, &rule, false).unwrap();
    assert_eq!((done.evaluations.len(), done.messages), (2, 4));
    assert!(store.evaluations_of(&SessionKey::new("ann")).unwrap().is_empty());
    for evaluation in &ann {
        assert!(store.entries(*evaluation).unwrap().is_empty());
        for mark in crate::evaluation_checkpoints(*evaluation) {
            assert!(store.checkpoint(&mark).unwrap().is_none(), "{mark} left");
        }
    }
    assert_eq!(store.entries(bob[0]).unwrap().len(), 2);
    // Deleted ids are gone: the same messages can be recorded again as new.
    let again = evaluations_of(&store, "ann", &[200]);
    assert_eq!(store.entries(again[0]).unwrap().len(), 2);
}

/// Keeping the last N evaluations per key and dropping those older than a date, while
/// another thread appends to another session: only what the rule names goes.
pub fn pruning_keeps_the_last_evaluations_and_drops_the_old_while_others_write<
    S: SessionStore + crate::ClaimStore,
>(
    factory: &dyn Fn() -> S,
) {
    use crate::{Prune, prune};
    let store = factory();
    let ann = evaluations_of(&store, "ann", &[0, 100, 200]);
    let bob = evaluations_of(&store, "bob", &[10, 20]);
    std::thread::scope(|scope| {
        let writer =
            scope.spawn(|| evaluations_of(&store, "carol", &[300, 310, 320, 330, 340, 350]));
        let kept = prune(&store, &Prune::KeepLast(1), false).unwrap();
        let written = writer.join().unwrap();
        // ann's two oldest and bob's oldest went; carol's newest stays whatever the order.
        assert!(kept.evaluations.iter().any(|e| e.evaluation_id == ann[0]));
        assert!(kept.evaluations.iter().any(|e| e.evaluation_id == ann[1]));
        assert!(kept.evaluations.iter().any(|e| e.evaluation_id == bob[0]));
        assert!(!store.entries(ann[2]).unwrap().is_empty());
        assert!(!store.entries(bob[1]).unwrap().is_empty());
        assert!(!store.entries(*written.last().unwrap()).unwrap().is_empty());
    });
    let before = prune(&store, &Prune::OlderThan(at(250)), false).unwrap();
    // ann's last (200..201) and bob's last (20..21) are older than 250; carol's are not.
    assert!(before.evaluations.iter().all(|e| e.last_at < at(250)));
    assert!(store.entries(ann[2]).unwrap().is_empty());
    assert!(!store.evaluations_of(&SessionKey::new("carol")).unwrap().is_empty());
}

/// An append under a claim's fence is refused once another claim took the session.
pub fn fenced_appends_are_refused_once_the_claim_was_taken<S: SessionStore + crate::ClaimStore>(
    factory: &dyn Fn() -> S,
) {
    let store = factory();
    let job = SessionKey::new("job");
    let first = store.claim(&job, LEASE).unwrap();
    let Some(fence) = first.fence() else { return };
    let evaluation = EvaluationId::new();
    store.append_batch_fenced(&job, &[entry(evaluation, 0, Message::system("s"))], &fence).unwrap();
    first.release().unwrap();
    let second = store.claim(&job, LEASE).unwrap();
    let refused =
        store.append_batch_fenced(&job, &[entry(evaluation, 1, Message::user("late"))], &fence);
    assert!(matches!(refused, Err(Error::Fenced { .. })), "{refused:?}");
    assert_eq!(store.entries(evaluation).unwrap().len(), 1);
    let fence = second.fence().unwrap();
    store
        .append_batch_fenced(&job, &[entry(evaluation, 1, Message::user("on time"))], &fence)
        .unwrap();
    assert_eq!(store.entries(evaluation).unwrap().len(), 2);
}

/// What a worker does to the store before a claim is taken.
type Worker<'s, S> = Box<dyn FnOnce(&S) + Send + 's>;

/// A store whose first claim lets a worker append (`before_claim`) just before it is taken:
/// what a worker finishing a turn between `prune` listing the sessions and claiming one does.
struct WorkerBeforeClaim<'s, S> {
    inner: &'s S,
    before_claim: std::sync::Mutex<Option<Worker<'s, S>>>,
}

impl<S: SessionStore> SessionStore for WorkerBeforeClaim<'_, S> {
    fn append(&self, key: &SessionKey, entry: &Entry) -> crate::Result<Appended> {
        self.inner.append(key, entry)
    }
    fn append_batch(&self, key: &SessionKey, entries: &[Entry]) -> crate::Result<Vec<Appended>> {
        self.inner.append_batch(key, entries)
    }
    fn append_batch_fenced(
        &self,
        key: &SessionKey,
        entries: &[Entry],
        fence: &crate::Fence,
    ) -> crate::Result<Vec<Appended>> {
        self.inner.append_batch_fenced(key, entries, fence)
    }
    fn delete_evaluations(
        &self,
        key: &SessionKey,
        evaluations: &[EvaluationId],
    ) -> crate::Result<u64> {
        self.inner.delete_evaluations(key, evaluations)
    }
    fn delete_checkpoints(&self, names: &[&str]) -> crate::Result<u64> {
        self.inner.delete_checkpoints(names)
    }
    fn entries(&self, evaluation: EvaluationId) -> crate::Result<Vec<Entry>> {
        self.inner.entries(evaluation)
    }
    fn entries_from(&self, evaluation: EvaluationId, from: u64) -> crate::Result<Vec<Entry>> {
        self.inner.entries_from(evaluation, from)
    }
    fn evaluations(&self) -> crate::Result<Vec<EvaluationSummary>> {
        self.inner.evaluations()
    }
    fn evaluations_of(&self, key: &SessionKey) -> crate::Result<Vec<EvaluationSummary>> {
        self.inner.evaluations_of(key)
    }
    fn put_checkpoint(&self, name: &str, document: &serde_json::Value) -> crate::Result<u64> {
        self.inner.put_checkpoint(name, document)
    }
    fn put_checkpoint_fenced(
        &self,
        name: &str,
        document: &serde_json::Value,
        fence: &crate::Fence,
    ) -> crate::Result<u64> {
        self.inner.put_checkpoint_fenced(name, document, fence)
    }
    fn checkpoint(&self, name: &str) -> crate::Result<Option<crate::Checkpoint>> {
        self.inner.checkpoint(name)
    }
    fn snapshot(&self) -> crate::Result<Snapshot> {
        self.inner.snapshot()
    }
    fn restore(&self, snapshot: &Snapshot) -> crate::Result<()> {
        self.inner.restore(snapshot)
    }
}

impl<S: crate::ClaimStore> crate::ClaimStore for WorkerBeforeClaim<'_, S> {
    fn claim(&self, key: &SessionKey, lease: std::time::Duration) -> crate::Result<crate::Claim> {
        let worker = self.before_claim.lock().unwrap().take();
        if let Some(worker) = worker {
            worker(self.inner);
        }
        self.inner.claim(key, lease)
    }
}

/// What a prune deletes is decided under its claim, not from the listing before it: an
/// evaluation a worker appended to between the two is no longer older than the date, and a
/// newer evaluation it started counts among the last ones kept.
pub fn pruning_decides_under_the_claim<S: SessionStore + crate::ClaimStore>(
    factory: &dyn Fn() -> S,
) {
    use crate::{Prune, prune};
    let store = factory();
    let ann = evaluations_of(&store, "ann", &[0, 100]);
    let worker = WorkerBeforeClaim {
        inner: &store,
        before_claim: std::sync::Mutex::new(Some(Box::new(|store: &S| {
            let mut late = entry(ann[0], 2, Message::user("still here"));
            late.created_at = at(1_000);
            store.append_batch(&SessionKey::new("ann"), &[late]).unwrap();
        }))),
    };
    let report = prune(&worker, &Prune::OlderThan(at(500)), false).unwrap();
    assert_eq!(store.entries(ann[0]).unwrap().len(), 3, "an evaluation written to was deleted");
    assert!(store.entries(ann[1]).unwrap().is_empty(), "the old evaluation stayed");
    let listed: Vec<EvaluationId> = report.evaluations.iter().map(|e| e.evaluation_id).collect();
    assert_eq!((listed, report.messages), (vec![ann[1]], 2));

    let store = factory();
    let bob = evaluations_of(&store, "bob", &[0, 100]);
    let worker = WorkerBeforeClaim {
        inner: &store,
        before_claim: std::sync::Mutex::new(Some(Box::new(|store: &S| {
            evaluations_of(store, "bob", &[200]);
        }))),
    };
    let report = prune(&worker, &Prune::KeepLast(1), false).unwrap();
    let kept: Vec<EvaluationId> = store
        .evaluations_of(&SessionKey::new("bob"))
        .unwrap()
        .iter()
        .map(|e| e.evaluation_id)
        .collect();
    assert_eq!(kept.len(), 1, "three evaluations, the newest kept");
    assert!(!bob.contains(&kept[0]));
    assert_eq!(report.evaluations.len(), 2);
}

/// An append under a claim's fence is refused once that claim was released, even when no
/// other claim took the session since.
pub fn fenced_appends_are_refused_once_the_claim_was_released<
    S: SessionStore + crate::ClaimStore,
>(
    factory: &dyn Fn() -> S,
) {
    let store = factory();
    let job = SessionKey::new("job");
    let claim = store.claim(&job, LEASE).unwrap();
    let Some(fence) = claim.fence() else { return };
    let evaluation = EvaluationId::new();
    store.append_batch_fenced(&job, &[entry(evaluation, 0, Message::system("s"))], &fence).unwrap();
    claim.release().unwrap();
    let refused =
        store.append_batch_fenced(&job, &[entry(evaluation, 1, Message::user("late"))], &fence);
    assert!(matches!(refused, Err(Error::Fenced { .. })), "after release: {refused:?}");
    assert_eq!(store.entries(evaluation).unwrap().len(), 1);
}

/// A checkpoint under a claim's fence is written while the claim is the session's, and
/// refused (the previous version left as it was) with a token that is not the current one,
/// once the claim was released, and once another claim took the session.
pub fn fenced_checkpoints_are_refused_unless_the_claim_is_current<
    S: SessionStore + crate::ClaimStore,
>(
    factory: &dyn Fn() -> S,
) {
    #[track_caller]
    fn refused<S: SessionStore>(store: &S, fence: &crate::Fence, when: &str) {
        let refused = store.put_checkpoint_fenced("marks", &json!({ "late": when }), fence);
        assert!(matches!(refused, Err(Error::Fenced { .. })), "{when}: {refused:?}");
        let kept = store.checkpoint("marks").unwrap().unwrap();
        assert_eq!((kept.version, kept.document), (1, json!({ "on": "time" })), "{when}");
    }
    let store = factory();
    let job = SessionKey::new("job");
    let first = store.claim(&job, LEASE).unwrap();
    let Some(fence) = first.fence() else { return };
    assert_eq!(store.put_checkpoint_fenced("marks", &json!({ "on": "time" }), &fence).unwrap(), 1);
    let kept = store.checkpoint("marks").unwrap().unwrap();
    assert_eq!((kept.version, kept.document), (1, json!({ "on": "time" })));
    // A token that is not the claim's, while the claim holds the session.
    let forged = crate::Fence::new(job.clone(), fence.token + 1);
    refused(&store, &forged, "with another token than the claim's");
    // The claim's token on another session, which it does not hold.
    refused(&store, &crate::Fence::new(SessionKey::new("other"), fence.token), "on another key");
    first.release().unwrap();
    refused(&store, &fence, "after release");
    let second = store.claim(&job, LEASE).unwrap();
    refused(&store, &fence, "after another claim");
    let fence = second.fence().unwrap();
    assert_eq!(
        store.put_checkpoint_fenced("marks", &json!({ "new": "holder" }), &fence).unwrap(),
        2
    );
    assert_eq!(store.checkpoint("marks").unwrap().unwrap().document, json!({ "new": "holder" }));
}
