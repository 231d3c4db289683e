//! Conversational loop overhead: what `curator-loop` adds to each iteration.
//!
//! A 100-iteration loop of a user-turn step and a prompt-only agent step, with
//! `truncate_tokens` (4,096 exact o200k tokens) and the default template: each iteration
//! captures the user's turn, bounds the history, renders it, injects it into the agent's
//! prompt, captures the reply and checkpoints the state to a `MemoryStore`. The agent hands
//! back a prepared reply (no model call). Histories start at 10, 100, 1,000 and 10,000
//! turns; each iteration is timed on its own, and p50 and p99 over all iterations are
//! written to `target/curator-bench/conversation.json` for `cargo xtask bench`.
//!
//! A second scenario, `hitl_<store>`, is the human-in-the-loop loop a chat runs (a human
//! step, then the agent), checkpointed in a `MemoryStore`, in SQLite with
//! `Durability::Normal` and with `Durability::Full` (the default, a sync to disk per commit):
//! each iteration is one `resume` with the human's answer, which completes the iteration and
//! pauses at the next human step. Histories of 10, 1,000 and 10,000 turns are recorded first
//! (for SQLite with `Normal`, then the file is reopened with the durability measured); 200
//! iterations a run are timed, three runs a scenario.
//!
//! A third, `summarize_tokens` and `summarize_turns`, is the first loop with the `summarize`
//! strategy (extractive summaries, memoised per folded chunk) bounded by `max_tokens = 4096`
//! or `max_turns = 40`, on histories of 10, 1,000 and 40,000 turns (built with
//! `truncate_turns`, then restored under the summarizing loop).
//!
//! Each iteration is timed twice: wall-clock, and the thread's on-CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`). On a shared machine a thread is preempted for a whole
//! scheduler slice (4 ms here) now and then, and one iteration in a hundred that waits for
//! the CPU is enough to make the wall-clock p99 a measure of the machine's load; the on-CPU
//! time is what the loop itself costs. Both are reported; the target applies to the on-CPU
//! percentiles (`conversation/<scenario>/<turns>/p99`), the wall-clock ones are reported as
//! `…/wall_p99`.
#![expect(
    clippy::expect_used,
    clippy::print_stdout,
    clippy::cast_precision_loss,
    reason = "a bench program that reports what it measures"
)]

use std::sync::Arc;
use std::time::Instant;

use cpu_time::ThreadTime;

use curator_benches::{percentile, quick, report_dir};
use curator_loop::{
    ConversationLoop, FnStep, Hitl, Injection, LoopBuilder, LoopConfig, StepOutcome, UserTurnSource,
};
use curator_session::{ClaimStore, MemoryStore, SessionStore};
use curator_sqlite::{Durability, SqliteOptions, SqliteStore};

/// What the user says and the agent answers, cycling: prose of 100 to 400 characters.
fn texts() -> Vec<String> {
    let sentence = "The build fails on the parser tests after the last refactor of the lexer. ";
    (0..16).map(|i| sentence.repeat(1 + i % 5)).collect()
}

fn build() -> ConversationLoop {
    build_on("strategy = \"truncate_tokens\"\nmax_tokens = 4096", Arc::new(MemoryStore::new()))
}

/// The user-turn step and the prompt-only agent, bounding the history as `history` says
/// (the `[history_management]` table's lines), checkpointed in `store` (a loop built before
/// on it is restored).
fn build_on(history: &str, store: Arc<MemoryStore>) -> ConversationLoop {
    let mut config = LoopConfig::from_toml(&format!(
        "conversation = true\nai_turn_source = \"last\"\nmax_iterations = 100000000\n[history_management]\n{history}\n[init]\nfrom_initial_input = false",
    ))
    .expect("config");
    config.user_turn_sources = vec![UserTurnSource::NamedSteps];
    config.user_named_steps = vec!["user".into()];
    let say = texts();
    let answer = texts();
    let (mut i, mut j) = (0, 0);
    LoopBuilder::new("bench", config)
        .step(
            "user",
            FnStep::plain(move |_| {
                i += 1;
                Ok(StepOutcome::text(say[i % say.len()].clone()))
            }),
        )
        .step(
            "agent",
            FnStep::agent(Injection::Prompt, move |call| {
                std::hint::black_box(call.messages);
                j += 1;
                Ok(StepOutcome::text(answer[(j * 7) % answer.len()].clone()))
            })
            .with_system("You are a coding assistant."),
        )
        .store(store, "bench")
        .exit_when(|_| true) // one iteration per `run`, so each can be timed
        .build()
        .expect("build")
}

/// Runs `iterations` iterations, returning each one's (on-CPU, wall-clock) duration in
/// nanoseconds.
fn run(l: &mut ConversationLoop, iterations: usize) -> Vec<(u64, u64)> {
    let ns = |d: std::time::Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    (0..iterations)
        .map(|_| {
            let cpu = ThreadTime::now();
            let wall = Instant::now();
            l.run("next").expect("iteration");
            (ns(cpu.elapsed()), ns(wall.elapsed()))
        })
        .collect()
}

/// The chat's loop: the human, then a prompt-only agent, on `store`.
fn hitl(store: impl SessionStore + ClaimStore + 'static) -> ConversationLoop {
    let config = LoopConfig::from_toml(
        "conversation = true\nai_turn_source = \"last\"\nmax_iterations = 100000000\n[history_management]\nstrategy = \"truncate_tokens\"\nmax_tokens = 4096",
    )
    .expect("config");
    let answer = texts();
    let mut j = 0;
    LoopBuilder::new("bench", config)
        .step("user", Hitl::new("you"))
        .step(
            "agent",
            FnStep::agent(Injection::Prompt, move |call| {
                std::hint::black_box(call.messages);
                j += 1;
                Ok(StepOutcome::text(answer[(j * 7) % answer.len()].clone()))
            })
            .with_system("You are a coding assistant."),
        )
        .store(store, "bench")
        .build()
        .expect("build")
}

/// Answers `iterations` times, returning each iteration's (on-CPU, wall-clock) duration in
/// nanoseconds.
fn answer(l: &mut ConversationLoop, iterations: usize) -> Vec<(u64, u64)> {
    let ns = |d: std::time::Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let say = texts();
    (0..iterations)
        .map(|i| {
            let cpu = ThreadTime::now();
            let wall = Instant::now();
            let outcome = l.resume(&say[i % say.len()]).expect("iteration");
            let times = (ns(cpu.elapsed()), ns(wall.elapsed()));
            assert!(outcome.is_paused());
            times
        })
        .collect()
}

/// The human-in-the-loop scenarios: per store, per history length.
fn hitl_rows(sizes: &[usize], runs: usize) -> Vec<serde_json::Value> {
    let mut rows = Vec::new();
    for &size in sizes {
        for store in ["memory", "sqlite_normal", "sqlite_full"] {
            let (mut times, mut walls) = (Vec::new(), Vec::new());
            for _ in 0..runs {
                let dir = tempfile::tempdir().expect("tempdir");
                let path = dir.path().join("chat.db");
                let normal = SqliteOptions::default().with_durability(Durability::Normal);
                let mut l = match store {
                    "memory" => hitl(MemoryStore::new()),
                    _ => hitl(SqliteStore::open_with(&path, normal).expect("open")),
                };
                assert!(l.run("").expect("start").is_paused());
                answer(&mut l, size / 2);
                if store == "sqlite_full" {
                    drop(l);
                    let full = SqliteOptions::default().with_durability(Durability::Full);
                    l = hitl(SqliteStore::open_with(&path, full).expect("reopen"));
                }
                assert_eq!(l.turn_count(), size / 2 * 2);
                answer(&mut l, 10);
                // 200 iterations a run: a p99 over 600 iterations is their sixth slowest,
                // not (as over 150) the second, which one page fault or preemption decides.
                for (cpu, wall) in answer(&mut l, 200) {
                    times.push(cpu);
                    walls.push(wall);
                }
            }
            times.sort_unstable();
            walls.sort_unstable();
            let (p50, p99) = (percentile(&walls, 50), percentile(&walls, 99));
            let (cpu_p50, cpu_p99) = (percentile(&times, 50), percentile(&times, 99));
            let us = |ns: u64| ns as f64 / 1e3;
            println!(
                "conversation/hitl_{store}/{size}: wall-clock p50 {:.1} µs, p99 {:.1} µs; on-CPU p50 {:.1} µs, p99 {:.1} µs; {} iterations",
                us(p50),
                us(p99),
                us(cpu_p50),
                us(cpu_p99),
                walls.len()
            );
            // A sync to disk is waiting, not computing: the wall clock is the measure here.
            rows.push(serde_json::json!({"scenario": format!("hitl_{store}"), "history": size, "iterations": walls.len(),
                "p50_ns": p50, "p99_ns": p99, "cpu_p50_ns": cpu_p50, "cpu_p99_ns": cpu_p99}));
        }
    }
    rows
}

/// The summarize strategy (extractive summaries, memoised per folded chunk), bounded by
/// tokens (`max_tokens = 4096`) or by turns (`max_turns = 40`): the history is built with
/// `truncate_turns` (cheap), then the summarizing loop is restored on it; its first ten
/// iterations (the summaries of everything folded so far) are not timed.
fn summarize_rows(sizes: &[usize], runs: usize) -> Vec<serde_json::Value> {
    let mut rows = Vec::new();
    for (name, bound) in
        [("summarize_tokens", "max_tokens = 4096"), ("summarize_turns", "max_turns = 40")]
    {
        for &size in sizes {
            let (mut times, mut walls) = (Vec::new(), Vec::new());
            for _ in 0..runs {
                let store = Arc::new(MemoryStore::new());
                let mut l =
                    build_on("strategy = \"truncate_turns\"\nmax_turns = 20", Arc::clone(&store));
                run(&mut l, size / 2);
                drop(l);
                let history =
                    format!("strategy = \"summarize\"\nsummarizer = \"extractive\"\n{bound}");
                let mut l = build_on(&history, store);
                assert_eq!(l.turn_count(), size / 2 * 2);
                run(&mut l, 10);
                for (cpu, wall) in run(&mut l, 100) {
                    times.push(cpu);
                    walls.push(wall);
                }
            }
            rows.push(on_cpu_row(name, size, times, walls));
        }
    }
    rows
}

/// The row of a scenario timed on-CPU (the target's measure) and on the wall clock: p50 and
/// p99 of each, printed as they go into the report.
fn on_cpu_row(
    scenario: &str,
    size: usize,
    mut times: Vec<u64>,
    mut walls: Vec<u64>,
) -> serde_json::Value {
    times.sort_unstable();
    walls.sort_unstable();
    let (p50, p99) = (percentile(&times, 50), percentile(&times, 99));
    let (wall_p50, wall_p99) = (percentile(&walls, 50), percentile(&walls, 99));
    let us = |ns: u64| ns as f64 / 1e3;
    println!(
        "conversation/{scenario}/{size}: on-CPU p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs; wall-clock p50 {:.1} µs, p99 {:.1} µs; {} iterations",
        us(p50),
        us(p99),
        us(times.last().copied().unwrap_or(0)),
        us(wall_p50),
        us(wall_p99),
        times.len()
    );
    serde_json::json!({"scenario": scenario, "history": size, "iterations": times.len(),
        "p50_ns": p50, "p99_ns": p99, "wall_p50_ns": wall_p50, "wall_p99_ns": wall_p99})
}

fn main() {
    let sizes: &[usize] = if quick() { &[10, 1_000] } else { &[10, 100, 1_000, 10_000] };
    let runs = if quick() { 2 } else { 5 };
    let mut rows = Vec::new();
    for &size in sizes {
        let (mut times, mut walls) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let mut l = build();
            run(&mut l, size / 2); // two turns an iteration: the history to start from
            assert_eq!(l.turn_count(), size / 2 * 2);
            run(&mut l, 10); // warm-up, as earlier iterations would have
            for (cpu, wall) in run(&mut l, 100) {
                times.push(cpu);
                walls.push(wall);
            }
        }
        rows.push(on_cpu_row("truncate_tokens_template", size, times, walls));
    }
    let hitl_sizes: &[usize] = if quick() { &[10, 1_000] } else { &[10, 1_000, 10_000] };
    rows.extend(hitl_rows(hitl_sizes, if quick() { 1 } else { 3 }));
    let summarize_sizes: &[usize] = if quick() { &[10, 1_000] } else { &[10, 1_000, 40_000] };
    rows.extend(summarize_rows(summarize_sizes, if quick() { 1 } else { 3 }));
    let dir = report_dir();
    std::fs::create_dir_all(&dir).expect("report dir");
    std::fs::write(
        dir.join("conversation.json"),
        serde_json::to_string_pretty(&rows).expect("json"),
    )
    .expect("write report");
}
