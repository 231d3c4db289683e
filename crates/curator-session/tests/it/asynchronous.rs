//! The async driver: the same record as the sync one, resume after a crash, cancellation.

use std::sync::Arc;

use curator_model::{Message, PromptRef, Role, ToolCall};
use curator_session::{
    Action, AsyncConversation, MemoryStore, RunOutcome, SessionStore, ToolContext, run_async,
};
use curator_strategies::{CurationContext, Passthrough};

fn prompt() -> PromptRef {
    PromptRef::new("tests", "async")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap()
}

#[test]
fn run_async_records_resumes_and_reruns_pending_calls_once() {
    let store = Arc::new(MemoryStore::new());
    runtime().block_on(async {
        let mut c =
            AsyncConversation::open(Arc::clone(&store), "job", prompt(), Message::system("s"))
                .await
                .unwrap();
        assert_eq!(c.next_step().await, Action::WaitForUser);
        c.add_user("check a and b").await.unwrap();
        c.record_assistant(Message::assistant_with_calls(
            None,
            vec![ToolCall::new("a", "check", "{}"), ToolCall::new("b", "check", "{}")],
        ))
        .await
        .unwrap();
        c.record_tool_result("a", Ok::<_, String>("a is fine")).await.unwrap();
        drop(c); // the process dies before `b` finishes

        let mut resumed =
            AsyncConversation::open(Arc::clone(&store), "job", prompt(), Message::system("s"))
                .await
                .unwrap();
        let mut ran = Vec::new();
        let outcome = run_async(
            &mut resumed,
            &Passthrough,
            &CurationContext::default(),
            async |messages: &[Message]| {
                assert_eq!(messages.last().map(Message::role), Some(Role::Tool));
                Ok(Message::assistant("both fine"))
            },
            async |context: &ToolContext| {
                ran.push((context.call_id().to_owned(), context.is_resume));
                Ok("b is fine".into())
            },
            3,
        )
        .await
        .unwrap();
        assert_eq!(outcome, RunOutcome::Finished(Message::assistant("both fine")));
        assert_eq!(ran, [("b".to_owned(), true)], "only the pending call runs, once");
        assert!(matches!(resumed.next_step().await, Action::Finished(_)));
        let id = resumed.with(curator_session::Conversation::evaluation_id).await;
        assert_eq!(store.entries(id).unwrap().len(), 6);
    });
}

#[test]
fn a_cancelled_record_call_leaves_the_driver_consistent() {
    let store = Arc::new(MemoryStore::new());
    runtime().block_on(async {
        let mut c =
            AsyncConversation::open(Arc::clone(&store), "job", prompt(), Message::system("s"))
                .await
                .unwrap();
        // Dropped before it is polled to the end: the store call still completes, or never
        // starts; either way the next call sees a consistent driver.
        drop(tokio::time::timeout(std::time::Duration::ZERO, c.add_user("maybe")).await);
        c.add_user("surely").await.unwrap();
        let id = c.with(curator_session::Conversation::evaluation_id).await;
        let record = store.entries(id).unwrap();
        assert!(record.len() == 2 || record.len() == 3);
        assert_eq!(record.last().unwrap().message.text(), "surely");
        assert_eq!(c.with(curator_session::Conversation::next_sequence).await, record.len() as u64);
    });
}

#[test]
fn a_record_call_retried_after_a_timeout_records_once() {
    let store = Arc::new(MemoryStore::new());
    runtime().block_on(async {
        let mut c =
            AsyncConversation::open(Arc::clone(&store), "job", prompt(), Message::system("s"))
                .await
                .unwrap();
        // The first try times out (its store call may or may not complete); the retry reuses
        // the message id, so the message is recorded once either way.
        let id = curator_model::MessageId::new();
        let first =
            tokio::time::timeout(std::time::Duration::ZERO, c.add_user_with_id(id, "hello")).await;
        let retry = c.add_user_with_id(id, "hello").await.unwrap();
        let evaluation = c.with(curator_session::Conversation::evaluation_id).await;
        let record = store.entries(evaluation).unwrap();
        assert_eq!(record.len(), 2, "{first:?}, {retry:?}: {record:#?}");
        assert_eq!(record[1].id, id);
        // A tool result and a reply retried the same way.
        let reply = Message::assistant_with_calls(None, vec![ToolCall::new("a", "f", "{}")]);
        drop(
            tokio::time::timeout(std::time::Duration::ZERO, c.record_assistant(reply.clone()))
                .await,
        );
        c.record_assistant(reply).await.unwrap();
        drop(
            tokio::time::timeout(
                std::time::Duration::ZERO,
                c.record_tool_result("a", Ok::<_, String>("ok")),
            )
            .await,
        );
        c.record_tool_result("a", Ok::<_, String>("ok")).await.unwrap();
        assert_eq!(store.entries(evaluation).unwrap().len(), 4);
        assert_eq!(c.next_step().await, Action::CallModel);
    });
}

#[test]
fn a_blocking_task_that_does_not_finish_is_a_join_error_and_the_driver_stays_usable() {
    use curator_session::{AsyncDriver, Conversation, Error};
    runtime().block_on(async {
        let conversation =
            Conversation::open(MemoryStore::new(), "job", prompt(), Message::system("s")).unwrap();
        let driver = AsyncDriver::new(conversation);
        let err = driver
            .call(|_c: &mut Conversation<MemoryStore>| -> Result<(), Error> {
                panic!("the tool exploded")
            })
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Join(_)), "{err}");
        assert_eq!(err.to_string(), "the blocking task did not finish");
        driver.call(|c| c.add_user("still here")).await.unwrap();
        assert_eq!(driver.with(|c| c.history().len()).await, 2);
    });
}

#[test]
fn drive_async_runs_a_conversation_held_by_the_one_async_wrapper() {
    use curator_session::{AsyncDriver, Conversation, Curation, Outcome, drive_async};
    runtime().block_on(async {
        let mut conversation =
            Conversation::open(MemoryStore::new(), "job", prompt(), Message::system("s")).unwrap();
        conversation.add_user("check a").unwrap();
        let driver = AsyncDriver::new(conversation);
        let mut calls = 0;
        let outcome = drive_async(
            &driver,
            Curation::new(&Passthrough, &CurationContext::default()),
            async |request: &[Message]| {
                Ok(match request.last().map(Message::role) {
                    Some(Role::Tool) => Message::assistant("a is fine"),
                    _ => {
                        Message::assistant_with_calls(None, vec![ToolCall::new("a", "check", "{}")])
                    }
                })
            },
            async |_call: &ToolContext| {
                calls += 1;
                Ok("ok".into())
            },
            5,
        )
        .await
        .unwrap();
        assert_eq!(outcome, Outcome::Finished(Message::assistant("a is fine")));
        assert_eq!(calls, 1);
        assert_eq!(driver.with(|c| c.history().len()).await, 5);
    });
}

/// The async face fences as the blocking one does: a conversation made under a claim, its
/// claim taken over, appends nothing more.
#[test]
fn the_async_face_is_fenced_once_another_worker_claims_the_session() {
    use curator_session::{ClaimStore, Conversation, Error, SessionKey};
    runtime().block_on(async {
        let store = Arc::new(MemoryStore::new());
        let key = SessionKey::new("ticket-7");
        let first = store.claim(&key, std::time::Duration::from_millis(50)).unwrap();
        let conversation =
            Conversation::open(Arc::clone(&store), key.clone(), prompt(), Message::system("s"))
                .unwrap()
                .with_fence(first.fence().unwrap());
        let mut a = AsyncConversation::new(conversation);
        a.add_user("a1").await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let _second = store.claim(&key, std::time::Duration::from_secs(30)).unwrap();
        let err = a.add_user("a2").await.unwrap_err();
        assert!(matches!(err, Error::Fenced { .. }), "{err}");
        let c = Conversation::open(&*store, key, prompt(), Message::system("s")).unwrap();
        assert_eq!(c.history().len(), 2);
    });
}
