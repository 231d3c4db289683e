//! The driver: numbering, correlation, errors, events, curation over the record.

use std::sync::Arc;

use curator_model::{
    Message, MessageId, PromptRef, Role, ToolCall, ToolCallStatus, tool_call_states, validate,
};
use curator_session::{
    Appended, Conversation, Error, MemoryStore, RunOutcome, SessionStore, run_blocking,
};
use curator_strategies::{CurationContext, Event, MemorySink, SlidingWindow};

fn prompt() -> PromptRef {
    PromptRef::new("tests", "agent")
}

#[test]
fn the_sequence_diagram_of_the_spec() {
    let store = MemoryStore::new();
    let mut c = Conversation::start(&store, "test", prompt(), Message::system("system")).unwrap();
    let calls = c
        .record_assistant(Message::assistant_with_calls(
            None,
            vec![ToolCall::new("c1", "a", "{}"), ToolCall::new("c2", "b", "{}")],
        ))
        .unwrap();
    assert_eq!(calls.len(), 2);
    c.record_tool_result("c1", Ok::<_, String>("Result 1")).unwrap();
    c.record_tool_result("c2", Err::<String, _>("Result 2 failed")).unwrap();
    c.record_assistant(Message::assistant("Final response")).unwrap();

    let record = store.entries(c.evaluation_id()).unwrap();
    let rows: Vec<(u64, u32, Role)> =
        record.iter().map(|e| (e.sequence, e.turn, e.message.role())).collect();
    assert_eq!(
        rows,
        [
            (0, 0, Role::System),
            (1, 1, Role::Assistant),
            (2, 1, Role::Tool),
            (3, 1, Role::Tool),
            (4, 2, Role::Assistant)
        ]
    );
    assert!(
        record.iter().all(|e| e.evaluation_id == c.evaluation_id() && e.prompt == Some(prompt()))
    );
    assert_eq!(record[2].message.tool_call_id(), Some("c1"));
    assert_eq!(record[2].message.name(), Some("a"));
    let messages: Vec<Message> = record.into_iter().map(|e| e.message).collect();
    let states = tool_call_states(&messages);
    assert_eq!(states[0].status, ToolCallStatus::Completed);
    assert_eq!(states[1].status, ToolCallStatus::Failed);
    validate::openai(&messages).unwrap();
}

#[test]
fn several_evaluations_stay_apart() {
    let store = MemoryStore::new();
    let mut first = Conversation::start(&store, "test", prompt(), Message::system("one")).unwrap();
    let mut second = Conversation::start(&store, "test", prompt(), Message::system("two")).unwrap();
    first.add_user("for one").unwrap();
    second.add_user("for two").unwrap();
    second.add_user("again two").unwrap();
    assert_ne!(first.evaluation_id(), second.evaluation_id());
    assert_eq!(store.entries(first.evaluation_id()).unwrap().len(), 2);
    assert_eq!(store.entries(second.evaluation_id()).unwrap().len(), 3);
    assert_eq!(store.evaluations().unwrap().len(), 2);
}

#[test]
fn misuse_is_a_typed_error_and_records_nothing() {
    let store = MemoryStore::new();
    assert!(matches!(
        Conversation::start(&store, "test", prompt(), Message::user("not a system message")),
        Err(Error::WrongRole { expected: "system", .. })
    ));
    let mut c = Conversation::start(&store, "test", prompt(), Message::system("s")).unwrap();
    assert!(matches!(c.record_assistant(Message::user("u")), Err(Error::WrongRole { .. })));
    assert!(matches!(
        c.record_tool_result("nope", Ok::<_, String>("x")),
        Err(Error::UnknownToolCall { .. })
    ));
    c.record_assistant(Message::assistant_with_calls(None, vec![ToolCall::new("c", "t", "{}")]))
        .unwrap();
    assert!(
        matches!(c.add_user("too early"), Err(Error::PendingToolCalls { calls }) if calls == ["c"])
    );
    assert!(matches!(
        c.record_assistant(Message::assistant("too early")),
        Err(Error::PendingToolCalls { .. })
    ));
    assert_eq!(store.entries(c.evaluation_id()).unwrap().len(), 2);
    assert_eq!(c.next_sequence(), 2);
}

#[test]
fn every_recorded_message_is_reported() {
    let store = MemoryStore::new();
    let sink = Arc::new(MemorySink::default());
    let mut c = Conversation::start(&store, "test", prompt(), Message::system("s"))
        .unwrap()
        .with_events(sink.clone());
    c.add_user("u").unwrap();
    c.record_assistant(Message::assistant("a")).unwrap();
    let events = sink.events();
    assert_eq!(events.len(), 2);
    let Event::ConversationRecorded(last) = &events[1] else { panic!("unexpected event") };
    assert_eq!((last.sequence, last.turn, last.role), (2, 1, Role::Assistant));
    assert_eq!(last.evaluation_id, c.evaluation_id());
}

#[test]
fn a_hundred_turns_under_a_window_of_five_keep_everything_recorded() {
    let store = MemoryStore::new();
    let mut c = Conversation::start(&store, "test", prompt(), Message::system("s")).unwrap();
    c.add_user("task").unwrap();
    let window = SlidingWindow::new(5);
    let ctx = CurationContext::default().with_preserve_task(false);
    let mut largest = 0;
    for turn in 0..100 {
        let request = c.request(&window, &ctx).unwrap().to_messages();
        largest = largest.max(request.len());
        assert_eq!(request[0].role(), Role::System);
        validate::openai(&request).unwrap();
        let id = format!("call_{turn}");
        c.record_assistant(Message::assistant_with_calls(
            None,
            vec![ToolCall::new(&id, "step", "{}")],
        ))
        .unwrap();
        c.record_tool_result(&id, Ok::<_, String>(format!("output {turn}"))).unwrap();
    }
    assert!(largest <= 6, "a request held {largest} messages");
    assert_eq!(store.entries(c.evaluation_id()).unwrap().len(), 2 + 200);
    assert_eq!(c.turn(), 100);
}

#[test]
fn run_blocking_drives_provider_and_tools() {
    let store = MemoryStore::new();
    let mut c = Conversation::start(&store, "test", prompt(), Message::system("s")).unwrap();
    c.add_user("count to three with the tool").unwrap();
    let mut ran = Vec::new();
    let outcome = run_blocking(
        &mut c,
        &SlidingWindow::new(50),
        &CurationContext::default(),
        |messages| {
            let done = messages.iter().filter(|m| m.role() == Role::Tool).count();
            Ok(if done < 3 {
                Message::assistant_with_calls(
                    None,
                    vec![ToolCall::new(format!("c{done}"), "count", "{}")],
                )
            } else {
                Message::assistant("three")
            })
        },
        |ctx| {
            ran.push(ctx.call_id().to_owned());
            Ok(ran.len().to_string().into())
        },
        10,
    )
    .unwrap();
    assert_eq!(outcome, RunOutcome::Finished(Message::assistant("three")));
    assert_eq!(ran, ["c0", "c1", "c2"]);
    let outcome = run_blocking(
        &mut c,
        &SlidingWindow::new(50),
        &CurationContext::default(),
        |_| Ok(Message::assistant_with_calls(None, vec![ToolCall::new("again", "count", "{}")])),
        |_| Ok("x".into()),
        0,
    );
    // Finished: nothing to do, whatever max_turns says, and the provider is not called.
    assert_eq!(outcome.unwrap(), RunOutcome::Finished(Message::assistant("three")));
    c.add_user("and to four?").unwrap();
    let outcome = run_blocking(
        &mut c,
        &SlidingWindow::new(50),
        &CurationContext::default(),
        |_| Ok(Message::assistant_with_calls(None, vec![ToolCall::new("again", "count", "{}")])),
        |_| Ok("x".into()),
        0,
    );
    assert_eq!(outcome.unwrap(), RunOutcome::MaxTurns);
    let failed = run_blocking(
        &mut c,
        &SlidingWindow::new(5),
        &CurationContext::default(),
        |_| Err("rate limited".into()),
        |_| Ok("".into()),
        3,
    );
    assert!(matches!(failed, Err(Error::Provider(m)) if m.to_string() == "rate limited"));
}

#[test]
fn a_resumed_conversation_shows_the_same_summarized_view_without_summarizing_again() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use curator_session::SessionSummaries;
    use curator_strategies::{FnSummarizer, Summarize, Threshold};

    let calls = Arc::new(AtomicUsize::new(0));
    let summarizer = |calls: Arc<AtomicUsize>| {
        FnSummarizer::new("counting", 1, move |previous, messages| {
            calls.fetch_add(1, Ordering::Relaxed);
            Ok(format!("{} + {} messages", previous.unwrap_or("start"), messages.len()))
        })
    };
    let store = Arc::new(MemoryStore::new());
    let strategy = |store: &Arc<MemoryStore>, calls: &Arc<AtomicUsize>| {
        Summarize::new(summarizer(calls.clone()))
            .with_threshold(Threshold::Messages(12))
            .with_keep_recent(4)
            .with_store(Arc::new(SessionSummaries::open(store.clone()).unwrap()))
    };
    let first_view = {
        let summarize = strategy(&store, &calls);
        let mut c =
            Conversation::start(store.clone(), "test", prompt(), Message::system("s")).unwrap();
        c.add_user("task").unwrap();
        for i in 0..20 {
            let id = format!("c{i}");
            c.record_assistant(Message::assistant_with_calls(
                None,
                vec![ToolCall::new(&id, "t", "{}")],
            ))
            .unwrap();
            c.record_tool_result(&id, Ok::<_, String>(format!("r{i}"))).unwrap();
            c.request(&summarize, &CurationContext::default()).unwrap();
        }
        c.request(&summarize, &CurationContext::default()).unwrap().to_messages()
    };
    assert!(calls.load(Ordering::Relaxed) > 0);
    assert!(first_view[2].text().starts_with("[Summary of the "));

    // A new process: the same store, a new strategy and summarizer.
    let again = Arc::new(AtomicUsize::new(0));
    let summarize = strategy(&store, &again);
    let resumed = Conversation::resume(store.clone(), "test", &prompt()).unwrap();
    let view = resumed.request(&summarize, &CurationContext::default()).unwrap().to_messages();
    assert_eq!(view, first_view);
    assert_eq!(again.load(Ordering::Relaxed), 0);
}

#[test]
fn a_reply_with_two_calls_of_one_id_is_refused_and_not_recorded() {
    let store = MemoryStore::new();
    let mut c = Conversation::start(&store, "test", prompt(), Message::system("s")).unwrap();
    c.add_user("go").unwrap();
    let reply = Message::assistant_with_calls(
        None,
        vec![ToolCall::new("x", "ls", "{}"), ToolCall::new("x", "cat", "{}")],
    );
    assert!(matches!(
        c.record_assistant(reply),
        Err(Error::DuplicateToolCallId { call_id }) if call_id == "x"
    ));
    assert_eq!(store.entries(c.evaluation_id()).unwrap().len(), 2);
    assert_eq!((c.turn(), c.next_sequence()), (0, 2));
    // The record stays one the validators accept, and the loop can go on.
    c.record_assistant(Message::assistant("done")).unwrap();
    let messages: Vec<Message> =
        store.entries(c.evaluation_id()).unwrap().into_iter().map(|e| e.message).collect();
    validate::openai(&messages).unwrap();
}

#[test]
fn next_step_says_what_to_do_in_every_state_and_after_a_resume() {
    use curator_session::Action;
    let store = MemoryStore::new();
    let mut c = Conversation::open(&store, "job", prompt(), Message::system("s")).unwrap();
    assert_eq!(c.next_step(), Action::WaitForUser);
    c.add_user("go").unwrap();
    assert_eq!(c.next_step(), Action::CallModel);
    c.record_assistant(Message::assistant_with_calls(
        None,
        vec![ToolCall::new("a", "f", "{}"), ToolCall::new("b", "f", "{}")],
    ))
    .unwrap();
    let run = |c: &Conversation<&MemoryStore>| match c.next_step() {
        Action::Run(calls) => {
            calls.iter().map(|t| (t.call_id().to_owned(), t.is_resume)).collect::<Vec<_>>()
        }
        other => panic!("expected RunTools, got {other:?}"),
    };
    assert_eq!(run(&c), [("a".to_owned(), false), ("b".to_owned(), false)]);
    c.record_tool_result("a", Ok::<_, String>("done")).unwrap();
    // The process dies here; the resumed driver knows what is left without looking.
    let mut resumed = Conversation::open(&store, "job", prompt(), Message::system("s")).unwrap();
    assert_eq!(run(&resumed), [("b".to_owned(), true)]);
    resumed.record_tool_result("b", Err::<String, _>("failed")).unwrap();
    assert_eq!(resumed.next_step(), Action::CallModel);
    resumed.record_assistant(Message::assistant("all done")).unwrap();
    assert!(matches!(resumed.next_step(), Action::Finished(_)));
    // Finished is a state of the record: a later open says so too, and a new user message
    // continues the conversation.
    let mut again = Conversation::open(&store, "job", prompt(), Message::system("s")).unwrap();
    assert!(matches!(again.next_step(), Action::Finished(_)));
    again.add_user("one more thing").unwrap();
    assert_eq!(again.next_step(), Action::CallModel);
}

#[test]
fn tool_results_take_any_result_of_content() {
    fn read_file(path: &str) -> Result<String, std::io::Error> {
        std::fs::read_to_string(path)
    }
    let store = MemoryStore::new();
    let mut c = Conversation::open(&store, "glue", prompt(), Message::system("s")).unwrap();
    c.record_assistant(Message::assistant_with_calls(
        None,
        vec![
            ToolCall::new("1", "f", "{}"),
            ToolCall::new("2", "f", "{}"),
            ToolCall::new("3", "read", "{}"),
        ],
    ))
    .unwrap();
    let typed: Result<&str, String> = Ok("text");
    c.record_tool_result("1", typed).unwrap();
    let parts: Result<curator_model::Content, &str> = Err("no such thing");
    c.record_tool_result("2", parts).unwrap();
    c.record_tool_result("3", read_file("/nonexistent/file").map_err(|e| e.to_string())).unwrap();
    let record = c.history().messages();
    assert_eq!((record[2].text(), record[2].is_error()), ("text".into(), false));
    assert_eq!((record[3].text(), record[3].is_error()), ("no such thing".into(), true));
    assert!(record[4].is_error());
}

/// A record call retried although it succeeded (its acknowledgement was lost, as when an
/// async caller's future is dropped by a timeout): nothing is recorded twice.
#[test]
fn record_calls_retried_after_they_succeeded_record_nothing_twice() {
    let store = MemoryStore::new();
    let mut c = Conversation::start(&store, "test", prompt(), Message::system("s")).unwrap();
    // A user message is retried under the id it was first sent with.
    let id = MessageId::new();
    assert_eq!(c.add_user_with_id(id, "check a").unwrap(), Appended::New);
    assert_eq!(c.add_user_with_id(id, "check a").unwrap(), Appended::Duplicate);
    assert_eq!(c.next_sequence(), 2);
    // The same reply again, right after it: a retry, its calls returned again.
    let reply = Message::assistant_with_calls(None, vec![ToolCall::new("a", "check", "{}")]);
    assert_eq!(c.record_assistant(reply.clone()).unwrap().len(), 1);
    assert_eq!(c.record_assistant(reply.clone()).unwrap().len(), 1);
    assert_eq!(c.last_appended(), Some(Appended::Duplicate));
    // The same result for an answered call is a duplicate; a different one is refused.
    assert_eq!(c.record_tool_result("a", Ok::<_, String>("fine")).unwrap(), Appended::New);
    assert_eq!(c.record_tool_result("a", Ok::<_, String>("fine")).unwrap(), Appended::Duplicate);
    assert!(matches!(
        c.record_tool_result("a", Err::<String, _>("broken")),
        Err(Error::AlreadyAnswered { call_id }) if call_id == "a"
    ));
    assert!(matches!(
        c.record_tool_result("zz", Ok::<_, String>("?")),
        Err(Error::UnknownToolCall { call_id }) if call_id == "zz"
    ));
    // Once its results follow it, the reply is no longer the latest: recording it again is
    // not a retry, and its call ids are taken.
    c.record_assistant(Message::assistant("a is fine")).unwrap();
    c.record_assistant(Message::assistant("a is fine")).unwrap();
    assert_eq!(c.last_appended(), Some(Appended::Duplicate));
    let record: Vec<Message> =
        store.entries(c.evaluation_id()).unwrap().into_iter().map(|e| e.message).collect();
    assert_eq!(record.len(), 5, "{record:#?}");
    validate::openai(&record).unwrap();

    // After a reopen the record is where the retry looks, too.
    let mut again = Conversation::open(&store, "test", prompt(), Message::system("s")).unwrap();
    assert_eq!(
        again.record_tool_result("a", Ok::<_, String>("fine")).unwrap(),
        Appended::Duplicate
    );
    again.record_assistant(Message::assistant("a is fine")).unwrap();
    assert_eq!(again.add_user_with_id(id, "check a").unwrap(), Appended::Duplicate);
    assert_eq!(store.entries(c.evaluation_id()).unwrap().len(), 5);
}

/// Two drivers on one key: the second writer's append is refused, and the error says what
/// most likely happened.
#[test]
fn two_writers_on_one_conversation_are_told_apart() {
    let store = MemoryStore::new();
    let mut first = Conversation::open(&store, "job", prompt(), Message::system("s")).unwrap();
    let mut second = Conversation::open(&store, "job", prompt(), Message::system("s")).unwrap();
    first.add_user("from the first").unwrap();
    let refused = second.add_user("from the second").unwrap_err();
    assert!(matches!(refused, Error::SequenceTaken { sequence: 1, .. }), "{refused:?}");
    assert!(
        refused.to_string().contains("another writer is recording this conversation"),
        "{refused}"
    );
}

#[test]
fn wrong_role_errors_read_as_english() {
    let store = MemoryStore::new();
    let mut c = Conversation::open(&store, "job", prompt(), Message::system("s")).unwrap();
    let error = c.record_assistant(Message::user("hi")).unwrap_err();
    assert_eq!(
        error.to_string(),
        "record_assistant: expected an assistant message, got a user message"
    );
    let error = Conversation::start(&store, "job", prompt(), Message::assistant("x")).unwrap_err();
    assert_eq!(error.to_string(), "start: expected a system message, got an assistant message");
}
