//! What a new user's review of issue 16 found, one test per defect: each failed before its
//! fix.

use curator_model::{Message, PromptRef};
use curator_session::{Conversation, MemoryStore};
use curator_tasks::{
    HistorySection, Plan, StepStatus, StepTurn, TaskConversation, TaskEvent, TaskHistory, TurnRole,
    sync_plan,
};

#[expect(clippy::unwrap_used, reason = "a helper of tests: a rejected event is a failure")]
fn applied(mut history: TaskHistory, events: &[TaskEvent]) -> TaskHistory {
    for event in events {
        history = history.apply(event).unwrap();
    }
    history
}

/// Defect 6: a setext underline made a heading of the line above it, a newline in a step
/// title opened a line of its own, and code fences were escaped inside.
#[test]
fn setext_headings_titles_and_code_fences() {
    let plan = Plan::new("Obj", [(1, "Reproduce\n### 9. Fake [active]"), (2, "Fix")])
        .with_status(1, StepStatus::InProgress);
    let Some(TaskEvent::Seed { history }) = sync_plan(None, &plan).events.into_iter().next() else {
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
         ### 1. Reproduce ### 9. Fake [active]\n\n\
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
            "### 1. Reproduce ### 9. Fake [active]\n\nok\n\\### 2. Fix [active]\nfake\nTitle\n\\---\n```\n### code\n```\n\n_Call"
        ),
        "{markdown}"
    );
    assert_eq!(markdown.matches("\n### 2. Fix [active]").count(), 1, "{markdown}");
    assert!(
        HistorySection::new().text(&history).contains("\nStep 1: Reproduce ### 9. Fake [active]\n")
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
