//! Snapshots: lossless for arbitrary records, refused when corrupt.

use curator_model::{Entry, EvaluationId};
use curator_model::{Message, Role};
use curator_session::{Error, MemoryStore, SessionKey, SessionStore, Snapshot};

/// A history as the driver records it: the system message first (added when the history has
/// none), each assistant reply starting the next turn.
fn recordable(messages: Vec<Message>) -> Vec<(Message, u32)> {
    let mut out = Vec::new();
    if messages.first().map(Message::role) != Some(Role::System) {
        out.push((Message::system("s"), 0));
    }
    let mut turn = 0;
    for message in messages {
        turn += u32::from(message.role() == Role::Assistant);
        out.push((message, turn));
    }
    out
}
use curator_testkit::arb;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn snapshots_are_lossless(histories in prop::collection::vec(arb::history_with(6, true), 1..4)) {
        let store = MemoryStore::new();
        for (n, messages) in histories.into_iter().enumerate() {
            let evaluation = EvaluationId::new();
            let key = SessionKey::new(format!("key {}", n % 2));
            for (i, (message, turn)) in recordable(messages).into_iter().enumerate() {
                let entry = Entry::builder(evaluation, message).sequence(i as u64).turn(turn).build().unwrap();
                store.append(&key, &entry).unwrap();
            }
        }
        let snapshot = store.snapshot().unwrap();
        let json = snapshot.to_json().unwrap();
        let restored = MemoryStore::new();
        restored.restore(&Snapshot::from_json(&json).unwrap()).unwrap();
        prop_assert_eq!(restored.snapshot().unwrap(), snapshot);
    }
}

#[track_caller]
fn refused(json: &str, reason: &str) {
    match Snapshot::from_json(json) {
        Err(Error::SnapshotRestore { reason: r, .. }) => assert!(r.contains(reason), "{r}"),
        other => panic!("expected SnapshotRestore, got {other:?}"),
    }
}

#[test]
fn corrupt_snapshots_are_refused_with_a_reason() {
    refused("not json", "not a valid snapshot");
    refused(
        r#"{"format": "something.else", "version": 1, "entries": [], "checkpoints": []}"#,
        "format is `something.else`",
    );
    refused(
        r#"{"format": "curator.session.snapshot", "version": 3, "entries": [], "checkpoints": []}"#,
        "version 3 is not supported",
    );
    refused(
        r#"{"format": "curator.session.snapshot", "version": 7, "entries": "changed shape"}"#,
        "version 7 is not supported",
    );
    refused(
        r#"{"format": "curator.session.snapshot", "version": 1, "entries": [{"id": 5}], "checkpoints": []}"#,
        "entries[0]: invalid type: integer `5`",
    );
    let store = MemoryStore::new();
    let entry = Entry::builder(EvaluationId::new(), Message::system("s")).build().unwrap();
    store.append(&SessionKey::default(), &entry).unwrap();
    let json = store.snapshot().unwrap().to_json().unwrap();
    let doubled = json.replace(
        r#""entries":["#,
        &format!("\"entries\":[{},", serde_json::to_string(&entry).unwrap()),
    );
    refused(&doubled, "appears twice");
    // A truncated file, as a crash mid-write would leave it.
    refused(&json[..json.len() / 2], "not a valid snapshot");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The store's fast JSON writer gives the JSON value serde gives for the same snapshot,
    /// and both layouts read back to it.
    #[test]
    fn fast_snapshot_json_equals_serde(messages in arb::history_with(8, true), extra in any::<bool>()) {
        let store = MemoryStore::new();
        let evaluation = EvaluationId::new();
        for (i, (message, turn)) in recordable(messages).into_iter().enumerate() {
            let message = if extra && i == 0 {
                curator_model::formats::openai::message_from_value(0, &serde_json::json!({"role": "system", "content": "s", "x": 1})).unwrap()
            } else {
                message
            };
            let builder = Entry::builder(evaluation, message)
                .sequence(i as u64)
                .turn(turn)
                .prompt(curator_model::PromptRef::new("ns \"q\"", "k\n"));
            // Quotes, a backslash and a non-ASCII letter to escape (a key holds no control
            // character: every store refuses one).
            store.append(&SessionKey::new("k \"é\" \\"), &builder.build().unwrap()).unwrap();
        }
        store.put_checkpoint("c", &serde_json::json!({"a": [1, "é"]})).unwrap();
        let fast: serde_json::Value = serde_json::from_str(&store.snapshot_json().unwrap()).unwrap();
        prop_assert_eq!(fast, serde_json::to_value(store.snapshot().unwrap()).unwrap());
        // Serde's own JSON (one line) reads back the same as the fast layout.
        let compact = serde_json::to_string(&store.snapshot().unwrap()).unwrap();
        prop_assert_eq!(Snapshot::from_json(&compact).unwrap(), store.snapshot().unwrap());
        prop_assert_eq!(Snapshot::from_json(&store.snapshot_json().unwrap()).unwrap(), store.snapshot().unwrap());
    }
}
