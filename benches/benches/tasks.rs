//! Task history: rendering 20 steps of 50 turns, and applying one `AppendTurn` to it.
#![expect(
    clippy::expect_used,
    reason = "a bench of a failing setup measures nothing and must stop"
)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use curator_tasks::{HistorySection, StepTurn, TaskEvent, TaskHistory, TurnRole};

/// 20 steps of 50 turns (user, assistant and tool turns of 80 to 400 characters); the last
/// step is active and steps 1 to 5 are summarized.
fn history() -> TaskHistory {
    let mut history = TaskHistory::new(
        "Port the parser to the new grammar",
        (1..=20).map(|id| (id, format!("Step {id} of the port"))),
    )
    .expect("valid steps");
    let mut turn_id = 0;
    for step_id in 1..=20 {
        history = history.apply(&TaskEvent::SetActiveStep { step_id }).expect("known step");
        for n in 0..50 {
            turn_id += 1;
            let content = "cargo test --package parser -- grammar::rules ".repeat(2 + n % 8);
            let turn = match n % 3 {
                0 => StepTurn::new(turn_id, TurnRole::User, content),
                1 => StepTurn::new(turn_id, TurnRole::Assistant, content),
                _ => StepTurn::new(turn_id, TurnRole::Tool, content)
                    .with_tool("bash", format!("call_{turn_id}")),
            };
            history = history.apply(&TaskEvent::append(turn)).expect("in order");
        }
    }
    for step_id in 1..=5 {
        let summary = format!("Step {step_id}: ported the rules, all grammar tests pass.");
        history =
            history.apply(&TaskEvent::SummarizeStep { step_id, summary }).expect("valid summary");
    }
    history
}

fn render(c: &mut Criterion) {
    let history = history();
    let section = HistorySection::new();
    c.bench_function("tasks/render_markdown/20x50", |b| {
        b.iter(|| black_box(section.markdown(black_box(&history))));
    });
    c.bench_function("tasks/render_text/20x50", |b| {
        b.iter(|| black_box(section.text(black_box(&history))));
    });
}

fn append(c: &mut Criterion) {
    let history = history();
    let event = TaskEvent::append(StepTurn::new(
        history.next_turn_id(),
        TurnRole::Assistant,
        "All grammar tests pass now.",
    ));
    c.bench_function("tasks/append_turn/20x50", |b| {
        b.iter(|| black_box(black_box(&history).apply(black_box(&event)).expect("valid")));
    });
}

criterion_group!(benches, render, append);
criterion_main!(benches);
