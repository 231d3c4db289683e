//! What the user gave is kept (issue 31): a revised objective keeps the history, the first
//! message before any step is sent, an active step over the window is an error, a plan that
//! cannot be followed is refused. Each failed before its fix.

use std::sync::Arc;

use curator_model::{Message, PromptRef};
use curator_session::{Conversation, MemoryStore};
use curator_strategies::CharEstimate;
use curator_tasks::{Error, HistorySection, Plan, StepStatus, TaskConversation};

#[expect(clippy::unwrap_used, reason = "a helper of tests: an error is a test failure")]
fn open(plan: &Plan) -> TaskConversation<MemoryStore> {
    let conversation =
        Conversation::open(MemoryStore::new(), "k", PromptRef::new("d", "a"), Message::system("s"))
            .unwrap();
    TaskConversation::open(conversation, plan).unwrap()
}

#[expect(clippy::unwrap_used, reason = "a helper of tests: an error is a test failure")]
fn section(agent: &mut TaskConversation<MemoryStore>) -> String {
    agent.request().unwrap().last().unwrap().text().into_owned()
}

#[test]
fn a_revised_objective_keeps_what_the_user_said() {
    let plan = Plan::new("Book a trip", [(1, "Gather constraints"), (2, "Book")])
        .with_status(1, StepStatus::InProgress);
    let mut agent = open(&plan);
    agent.add_user("500 EUR, Berlin, vegetarian").unwrap();
    agent.record_assistant(Message::assistant("Noted.")).unwrap();
    let revised = Plan::new("Book a trip (revised)", [(1, "Gather constraints"), (2, "Book")])
        .with_status(1, StepStatus::Done)
        .with_status(2, StepStatus::InProgress);
    agent.sync_plan(&revised).unwrap();
    let text = section(&mut agent);
    assert!(text.contains("500 EUR, Berlin, vegetarian"), "{text}");
    assert!(text.contains("**Objective**: Book a trip (revised)"), "{text}");
}

#[test]
fn the_first_message_before_any_step_is_sent() {
    let mut agent = open(&Plan::new("Help the user", Vec::<(u32, String)>::new()));
    agent.add_user("My flight LH 454 was cancelled, rebook me").unwrap();
    let text = section(&mut agent);
    assert!(text.contains("My flight LH 454 was cancelled, rebook me"), "{text}");
    assert!(!text.contains("No history recorded"), "{text}");
    // Once the plan has steps, the early turns stay, before them.
    agent
        .sync_plan(
            &Plan::new("Help the user", [(1, "Rebook")]).with_status(1, StepStatus::InProgress),
        )
        .unwrap();
    agent.record_assistant(Message::assistant("Looking for flights.")).unwrap();
    let text = section(&mut agent);
    let before = text.find("LH 454").unwrap();
    let step = text.find("### 1. Rebook").unwrap();
    assert!(before < step, "{text}");
    assert!(text.contains("Looking for flights."), "{text}");
    assert_eq!(agent.history().unplanned().len(), 1);
}

/// A tool result too large for the window in the active step is cut in the request (its
/// beginning and end, with a note of what was cut), as the never-lost rule cuts the newest
/// unit: the run goes on, and the record keeps the whole result.
#[test]
fn an_active_steps_huge_tool_result_is_cut_to_fit_the_window() {
    use curator_strategies::TokenCounter;
    let plan = Plan::new("Read the logs", [(1, "Read")]).with_status(1, StepStatus::InProgress);
    let counter = Arc::new(CharEstimate::default());
    let mut agent = open(&plan).with_window(Arc::clone(&counter) as _, 8_000);
    agent.add_user("Read them").unwrap();
    let calls = agent
        .record_assistant(Message::assistant_with_calls(
            None,
            vec![curator_model::ToolCall::new("c1", "read_logs", "{}")],
        ))
        .unwrap();
    let log = format!("boot ok\n{}FATAL: disk full", "log line ".repeat(25_000));
    agent.record_tool_result(calls[0].id(), Ok::<_, String>(log.clone())).unwrap();
    let request = agent.request().unwrap();
    let tokens: u64 = request.iter().map(|m| counter.count_message(m)).sum();
    assert!(tokens <= 8_000, "{tokens}");
    let text = request.last().unwrap().text().into_owned();
    assert!(text.contains("boot ok") && text.contains("FATAL: disk full"), "{}", &text[..300]);
    assert!(text.contains("tokens cut by curator"), "{}", &text[..300]);
    // The record keeps the result whole.
    let recorded = agent.conversation().history().messages().last().unwrap().text().into_owned();
    assert_eq!(recorded, log);
}

/// What cannot be cut (the user's own message in the active step) over the window is
/// refused, naming the sizes: never sent over it, never silently dropped.
#[test]
fn an_active_step_over_the_window_that_cannot_be_cut_is_refused_naming_the_sizes() {
    let plan = Plan::new("Read the logs", [(1, "Read")]).with_status(1, StepStatus::InProgress);
    let mut agent = open(&plan).with_window(Arc::new(CharEstimate::default()), 8_000);
    agent.add_user("a very long request ".repeat(10_000)).unwrap();
    match agent.request() {
        Err(Error::WindowExceeded { tokens, max_tokens, active_step, active_tokens }) => {
            assert_eq!((max_tokens, active_step), (8_000, Some(1)));
            assert!(tokens > 40_000 && active_tokens > 40_000, "{tokens} {active_tokens}");
        }
        other => panic!("expected WindowExceeded, got {other:?}"),
    }
}

#[test]
fn an_active_step_removed_from_the_plan_is_no_longer_active() {
    let plan = Plan::new("Ship", [(1, "Test"), (2, "Tag")]).with_status(1, StepStatus::InProgress);
    let mut agent = open(&plan);
    agent.sync_plan(&Plan::new("Ship", [(2, "Tag")])).unwrap();
    assert_eq!(agent.history().active_step_id(), None);
    assert!(!HistorySection::new().markdown(agent.history()).contains("[active]"));
}

#[test]
fn a_plan_with_a_repeated_step_or_two_steps_in_progress_is_refused() {
    let mut agent = open(&Plan::new("Ship", [(1, "Test")]));
    let err = agent.sync_plan(&Plan::new("Ship", [(1, "Test"), (1, "Test again")])).unwrap_err();
    assert!(err.to_string().contains("step 1 is listed twice"), "{err}");
    let two = Plan::new("Ship", [(1, "Test"), (2, "Tag")])
        .with_status(1, StepStatus::InProgress)
        .with_status(2, StepStatus::InProgress);
    let err = agent.sync_plan(&two).unwrap_err();
    assert!(err.to_string().contains("steps 1 and 2 are both in progress"), "{err}");
    let conversation = Conversation::open(
        MemoryStore::new(),
        "k2",
        PromptRef::new("d", "a"),
        Message::system("s"),
    )
    .unwrap();
    assert!(matches!(TaskConversation::open(conversation, &two), Err(Error::InvalidPlan { .. })));
}

#[test]
fn a_heading_whose_position_is_not_its_step_id_names_the_id_the_tools_take() {
    let plan = Plan::new("Ship", [(1, "Test"), (3, "Push")]).with_status(1, StepStatus::Done);
    let mut agent = open(&plan);
    // Step 2 is added after step 3 was recorded: the history lists it third.
    let revised = Plan::new("Ship", [(1, "Test"), (2, "Tag"), (3, "Push")])
        .with_status(1, StepStatus::Done)
        .with_status(2, StepStatus::InProgress);
    agent.sync_plan(&revised).unwrap();
    agent.add_user("tag it").unwrap();
    let text = HistorySection::new().markdown(agent.history());
    assert!(text.contains(". Push (step_id 3)"), "{text}");
    assert!(text.contains(". Tag (step_id 2) [active]"), "{text}");
    assert!(text.contains("### 1. Test\n"), "{text}");
}

#[test]
fn an_active_marker_in_a_step_title_is_escaped() {
    let plan = Plan::new("Ship", [(1, "Test [active]"), (2, "Tag")])
        .with_status(1, StepStatus::Done)
        .with_status(2, StepStatus::InProgress);
    let agent = open(&plan);
    let text = HistorySection::new().markdown(agent.history());
    assert!(text.contains("### 1. Test \\[active]\n"), "{text}");
    assert_eq!(text.matches(" [active]").count(), 1, "{text}");
}
