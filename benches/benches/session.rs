//! The session layer: recording plus curating per iteration, snapshots and restores.
#![expect(
    clippy::expect_used,
    reason = "a bench of a failing setup measures nothing and must stop"
)]
#![expect(
    clippy::print_stderr,
    clippy::cast_precision_loss,
    reason = "the bench reports the size it measures"
)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use curator_benches::{recorded_conversation, touch};
use curator_model::{Message, ToolCall};
use curator_session::{MemoryStore, SessionStore};
use curator_strategies::{CurationContext, HistoryManagerExt, TokenBudget, ToolResultTruncator};

/// One iteration: record the next message (an assistant call, or its result) and build the
/// curated request.
fn record_and_request(c: &mut Criterion) {
    let ctx = CurationContext::default();
    let pipeline = ToolResultTruncator::new(2_000).expect("valid").then(TokenBudget::new(32_000));
    for (len, label) in [(1_000, "1k"), (10_000, "10k")] {
        c.bench_function(&format!("session/record_and_request/{label}"), |b| {
            b.iter_custom(|iters| {
                let store = MemoryStore::new();
                let mut conversation = recorded_conversation(&store, len);
                touch(&conversation.request(&pipeline, &ctx).expect("request"));
                let output = "x".repeat(800);
                let mut total = Duration::ZERO;
                for i in 0..iters {
                    let start = Instant::now();
                    if let Some(call) = conversation.pending_tool_calls().first().cloned() {
                        conversation
                            .record_tool_result(call.id(), Ok::<_, String>(output.as_str()))
                            .expect("record");
                    } else {
                        let call =
                            ToolCall::new(format!("bench_{i}"), "bash", r#"{"command":"ls"}"#);
                        conversation
                            .record_assistant(Message::assistant_with_calls(None, vec![call]))
                            .expect("record");
                    }
                    let view = conversation.request(&pipeline, &ctx).expect("request");
                    black_box(view.messages());
                    total += start.elapsed();
                }
                total
            });
        });
    }
}

fn snapshots(c: &mut Criterion) {
    let store = MemoryStore::new();
    let conversation = recorded_conversation(&store, 10_000);
    let json = store.snapshot_json().expect("snapshot");
    eprintln!(
        "snapshot of {} messages: {:.1} MB of JSON",
        conversation.history().len(),
        json.len() as f64 / 1e6
    );
    let mut group = c.benchmark_group("session");
    group.sample_size(20);
    group.bench_function("snapshot/10k", |b| {
        b.iter(|| black_box(store.snapshot_json().expect("snapshot")));
    });
    // Each restore goes into a new store, as a process restarting would; dropping the
    // store afterwards is not part of the measurement.
    group.bench_function("restore/10k", |b| {
        b.iter_batched(
            MemoryStore::new,
            |target| {
                target.restore_json(black_box(&json)).expect("restore");
                target
            },
            BatchSize::LargeInput,
        );
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    targets = record_and_request, snapshots
}
criterion_main!(benches);
