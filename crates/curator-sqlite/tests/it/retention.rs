//! Retention (issue 33): pruning, then `vacuum`, gives the space back to the file system.

use curator_model::{Message, PromptRef};
use curator_session::{Conversation, Prune, SessionKey, SessionStore, prune};
use curator_sqlite::SqliteStore;

fn size(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

#[test]
fn pruning_and_vacuuming_shrinks_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = SqliteStore::open(&path).unwrap();
    let text = "x".repeat(2_000);
    for user in 0..20 {
        let mut c = Conversation::open(
            &store,
            format!("user-{user}"),
            PromptRef::new("d", "a"),
            Message::system("s"),
        )
        .unwrap();
        for _ in 0..25 {
            c.add_user(text.clone()).unwrap();
            c.record_assistant(Message::assistant(text.clone())).unwrap();
        }
    }
    store.vacuum().unwrap();
    let before = size(&path);
    let report = prune(&store, &Prune::OlderThan(chrono::Utc::now()), false).unwrap();
    assert_eq!((report.evaluations.len(), report.messages), (20, 20 * 51));
    store.vacuum().unwrap();
    let after = size(&path);
    assert!(after * 10 < before, "{before} bytes before, {after} after");
    assert!(store.evaluations().unwrap().is_empty());
    assert!(store.evaluations_of(&SessionKey::new("user-3")).unwrap().is_empty());
    println!("20 sessions of 51 messages: {before} bytes, pruned and vacuumed: {after} bytes");
}
