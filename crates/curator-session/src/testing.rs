//! The store conformance suite (feature `testing`): the rules every [`SessionStore`] must
//! keep, as checks any implementation can run.
//!
//! Run them all with one `#[test]` each through
//! [`store_conformance_tests!`](crate::store_conformance_tests!):
//!
//! ```
//! # #[cfg(feature = "testing")]
//! # mod m {
//! curator_session::store_conformance_tests!(curator_session::MemoryStore::new);
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

use crate::{Appended, Error, SessionStore, Snapshot};

/// Generates one `#[test]` per conformance check, each on a fresh store from `$factory`.
#[macro_export]
macro_rules! store_conformance_tests {
    ($factory:expr) => {
        $crate::store_conformance_tests!(@tests $factory;
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
            an_unknown_evaluation_has_no_entries
        );
    };
    (@tests $factory:expr; $($check:ident),*) => {
        $(
            #[test]
            fn $check() {
                $crate::testing::$check(&$factory);
            }
        )*
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
    assert_eq!(store.append(&e).unwrap(), Appended::New);
    assert_eq!(
        store.append(&e).unwrap(),
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
    store.append(&first).unwrap();
    let rival = entry(evaluation, 0, Message::system("other"));
    match store.append(&rival) {
        Err(Error::SequenceTaken { evaluation: e, sequence: 0, existing }) => {
            assert_eq!((e, existing), (evaluation, first.id));
        }
        other => panic!("expected SequenceTaken, got {other:?}"),
    }
    assert_eq!(store.entries(evaluation).unwrap(), vec![first]);
}

/// Entries come back ordered by sequence whatever order they were appended in.
pub fn entries_come_back_in_sequence_order<S: SessionStore>(factory: &dyn Fn() -> S) {
    let store = factory();
    let evaluation = EvaluationId::new();
    let entries: Vec<Entry> =
        (0..6).map(|i| entry(evaluation, i, Message::user(format!("m{i}")))).collect();
    for i in [3, 0, 5, 1, 4, 2] {
        store.append(&entries[i]).unwrap();
    }
    assert_eq!(store.entries(evaluation).unwrap(), entries);
}

/// A batch is recorded whole or not at all.
pub fn batches_are_atomic<S: SessionStore>(factory: &dyn Fn() -> S) {
    let store = factory();
    let evaluation = EvaluationId::new();
    let taken = entry(evaluation, 2, Message::user("taken"));
    store.append(&taken).unwrap();
    let batch = vec![
        entry(evaluation, 0, Message::system("s")),
        entry(evaluation, 1, Message::user("u")),
        entry(evaluation, 2, Message::user("conflict")),
    ];
    assert!(matches!(store.append_batch(&batch), Err(Error::SequenceTaken { sequence: 2, .. })));
    assert_eq!(
        store.entries(evaluation).unwrap(),
        vec![taken.clone()],
        "a failed batch must record nothing"
    );
    let good = vec![batch[0].clone(), batch[1].clone(), taken];
    assert_eq!(
        store.append_batch(&good).unwrap(),
        vec![Appended::New, Appended::New, Appended::Duplicate]
    );
    assert_eq!(store.entries(evaluation).unwrap().len(), 3);
}

/// An id repeated inside one batch is recorded once.
pub fn a_batch_may_repeat_an_id<S: SessionStore>(factory: &dyn Fn() -> S) {
    let store = factory();
    let e = entry(EvaluationId::new(), 0, Message::system("s"));
    assert_eq!(
        store.append_batch(&[e.clone(), e.clone()]).unwrap(),
        vec![Appended::New, Appended::Duplicate]
    );
    assert_eq!(store.entries(e.evaluation_id).unwrap(), vec![e]);
    assert_eq!(store.append_batch(&[]).unwrap(), vec![]);
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
        store.append(&e).unwrap();
    }
    for i in 0..2 {
        store.append(&entry(early, i, Message::user(format!("early {i}")))).unwrap();
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
}

fn sample(store: &impl SessionStore) -> (EvaluationId, EvaluationId) {
    let (a, b) = (EvaluationId::new(), EvaluationId::new());
    store.append(&entry(a, 0, Message::system("a"))).unwrap();
    store.append(&entry(a, 1, Message::user("question"))).unwrap();
    store
        .append(&entry(
            a,
            2,
            Message::assistant_with_calls(None, vec![ToolCall::new("c", "ls", r#"{"d": "/"}"#)]),
        ))
        .unwrap();
    store.append(&entry(a, 3, Message::tool_error("c", "denied").with_name("ls"))).unwrap();
    let mut later = entry(b, 0, Message::system("b"));
    later.created_at = at(500);
    store.append(&later).unwrap();
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
        store.append(&entry(evaluation, i as u64, m.clone())).unwrap();
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
