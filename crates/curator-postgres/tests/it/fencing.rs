//! Fencing (issue 33): a worker whose claim was taken over appends nothing more.

use std::time::Duration;

use curator_model::{Message, PromptRef};
use curator_session::{ClaimStore, Conversation, Error, SessionKey};

use crate::support::store;

#[test]
fn a_worker_past_its_lease_is_fenced_once_another_claims_the_session() {
    let Some(store) = store() else { return };
    let key = SessionKey::new("ticket-7");
    let prompt = PromptRef::new("d", "a");
    let first = store.claim(&key, Duration::from_millis(300)).unwrap();
    let mut a = Conversation::open(&store, key.clone(), prompt.clone(), Message::system("s"))
        .unwrap()
        .with_fence(first.fence().unwrap());
    a.add_user("a1").unwrap();
    // A stalls past its lease; B takes the session over and goes on.
    std::thread::sleep(Duration::from_millis(400));
    let second = store.claim(&key, Duration::from_secs(30)).unwrap();
    assert!(second.fence().unwrap().token > first.fence().unwrap().token);
    let mut b = Conversation::open(&store, key.clone(), prompt.clone(), Message::system("s"))
        .unwrap()
        .with_fence(second.fence().unwrap());
    b.add_user("b1").unwrap();
    // A comes back: refused, in the append's own transaction.
    let err = a.add_user("a2").unwrap_err();
    let Error::Fenced { token, current, .. } = &err else { panic!("{err}") };
    assert_eq!(
        (*token, *current),
        (first.fence().unwrap().token, Some(second.fence().unwrap().token))
    );
    b.record_assistant(Message::assistant("b2")).unwrap();
    let texts: Vec<String> = Conversation::open(&store, key, prompt, Message::system("s"))
        .unwrap()
        .history()
        .messages()
        .iter()
        .map(|m| m.text().into_owned())
        .collect();
    assert_eq!(texts, ["s", "a1", "b1", "b2"]);
    // A released claim fences too: nothing holds the session.
    second.release().unwrap();
    assert!(matches!(b.add_user("b3"), Err(Error::Fenced { current: None, .. })));
}

#[test]
fn the_async_face_is_fenced_too() {
    use std::sync::Arc;
    let Some(store) = store() else { return };
    let store = Arc::new(store);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let key = SessionKey::new("ticket-8");
        let first = store.claim(&key, Duration::from_millis(200)).unwrap();
        let conversation = Conversation::open(
            Arc::clone(&store),
            key.clone(),
            PromptRef::new("d", "a"),
            Message::system("s"),
        )
        .unwrap()
        .with_fence(first.fence().unwrap());
        let mut a = curator_session::AsyncConversation::new(conversation);
        a.add_user("a1").await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let _second = store.claim(&key, Duration::from_secs(30)).unwrap();
        let err = a.add_user("a2").await.unwrap_err();
        assert!(matches!(err, Error::Fenced { .. }), "{err}");
    });
}
