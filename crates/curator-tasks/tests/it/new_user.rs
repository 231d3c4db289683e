//! What a new user's review of issue 16 found, one test per defect: each failed before its
//! fix.

use crate::lifecycle::applied;
use std::sync::Arc;

use curator_model::{Message, PromptRef, ToolCall};
use curator_session::{Conversation, MemoryStore};
use curator_strategies::{CharEstimate, TokenCounter};
use curator_tasks::{
    HistorySection, Plan, StepStatus, StepTurn, TaskConversation, TaskEvent, TurnRole, sync_plan,
};

/// Defect 6: a setext underline made a heading of the line above it, a newline in a step
/// title opened a line of its own, and code fences were escaped inside.
#[test]
fn setext_headings_titles_and_code_fences() {
    let plan = Plan::new("Obj", [(1, "Reproduce\n### 9. Fake [active]"), (2, "Fix")])
        .with_status(1, StepStatus::InProgress);
    let Some(TaskEvent::Seed { history }) =
        sync_plan(None, &plan).unwrap().events.into_iter().next()
    else {
        panic!("no seed")
    };
    let turns = [
        "Setext heading\n===",
        "Another\n---\nafter",
        "```\n### in a fence at the start\n```",
        "Here:\n```rust\n# comment\n### also code\nTitle\n---\n```\n### after the fence",
        "~~~\n### unclosed\n---",
    ];
    let mut history = history;
    for text in turns {
        let turn = StepTurn::new(history.next_turn_id(), TurnRole::Assistant, text);
        history = history.apply(&TaskEvent::append(turn)).unwrap();
    }
    let history = applied(
        history,
        &[
            TaskEvent::SetActiveStep { step_id: 2 },
            TaskEvent::SummarizeStep {
                step_id: 1,
                summary: "ok\n### 2. Fix [active]\nfake\nTitle\n---\n```\n### code\n```".into(),
            },
            TaskEvent::ExpandStep { step_id: 1 },
        ],
    );
    let markdown = HistorySection::new().markdown(&history);
    assert_eq!(
        markdown,
        "## Task History\n\n**Objective**: Obj\n\n\
         ### 1. Reproduce ### 9. Fake \\[active]\n\n\
         **Assistant**: Setext heading\n\\===\n\
         **Assistant**: Another\n\\---\nafter\n\
         **Assistant**:\n```\n### in a fence at the start\n```\n\
         **Assistant**: Here:\n```rust\n# comment\n### also code\nTitle\n---\n```\n\\### after the fence\n\
         **Assistant**:\n~~~\n### unclosed\n---\n~~~\n\n\
         ### 2. Fix [active]"
    );
    let summarized = history.apply(&TaskEvent::SummarizeStep {
        step_id: 1,
        summary: "ok\n### 2. Fix [active]\nfake\nTitle\n---\n```\n### code\n```".into(),
    });
    let markdown = HistorySection::new().markdown(&summarized.unwrap());
    assert!(
        markdown.contains(
            "### 1. Reproduce ### 9. Fake \\[active]\n\nok\n\\### 2. Fix [active]\nfake\nTitle\n\\---\n```\n### code\n```\n\n_Call"
        ),
        "{markdown}"
    );
    assert_eq!(markdown.matches("\n### 2. Fix [active]").count(), 1, "{markdown}");
    assert!(
        HistorySection::new()
            .text(&history)
            .contains("\nStep 1: Reproduce ### 9. Fake \\[active]\n")
    );
}

/// Defect 5: `open` ignored the plan it was given when it resumed a saved history.
#[test]
fn a_resume_applies_the_plan_it_is_given() {
    let store = MemoryStore::new();
    let prompt = PromptRef::new("demo", "agent");
    let plan = Plan::new("Ship", [(1, "Test"), (2, "Tag"), (3, "Announce")])
        .with_status(1, StepStatus::InProgress);
    let open = |plan: &Plan| {
        let conversation =
            Conversation::open(&store, "job-1", prompt.clone(), Message::system("s")).unwrap();
        TaskConversation::open(conversation, plan).unwrap()
    };
    let mut agent = open(&plan);
    agent.add_user("Run the tests.").unwrap();
    let plan = plan.with_status(1, StepStatus::Done).with_status(2, StepStatus::InProgress);
    agent.sync_plan(&plan).unwrap();
    drop(agent);

    // The planner moved on while the process was down.
    let plan = plan.with_status(2, StepStatus::Done).with_status(3, StepStatus::InProgress);
    let mut agent = open(&plan);
    assert_eq!(agent.history().active_step_id(), Some(3));
    agent.add_user("Write the announcement.").unwrap();
    assert_eq!(agent.history().step(3).map(|step| step.turns().len()), Some(1));
    drop(agent);
    // And it was saved: reopening with the same plan changes nothing.
    let agent = open(&plan);
    assert_eq!(agent.history().active_step_id(), Some(3));
    assert_eq!(agent.history().step(3).map(|step| step.turns().len()), Some(1));
}

/// The reviewer's scenario: step 1 ran the tests (a long log) and is done; step 2 starts.
#[expect(clippy::unwrap_used, reason = "a fixture of valid calls; a failure is a test failure")]
fn under_pressure(
    store: &MemoryStore,
    window: u64,
    threshold: f64,
) -> TaskConversation<&MemoryStore> {
    let conversation =
        Conversation::open(store, "job-1", PromptRef::new("d", "a"), Message::system("sys"))
            .unwrap();
    let plan = Plan::new("Obj", [(1, "One"), (2, "Two"), (3, "Three")])
        .with_status(1, StepStatus::InProgress);
    let mut agent = TaskConversation::open(conversation, &plan)
        .unwrap()
        .with_window(Arc::new(CharEstimate::default()), window)
        .with_compaction(Some(threshold));
    agent.add_user("go").unwrap();
    let log =
        format!("test result: ok. 14 passed; 0 failed\n{}", "log line that is noise\n".repeat(30));
    let calls = agent
        .record_assistant(Message::assistant_with_calls(
            Some("Running tests".into()),
            vec![ToolCall::new("c1", "cargo_test", "{}")],
        ))
        .unwrap();
    agent.record_tool_result(calls[0].id(), Ok::<_, String>(log)).unwrap();
    agent.record_assistant(Message::assistant("Step one is finished.")).unwrap();
    agent
        .sync_plan(&plan.with_status(1, StepStatus::Done).with_status(2, StepStatus::InProgress))
        .unwrap();
    agent.add_user("next").unwrap();
    agent
}

/// The text of the latest recorded message (a task tool's answer).
fn last_answer(agent: &TaskConversation<&MemoryStore>) -> String {
    agent
        .conversation()
        .history()
        .messages()
        .last()
        .map(|m| m.text().into_owned())
        .unwrap_or_default()
}

#[expect(clippy::unwrap_used, reason = "a helper of tests: an error is a test failure")]
fn expand_one(agent: &mut TaskConversation<&MemoryStore>) -> String {
    let call = ToolCall::new("e1", "expand_step", r#"{"step_id": 1, "reason": "need logs"}"#);
    agent.record_assistant(Message::assistant_with_calls(None, vec![call])).unwrap();
    last_answer(agent)
}

/// Defect 1: step 1, compacted under pressure, was expanded by the model and compacted
/// again by the next request, so the model never saw it and the answer was false.
#[test]
fn an_expanded_step_stays_expanded_while_it_fits_the_window() {
    let store = MemoryStore::new();
    // Compaction from 70 % of 320 tokens (224): step 1 in full takes the request to 238.
    let mut agent = under_pressure(&store, 320, 0.7);
    let request = agent.request().unwrap();
    assert!(!request[1].text().contains("log line that is noise"), "step 1 was not compacted");
    let answer = expand_one(&mut agent);
    assert_eq!(
        answer,
        "Step 1 (One) expanded: its 5 turns show in full in the task history until it is \
         summarized again."
    );
    for turn in ["ok", "and now?"] {
        let request = agent.request().unwrap();
        let used = CharEstimate::default().count_text(&request[1].text());
        assert!(
            used > 224,
            "not over the threshold, nothing to show: {used}\n{}",
            request[1].text()
        );
        assert!(
            request[1].text().contains("log line that is noise"),
            "the expanded step was compacted again: {}",
            request[1].text()
        );
        agent.add_user(turn).unwrap();
    }
    // The model summarizes it itself: that is final.
    let call = ToolCall::new("s1", "summarize_step", r#"{"step_id": 1, "summary": "14 passed."}"#);
    agent.record_assistant(Message::assistant_with_calls(None, vec![call])).unwrap();
    assert_eq!(last_answer(&agent), "Step 1 summarized.");
    assert!(!agent.request().unwrap()[1].text().contains("log line that is noise"));
}

/// Defect 1, the other side: a step too big for the window stays summarized, and the
/// answer says so.
#[test]
fn an_expand_the_window_cannot_hold_is_refused_truthfully() {
    let store = MemoryStore::new();
    let mut agent = under_pressure(&store, 250, 0.8);
    let before = agent.request().unwrap();
    let answer = expand_one(&mut agent);
    // 278 tokens: the request with step 1 in full, and the call and this answer in step 2.
    assert_eq!(
        answer,
        "step 1 stays summarized: in full it would take the request to 278 tokens, over the \
         window of 250, even with every other finished step summarized"
    );
    assert_eq!(
        agent.history().step(1).map(curator_tasks::StepHistory::visibility),
        Some(curator_tasks::Visibility::Summary)
    );
    let after = agent.request().unwrap();
    assert!(!after[1].text().contains("log line that is noise"));
    let summary = "14 passed; 0 failed\nLast: Step one is finished.\n\n_Call `expand_step(1)`";
    assert!(before[1].text().contains(summary) && after[1].text().contains(summary));

    // Resumed, the refused expand is not replayed: the same request.
    drop(agent);
    let conversation =
        Conversation::open(&store, "job-1", PromptRef::new("d", "a"), Message::system("sys"))
            .unwrap();
    let plan = Plan::new("Obj", [(1, "One"), (2, "Two"), (3, "Three")])
        .with_status(1, StepStatus::Done)
        .with_status(2, StepStatus::InProgress);
    let mut agent = TaskConversation::open(conversation, &plan)
        .unwrap()
        .with_window(Arc::new(CharEstimate::default()), 250);
    assert_eq!(agent.request().unwrap(), after);
}

/// Defect 2: with every step done, `summarize_step` of the step holding the latest turn
/// answered "Step 2 summarized." but its own answer, recorded into that step, dropped the
/// summary.
#[test]
fn a_summary_of_the_last_step_sticks_when_every_step_is_done() {
    let store = MemoryStore::new();
    let conversation =
        Conversation::open(&store, "job-1", PromptRef::new("d", "a"), Message::system("sys"))
            .unwrap();
    let plan = Plan::new("Obj", [(1, "One"), (2, "Two")]).with_status(1, StepStatus::InProgress);
    let mut agent = TaskConversation::open(conversation, &plan).unwrap();
    agent.add_user("Run the tests.").unwrap();
    let plan = plan.with_status(1, StepStatus::Done).with_status(2, StepStatus::InProgress);
    agent.sync_plan(&plan).unwrap();
    let calls = agent
        .record_assistant(Message::assistant_with_calls(
            Some("Tagging the release and checking the pressure.".into()),
            vec![ToolCall::new("c1", "git_tag", r#"{"tag":"v1.2.0","message":"Release 1.2.0"}"#)],
        ))
        .unwrap();
    agent
        .record_tool_result(calls[0].id(), Ok::<_, String>("created tag v1.2.0 at 4b5a484"))
        .unwrap();
    agent.record_assistant(Message::assistant("Tagged v1.2.0; the release is out.")).unwrap();
    agent.sync_plan(&plan.with_status(2, StepStatus::Done)).unwrap();
    assert_eq!(agent.history().active_step_id(), None);

    let call =
        ToolCall::new("s1", "summarize_step", r#"{"step_id": 2, "summary": "Tagged v1.2.0."}"#);
    agent.record_assistant(Message::assistant_with_calls(None, vec![call])).unwrap();
    assert_eq!(last_answer(&agent), "Step 2 summarized.");
    assert_eq!(
        agent.history().step(2).map(curator_tasks::StepHistory::visibility),
        Some(curator_tasks::Visibility::Summary)
    );
    let request = agent.request().unwrap();
    assert!(
        request[1].text().ends_with(
            "### 2. Two\n\nTagged v1.2.0.\n\n_Call `expand_step(2)` for full conversation._"
        ),
        "{}",
        request[1].text()
    );
    // Expanding it works the same way (its call lands in the step it expands).
    let call = ToolCall::new("e1", "expand_step", r#"{"step_id": 2, "reason": "which commit?"}"#);
    agent.record_assistant(Message::assistant_with_calls(None, vec![call])).unwrap();
    assert!(last_answer(&agent).starts_with("Step 2 (Two) expanded"), "{}", last_answer(&agent));
    assert!(agent.request().unwrap()[1].text().contains("created tag v1.2.0 at 4b5a484"));
}

/// The reviewer's `grow` scenario: a finished step with one test run, step 2 active.
#[expect(clippy::unwrap_used, reason = "a fixture of valid calls; a failure is a test failure")]
fn tested(store: &MemoryStore) -> TaskConversation<&MemoryStore> {
    let conversation =
        Conversation::open(store, "k", PromptRef::new("d", "a"), Message::system("s")).unwrap();
    let plan = Plan::new("Ship", [(1, "Test"), (2, "Tag")]).with_status(1, StepStatus::InProgress);
    let mut agent = TaskConversation::open(conversation, &plan).unwrap();
    agent.add_user("Run the auth tests and tell me what fails.").unwrap();
    let call = ToolCall::new("c1", "cargo_test", r#"{"package":"auth"}"#);
    let calls = agent.record_assistant(Message::assistant_with_calls(None, vec![call])).unwrap();
    agent
        .record_tool_result(
            calls[0].id(),
            Ok::<_, String>(
                "running 14 tests\ntest login ... FAILED\ntest result: FAILED. 13 passed; 1 failed",
            ),
        )
        .unwrap();
    agent
        .record_assistant(Message::assistant(
            "test_login fails: the session cookie is dropped after the redirect.",
        ))
        .unwrap();
    agent
        .sync_plan(&plan.with_status(1, StepStatus::Done).with_status(2, StepStatus::InProgress))
        .unwrap();
    agent
}

#[expect(clippy::unwrap_used, reason = "a helper of tests: an error is a test failure")]
fn summarize(agent: &mut TaskConversation<&MemoryStore>, id: &str, step: u32, summary: &str) {
    let arguments = serde_json::json!({"step_id": step, "summary": summary}).to_string();
    let call = ToolCall::new(id, "summarize_step", arguments);
    agent.record_assistant(Message::assistant_with_calls(None, vec![call])).unwrap();
}

/// Defect 3: a summary the "shorter" check accepted made the request bigger (347 -> 387
/// characters): the call, with the whole summary as its argument, and its answer were shown
/// in the active step. Rejected calls and `context_pressure` exchanges stayed in full too.
#[test]
fn the_task_tools_own_exchanges_render_compactly() {
    let store = MemoryStore::new();
    let mut agent = tested(&store);
    let before = agent.request().unwrap()[1].text().len();
    summarize(
        &mut agent,
        "s1",
        1,
        "Auth tests: 13 passed, 1 failed (test_login: session cookie dropped after redirect).",
    );
    assert_eq!(last_answer(&agent), "Step 1 summarized.");
    let request = agent.request().unwrap()[1].text().into_owned();
    assert!(
        request.len() < before,
        "summarizing grew the request: {before} -> {}\n{request}",
        request.len()
    );
    assert!(
        request.ends_with(
            "### 2. Tag [active]\n\n**Call [summarize_step]**: {\"step_id\":1}\n**[summarize_step]**: Step 1 summarized."
        ),
        "{request}"
    );

    // A rejected call shows its answer, not the 900 characters it was given.
    summarize(&mut agent, "s2", 1, &"x".repeat(900));
    let request = agent.request().unwrap()[1].text().into_owned();
    assert!(!request.contains("xxxx"), "{request}");

    // Two pressure readings: the latest shows, on one line; the calls do not.
    for id in ["p1", "p2"] {
        let call = ToolCall::new(id, "context_pressure", "{}");
        agent.record_assistant(Message::assistant_with_calls(None, vec![call])).unwrap();
    }
    let request = agent.request().unwrap()[1].text().into_owned();
    assert_eq!(request.matches("context_pressure").count(), 1, "{request}");
    let last_line = request.lines().last().unwrap_or_default();
    assert!(last_line.starts_with("**[context_pressure]**: "), "{request}");
    assert!(last_line.ends_with(" tokens of 128000 (0%): ok"), "{request}");
}

/// Defect 3: the "shorter" check compares what the rendering becomes, the exchange the call
/// adds included.
#[test]
fn a_summary_that_would_not_pay_for_its_own_call_is_refused() {
    let store = MemoryStore::new();
    let mut agent = tested(&store);
    let before = agent.request().unwrap()[1].text().len();
    // Shorter than the step's turns, but not by the length of the call and its answer.
    let summary = "y".repeat(150);
    summarize(&mut agent, "s1", 1, &summary);
    let answer = last_answer(&agent);
    assert!(
        answer.starts_with("summarizing step 1 would not make the task history shorter"),
        "{answer}"
    );
    assert_eq!(
        agent.history().step(1).map(curator_tasks::StepHistory::visibility),
        Some(curator_tasks::Visibility::Full)
    );
    // Every summary that is accepted makes the request smaller.
    for len in [20, 60, 100, 120, 140] {
        let store = MemoryStore::new();
        let mut agent = tested(&store);
        summarize(&mut agent, "s1", 1, &"z".repeat(len));
        let after = agent.request().unwrap()[1].text().len();
        if last_answer(&agent) == "Step 1 summarized." {
            assert!(after < before, "a summary of {len} grew the request: {before} -> {after}");
        }
    }
}

/// The model chooses how a finished step shows (`show_step`): its title alone, condensed, or
/// its summary once it has one; the answer is recorded, a resumed conversation shows the
/// step the same way, and `expand_step` shows it in full again.
#[test]
fn the_model_chooses_condensed_or_title_visibility_and_a_resume_keeps_it() {
    let store = MemoryStore::new();
    let mut agent = tested(&store);
    let show = |agent: &mut TaskConversation<&MemoryStore>, id: &str, visibility: &str| {
        let arguments = serde_json::json!({"step_id": 1, "visibility": visibility}).to_string();
        let call = ToolCall::new(id, "show_step", arguments);
        agent.record_assistant(Message::assistant_with_calls(None, vec![call])).unwrap();
        agent.conversation().history().messages().last().unwrap().text().into_owned()
    };
    assert!(show(&mut agent, "v1", "summary").contains("has no summary yet"));
    assert_eq!(agent.history().step(1).unwrap().visibility(), curator_tasks::Visibility::Full);
    let answer = show(&mut agent, "v2", "title");
    assert!(answer.starts_with("Step 1 now shows as its title alone"), "{answer}");
    let text = agent.request().unwrap()[1].text().into_owned();
    assert!(text.contains("### 1. Test\n\n### 2. Tag [active]"), "{text}");
    assert!(!text.contains("session cookie"), "{text}");

    // A new process reads the same record and shows the step the same way.
    drop(agent);
    let conversation =
        Conversation::open(&store, "k", PromptRef::new("d", "a"), Message::system("s")).unwrap();
    let plan = Plan::new("Ship", [(1, "Test"), (2, "Tag")])
        .with_status(1, StepStatus::Done)
        .with_status(2, StepStatus::InProgress);
    let mut agent = TaskConversation::open(conversation, &plan).unwrap();
    assert_eq!(agent.request().unwrap()[1].text(), text);

    let answer = show(&mut agent, "v3", "condensed");
    assert!(answer.contains("condensed"), "{answer}");
    let text = agent.request().unwrap()[1].text().into_owned();
    assert!(text.contains("Run the auth tests") && text.contains("session cookie"), "{text}");
    let call = ToolCall::new("e1", "expand_step", r#"{"step_id": 1, "reason": "the logs"}"#);
    agent.record_assistant(Message::assistant_with_calls(None, vec![call])).unwrap();
    assert_eq!(agent.history().step(1).unwrap().visibility(), curator_tasks::Visibility::Full);
}
