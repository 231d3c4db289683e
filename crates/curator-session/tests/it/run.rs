//! `run_blocking` and `run_async` follow `next_step()`: after a crash and a reopen at every
//! state of a scripted loop, the provider is called only when the model must answer, pending
//! calls run once, and a finished conversation is left alone.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Arc;

use curator_model::{Content, Message, PromptRef, Role, ToolCall};
use curator_session::{
    Action, AsyncConversation, Conversation, MemoryStore, RunOutcome, SessionStore, ToolContext,
    run_async, run_blocking,
};
use curator_strategies::{CurationContext, Passthrough};

fn prompt() -> PromptRef {
    PromptRef::new("tests", "run")
}

fn system() -> Message {
    Message::system("You check files.")
}

/// The scripted model: its first reply calls two tools, its second answers; a third reply
/// (which a correct loop never asks for) would be recorded as a second answer.
fn model(request: &[Message]) -> Message {
    match request.iter().filter(|m| m.role() == Role::Assistant).count() {
        0 => Message::assistant_with_calls(
            None,
            vec![ToolCall::new("a", "check", "{}"), ToolCall::new("b", "check", "{}")],
        ),
        1 => Message::assistant("Both are fine."),
        _ => Message::assistant("A second answer."),
    }
}

/// The record a run that never crashed leaves.
fn expected() -> Vec<Message> {
    vec![
        system(),
        Message::user("Check a and b."),
        model(&[]),
        Message::tool_result("a", "a is fine").with_name("check"),
        Message::tool_result("b", "b is fine").with_name("check"),
        Message::assistant("Both are fine."),
    ]
}

/// Counts the provider's calls and each tool's runs.
#[derive(Default)]
struct Counts {
    provider: Cell<usize>,
    tools: std::cell::RefCell<HashMap<String, usize>>,
}

impl Counts {
    fn provider(&self, request: &[Message]) -> Message {
        self.provider.set(self.provider.get() + 1);
        model(request)
    }

    fn tool(&self, context: &ToolContext) -> Content {
        *self.tools.borrow_mut().entry(context.call_id().to_owned()).or_default() += 1;
        format!("{} is fine", context.call_id()).into()
    }

    fn each_tool_ran_once(&self) -> bool {
        let tools = self.tools.borrow();
        tools.len() == 2 && tools.values().all(|&n| n == 1)
    }
}

/// Drives the loop by hand for its first `records` record calls after the system message
/// (the user message, the first reply, the two results, the answer), then stops as a killed
/// process would.
fn crash_after(store: &MemoryStore, records: usize, counts: &Counts) {
    let mut c = Conversation::open(store, "job", prompt(), system()).unwrap();
    for step in 0..records {
        match step {
            0 => {
                c.add_user("Check a and b.").unwrap();
            }
            1 | 4 => {
                let request = c.request(&Passthrough, &CurationContext::default()).unwrap();
                c.record_assistant(counts.provider(&request.to_messages())).unwrap();
            }
            _ => {
                let context = c.tool_contexts().remove(0);
                let output = counts.tool(&context);
                c.record_tool_result(context.call_id(), Ok::<_, String>(output)).unwrap();
            }
        }
    }
}

fn record(store: &MemoryStore) -> Vec<Message> {
    let evaluation = store.latest_evaluation_of(&"job".into(), &prompt()).unwrap().unwrap();
    store.entries(evaluation).unwrap().into_iter().map(|e| e.message).collect()
}

#[test]
fn run_blocking_follows_next_step_after_a_crash_at_every_state() {
    for records in 0..=5 {
        let store = MemoryStore::new();
        let counts = Counts::default();
        crash_after(&store, records, &counts);

        let mut c = Conversation::open(&store, "job", prompt(), system()).unwrap();
        let run = |c: &mut Conversation<&MemoryStore>| {
            run_blocking(
                c,
                &Passthrough,
                &CurationContext::default(),
                |request| Ok(counts.provider(request)),
                |context| Ok(counts.tool(context)),
                5,
            )
            .unwrap()
        };
        if records == 0 {
            // Only the system message: the loop has nothing to send and says so.
            assert_eq!(run(&mut c), RunOutcome::WaitingForUser);
            assert_eq!(counts.provider.get(), 0, "the provider is not called without a task");
            assert_eq!(record(&store), expected()[..1]);
            c.add_user("Check a and b.").unwrap();
        }
        assert_eq!(run(&mut c), RunOutcome::Finished(Message::assistant("Both are fine.")));
        assert_eq!(counts.provider.get(), 2, "crash after {records} records");
        assert!(counts.each_tool_ran_once(), "crash after {records}: {:?}", counts.tools);
        assert_eq!(record(&store), expected(), "crash after {records} records");

        // Reopened once it has finished: nothing to do, nothing recorded.
        let mut again = Conversation::open(&store, "job", prompt(), system()).unwrap();
        assert!(matches!(again.next_step(), Action::Finished(_)));
        assert_eq!(run(&mut again), RunOutcome::Finished(Message::assistant("Both are fine.")));
        assert_eq!(counts.provider.get(), 2, "a finished conversation is not sent again");
        assert_eq!(record(&store), expected());
    }
}

#[test]
fn run_blocking_stops_at_max_turns_after_running_the_last_replys_calls() {
    let store = MemoryStore::new();
    let counts = Counts::default();
    let mut c = Conversation::open(&store, "job", prompt(), system()).unwrap();
    c.add_user("Check a and b.").unwrap();
    let outcome = run_blocking(
        &mut c,
        &Passthrough,
        &CurationContext::default(),
        |request| Ok(counts.provider(request)),
        |context| Ok(counts.tool(context)),
        1,
    )
    .unwrap();
    assert_eq!(outcome, RunOutcome::MaxTurns);
    assert_eq!(counts.provider.get(), 1);
    assert!(counts.each_tool_ran_once());
    assert_eq!(c.next_step(), Action::CallModel);
}

#[test]
fn run_async_follows_next_step_after_a_crash_at_every_state() {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    for records in 0..=5 {
        let store = Arc::new(MemoryStore::new());
        let counts = Counts::default();
        crash_after(&store, records, &counts);

        runtime.block_on(async {
            let mut c = AsyncConversation::open(Arc::clone(&store), "job", prompt(), system())
                .await
                .unwrap();
            let run = async |c: &mut AsyncConversation<Arc<MemoryStore>>| {
                run_async(
                    c,
                    &Passthrough,
                    &CurationContext::default(),
                    async |request: &[Message]| Ok(counts.provider(request)),
                    async |context: &ToolContext| Ok(counts.tool(context)),
                    5,
                )
                .await
                .unwrap()
            };
            if records == 0 {
                assert_eq!(run(&mut c).await, RunOutcome::WaitingForUser);
                assert_eq!(counts.provider.get(), 0);
                c.add_user("Check a and b.").await.unwrap();
            }
            assert_eq!(
                run(&mut c).await,
                RunOutcome::Finished(Message::assistant("Both are fine."))
            );
            assert_eq!(counts.provider.get(), 2, "crash after {records} records");
            assert!(counts.each_tool_ran_once(), "crash after {records}: {:?}", counts.tools);
            assert_eq!(record(&store), expected(), "crash after {records} records");

            let mut again = AsyncConversation::open(Arc::clone(&store), "job", prompt(), system())
                .await
                .unwrap();
            assert_eq!(
                run(&mut again).await,
                RunOutcome::Finished(Message::assistant("Both are fine."))
            );
            assert_eq!(counts.provider.get(), 2, "a finished conversation is not sent again");
            assert_eq!(record(&store), expected());
        });
    }
}
