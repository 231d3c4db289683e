//! Planning sync, the compaction policy and persistence through a session checkpoint.

use curator_model::Message;
use curator_session::{MemoryStore, SessionStore};
use curator_strategies::{CharEstimate, Summarizer};
use curator_tasks::{
    Budget, Error, HistorySection, Plan, StepStatus, StepTurn, TASK_HISTORY_CHECKPOINT, TaskEvent,
    TaskHistory, TurnRole, Visibility, check_and_compact, load, save, step_messages, sync_plan,
};

use crate::render::worked;

#[expect(clippy::unwrap_used, reason = "a helper of tests: a rejected event is a failure")]
pub(crate) fn applied(mut history: TaskHistory, events: &[TaskEvent]) -> TaskHistory {
    for event in events {
        history = history.apply(event).unwrap();
    }
    history
}

#[test]
fn plan_changes_become_history_events() {
    let plan = Plan::new("Release 2.0", [(1, "Test"), (2, "Tag")]);
    let seeded = sync_plan(None, &plan).unwrap();
    assert_eq!(seeded.events.len(), 1);
    let TaskEvent::Seed { history } = &seeded.events[0] else {
        unreachable!("seed expected, got {:?}", seeded.events)
    };
    assert_eq!(history.objective(), "Release 2.0");
    assert_eq!(history.active_step_id(), None);
    let history = history.clone();

    // Nothing changed: nothing to do.
    assert!(sync_plan(Some(&history), &plan).unwrap().events.is_empty());

    // A step starts: it becomes active.
    let plan = plan.with_status(1, StepStatus::InProgress);
    let sync = sync_plan(Some(&history), &plan).unwrap();
    assert_eq!(sync.events, [TaskEvent::SetActiveStep { step_id: 1 }]);
    let history = applied(history, &sync.events);
    let history = history
        .apply(&TaskEvent::append(StepTurn::new(1, TurnRole::Assistant, "tests pass")))
        .unwrap();

    // A step is added and the next one starts; the finished one is a compaction candidate.
    let mut plan = plan.with_status(1, StepStatus::Done).with_status(2, StepStatus::InProgress);
    plan.steps.push(curator_tasks::PlanStep {
        step_id: 3,
        title: "Announce".into(),
        status: StepStatus::Pending,
    });
    let sync = sync_plan(Some(&history), &plan).unwrap();
    assert_eq!(sync.completed, [1]);
    let history = applied(history, &sync.events);
    assert_eq!(
        history.steps().map(curator_tasks::StepHistory::step_id).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert_eq!(history.active_step_id(), Some(2));

    // Once summarized, a done step is no longer a candidate.
    let history = history
        .apply(&TaskEvent::SummarizeStep { step_id: 1, summary: "Tests pass.".into() })
        .unwrap();
    assert!(sync_plan(Some(&history), &plan).unwrap().completed.is_empty());
}

#[test]
fn compaction_summarizes_the_oldest_completed_full_step_above_the_threshold() {
    let counter = CharEstimate::default();
    let history = worked().apply(&TaskEvent::SetActiveStep { step_id: 3 }).unwrap();
    let used = Budget::new(&counter, 1).used_tokens(&history);

    // At or under 80 % of the window: nothing.
    assert_eq!(
        check_and_compact(&history, &Budget::new(&counter, used * 5 / 4 + 1)).unwrap(),
        None
    );
    // Over it: step 1, the oldest completed one, with the essentials of its turns.
    let event = check_and_compact(&history, &Budget::new(&counter, used)).unwrap().unwrap();
    let TaskEvent::SummarizeStep { step_id, summary } = &event else { unreachable!("{event:?}") };
    assert_eq!(*step_id, 1);
    assert_eq!(
        summary,
        "Asked: The parser test fails one run in ten.\n\
         cargo_test ×2: 5 of 50 runs failed | seed 42 fails\n\
         Last: It depends on HashMap order."
    );
    let history = history.apply(&event).unwrap();
    // Step 2 holds one short turn: no summary of it is shorter, so compaction is refused
    // rather than making the prompt bigger. The active step is never a candidate.
    let refused = check_and_compact(&history, &Budget::new(&counter, 1)).unwrap_err();
    assert!(matches!(refused, Error::SummaryNotShorter { step_id: 2, .. }), "{refused}");
    let history = history.apply(&TaskEvent::SetActiveStep { step_id: 2 }).unwrap();
    assert_eq!(check_and_compact(&history, &Budget::new(&counter, 1)).unwrap(), None);
    assert_eq!(history.step(2).map(curator_tasks::StepHistory::visibility), Some(Visibility::Full));
}

#[derive(Debug)]
struct Failing;

impl Summarizer for Failing {
    fn summarize(&self, _: Option<&str>, _: &[&Message]) -> curator_strategies::Result<String> {
        Err(curator_strategies::Error::Summarizer {
            summarizer: "failing".into(),
            message: "offline".into(),
            source: None,
        })
    }

    fn key(&self) -> u64 {
        7
    }
}

#[test]
fn compaction_reports_a_failing_summarizer_and_changes_nothing() {
    let counter = CharEstimate::default();
    let history = worked().apply(&TaskEvent::SetActiveStep { step_id: 3 }).unwrap();
    let error = check_and_compact(&history, &Budget::new(&counter, 1).with_summarizer(&Failing))
        .unwrap_err();
    assert!(matches!(error, Error::Summarizer { step_id: 1, .. }), "{error}");
}

#[test]
fn step_messages_pair_tool_results_with_their_calls() {
    let history = worked();
    let messages = step_messages(history.step(1).unwrap());
    assert_eq!(messages.len(), 7);
    curator_model::validate::openai(&messages).unwrap();
}

#[test]
fn a_task_survives_a_restart_through_a_checkpoint() {
    let store = MemoryStore::new();
    let history = worked()
        .apply(&TaskEvent::SummarizeStep { step_id: 1, summary: "HashMap order.".into() })
        .unwrap();
    assert_eq!(save(&store, TASK_HISTORY_CHECKPOINT, &worked()).unwrap(), 1);
    assert_eq!(save(&store, TASK_HISTORY_CHECKPOINT, &history).unwrap(), 2);
    let restored = load(&store, TASK_HISTORY_CHECKPOINT).unwrap().unwrap();
    assert_eq!(restored, history);
    assert_eq!(HistorySection::new().markdown(&restored), HistorySection::new().markdown(&history));
    assert_eq!(restored.next_turn_id(), history.next_turn_id());

    store.put_checkpoint("other", &serde_json::json!({"not": "a history"})).unwrap();
    assert!(matches!(load(&store, "other"), Err(Error::Document { .. })));
    let mut document = serde_json::to_value(&history).unwrap();
    document["steps"][1]["step_id"] = serde_json::json!(1);
    store.put_checkpoint("edited", &document).unwrap();
    assert!(matches!(load(&store, "edited"), Err(Error::DuplicateStep { step_id: 1 })));
}

/// A step finished out of the plan's order (step 3 worked before step 1) is summarized like
/// any other once the model has moved on: the request fits instead of the run ending over
/// the window.
#[test]
fn compaction_summarizes_a_step_finished_out_of_order() {
    let counter = CharEstimate::default();
    let mut history = TaskHistory::new("Ship", [(1, "Test"), (2, "Docs"), (3, "Bench")])
        .unwrap()
        .apply(&TaskEvent::SetActiveStep { step_id: 3 })
        .unwrap();
    for id in 1..=30 {
        let turn = StepTurn::new(id, TurnRole::Assistant, "bench run: 3.2 ms p50, 9.1 ms p99");
        history = history.apply(&TaskEvent::append(turn)).unwrap();
    }
    history = history.apply(&TaskEvent::SetActiveStep { step_id: 1 }).unwrap();
    history = history
        .apply(&TaskEvent::append(StepTurn::new(1, TurnRole::User, "Now the tests.")))
        .unwrap();
    let used = Budget::new(&counter, 1).used_tokens(&history);
    let event = check_and_compact(&history, &Budget::new(&counter, used)).unwrap();
    let Some(TaskEvent::SummarizeStep { step_id, .. }) = &event else { panic!("{event:?}") };
    assert_eq!(*step_id, 3);
    let history = history.apply(&event.unwrap()).unwrap();
    assert!(Budget::new(&counter, 1).used_tokens(&history) < used / 2);
}

/// A turn appended to a summarized step keeps the model's summary: the step shows the
/// summary, then the new turns; compaction later folds them into the summary.
#[test]
fn a_summary_survives_an_append_and_the_new_turns_show_after_it() {
    let counter = CharEstimate::default();
    let mut history = TaskHistory::new("Ship", [(1, "Test"), (2, "Tag")])
        .unwrap()
        .apply(&TaskEvent::SetActiveStep { step_id: 1 })
        .unwrap();
    for id in 1..=20 {
        let turn = StepTurn::new(id, TurnRole::Assistant, "ran the suite again, 3 failures left");
        history = history.apply(&TaskEvent::append(turn)).unwrap();
    }
    let summary = "The suite fails 3 tests: the parser's, on HashMap order.";
    history = applied(
        history,
        &[
            TaskEvent::SetActiveStep { step_id: 2 },
            TaskEvent::SummarizeStep { step_id: 1, summary: summary.into() },
            TaskEvent::AppendTurn {
                step_id: Some(1),
                turn: StepTurn::new(21, TurnRole::Tool, "test result: ok. 212 passed")
                    .with_tool("cargo_test", "c9"),
            },
        ],
    );
    let step = history.step(1).unwrap();
    assert_eq!((step.summary(), step.visibility()), (Some(summary), Visibility::Summary));
    let text = HistorySection::new().markdown(&history);
    assert!(
        text.contains(&format!(
            "{summary}\n\n**[cargo_test]**: test result: ok. 212 passed\n\n_Call `expand_step(1)`"
        )),
        "{text}"
    );
    assert!(!text.contains("3 failures left"), "{text}");

    // Over the threshold, compaction folds the later turns into the summary.
    for id in 22..=40 {
        let turn = StepTurn::new(id, TurnRole::Assistant, "checked the release notes once more");
        history = history.apply(&TaskEvent::AppendTurn { step_id: Some(1), turn }).unwrap();
    }
    let used = Budget::new(&counter, 1).used_tokens(&history);
    let event = check_and_compact(&history, &Budget::new(&counter, used)).unwrap().unwrap();
    let TaskEvent::SummarizeStep { step_id: 1, summary: extended } = &event else {
        panic!("{event:?}")
    };
    assert!(extended.starts_with(summary) && extended.contains("212 passed"), "{extended}");
    let history = history.apply(&event).unwrap();
    assert!(history.step(1).unwrap().turns_after_summary().is_empty());
    assert!(Budget::new(&counter, 1).used_tokens(&history) < used / 2);
}

/// A summary with no room left for what later turns add is not extended by cutting them
/// away: the step keeps showing its later turns.
#[test]
fn a_full_summary_is_not_extended_by_dropping_the_turns_after_it() {
    let counter = CharEstimate::default();
    let long = "x".repeat(995);
    let mut history = TaskHistory::new("Ship", [(1, "Test"), (2, "Tag")])
        .unwrap()
        .apply(&TaskEvent::SetActiveStep { step_id: 1 })
        .unwrap();
    history = applied(
        history,
        &[
            TaskEvent::append(StepTurn::new(1, TurnRole::Assistant, "ran it")),
            TaskEvent::SetActiveStep { step_id: 2 },
            TaskEvent::SummarizeStep { step_id: 1, summary: long.clone() },
            TaskEvent::AppendTurn {
                step_id: Some(1),
                turn: StepTurn::new(2, TurnRole::Tool, "test result: ok. 212 passed")
                    .with_tool("cargo_test", "c9"),
            },
        ],
    );
    let used = Budget::new(&counter, 1).used_tokens(&history);
    assert_eq!(check_and_compact(&history, &Budget::new(&counter, used)).unwrap(), None);
    assert_eq!(history.step(1).unwrap().turns_after_summary().len(), 1);
}
