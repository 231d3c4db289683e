//! `TaskConversation` end to end: a scripted provider that calls the task tools, the exact
//! request sent at each call, compaction, and a crash with a resume from SQLite.

use std::fmt::Write as _;
use std::sync::Arc;

use curator_model::{Message, PromptRef, ToolCall};
use curator_session::{Action, Conversation};
use curator_sqlite::SqliteStore;
use curator_strategies::{CharEstimate, TokenCounter};
use curator_tasks::{ContextPressure, Plan, StepStatus, TaskConversation, Visibility};

const SYSTEM: &str = "You fix bugs. Use the task tools to manage your context.";

fn plan() -> Plan {
    Plan::new(
        "Fix the flaky login test",
        [(1, "Reproduce"), (2, "Find the cause"), (3, "Fix"), (4, "Verify")],
    )
    .with_status(1, StepStatus::InProgress)
}

fn calls(calls: &[(&str, &str, &str)]) -> Message {
    Message::assistant_with_calls(
        None,
        calls.iter().map(|(id, name, arguments)| ToolCall::new(*id, *name, *arguments)).collect(),
    )
}

/// One provider call: checks the request against `expected` (the task-history message) and
/// records `reply`, returning the calls left for the caller.
#[track_caller]
#[expect(clippy::unwrap_used, reason = "a helper of tests: an error is a test failure")]
fn call(
    agent: &mut TaskConversation<&SqliteStore>,
    expected: &str,
    reply: Message,
) -> Vec<ToolCall> {
    let request = agent.request().unwrap();
    assert_eq!(
        request,
        [Message::system(SYSTEM), Message::user(expected)],
        "{}",
        request[1].text()
    );
    agent.record_assistant(reply).unwrap()
}

#[test]
#[expect(clippy::too_many_lines, reason = "one scenario, call by call, with each request in full")]
fn a_four_step_task_with_every_tool_compaction_and_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.db");
    let prompt = PromptRef::new("demo", "fixer");
    let counter: Arc<dyn TokenCounter> = Arc::new(CharEstimate::default());
    let window = 280;

    let store = SqliteStore::open(&path).unwrap();
    let conversation =
        Conversation::open(&store, "job-1", prompt.clone(), Message::system(SYSTEM)).unwrap();
    let mut agent = TaskConversation::open(conversation, &plan())
        .unwrap()
        .with_window(Arc::clone(&counter), window);
    agent.add_user("The login test fails one run in ten.").unwrap();

    // Call 1: the plan, the task in step 1.
    let mut expected = String::from(
        "## Task History\n\n**Objective**: Fix the flaky login test\n\n### 2. Find the cause\n\n### 3. Fix\n\n### 4. Verify\n\n### 1. Reproduce [active]\n\n**User**: The login test fails one run in ten.",
    );
    let left = call(&mut agent, &expected, {
        let mut reply = calls(&[("c1", "cargo_test", r#"{"repeat":20}"#)]);
        reply = Message::assistant_with_calls(
            Some("Running it 20 times.".into()),
            reply.tool_calls().to_vec(),
        );
        reply
    });
    assert_eq!(left.len(), 1);
    agent
        .record_tool_result(
            "c1",
            Ok::<_, String>(
                "test result: FAILED. 18 passed; 2 failed\nfailures: login::expires (seed 42)",
            ),
        )
        .unwrap();

    // Call 2: the model checks the pressure; the adapter answers it.
    expected.push_str("\n**Assistant**: Running it 20 times.\n**Call [cargo_test]**: {\"repeat\":20}\n**[cargo_test]**: test result: FAILED. 18 passed; 2 failed\nfailures: login::expires (seed 42)");
    // The pressure of the request as it stands when the call is answered (the call itself
    // does not show).
    let request_text = format!("{SYSTEM}\n\n{expected}");
    let pressure = ContextPressure::new(counter.count_text(&request_text), window);
    let left = call(&mut agent, &expected, calls(&[("p1", "context_pressure", "{}")]));
    assert!(left.is_empty(), "the adapter answers its own tools");
    assert_eq!(agent.next_step(), Action::CallModel);
    let answer = agent.conversation().history().messages().last().unwrap().text().into_owned();
    assert_eq!(answer, serde_json::to_string(&pressure).unwrap());
    assert!(answer.contains("\"recommendation\":\"ok\""), "{answer}");
    // The section shows the reading on one line.
    write!(
        expected,
        "\n**[context_pressure]**: {} tokens of {window} ({}%): ok",
        pressure.used_tokens,
        pressure.used_tokens * 100 / window
    )
    .unwrap();

    // Step 1 is done, step 2 starts.
    agent
        .sync_plan(&plan().with_status(1, StepStatus::Done).with_status(2, StepStatus::InProgress))
        .unwrap();
    let step_one = expected["## Task History\n\n**Objective**: Fix the flaky login test\n\n### 2. Find the cause\n\n### 3. Fix\n\n### 4. Verify\n\n### 1. Reproduce [active]\n\n".len()..].to_owned();

    // Call 3: step 2 active; the model summarizes step 1 and greps.
    expected = format!(
        "## Task History\n\n**Objective**: Fix the flaky login test\n\n### 1. Reproduce\n\n{step_one}\n\n### 3. Fix\n\n### 4. Verify\n\n### 2. Find the cause [active]"
    );
    let left = call(
        &mut agent,
        &expected,
        calls(&[
            (
                "s1",
                "summarize_step",
                r#"{"step_id": 1, "summary": "login::expires fails with seed 42 (2 of 20 runs)."}"#,
            ),
            ("c2", "grep", r#"{"pattern":"expires"}"#),
        ]),
    );
    assert_eq!(left.iter().map(ToolCall::id).collect::<Vec<_>>(), ["c2"]);
    agent
        .record_tool_result("c2", Ok::<_, String>("src/session.rs:88: let expires = now + ttl;"))
        .unwrap();
    assert_eq!(
        agent.history().step(1).map(curator_tasks::StepHistory::visibility),
        Some(Visibility::Summary)
    );

    // Call 4: step 1 shows its summary; the model expands it again.
    let summarized = "### 1. Reproduce\n\nlogin::expires fails with seed 42 (2 of 20 runs).\n\n_Call `expand_step(1)` for full conversation._";
    let step_two = "**Call [summarize_step]**: {\"step_id\":1}\n**Call [grep]**: {\"pattern\":\"expires\"}\n**[summarize_step]**: Step 1 summarized.\n**[grep]**: src/session.rs:88: let expires = now + ttl;";
    expected = format!(
        "## Task History\n\n**Objective**: Fix the flaky login test\n\n{summarized}\n\n### 3. Fix\n\n### 4. Verify\n\n### 2. Find the cause [active]\n\n{step_two}"
    );
    call(
        &mut agent,
        &expected,
        calls(&[("e1", "expand_step", r#"{"step_id": 1, "reason": "which seed?"}"#)]),
    );
    assert_eq!(
        agent.history().step(1).map(curator_tasks::StepHistory::visibility),
        Some(Visibility::Full)
    );

    // Step 2 is done, step 3 starts. Call 5: step 1 in full again.
    let step_two = format!(
        "{step_two}\n**Call [expand_step]**: {{\"step_id\":1}}\n**[expand_step]**: Step 1 (Reproduce) expanded: its 6 turns show in full in the task history until it is summarized again."
    );
    agent
        .sync_plan(
            &plan()
                .with_status(1, StepStatus::Done)
                .with_status(2, StepStatus::Done)
                .with_status(3, StepStatus::InProgress),
        )
        .unwrap();
    expected = format!(
        "## Task History\n\n**Objective**: Fix the flaky login test\n\n### 1. Reproduce\n\n{step_one}\n\n### 2. Find the cause\n\n{step_two}\n\n### 4. Verify\n\n### 3. Fix [active]"
    );
    call(&mut agent, &expected, calls(&[("c3", "edit", r#"{"file":"src/session.rs","line":88}"#)]));
    agent
        .record_tool_result(
            "c3",
            Ok::<_, String>("patched src/session.rs: expires uses the injected clock"),
        )
        .unwrap();

    // Call 6: over 80 % of the window, so a step is compacted. Not step 1: the model
    // expanded it, and it stays in full while the request fits the window. Step 2 is, with
    // its essentials (the task tools' own exchanges left out).
    let step_three = "**Call [edit]**: {\"file\":\"src/session.rs\",\"line\":88}\n**[edit]**: patched src/session.rs: expires uses the injected clock";
    let step_two_summarized = "### 2. Find the cause\n\ngrep: src/session.rs:88: let expires = now + ttl;\n\n_Call `expand_step(2)` for full conversation._";
    expected = format!(
        "## Task History\n\n**Objective**: Fix the flaky login test\n\n### 1. Reproduce\n\n{step_one}\n\n{step_two_summarized}\n\n### 4. Verify\n\n### 3. Fix [active]\n\n{step_three}"
    );
    call(&mut agent, &expected, calls(&[("c4", "cargo_test", r#"{"repeat":50}"#)]));
    let before_crash = agent.request().unwrap();
    let history_before_crash = agent.history().clone();
    // The process dies with cargo_test running.
    drop(agent);
    drop(store);

    let store = SqliteStore::open(&path).unwrap();
    let conversation =
        Conversation::open(&store, "job-1", prompt, Message::system(SYSTEM)).unwrap();
    // The plan as it stands: step 3 in progress.
    let current = plan()
        .with_status(1, StepStatus::Done)
        .with_status(2, StepStatus::Done)
        .with_status(3, StepStatus::InProgress);
    let mut agent = TaskConversation::open(conversation, &current)
        .unwrap()
        .with_window(Arc::clone(&counter), window);
    // The same history (turn times aside: a turn folded again from the record is stamped
    // when it is folded).
    let untimed = |history: &curator_tasks::TaskHistory| {
        let mut json = serde_json::to_value(history).unwrap();
        for step in json["steps"].as_array_mut().unwrap() {
            for turn in step["turns"].as_array_mut().unwrap() {
                turn.as_object_mut().unwrap().remove("created_at");
            }
        }
        json
    };
    assert_eq!(untimed(agent.history()), untimed(&history_before_crash));
    assert_eq!(agent.request().unwrap(), before_crash, "the same rendering after the resume");
    let Action::Run(waiting) = agent.next_step() else { panic!("{:?}", agent.next_step()) };
    assert_eq!((waiting[0].call_id(), waiting[0].is_resume), ("c4", true));
    agent
        .record_tool_result("c4", Ok::<_, String>("test result: ok. 50 passed; 0 failed"))
        .unwrap();

    // Step 3 is done, step 4 starts. Call 7: the model answers.
    agent
        .sync_plan(
            &plan()
                .with_status(1, StepStatus::Done)
                .with_status(2, StepStatus::Done)
                .with_status(3, StepStatus::Done)
                .with_status(4, StepStatus::InProgress),
        )
        .unwrap();
    let step_three = format!(
        "{step_three}\n**Call [cargo_test]**: {{\"repeat\":50}}\n**[cargo_test]**: test result: ok. 50 passed; 0 failed"
    );
    expected = format!(
        "## Task History\n\n**Objective**: Fix the flaky login test\n\n### 1. Reproduce\n\n{step_one}\n\n{step_two_summarized}\n\n### 3. Fix\n\n{step_three}\n\n### 4. Verify [active]"
    );

    // Call 7, through the ready-made loop: the model answers without a tool.
    let mut requests = Vec::new();
    let outcome = agent
        .run_blocking(
            |request| {
                requests.push(request.to_vec());
                Ok(Message::assistant(
                    "Fixed: the session expiry uses the injected clock; 50 of 50 runs pass.",
                ))
            },
            |context| unreachable!("no tool call is left: {context:?}"),
            3,
        )
        .unwrap();
    assert_eq!(requests, [vec![Message::system(SYSTEM), Message::user(expected)]]);
    assert!(matches!(outcome, curator_tasks::TaskOutcome::Finished(_)));
    assert!(matches!(agent.next_step(), Action::Finished(_)));

    // Every step done: none is active, and with a smaller window every finished step
    // compacts, the last one too; each summary keeps its tool outcomes. Step 1, expanded by
    // the model, is summarized again (with its own summary) only because the request is
    // over the window itself once the others are summarized.
    let done =
        [1, 2, 3, 4].into_iter().fold(plan(), |plan, id| plan.with_status(id, StepStatus::Done));
    agent.sync_plan(&done).unwrap();
    assert_eq!(agent.history().active_step_id(), None);
    let mut agent = agent.with_window(Arc::clone(&counter), 120);
    // Compacted as far as it goes, the request is still over this window: refused, never
    // sent over it. The compaction is kept; with a window that holds it, it is sent.
    assert!(
        matches!(
            agent.request(),
            Err(curator_tasks::Error::WindowExceeded {
                tokens: 169,
                max_tokens: 120,
                active_step: None,
                ..
            })
        ),
        "over the window"
    );
    let mut agent = agent.with_window(Arc::clone(&counter), 200);
    let request = agent.request().unwrap();
    // Step 4 (one short turn) stays in full: no summary of it would be shorter.
    assert_eq!(
        request,
        [
            Message::system(SYSTEM),
            Message::user(format!(
                "## Task History\n\n**Objective**: Fix the flaky login test\n\n{summarized}\n\n\
                 ### 2. Find the cause\n\ngrep: src/session.rs:88: let expires = now + ttl;\n\n\
                 _Call `expand_step(2)` for full conversation._\n\n### 3. Fix\n\n\
                 edit: patched src/session.rs: expires uses the injected clock\n\
                 cargo_test: test result: ok. 50 passed; 0 failed\n\n\
                 _Call `expand_step(3)` for full conversation._\n\n### 4. Verify\n\n\
                 **Assistant**: Fixed: the session expiry uses the injected clock; 50 of 50 runs pass."
            )),
        ]
    );
    // The record kept every message as it happened: 1 system, 1 user, 7 replies, 7 results.
    let record = agent.conversation().history().messages();
    assert_eq!(record.len(), 16);
    curator_model::validate::openai(record).unwrap();
}

/// A scripted model: a reply for each call, by the number of calls so far.
fn scripted(call: usize) -> Message {
    match call {
        0 => calls(&[("c1", "cargo_test", "{}")]),
        // The active step cannot be summarized: the model gets the reason as the answer.
        1 => calls(&[
            ("p1", "context_pressure", "{}"),
            ("s1", "summarize_step", r#"{"step_id": 1, "summary": "Tests ran."}"#),
        ]),
        _ => Message::assistant("All 14 tests pass."),
    }
}

#[expect(clippy::unnecessary_wraps, reason = "the shape of a tool closure, which may fail")]
fn tool(context: &curator_session::ToolContext) -> curator_session::ToolOutcome {
    Ok(format!("{}: test result: ok. 14 passed", context.call.name()).into())
}

#[test]
fn the_async_face_sends_what_the_blocking_one_sends() {
    let prompt = PromptRef::new("demo", "fixer");
    let blocking_store = curator_session::MemoryStore::new();
    let conversation =
        Conversation::open(&blocking_store, "job-1", prompt.clone(), Message::system(SYSTEM))
            .unwrap();
    let mut agent = TaskConversation::open(conversation, &plan()).unwrap();
    agent.add_user("Run the tests.").unwrap();
    let mut blocking = Vec::new();
    let outcome = agent
        .run_blocking(
            |request| {
                blocking.push(request.to_vec());
                Ok(scripted(blocking.len() - 1))
            },
            tool,
            5,
        )
        .unwrap();
    assert!(matches!(outcome, curator_tasks::TaskOutcome::Finished(_)));
    assert_eq!(blocking.len(), 3);
    let last = blocking[2][1].text();
    assert!(
        last.contains("**[summarize_step]**: step 1 is the active step and cannot be summarized"),
        "{last}"
    );

    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let asynchronous = runtime.block_on(async {
        let agent = TaskConversation::open_async(
            curator_session::MemoryStore::new(),
            "job-1",
            prompt,
            Message::system(SYSTEM),
            plan(),
        )
        .await
        .unwrap();
        agent.call(|a| a.add_user("Run the tests.")).await.unwrap();
        let mut requests: Vec<Vec<Message>> = Vec::new();
        let outcome = TaskConversation::run_async(
            &agent,
            async |request: &[Message]| {
                requests.push(request.to_vec());
                Ok(scripted(requests.len() - 1))
            },
            async |context: &curator_session::ToolContext| tool(context),
            5,
        )
        .await
        .unwrap();
        assert!(matches!(outcome, curator_tasks::TaskOutcome::Finished(_)));
        requests
    });
    assert_eq!(asynchronous, blocking);
}

#[test]
fn the_one_driver_loop_waits_for_the_user_and_does_not_resend_a_finished_task() {
    use curator_session::{MemoryStore, Outcome};
    let conversation = Conversation::open(
        MemoryStore::new(),
        "job-wait",
        PromptRef::new("tests", "tasks"),
        Message::system("Work through the plan."),
    )
    .unwrap();
    let mut agent = TaskConversation::open(conversation, &plan()).unwrap();
    let mut sent = 0;
    let mut provider = |_: &[Message]| {
        sent += 1;
        Ok::<_, curator_model::BoxError>(Message::assistant("Done."))
    };
    // Nothing but the system message: nothing to send yet.
    let outcome = agent.run_blocking(&mut provider, tool, 3).unwrap();
    assert_eq!(outcome, Outcome::WaitingForUser);
    agent.add_user("Fix the bug.").unwrap();
    let outcome = agent.run_blocking(&mut provider, tool, 3).unwrap();
    assert_eq!(outcome, Outcome::Finished(Message::assistant("Done.")));
    // Finished: run again, the answer comes from the record, the model is not called.
    let outcome = agent.run_blocking(&mut provider, tool, 3).unwrap();
    assert_eq!(outcome, Outcome::Finished(Message::assistant("Done.")));
    assert_eq!(sent, 1);
}
