//! Invariants that hold for every sequence of events.

use std::collections::HashSet;

use curator_tasks::{
    HistorySection, StepHistory, StepTurn, TaskEvent, TaskHistory, TurnRole, Visibility,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Action {
    Add(u32),
    Activate(u32),
    Append { step: Option<u32>, role: u8, content: String, id_step_back: bool },
    Summarize(u32, String),
    Expand(u32),
}

fn arb_action() -> impl Strategy<Value = Action> {
    prop_oneof![
        1 => (0u32..8).prop_map(Action::Add),
        1 => (0u32..8).prop_map(Action::Activate),
        4 => (prop::option::of(0u32..8), 0u8..3, ".{0,30}", prop::bool::weighted(0.1))
            .prop_map(|(step, role, content, id_step_back)| Action::Append { step, role, content, id_step_back }),
        1 => (0u32..8, ".{0,40}").prop_map(|(step, summary)| Action::Summarize(step, summary)),
        1 => (0u32..8).prop_map(Action::Expand),
    ]
}

fn event(history: &TaskHistory, action: Action) -> TaskEvent {
    match action {
        Action::Add(id) => {
            TaskEvent::AddSteps { steps: vec![StepHistory::new(id, format!("step {id}"))] }
        }
        Action::Activate(id) => TaskEvent::SetActiveStep { step_id: id },
        Action::Append { step, role, content, id_step_back } => {
            let role = [TurnRole::User, TurnRole::Assistant, TurnRole::Tool][usize::from(role)];
            let id = history.next_turn_id().saturating_sub(u64::from(id_step_back));
            TaskEvent::AppendTurn { step_id: step, turn: StepTurn::new(id, role, content) }
        }
        Action::Summarize(id, summary) => TaskEvent::SummarizeStep { step_id: id, summary },
        Action::Expand(id) => TaskEvent::ExpandStep { step_id: id },
    }
}

fn run(actions: Vec<Action>) -> TaskHistory {
    let mut history =
        TaskHistory::new("objective", [(0, "first")]).unwrap_or_else(|_| unreachable!());
    for action in actions {
        let event = event(&history, action);
        let before = history.clone();
        match history.apply(&event) {
            Ok(next) => history = next,
            Err(_) => assert_eq!(history, before, "a rejected event changes nothing"),
        }
    }
    history
}

proptest! {
    #[test]
    fn step_ids_stay_unique_and_turns_in_order(actions in prop::collection::vec(arb_action(), 0..60)) {
        let history = run(actions);
        let mut ids = HashSet::new();
        for step in history.steps() {
            prop_assert!(ids.insert(step.step_id()), "step {} twice", step.step_id());
            prop_assert!(step.turns().windows(2).all(|pair| pair[0].turn_id < pair[1].turn_id));
            prop_assert!(step.summary().is_none_or(|summary| !summary.is_empty() && summary.chars().count() <= 1_000));
        }
        if let Some(active) = history.active_step_id() {
            prop_assert!(history.step(active).is_some());
        }
        // What the reducer builds, `load` accepts as it is.
        let store = curator_session::MemoryStore::new();
        curator_tasks::save(&store, "h", &history).unwrap_or_else(|e| unreachable!("{e}"));
        prop_assert_eq!(curator_tasks::load(&store, "h").unwrap_or_else(|e| unreachable!("{e}")), Some(history));
    }

    #[test]
    fn summarize_then_expand_restores_the_full_rendering(
        actions in prop::collection::vec(arb_action(), 0..60),
        summary in "[a-z]{1}[a-z ]{0,40}",
    ) {
        let history = run(actions);
        let section = HistorySection::new();
        for step in history.steps().filter(|step| step.visibility() == Visibility::Full) {
            let id = step.step_id();
            if history.active_step_id() == Some(id) {
                let refused = history.apply(&TaskEvent::SummarizeStep { step_id: id, summary: summary.clone() });
                let refused_active = matches!(refused, Err(curator_tasks::Error::ActiveStep { step_id }) if step_id == id);
                prop_assert!(refused_active, "the active step was summarized");
                continue;
            }
            let summarized = history.apply(&TaskEvent::SummarizeStep { step_id: id, summary: summary.clone() }).unwrap_or_else(|e| unreachable!("{e}"));
            let hint = format!("expand_step({id})");
            prop_assert!(section.markdown(&summarized).contains(&hint));
            let expanded = summarized.apply(&TaskEvent::ExpandStep { step_id: id }).unwrap_or_else(|e| unreachable!("{e}"));
            prop_assert_eq!(section.markdown(&expanded), section.markdown(&history));
            prop_assert_eq!(section.text(&expanded), section.text(&history));
        }
    }
}

proptest! {
    /// A `summarize_step` call that is accepted makes the section smaller: the step shows
    /// its summary, and the call and its answer (shown compactly) are paid for.
    #[test]
    fn an_accepted_summary_makes_the_section_smaller(
        turns in prop::collection::vec(".{0,80}", 1..6),
        summary in "[a-z][a-z .,]{0,200}",
    ) {
        let mut history = TaskHistory::new("objective", [(1, "done"), (2, "active")])
            .and_then(|history| history.apply(&TaskEvent::SetActiveStep { step_id: 1 }))
            .unwrap_or_else(|e| unreachable!("{e}"));
        for content in turns {
            let turn = StepTurn::new(history.next_turn_id(), TurnRole::Assistant, content);
            history = history.apply(&TaskEvent::append(turn)).unwrap_or_else(|e| unreachable!("{e}"));
        }
        history = history.apply(&TaskEvent::SetActiveStep { step_id: 2 }).unwrap_or_else(|e| unreachable!("{e}"));
        let section = HistorySection::new();
        let before = section.markdown(&history).chars().count();
        let arguments = serde_json::json!({"step_id": 1, "summary": summary}).to_string();
        let call = StepTurn::tool_call(history.next_turn_id(), "summarize_step", "s1", arguments.as_str());
        let with_call = history.apply(&TaskEvent::append(call)).unwrap_or_else(|e| unreachable!("{e}"));
        if let Ok(done) = curator_tasks::summarize_step(&with_call, &arguments) {
            let answer = StepTurn::new(with_call.next_turn_id(), TurnRole::Tool, done.message.as_str())
                .with_tool("summarize_step", "s1");
            let after = with_call
                .apply(&done.event)
                .and_then(|history| history.apply(&TaskEvent::append(answer)))
                .unwrap_or_else(|e| unreachable!("{e}"));
            let after = section.markdown(&after).chars().count();
            prop_assert!(after < before, "{before} -> {after}");
        }
    }
}
