//! Loop overhead: the time curator adds to each iteration of a real agent loop.
//!
//! A 100-iteration loop driven through `Conversation` (record the assistant reply and its
//! tool results, curate the next request with tool-result truncation and a token budget),
//! with a `MemoryStore` and with a `SqliteStore` in `Normal` durability, starting from
//! histories of 10, 100, 1,000 and 10,000 messages. Each iteration is timed on its own
//! (model and tool time are not part of it), and p50 and p99 over all iterations are written
//! to `target/curator-bench/loop.json` for `cargo xtask bench`.
#![expect(
    clippy::expect_used,
    clippy::print_stdout,
    clippy::cast_precision_loss,
    reason = "a bench program that reports what it measures"
)]

use std::time::Instant;

use curator_benches::{percentile, quick, recorded_conversation, report_dir};
use curator_model::{Message, ToolCall};
use curator_session::{Conversation, MemoryStore, SessionStore};
use curator_sqlite::{Durability, SqliteOptions, SqliteStore};
use curator_strategies::{CurationContext, HistoryManagerExt, TokenBudget, ToolResultTruncator};

/// Times `iterations` loop iterations; returns each one's duration in nanoseconds.
fn run<S: SessionStore>(conversation: &mut Conversation<S>, iterations: usize) -> Vec<u64> {
    let ctx = CurationContext::default();
    let pipeline = ToolResultTruncator::new(2_000)
        .expect("valid")
        .then(TokenBudget::new(32_000).with_reserve(4_000));
    let mut pool = curator_testkit::synthetic::Rng::new(9);
    let output = "line of tool output\n".repeat(40);
    let mut times = Vec::with_capacity(iterations);
    for i in 0..iterations {
        // What the model and the tools would hand over: prepared outside the timing.
        let calls: Vec<ToolCall> = (0..pool.range(1, 3))
            .map(|k| ToolCall::new(format!("loop_{i}_{k}"), "bash", r#"{"command":"cargo test"}"#))
            .collect();
        let reply = Message::assistant_with_calls(None, calls.clone());
        let start = Instant::now();
        conversation.record_assistant(reply).expect("record");
        for call in &calls {
            conversation
                .record_tool_result(call.id(), Ok::<_, String>(output.as_str()))
                .expect("record");
        }
        let request = conversation.request(&pipeline, &ctx).expect("curate");
        std::hint::black_box(request.messages());
        drop(request);
        times.push(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX));
    }
    times
}

fn main() {
    let sizes: &[usize] = if quick() { &[10, 1_000] } else { &[10, 100, 1_000, 10_000] };
    let runs = if quick() { 2 } else { 5 };
    let mut rows = Vec::new();
    for &size in sizes {
        for store in ["memory", "sqlite"] {
            let mut times = Vec::new();
            for _ in 0..runs {
                if store == "memory" {
                    let memory = MemoryStore::new();
                    let mut conversation = recorded_conversation(&memory, size);
                    run(&mut conversation, 10); // warm-up: fill caches as earlier iterations would
                    times.extend(run(&mut conversation, 100));
                } else {
                    let dir = tempfile::tempdir().expect("tempdir");
                    let sqlite = SqliteStore::open_with(
                        dir.path().join("loop.db"),
                        SqliteOptions::default().with_durability(Durability::Normal),
                    )
                    .expect("open");
                    let mut conversation = recorded_conversation(&sqlite, size);
                    run(&mut conversation, 10);
                    times.extend(run(&mut conversation, 100));
                }
            }
            times.sort_unstable();
            let (p50, p99) = (percentile(&times, 50), percentile(&times, 99));
            println!(
                "loop/{store}/{size}: p50 {:.1} µs, p99 {:.1} µs over {} iterations",
                p50 as f64 / 1e3,
                p99 as f64 / 1e3,
                times.len()
            );
            rows.push(serde_json::json!({"store": store, "history": size, "iterations": times.len(), "p50_ns": p50, "p99_ns": p99}));
        }
    }
    let dir = report_dir();
    std::fs::create_dir_all(&dir).expect("report dir");
    std::fs::write(dir.join("loop.json"), serde_json::to_string_pretty(&rows).expect("json"))
        .expect("write report");
}
