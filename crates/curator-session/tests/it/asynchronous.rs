//! The async driver: the same record as the sync one, resume after a crash, cancellation.

use std::sync::Arc;

use curator_model::{Message, PromptRef, Role, ToolCall};
use curator_session::{
    AsyncConversation, MemoryStore, NextStep, RunOutcome, SessionStore, ToolContext, run_async,
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
        assert_eq!(c.next_step().await, NextStep::WaitForUser);
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
        assert_eq!(resumed.next_step().await, NextStep::Finished);
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
