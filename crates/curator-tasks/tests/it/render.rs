//! Golden renderings for every visibility level, and the cache-friendly layout.

use curator_tasks::{
    HistorySection, StepTurn, StepVisibilityResolver, TaskEvent, TaskHistory, TurnRole, Visibility,
};

#[expect(clippy::unwrap_used, reason = "a fixture of valid events; a failure is a test failure")]
pub(crate) fn worked() -> TaskHistory {
    let mut history =
        TaskHistory::new("Fix the flaky test", [(1, "Reproduce"), (2, "Fix"), (3, "Verify")])
            .unwrap();
    let mut id = 0;
    let mut turn = |role: TurnRole, content: &str| {
        id += 1;
        StepTurn::new(id, role, content)
    };
    let step_one = [
        turn(TurnRole::User, "The parser test fails one run in ten."),
        turn(TurnRole::Assistant, "Running it 50 times."),
        turn(TurnRole::Tool, "5 of 50 runs failed").with_tool("cargo_test", "call_1"),
        turn(TurnRole::Assistant, "It depends on HashMap order."),
        turn(TurnRole::Tool, "seed 42 fails").with_tool("cargo_test", "call_2"),
    ];
    let step_two = [turn(TurnRole::Assistant, "Switching to BTreeMap.")];
    history = history.apply(&TaskEvent::SetActiveStep { step_id: 1 }).unwrap();
    for t in step_one {
        history = history.apply(&TaskEvent::append(t)).unwrap();
    }
    history = history.apply(&TaskEvent::SetActiveStep { step_id: 2 }).unwrap();
    for t in step_two {
        history = history.apply(&TaskEvent::append(t)).unwrap();
    }
    history
}

const HEAD: &str = "## Task History\n\n**Objective**: Fix the flaky test\n";
const ACTIVE: &str = "\n### 2. Fix [active]\n\n**Assistant**: Switching to BTreeMap.";

#[track_caller]
fn check(section: &HistorySection, history: &TaskHistory, step_one: &str) {
    let expected = format!("{HEAD}\n### 1. Reproduce\n{step_one}\n### 3. Verify\n{ACTIVE}");
    assert_eq!(section.markdown(history), expected);
}

#[test]
fn full() {
    check(
        &HistorySection::new(),
        &worked(),
        "
**User**: The parser test fails one run in ten.
**Assistant**: Running it 50 times.
**[cargo_test]**: 5 of 50 runs failed
**Assistant**: It depends on HashMap order.
**[cargo_test]**: seed 42 fails
",
    );
}

#[test]
fn condensed() {
    let section = HistorySection::new()
        .with_resolver(StepVisibilityResolver::new().with_override(1, Visibility::Condensed));
    check(
        &section,
        &worked(),
        "
**User**: The parser test fails one run in ten.
**[cargo_test]**: 5 of 50 runs failed
**[cargo_test]**: seed 42 fails

_3 of 5 turns shown. Call `expand_step(1)` for full conversation._
",
    );
}

/// A step with several tool results keeps its conclusion (the last turn) when condensed: the
/// newest result fills the room left between what was asked and how it ended.
#[test]
fn condensed_keeps_the_conclusion_of_a_step_with_several_results() {
    let mut history = TaskHistory::new("Ship", [(1, "Test"), (2, "Tag")])
        .unwrap()
        .apply(&TaskEvent::SetActiveStep { step_id: 1 })
        .unwrap();
    for turn in [
        StepTurn::new(1, TurnRole::User, "Run the suites."),
        StepTurn::new(2, TurnRole::Tool, "unit: 120 passed").with_tool("cargo_test", "c1"),
        StepTurn::new(3, TurnRole::Tool, "e2e: 3 failed").with_tool("cargo_test", "c2"),
        StepTurn::new(4, TurnRole::Tool, "e2e again: 0 failed").with_tool("cargo_test", "c3"),
        StepTurn::new(5, TurnRole::Assistant, "All green after the retry; e2e is flaky."),
    ] {
        history = history.apply(&TaskEvent::append(turn)).unwrap();
    }
    let history = history.apply(&TaskEvent::SetActiveStep { step_id: 2 }).unwrap();
    let section = HistorySection::new()
        .with_resolver(StepVisibilityResolver::new().with_override(1, Visibility::Condensed));
    let text = section.markdown(&history);
    assert!(
        text.contains(
            "**User**: Run the suites.\n**[cargo_test]**: e2e again: 0 failed\n**Assistant**: All green after the retry; e2e is flaky.\n"
        ),
        "{text}"
    );
    assert!(text.contains("_3 of 5 turns shown."), "{text}");
}

#[test]
fn summary() {
    let history = worked()
        .apply(&TaskEvent::SummarizeStep {
            step_id: 1,
            summary: "Flaky because of HashMap order; seed 42 reproduces.".into(),
        })
        .unwrap();
    check(
        &HistorySection::new(),
        &history,
        "
Flaky because of HashMap order; seed 42 reproduces.

_Call `expand_step(1)` for full conversation._
",
    );
}

#[test]
fn title() {
    let section = HistorySection::new()
        .with_resolver(StepVisibilityResolver::new().with_override(1, Visibility::Title));
    check(&section, &worked(), "");
}

#[test]
fn overrides_beat_stored_visibility_and_summary_without_text_shows_in_full() {
    let history =
        worked().apply(&TaskEvent::SummarizeStep { step_id: 1, summary: "short".into() }).unwrap();
    let full = HistorySection::new()
        .with_resolver(StepVisibilityResolver::new().with_override(1, Visibility::Full));
    assert_eq!(full.markdown(&history), HistorySection::new().markdown(&worked()));
    let summary_without_text = HistorySection::new()
        .with_resolver(StepVisibilityResolver::new().with_override(1, Visibility::Summary));
    assert_eq!(summary_without_text.markdown(&worked()), HistorySection::new().markdown(&worked()));
}

#[test]
fn plain_text() {
    let history = worked()
        .apply(&TaskEvent::SummarizeStep { step_id: 1, summary: "HashMap order.".into() })
        .unwrap();
    assert_eq!(
        HistorySection::new().text(&history),
        "Task: Fix the flaky test

Step 1: Reproduce
[Summary] HashMap order.
[Call `expand_step` with this step_id for full history]

Step 3: Verify

Step 2: Fix [active]
  [assistant] Switching to BTreeMap."
    );
    let expanded = history.apply(&TaskEvent::ExpandStep { step_id: 1 }).unwrap();
    assert!(
        HistorySection::new()
            .text(&expanded)
            .contains("\n  [tool:cargo_test] 5 of 50 runs failed\n")
    );
}

#[test]
fn only_the_tail_changes_as_the_active_step_grows() {
    let before = worked();
    let after = before
        .apply(&TaskEvent::append(
            StepTurn::new(99, TurnRole::Tool, "all green").with_tool("cargo_test", "call_3"),
        ))
        .unwrap();
    let (before, after) =
        (HistorySection::new().markdown(&before), HistorySection::new().markdown(&after));
    assert!(after.starts_with(&before), "the rendering before is a prefix of the one after");
    assert!(after.ends_with("\n**[cargo_test]**: all green"));
}

#[test]
fn an_empty_history_says_so() {
    let history = TaskHistory::new("Nothing yet", Vec::<(u32, String)>::new()).unwrap();
    assert_eq!(
        HistorySection::new().markdown(&history),
        "## Task History\n\n**Objective**: Nothing yet\n\n_No history recorded._"
    );
    assert_eq!(HistorySection::new().text(&history), "Task: Nothing yet\n\n<no history recorded>");
}

/// A step whose text needs no escaping but holds task tools' exchanges still shows them
/// reduced: the call's arguments as its step id, only the latest pressure answer, none of
/// the pressure calls. (Rendering takes a shortcut for steps shown as written.)
#[test]
fn task_tool_exchanges_are_reduced_in_a_step_with_plain_text() {
    let pressure =
        |used: u64| format!(r#"{{"used_tokens":{used},"max_tokens":1000,"recommendation":"ok"}}"#);
    let turns = [
        StepTurn::new(1, TurnRole::Assistant, "Looking at step 1 again."),
        StepTurn::new(2, TurnRole::ToolCall, r#"{"step_id":1,"reason":"which seed failed"}"#)
            .with_tool("expand_step", "e1"),
        StepTurn::new(3, TurnRole::Tool, "Step 1 expanded.").with_tool("expand_step", "e1"),
        StepTurn::new(4, TurnRole::ToolCall, "{}").with_tool("context_pressure", "p1"),
        StepTurn::new(5, TurnRole::Tool, pressure(300)).with_tool("context_pressure", "p1"),
        StepTurn::new(6, TurnRole::ToolCall, "{}").with_tool("context_pressure", "p2"),
        StepTurn::new(7, TurnRole::Tool, pressure(600)).with_tool("context_pressure", "p2"),
    ];
    let mut history = TaskHistory::new("Fix the flaky test", [(1, "Reproduce")])
        .unwrap()
        .apply(&TaskEvent::SetActiveStep { step_id: 1 })
        .unwrap();
    for turn in turns {
        history = history.apply(&TaskEvent::append(turn)).unwrap();
    }
    let text = HistorySection::new().text(&history);
    assert_eq!(
        text,
        "Task: Fix the flaky test\n\nStep 1: Reproduce [active]\n  [assistant] Looking at step 1 \
         again.\n  [call:expand_step] {\"step_id\":1}\n  [tool:expand_step] Step 1 expanded.\n  \
         [tool:context_pressure] 600 tokens of 1000 (60%): ok"
    );
    let markdown = HistorySection::new().markdown(&history);
    assert!(!markdown.contains("which seed failed"), "{markdown}");
    assert!(!markdown.contains("300 tokens"), "{markdown}");
    assert!(
        markdown.ends_with("**[context_pressure]**: 600 tokens of 1000 (60%): ok"),
        "{markdown}"
    );
}

/// The line a `context_pressure` answer is shown as is escaped like any text a tool wrote:
/// a recommendation that decodes to a heading cannot open a step of its own, although the
/// raw answer (JSON, with its line break escaped) holds no hazard itself.
#[test]
fn a_pressure_answer_that_decodes_to_a_heading_is_escaped() {
    // No `#` and no line starting with `-` in the raw text: JSON escapes carry them.
    let answer = r#"{"used_tokens":1,"max_tokens":2,"recommendation":"ok\n\u0023 Injected\n---"}"#;
    let turn = StepTurn::new(1, TurnRole::Tool, answer).with_tool("context_pressure", "p1");
    let history = TaskHistory::new("Fix the flaky test", [(1, "Reproduce")])
        .unwrap()
        .apply(&TaskEvent::SetActiveStep { step_id: 1 })
        .unwrap()
        .apply(&TaskEvent::append(turn))
        .unwrap();
    let markdown = HistorySection::new().markdown(&history);
    assert!(markdown.ends_with("1 tokens of 2 (50%): ok\n\\# Injected\n\\---"), "{markdown}");
    assert!(!markdown.lines().any(|line| line.starts_with("# ")), "{markdown}");
    let text = HistorySection::new().text(&history);
    assert!(text.ends_with("(50%): ok\n\\# Injected\n\\---"), "{text}");
}
