//! Change stamps: equal while nothing is committed, different after any commit, by this
//! store or by another connection on the file.

use curator_model::{Entry, EvaluationId, Message};
use curator_session::{SessionKey, SessionStore};
use curator_sqlite::SqliteStore;

/// A write to the store, by one of two handles.
type Write<'a> = Box<dyn Fn(&SqliteStore) + 'a>;

#[test]
fn a_stamp_changes_with_every_commit_on_the_file_and_only_then() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    // Two stores: two connections, as two processes have.
    let (a, b) = (SqliteStore::open(&path).unwrap(), SqliteStore::open(&path).unwrap());
    let key = SessionKey::new("user-1");
    let evaluation = EvaluationId::new();
    let entry = |sequence: u64| {
        Entry::builder(evaluation, Message::user(format!("m{sequence}")))
            .sequence(sequence)
            .build()
            .unwrap()
    };
    let stamp = |store: &SqliteStore| store.change_stamp().unwrap().unwrap();

    let (mut seen_a, mut seen_b) = (stamp(&a), stamp(&b));
    // Reads commit nothing.
    a.entries(evaluation).unwrap();
    b.checkpoint("head").unwrap();
    assert_eq!((stamp(&a), stamp(&b)), (seen_a, seen_b));

    // Each kind of commit, by either store, changes both stamps.
    let writes: Vec<(&str, bool, Write<'_>)> = vec![
        (
            "append by a",
            true,
            Box::new(|s| {
                s.append(&key, &entry(0)).unwrap();
            }),
        ),
        (
            "append by b",
            false,
            Box::new(|s| {
                s.append_batch(&key, &[entry(1), entry(2)]).unwrap();
            }),
        ),
        (
            "checkpoint by b",
            false,
            Box::new(|s| {
                s.put_checkpoint("head", &serde_json::json!({"v": 1})).unwrap();
            }),
        ),
        (
            "checkpoint by a",
            true,
            Box::new(|s| {
                s.put_checkpoint("head", &serde_json::json!({"v": 2})).unwrap();
            }),
        ),
        (
            "delete by b",
            false,
            Box::new(|s| {
                s.delete_evaluations(&key, &[evaluation]).unwrap();
            }),
        ),
    ];
    for (what, by_a, write) in writes {
        write(if by_a { &a } else { &b });
        let (now_a, now_b) = (stamp(&a), stamp(&b));
        assert_ne!(now_a, seen_a, "{what}: a's stamp");
        assert_ne!(now_b, seen_b, "{what}: b's stamp");
        (seen_a, seen_b) = (now_a, now_b);
        assert_eq!((stamp(&a), stamp(&b)), (seen_a, seen_b), "{what}: stable after");
    }
}
