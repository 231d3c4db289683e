//! Fencing (issue 33): claims carry tokens, and an append under a claim that is no longer
//! the session's is refused in the append's transaction.

use std::time::Duration;

use curator_model::{Message, PromptRef};
use curator_session::{ClaimStore, Conversation, Error, SessionKey};
use curator_sqlite::SqliteStore;

#[test]
fn a_worker_whose_claim_was_taken_after_it_released_appends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("s.db")).unwrap();
    let key = SessionKey::new("ticket-7");
    let prompt = PromptRef::new("d", "a");
    let first = store.claim(&key, Duration::from_secs(30)).unwrap();
    let first_fence = first.fence().unwrap();
    let mut a = Conversation::open(&store, key.clone(), prompt.clone(), Message::system("s"))
        .unwrap()
        .with_fence(first_fence.clone());
    a.add_user("a1").unwrap();
    // While A's claim is held no other worker gets one (the file lock): fencing matters
    // once it is gone and another worker claimed the session.
    assert!(matches!(store.claim(&key, Duration::from_secs(30)), Err(Error::Claimed { .. })));
    first.release().unwrap();
    let second = store.claim(&key, Duration::from_secs(30)).unwrap();
    let second_fence = second.fence().unwrap();
    assert!(second_fence.token > first_fence.token);
    let mut b = Conversation::open(&store, key.clone(), prompt.clone(), Message::system("s"))
        .unwrap()
        .with_fence(second_fence.clone());
    b.add_user("b1").unwrap();
    let err = a.add_user("a2").unwrap_err();
    assert!(
        matches!(err, Error::Fenced { token, current, .. } if token == first_fence.token && current == Some(second_fence.token)),
        "{err}"
    );
    let texts: Vec<String> = Conversation::open(&store, key, prompt, Message::system("s"))
        .unwrap()
        .history()
        .messages()
        .iter()
        .map(|m| m.text().into_owned())
        .collect();
    assert_eq!(texts, ["s", "a1", "b1"]);
}

#[test]
fn tokens_grow_across_stores_opened_on_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let key = SessionKey::new("k");
    let one = SqliteStore::open(&path).unwrap();
    let first = one.claim(&key, Duration::from_secs(1)).unwrap().fence().unwrap().token;
    let two = SqliteStore::open(&path).unwrap();
    let second = two.claim(&key, Duration::from_secs(1)).unwrap().fence().unwrap().token;
    assert!(second > first);
}

/// The async face (`AsyncConversation`) appends fenced as the blocking one does: once the
/// claim was released and another worker claimed the session, its next append is refused
/// and the other worker's messages stay in order.
#[test]
fn the_async_face_is_fenced_too() {
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("s.db")).unwrap());
    let key = SessionKey::new("ticket-8");
    let prompt = PromptRef::new("d", "a");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let first = store.claim(&key, Duration::from_secs(30)).unwrap();
        let conversation = Conversation::open(
            Arc::clone(&store),
            key.clone(),
            prompt.clone(),
            Message::system("s"),
        )
        .unwrap()
        .with_fence(first.fence().unwrap());
        let mut a = curator_session::AsyncConversation::new(conversation);
        a.add_user("a1").await.unwrap();
        first.release().unwrap();
        let second = store.claim(&key, Duration::from_secs(30)).unwrap();
        let mut b = Conversation::open(
            Arc::clone(&store),
            key.clone(),
            prompt.clone(),
            Message::system("s"),
        )
        .unwrap()
        .with_fence(second.fence().unwrap());
        b.add_user("b1").unwrap();
        let err = a.add_user("a2").await.unwrap_err();
        assert!(matches!(err, Error::Fenced { .. }), "{err}");
    });
    let texts: Vec<String> = Conversation::open(&*store, key, prompt, Message::system("s"))
        .unwrap()
        .history()
        .messages()
        .iter()
        .map(|m| m.text().into_owned())
        .collect();
    assert_eq!(texts, ["s", "a1", "b1"]);
}
