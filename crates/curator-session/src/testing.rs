//! The store conformance suite (feature `testing`): the rules every [`SessionStore`] must
//! keep, as checks any implementation can run.
//!
//! Run them all with one `#[test]` each through
//! [`store_conformance_tests!`](crate::store_conformance_tests!):
//!
//! ```
//! # #[cfg(feature = "testing")]
//! # mod m {
//! curator::session::store_conformance_tests!(curator::session::MemoryStore::new);
//! # }
//! ```
//!
//! Each check panics with a message naming the broken rule: this module is test code.
#![allow(
    clippy::unwrap_used,
    clippy::panic,
    clippy::missing_panics_doc,
    reason = "test code fails loudly"
)]

use chrono::{DateTime, Duration, TimeZone, Utc};
use curator_model::{
    Content, Entry, EvaluationId, ImageSource, Message, MessageId, Part, PromptRef, ToolCall,
};
use serde_json::json;

use crate::{
    Appended, Conversation, Error, EvaluationSummary, SessionKey, SessionStore, Snapshot,
    SnapshotErrorKind,
};

mod claims;

pub use claims::{
    a_claim_ends_when_released_or_dropped, a_waiting_claim_gets_the_key_once_it_is_released,
    claims_are_exclusive_per_key, fenced_appends_are_refused_once_the_claim_was_released,
    fenced_appends_are_refused_once_the_claim_was_taken,
    fenced_checkpoints_are_refused_unless_the_claim_is_current, pruning_decides_under_the_claim,
    pruning_deletes_what_it_names_and_never_a_claimed_session,
    pruning_keeps_the_last_evaluations_and_drops_the_old_while_others_write,
};

/// The key the checks record under unless they are about keys.
fn key() -> SessionKey {
    SessionKey::default()
}

/// Generates one `#[test]` per conformance check, each on a fresh store from `$factory`.
///
/// `store_conformance_tests!(when GUARD, FACTORY)` runs each check only when `GUARD` (an
/// expression evaluated in each test) is true: for stores that need a server the harness
/// may not find (the guard prints why it skips).
#[macro_export]
macro_rules! store_conformance_tests {
    ($factory:expr) => {
        $crate::store_conformance_tests!(when true, $factory);
    };
    (when $guard:expr, $factory:expr) => {
        $crate::store_conformance_tests!(@tests $guard, $factory;
            appends_are_idempotent_by_message_id,
            a_taken_sequence_is_refused,
            entries_come_back_in_sequence_order,
            batches_are_atomic,
            a_batch_may_repeat_an_id,
            evaluations_are_kept_apart_and_listed_by_first_message,
            checkpoints_are_versioned,
            snapshots_round_trip,
            a_bad_snapshot_leaves_the_store_unchanged,
            content_is_stored_losslessly,
            an_unknown_evaluation_has_no_entries,
            evaluations_belong_to_their_key,
            bad_keys_are_refused_and_nothing_is_written,
            the_latest_evaluation_of_a_key_is_found_by_key_and_prompt,
            a_record_retried_after_an_unknown_outcome_is_a_duplicate,
            restore_refuses_records_the_driver_could_not_write,
            restore_refuses_malformed_and_newer_snapshots,
            restore_refuses_unknown_fields_naming_them,
            version_1_snapshots_restore_under_the_default_key
        );
    };
    (@tests $guard:expr, $factory:expr; $($check:ident),*) => {
        $(
            #[test]
            fn $check() {
                if $guard {
                    $crate::testing::$check(&$factory);
                }
            }
        )*
    };
}

/// Generates one `#[test]` per claim check, each on a fresh store from `$factory`, for
/// stores that implement [`ClaimStore`](crate::ClaimStore); `when GUARD, FACTORY` as for
/// [`store_conformance_tests!`](crate::store_conformance_tests!).
#[macro_export]
macro_rules! claim_conformance_tests {
    ($factory:expr) => {
        $crate::claim_conformance_tests!(when true, $factory);
    };
    (when $guard:expr, $factory:expr) => {
        $crate::store_conformance_tests!(@tests $guard, $factory;
            claims_are_exclusive_per_key,
            a_claim_ends_when_released_or_dropped,
            a_waiting_claim_gets_the_key_once_it_is_released,
            pruning_deletes_what_it_names_and_never_a_claimed_session,
            pruning_keeps_the_last_evaluations_and_drops_the_old_while_others_write,
            pruning_decides_under_the_claim,
            fenced_appends_are_refused_once_the_claim_was_taken,
            fenced_appends_are_refused_once_the_claim_was_released,
            fenced_checkpoints_are_refused_unless_the_claim_is_current
        );
    };
}

fn at(seconds: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000, 0).single().unwrap() + Duration::seconds(seconds)
}

fn entry(evaluation: EvaluationId, sequence: u64, message: Message) -> Entry {
    let turn = match message.role() {
        curator_model::Role::Assistant | curator_model::Role::Tool => 1,
        _ => 0,
    };
    Entry::builder(evaluation, message)
        .sequence(sequence)
        .turn(turn)
        .prompt(PromptRef::new("test", "conformance"))
        .created_at(at(i64::try_from(sequence).unwrap()))
        .build()
        .unwrap()
}

/// A second append of a message id is ignored and reported, never doubled.
pub fn appends_are_idempotent_by_message_id<S: SessionStore>(factory: &dyn Fn() -> S) {
    let store = factory();
    let e = entry(EvaluationId::new(), 0, Message::system("s"));
    assert_eq!(store.append(&key(), &e).unwrap(), Appended::New);
    assert_eq!(
        store.append(&key(), &e).unwrap(),
        Appended::Duplicate,
        "a repeated id must be reported as a duplicate"
    );
    assert_eq!(
        store.entries(e.evaluation_id).unwrap(),
        vec![e],
        "a duplicate must not be recorded twice"
    );
}

/// A different message claiming a taken `(evaluation, sequence)` is refused.
pub fn a_taken_sequence_is_refused<S: SessionStore>(factory: &dyn Fn() -> S) {
    let store = factory();
    let evaluation = EvaluationId::new();
    let first = entry(evaluation, 0, Message::system("s"));
    store.append(&key(), &first).unwrap();
    let rival = entry(evaluation, 0, Message::system("other"));
    match store.append(&key(), &rival) {
        Err(Error::SequenceTaken { evaluation: e, sequence: 0, existing }) => {
            assert_eq!((e, existing), (evaluation, first.id));
        }
        other => panic!("expected SequenceTaken, got {other:?}"),
    }
    assert_eq!(store.entries(evaluation).unwrap(), vec![first]);
}

/// Entries come back ordered by sequence whatever order they were appended in, whole, from a
/// sequence on ([`SessionStore::entries_from`]) or in pages
/// ([`SessionStore::entries_in_pages`]).
pub fn entries_come_back_in_sequence_order<S: SessionStore>(factory: &dyn Fn() -> S) {
    let store = factory();
    let evaluation = EvaluationId::new();
    let entries: Vec<Entry> =
        (0..6).map(|i| entry(evaluation, i, Message::user(format!("m{i}")))).collect();
    for i in [3, 0, 5, 1, 4, 2] {
        store.append(&key(), &entries[i]).unwrap();
    }
    assert_eq!(store.entries(evaluation).unwrap(), entries);
    for from in [0, 1, 4, 6, 7, u64::MAX] {
        let start = (from as usize).min(entries.len());
        assert_eq!(store.entries_from(evaluation, from).unwrap(), entries[start..], "from {from}");
    }
    assert_eq!(store.entries_from(EvaluationId::new(), 0).unwrap(), []);
    for page in [1, 4, 6, 100] {
        let mut read = Vec::new();
        let mut sizes = Vec::new();
        store
            .entries_in_pages(evaluation, page, &mut |chunk| {
                sizes.push(chunk.len());
                read.extend(chunk);
                std::ops::ControlFlow::Continue(())
            })
            .unwrap();
        assert_eq!(read, entries, "pages of {page}");
        assert!(sizes.iter().all(|&n| n > 0 && n <= page), "pages of {page}: {sizes:?}");
    }
    let mut pages = 0;
    store
        .entries_in_pages(evaluation, 2, &mut |_| {
            pages += 1;
            std::ops::ControlFlow::Break(())
        })
        .unwrap();
    assert_eq!(pages, 1, "a break stops the read");
    store
        .entries_in_pages(EvaluationId::new(), 2, &mut |_| {
            panic!("an unknown evaluation has no page")
        })
        .unwrap();
}

/// A batch is recorded whole or not at all.
pub fn batches_are_atomic<S: SessionStore>(factory: &dyn Fn() -> S) {
    let store = factory();
    let evaluation = EvaluationId::new();
    let taken = entry(evaluation, 2, Message::user("taken"));
    store.append(&key(), &taken).unwrap();
    let batch = vec![
        entry(evaluation, 0, Message::system("s")),
        entry(evaluation, 1, Message::user("u")),
        entry(evaluation, 2, Message::user("conflict")),
    ];
    assert!(matches!(
        store.append_batch(&key(), &batch),
        Err(Error::SequenceTaken { sequence: 2, .. })
    ));
    assert_eq!(
        store.entries(evaluation).unwrap(),
        vec![taken.clone()],
        "a failed batch must record nothing"
    );
    let good = vec![batch[0].clone(), batch[1].clone(), taken];
    assert_eq!(
        store.append_batch(&key(), &good).unwrap(),
        vec![Appended::New, Appended::New, Appended::Duplicate]
    );
    assert_eq!(store.entries(evaluation).unwrap().len(), 3);
}

/// An id repeated inside one batch is recorded once.
pub fn a_batch_may_repeat_an_id<S: SessionStore>(factory: &dyn Fn() -> S) {
    let store = factory();
    let e = entry(EvaluationId::new(), 0, Message::system("s"));
    assert_eq!(
        store.append_batch(&key(), &[e.clone(), e.clone()]).unwrap(),
        vec![Appended::New, Appended::Duplicate]
    );
    assert_eq!(store.entries(e.evaluation_id).unwrap(), vec![e]);
    assert_eq!(store.append_batch(&key(), &[]).unwrap(), vec![]);
}

/// Evaluations do not mix, and are listed by the time of their first message.
pub fn evaluations_are_kept_apart_and_listed_by_first_message<S: SessionStore>(
    factory: &dyn Fn() -> S,
) {
    let store = factory();
    let (early, late) = (EvaluationId::new(), EvaluationId::new());
    // The later evaluation is appended first: listing follows message time, not append order.
    for i in 0..3 {
        let mut e = entry(late, i, Message::user(format!("late {i}")));
        e.created_at = at(100 + i64::try_from(i).unwrap());
        store.append(&key(), &e).unwrap();
    }
    for i in 0..2 {
        store.append(&key(), &entry(early, i, Message::user(format!("early {i}")))).unwrap();
    }
    let listed = store.evaluations().unwrap();
    let ids: Vec<_> = listed.iter().map(|s| s.evaluation_id).collect();
    assert_eq!(ids, [early, late]);
    assert_eq!((listed[0].messages, listed[1].messages), (2, 3));
    assert_eq!(listed[1].first_at, at(100));
    assert_eq!(listed[1].last_at, at(102));
    assert_eq!(listed[0].prompt, Some(PromptRef::new("test", "conformance")));
    assert_eq!(store.latest_evaluation().unwrap(), Some(late));
    assert!(store.entries(early).unwrap().iter().all(|e| e.evaluation_id == early));
}

/// Checkpoints keep the latest document under a name, with a version counting saves.
pub fn checkpoints_are_versioned<S: SessionStore>(factory: &dyn Fn() -> S) {
    let store = factory();
    assert!(store.checkpoint("loop").unwrap().is_none());
    assert_eq!(store.put_checkpoint("loop", &json!({"iteration": 1})).unwrap(), 1);
    assert_eq!(store.put_checkpoint("loop", &json!({"iteration": 2})).unwrap(), 2);
    assert_eq!(store.put_checkpoint("tasks", &json!([1, 2, 3])).unwrap(), 1);
    let latest = store.checkpoint("loop").unwrap().unwrap();
    assert_eq!((latest.version, latest.document), (2, json!({"iteration": 2})));
    assert_eq!(store.checkpoint("tasks").unwrap().unwrap().document, json!([1, 2, 3]));
    // Several at once (one transaction in the workspace's stores), a name twice included.
    let batch = [("loop", &json!({"iteration": 3})), ("page", &json!([4])), ("loop", &json!(5))];
    assert_eq!(store.put_checkpoints(&batch).unwrap(), [3, 1, 4]);
    let latest = store.checkpoint("loop").unwrap().unwrap();
    assert_eq!((latest.version, latest.document), (4, json!(5)));
    assert_eq!(store.checkpoint("page").unwrap().unwrap().document, json!([4]));
    assert_eq!(store.put_checkpoints(&[]).unwrap(), Vec::<u64>::new());
    // Listed by prefix, sorted, the prefix read literally.
    store.put_checkpoint("lo_p", &json!(0)).unwrap();
    assert_eq!(store.checkpoint_names("loop").unwrap(), ["loop"]);
    assert_eq!(store.checkpoint_names("lo").unwrap(), ["lo_p", "loop"]);
    assert_eq!(store.checkpoint_names("lo%").unwrap(), Vec::<String>::new());
    assert_eq!(store.checkpoint_names("").unwrap(), ["lo_p", "loop", "page", "tasks"]);
    // Deleted by name, every version; a missing name skipped; a new save starts again at 1.
    assert_eq!(store.delete_checkpoints(&["loop", "missing", "page"]).unwrap(), 2);
    assert!(store.checkpoint("loop").unwrap().is_none());
    assert_eq!(store.checkpoint_names("").unwrap(), ["lo_p", "tasks"]);
    assert_eq!(store.delete_checkpoints(&[]).unwrap(), 0);
    assert_eq!(store.put_checkpoint("loop", &json!(6)).unwrap(), 1);
    assert!(!store.snapshot().unwrap().checkpoints.iter().any(|c| c.name == "page"));
}

fn sample(store: &impl SessionStore) -> (EvaluationId, EvaluationId) {
    let (a, b) = (EvaluationId::new(), EvaluationId::new());
    store.append(&key(), &entry(a, 0, Message::system("a"))).unwrap();
    store.append(&key(), &entry(a, 1, Message::user("question"))).unwrap();
    store
        .append(
            &key(),
            &entry(
                a,
                2,
                Message::assistant_with_calls(
                    None,
                    vec![ToolCall::new("c", "ls", r#"{"d": "/"}"#)],
                ),
            ),
        )
        .unwrap();
    store.append(&key(), &entry(a, 3, Message::tool_error("c", "denied").with_name("ls"))).unwrap();
    let mut later = entry(b, 0, Message::system("b"));
    later.created_at = at(500);
    store.append(&SessionKey::new("other"), &later).unwrap();
    store.put_checkpoint("state", &json!({"k": "v"})).unwrap();
    (a, b)
}

/// A snapshot restores into a fresh store (of the same kind) with everything equal, and its
/// JSON reads back.
pub fn snapshots_round_trip<S: SessionStore>(factory: &dyn Fn() -> S) {
    let store = factory();
    let (a, b) = sample(&store);
    let snapshot = store.snapshot().unwrap();
    assert_eq!(snapshot.entries.len(), 5);
    let json = snapshot.to_json().unwrap();
    let copy = factory();
    copy.put_checkpoint("stale", &json!(1)).unwrap();
    copy.restore(&Snapshot::from_json(&json).unwrap()).unwrap();
    assert_eq!(copy.snapshot().unwrap(), snapshot);
    assert_eq!(copy.entries(a).unwrap(), store.entries(a).unwrap());
    assert_eq!(copy.entries(b).unwrap(), store.entries(b).unwrap());
    assert!(copy.checkpoint("stale").unwrap().is_none(), "restore replaces the content");
    assert_eq!(copy.latest_evaluation().unwrap(), Some(b));
    assert_eq!(copy.evaluation(b).unwrap().unwrap().key, SessionKey::new("other"));
    assert_eq!(copy.evaluation(a).unwrap().unwrap().key, key());
    assert_eq!(snapshot.key_of(b), SessionKey::new("other"));
}

/// Restoring an inconsistent snapshot fails and changes nothing.
pub fn a_bad_snapshot_leaves_the_store_unchanged<S: SessionStore>(factory: &dyn Fn() -> S) {
    let store = factory();
    sample(&store);
    let before = store.snapshot().unwrap();
    let mut bad = before.clone();
    let first = bad.entries[0].clone();
    bad.entries.push(first);
    assert!(matches!(store.restore(&bad), Err(Error::SnapshotRestore { .. })));
    let mut clash = before.clone();
    let mut rival = clash.entries[0].clone();
    rival.id = MessageId::new();
    clash.entries.push(rival);
    assert!(matches!(store.restore(&clash), Err(Error::SnapshotRestore { .. })));
    assert_eq!(store.snapshot().unwrap(), before);
}

/// Everything a message carries survives storage: parts, images, provider fields, exact
/// argument text, `null` vs absent content, error marks.
pub fn content_is_stored_losslessly<S: SessionStore>(factory: &dyn Fn() -> S) {
    let store = factory();
    let evaluation = EvaluationId::new();
    let wire = json!([
        {"role": "user", "name": "ann", "content": [
            {"type": "text", "text": "see 😀", "cache_control": {"type": "ephemeral"}},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA", "detail": "low"}},
            {"type": "input_audio", "input_audio": {"data": "x", "format": "wav"}}
        ]},
        {"role": "assistant", "refusal": null, "tool_calls": [
            {"id": "1", "type": "function", "function": {"name": "f", "arguments": "{ \"a\" :1 }"}}
        ]},
        {"role": "tool", "tool_call_id": "1", "content": ""}
    ]);
    let mut messages = curator_model::formats::openai::to_messages(&wire).unwrap();
    messages.push(Message::tool_error(
        "1",
        Content::Parts(vec![Part::image(ImageSource::Url { url: "u".into() })]),
    ));
    for (i, m) in messages.iter().enumerate() {
        store.append(&key(), &entry(evaluation, i as u64, m.clone())).unwrap();
    }
    let back: Vec<Message> =
        store.entries(evaluation).unwrap().into_iter().map(|e| e.message).collect();
    assert_eq!(back, messages);
    assert_eq!(curator_model::formats::openai::from_messages(&back[..3]).unwrap(), wire);
}

/// An evaluation the store never saw has no entries.
pub fn an_unknown_evaluation_has_no_entries<S: SessionStore>(factory: &dyn Fn() -> S) {
    let store = factory();
    assert!(store.entries(EvaluationId::new()).unwrap().is_empty());
    assert!(store.evaluations().unwrap().is_empty());
    assert_eq!(store.latest_evaluation().unwrap(), None);
}

/// A store around a real one whose next `n` appends commit and then report an error, as a
/// connection lost after the commit would: the caller cannot tell whether they landed.
#[derive(Debug)]
pub struct FailAfterCommit<S> {
    inner: S,
    failures: std::sync::atomic::AtomicUsize,
}

impl<S: SessionStore> FailAfterCommit<S> {
    /// Wraps `inner`; no append fails until [`fail_next`](FailAfterCommit::fail_next).
    pub fn new(inner: S) -> Self {
        Self { inner, failures: std::sync::atomic::AtomicUsize::new(0) }
    }

    /// Makes the next `n` appends commit and then fail.
    pub fn fail_next(&self, n: usize) {
        self.failures.store(n, std::sync::atomic::Ordering::SeqCst);
    }

    /// The store underneath.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    fn after<T>(&self, result: crate::Result<T>) -> crate::Result<T> {
        let value = result?;
        let failed = self
            .failures
            .fetch_update(
                std::sync::atomic::Ordering::SeqCst,
                std::sync::atomic::Ordering::SeqCst,
                |n| n.checked_sub(1),
            )
            .is_ok();
        if failed {
            return Err(Error::store(
                "fail-after-commit",
                crate::StoreErrorKind::Io,
                "the connection was lost after the commit",
                None,
            ));
        }
        Ok(value)
    }
}

impl<S: SessionStore> SessionStore for FailAfterCommit<S> {
    fn append(&self, key: &SessionKey, entry: &Entry) -> crate::Result<Appended> {
        self.after(self.inner.append(key, entry))
    }
    fn append_batch(&self, key: &SessionKey, entries: &[Entry]) -> crate::Result<Vec<Appended>> {
        self.after(self.inner.append_batch(key, entries))
    }
    fn append_batch_fenced(
        &self,
        key: &SessionKey,
        entries: &[Entry],
        fence: &crate::Fence,
    ) -> crate::Result<Vec<Appended>> {
        self.after(self.inner.append_batch_fenced(key, entries, fence))
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
    fn evaluation(&self, evaluation: EvaluationId) -> crate::Result<Option<EvaluationSummary>> {
        self.inner.evaluation(evaluation)
    }
    fn latest_evaluation_of(
        &self,
        key: &SessionKey,
        prompt: &PromptRef,
    ) -> crate::Result<Option<EvaluationId>> {
        self.inner.latest_evaluation_of(key, prompt)
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

/// Every store refuses the keys [`SessionKey::check`] refuses, naming the rule, and writes
/// nothing under them; the longest allowed key works.
pub fn bad_keys_are_refused_and_nothing_is_written<S: SessionStore>(factory: &dyn Fn() -> S) {
    let store = factory();
    let long = "k".repeat(SessionKey::MAX_LEN + 1);
    for (key, rule) in [
        ("", "is empty"),
        (" \t", "is only white space"),
        ("user\u{0}42", "control character (U+0000) at byte 4"),
        ("user\n42", "control character (U+000A) at byte 4"),
        (long.as_str(), "257 bytes, longer than 256 bytes"),
    ] {
        let evaluation = EvaluationId::new();
        let key = SessionKey::new(key);
        let err = store.append(&key, &entry(evaluation, 0, Message::system("s"))).unwrap_err();
        assert!(matches!(&err, Error::BadKey { rule: r, .. } if r.contains(rule)), "{err}");
        let err = store.append_batch(&key, &[entry(evaluation, 0, Message::system("s"))]);
        assert!(matches!(err, Err(Error::BadKey { .. })));
        assert!(store.entries(evaluation).unwrap().is_empty());
    }
    assert!(store.evaluations().unwrap().is_empty(), "nothing written");
    let longest = SessionKey::new("é".repeat(SessionKey::MAX_LEN / 2));
    store.append(&longest, &entry(EvaluationId::new(), 0, Message::system("s"))).unwrap();
    assert_eq!(store.evaluations().unwrap()[0].key, longest);
}

/// Evaluations belong to the key of their first append: listed by it, and never appended
/// to under another key.
pub fn evaluations_belong_to_their_key<S: SessionStore>(factory: &dyn Fn() -> S) {
    let store = factory();
    let (alice, bob) = (SessionKey::new("alice"), SessionKey::new("bob"));
    let (a, b) = (EvaluationId::new(), EvaluationId::new());
    store.append(&alice, &entry(a, 0, Message::system("a"))).unwrap();
    store.append(&bob, &entry(b, 0, Message::system("b"))).unwrap();
    store.append(&alice, &entry(a, 1, Message::user("mine"))).unwrap();
    let of = |k: &SessionKey| -> Vec<EvaluationId> {
        store.evaluations_of(k).unwrap().iter().map(|s| s.evaluation_id).collect()
    };
    assert_eq!(of(&alice), [a]);
    assert_eq!(of(&bob), [b]);
    assert!(of(&key()).is_empty());
    let listed = store.evaluations().unwrap();
    assert_eq!(
        listed.iter().map(|s| s.key.clone()).collect::<Vec<_>>(),
        [alice.clone(), bob.clone()]
    );
    assert_eq!(store.evaluation(a).unwrap().unwrap().messages, 2);
    assert_eq!(store.evaluation(EvaluationId::new()).unwrap(), None);
    // Bob's process cannot write into Alice's evaluation, by accident or not.
    match store.append(&bob, &entry(a, 2, Message::user("not mine"))) {
        Err(Error::KeyMismatch { evaluation, expected, found }) => {
            assert_eq!((evaluation, expected, found), (a, bob.clone(), alice.clone()));
        }
        other => panic!("expected KeyMismatch, got {other:?}"),
    }
    assert!(matches!(
        store.append_batch(&bob, &[entry(a, 2, Message::user("not mine"))]),
        Err(Error::KeyMismatch { .. })
    ));
    assert_eq!(store.entries(a).unwrap().len(), 2, "a refused append records nothing");
}

/// The evaluation `Conversation::open` resumes: the latest started one of the key, for the
/// prompt, that has its first message.
pub fn the_latest_evaluation_of_a_key_is_found_by_key_and_prompt<S: SessionStore>(
    factory: &dyn Fn() -> S,
) {
    let store = factory();
    let job = SessionKey::new("job");
    let (mine, other_prompt) = (PromptRef::new("test", "conformance"), PromptRef::new("x", "y"));
    assert_eq!(store.latest_evaluation_of(&job, &mine).unwrap(), None);
    let at_time = |evaluation, sequence, seconds, prompt: &PromptRef| {
        let mut e = entry(
            evaluation,
            sequence,
            if sequence == 0 { Message::system("s") } else { Message::user("u") },
        );
        e.created_at = at(seconds);
        e.prompt = Some(prompt.clone());
        e
    };
    let (old, new, newest_other_prompt, other_key, headless) = (
        EvaluationId::new(),
        EvaluationId::new(),
        EvaluationId::new(),
        EvaluationId::new(),
        EvaluationId::new(),
    );
    store.append(&job, &at_time(new, 0, 20, &mine)).unwrap();
    store.append(&job, &at_time(old, 0, 10, &mine)).unwrap();
    store.append(&job, &at_time(old, 1, 40, &mine)).unwrap(); // a late message: still older
    store.append(&job, &at_time(newest_other_prompt, 0, 30, &other_prompt)).unwrap();
    store.append(&SessionKey::new("someone else"), &at_time(other_key, 0, 50, &mine)).unwrap();
    // Entries without their first message (a partial record) are never resumed.
    store.append(&job, &at_time(headless, 3, 60, &mine)).unwrap();
    assert_eq!(store.latest_evaluation_of(&job, &mine).unwrap(), Some(new));
    assert_eq!(store.latest_evaluation_of(&job, &other_prompt).unwrap(), Some(newest_other_prompt));
    assert_eq!(store.latest_evaluation_of(&SessionKey::new("nobody"), &mine).unwrap(), None);
    // The driver's open-or-resume goes through it.
    let c = Conversation::open(&store, job.clone(), mine.clone(), Message::system("s")).unwrap();
    assert_eq!((c.evaluation_id(), c.is_resumed()), (new, true));
}

/// A record call whose store committed but reported an error is retried with the same entry:
/// the store reports a duplicate and the driver moves on, with nothing recorded twice.
pub fn a_record_retried_after_an_unknown_outcome_is_a_duplicate<S: SessionStore>(
    factory: &dyn Fn() -> S,
) {
    let store = FailAfterCommit::new(factory());
    let prompt = PromptRef::new("test", "conformance");
    let mut c = Conversation::open(&store, "retry", prompt, Message::system("s")).unwrap();
    store.fail_next(1);
    assert!(c.add_user("hello").is_err(), "the injected failure is reported");
    assert_eq!(c.add_user("hello").unwrap(), Appended::Duplicate);
    store.fail_next(1);
    let reply = Message::assistant_with_calls(
        None,
        vec![ToolCall::new("c1", "f", "{}"), ToolCall::new("c2", "f", "{}")],
    );
    assert!(c.record_assistant(reply.clone()).is_err());
    assert_eq!(c.record_assistant(reply).unwrap().len(), 2);
    assert_eq!(c.last_appended(), Some(Appended::Duplicate));
    store.fail_next(1);
    assert!(c.record_tool_result("c1", Ok::<_, String>("one")).is_err());
    // Another record call settles the unknown one first: it landed, so the driver moves on.
    assert_eq!(c.record_tool_result("c2", Ok::<_, String>("two")).unwrap(), Appended::New);
    c.record_assistant(Message::assistant("done")).unwrap();
    let record = store.entries(c.evaluation_id()).unwrap();
    let sequences: Vec<u64> = record.iter().map(|e| e.sequence).collect();
    assert_eq!(sequences, [0, 1, 2, 3, 4, 5], "every message once, in order");
    assert_eq!(record[3].message.tool_call_id(), Some("c1"));
    Snapshot::new(record, Vec::new()).validate().unwrap();
}

/// A snapshot holding what the driver could never write is refused whole, with the kind
/// `InvariantBroken`, and the store is unchanged.
pub fn restore_refuses_records_the_driver_could_not_write<S: SessionStore>(
    factory: &dyn Fn() -> S,
) {
    let store = factory();
    sample(&store);
    let before = store.snapshot().unwrap();
    let evaluation = EvaluationId::new();
    let good = vec![
        entry(evaluation, 0, Message::system("s")),
        entry(evaluation, 1, Message::user("u")),
        entry(
            evaluation,
            2,
            Message::assistant_with_calls(None, vec![ToolCall::new("c", "f", "{}")]),
        ),
        entry(evaluation, 3, Message::tool_result("c", "r")),
    ];
    let with = |change: &dyn Fn(&mut Vec<Entry>)| {
        let mut entries = good.clone();
        change(&mut entries);
        Snapshot::new(entries, Vec::new())
    };
    store.restore(&with(&|_| {})).unwrap();
    store.restore(&before).unwrap();
    let broken: Vec<(&str, Snapshot)> = vec![
        ("an assistant at turn 0", with(&|e| e[2].turn = 0)),
        ("a user message starting a turn", with(&|e| e[1].turn = 1)),
        (
            "a result for a call that does not exist",
            with(&|e| e[3].message = Message::tool_result("nope", "r")),
        ),
        ("the system message at sequence 7", with(&|e| e[0].sequence = 7)),
        ("a gap in the sequences", with(&|e| e[3].sequence = 9)),
        ("a second system message", with(&|e| e[1].message = Message::system("again"))),
        ("an id twice", with(&|e| e[1].id = e[0].id)),
        ("two entries at one sequence", with(&|e| e[1].sequence = 0)),
        (
            "a year-2300 entry",
            with(&|e| {
                e[1].created_at = Utc.with_ymd_and_hms(2300, 1, 1, 0, 0, 0).single().unwrap();
            }),
        ),
        (
            "a key for an evaluation without entries",
            with(&|_| {}).with_sessions([(EvaluationId::new(), SessionKey::new("k"))]),
        ),
    ];
    for (what, snapshot) in broken {
        match store.restore(&snapshot) {
            Err(Error::SnapshotRestore { kind: SnapshotErrorKind::InvariantBroken, .. }) => {}
            other => panic!("{what}: expected an InvariantBroken restore error, got {other:?}"),
        }
        let json = snapshot.to_json().unwrap();
        assert!(
            matches!(
                store.restore_json(&json),
                Err(Error::SnapshotRestore { kind: SnapshotErrorKind::InvariantBroken, .. })
            ),
            "{what}: restore_json must refuse it too"
        );
        assert_eq!(store.snapshot().unwrap(), before, "{what}: the store changed");
    }
}

/// Text that is not JSON, or a version this build does not know, is refused with its kind.
pub fn restore_refuses_malformed_and_newer_snapshots<S: SessionStore>(factory: &dyn Fn() -> S) {
    let store = factory();
    sample(&store);
    let before = store.snapshot().unwrap();
    let json = before.to_json().unwrap();
    let trailing_comma = json.replacen("\n],", ",\n],", 1);
    let missing_comma = json.replacen("},\n{", "}\n{", 1);
    let newer = json.replacen("\"version\":2", "\"version\":3", 1);
    for (what, text, kind) in [
        ("a trailing comma", trailing_comma, SnapshotErrorKind::Malformed),
        ("a missing comma", missing_comma, SnapshotErrorKind::Malformed),
        ("a truncated text", json[..json.len() / 2].to_owned(), SnapshotErrorKind::Malformed),
        ("a newer version", newer, SnapshotErrorKind::NewerVersion),
    ] {
        match store.restore_json(&text) {
            Err(Error::SnapshotRestore { kind: k, .. }) if k == kind => {}
            other => panic!("{what}: expected a {kind} restore error, got {other:?}"),
        }
        assert_eq!(store.snapshot().unwrap(), before, "{what}: the store changed");
    }
}

/// A field a snapshot does not define, at any level, is refused (kind `Malformed`) with a
/// reason naming it and where it is, never dropped; provider fields under `extra` are part
/// of the format and survive a round trip.
pub fn restore_refuses_unknown_fields_naming_them<S: SessionStore>(factory: &dyn Fn() -> S) {
    let store = factory();
    sample(&store);
    // A message with content parts and provider fields (kept under `extra`).
    let wire = json!([{"role": "user", "refusal": null, "content": [
        {"type": "text", "text": "see", "cache_control": {"type": "ephemeral"}}
    ]}]);
    let rich = EvaluationId::new();
    let mut system = entry(rich, 0, Message::system("r"));
    system.created_at = at(900);
    store.append(&key(), &system).unwrap();
    let mut user =
        entry(rich, 1, curator_model::formats::openai::to_messages(&wire).unwrap()[0].clone());
    user.created_at = at(901);
    store.append(&key(), &user).unwrap();
    let before = store.snapshot().unwrap();
    let json = before.to_json().unwrap();
    let copy = factory();
    copy.restore_json(&json).unwrap();
    assert_eq!(copy.snapshot().unwrap(), before, "a valid snapshot round-trips");

    let garbled = |from: &str, to: &str| {
        assert!(json.contains(from), "the sample has no {from}");
        json.replacen(from, to, 1)
    };
    for (what, text, expected) in [
        (
            "top",
            garbled("{\"format\"", "{\"Format\":0,\"format\""),
            "the document: unknown field `Format`",
        ),
        (
            "sessions",
            garbled("\"sessions\"", "\"Sessions\""),
            "the document: unknown field `Sessions`",
        ),
        ("evaluation id", garbled("\"sessions\":{\"", "\"sessions\":{\"x"), "sessions: "),
        ("entry", garbled("\"turn\":", "\"Turn\":"), "entries[0]: unknown field `Turn`"),
        (
            "prompt",
            garbled("\"prompt\":{\"ns\"", "\"prompt\":{\"namespace\""),
            "entries[0].prompt: unknown field `namespace`",
        ),
        (
            "message",
            garbled("\"content\":", "\"Content\":"),
            "entries[0].message: unknown field `Content`",
        ),
        (
            "tool call",
            garbled("\"arguments\":", "\"args\":"),
            "entries[2].message.tool_calls[0]: unknown field `args`",
        ),
        (
            "content part",
            garbled("\"text\":\"see\"", "\"txt\":\"see\""),
            ".message.content[0]: unknown field `txt`",
        ),
        (
            "provider fields",
            garbled("\"fields\":", "\"Fields\":"),
            ".message.content[0].extra: unknown field `Fields`",
        ),
        ("checkpoint", garbled("\"document\":", "\"doc\":"), "checkpoints[0]: unknown field `doc`"),
    ] {
        match store.restore_json(&text) {
            Err(Error::SnapshotRestore { kind: SnapshotErrorKind::Malformed, reason, .. }) => {
                assert!(reason.contains(expected), "{what}: expected `{expected}` in `{reason}`");
            }
            other => panic!("{what}: expected a malformed restore error, got {other:?}"),
        }
        assert_eq!(store.snapshot().unwrap(), before, "{what}: the store changed");
    }
}

/// Snapshots of version 1, written before session keys, restore with every evaluation under
/// the default key.
pub fn version_1_snapshots_restore_under_the_default_key<S: SessionStore>(factory: &dyn Fn() -> S) {
    let store = factory();
    let (a, _) = sample(&store);
    let json = store.snapshot().unwrap().to_json().unwrap();
    // Version 1 had no `sessions`; the sample's second evaluation had a key, which it loses.
    let start = json.find("\"sessions\":").unwrap();
    let end = json.find(",\"checkpoints\":").unwrap();
    let v1 = format!("{}{}", &json[..start], &json[end + 1..]).replacen(
        "\"version\":2",
        "\"version\":1",
        1,
    );
    let copy = factory();
    copy.restore_json(&v1).unwrap();
    assert!(copy.evaluations().unwrap().iter().all(|e| e.key.is_default()));
    assert_eq!(copy.entries(a).unwrap(), store.entries(a).unwrap());
    // Laid out another way (serde's own layout), it reads the same.
    let relaid: serde_json::Value = serde_json::from_str(&v1).unwrap();
    let other = factory();
    other.restore_json(&serde_json::to_string_pretty(&relaid).unwrap()).unwrap();
    assert_eq!(other.snapshot().unwrap(), copy.snapshot().unwrap());
}
