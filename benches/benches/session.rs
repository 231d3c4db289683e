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
use curator_model::{Message, Role, ToolCall};
use curator_session::{MemoryStore, SessionStore};
use curator_sqlite::{Durability, SqliteOptions, SqliteStore};
use curator_strategies::{
    Bpe, CurationContext, Encoding, HistoryManager, HistoryManagerExt, StrategyConfig, TokenBudget,
    ToolResultTruncator,
};

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

/// One agent-loop iteration in a session recorded in SQLite (write-ahead log, `Normal`
/// durability, so that the disk's flushes do not hide what curation costs): record the
/// next message (a call, or its result), build the curated request, read it. The default
/// pipeline (redaction, the budget whose views keep the prompt cache) against the bare
/// token budget, both at 32,000 tokens with o200k counts, at 10,000 and 100,000 messages.
/// `cargo xtask bench` holds the default pipeline to 2x the budget's median of the same run
/// (`docs/benchmarks.md` says how far it is).
fn loop_in_sqlite(c: &mut Criterion) {
    let ctx = CurationContext::default();
    let sizes: &[(usize, &str)] = if curator_benches::quick() {
        &[(10_000, "10k")]
    } else {
        &[(10_000, "10k"), (100_000, "100k")]
    };
    for &(len, label) in sizes {
        let bpe = Bpe::new(Encoding::O200kBase).expect("o200k");
        let pipelines: [(&str, Box<dyn HistoryManager>); 2] = [
            ("token_budget", Box::new(TokenBudget::new(32_000).with_counter(bpe))),
            (
                "default_pipeline",
                StrategyConfig::default_pipeline(32_000).build().expect("default"),
            ),
        ];
        for (name, pipeline) in pipelines {
            let pipeline: &dyn HistoryManager = &*pipeline;
            let dir = tempfile::tempdir().expect("tempdir");
            let store = SqliteStore::open_with(
                dir.path().join("loop.db"),
                SqliteOptions::default().with_durability(Durability::Normal),
            )
            .expect("open");
            let mut conversation = recorded_conversation(&store, len);
            touch(&conversation.request(pipeline, &ctx).expect("request"));
            let mut next = Appender::default();
            c.bench_function(&format!("session/sqlite_loop/{name}/{label}"), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let start = Instant::now();
                        next.record(&mut conversation);
                        let view = conversation.request(pipeline, &ctx).expect("request");
                        black_box(touch(&view));
                        total += start.elapsed();
                    }
                    total
                });
            });
        }
    }
}

/// Records the messages of a synthetic agent history (another seed than the recorded one)
/// one per call, in turn: a result for the first call waiting, else the next user or
/// assistant message (its calls given ids of their own).
#[derive(Default)]
struct Appender {
    turns: usize,
    results: usize,
    step: u64,
}

impl Appender {
    fn pool() -> &'static [Message] {
        static POOL: std::sync::OnceLock<Vec<Message>> = std::sync::OnceLock::new();
        POOL.get_or_init(|| curator_testkit::synthetic::agent_history(2_000, 7).split_off(1))
    }

    fn record<S: SessionStore>(&mut self, conversation: &mut curator_session::Conversation<S>) {
        let pool = Self::pool();
        self.step += 1;
        if let Some(call) = conversation.pending_tool_calls().first().cloned() {
            let result = std::iter::repeat_with(|| {
                self.results += 1;
                &pool[self.results % pool.len()]
            })
            .find(|m| m.role() == Role::Tool)
            .expect("the pool has tool results");
            conversation
                .record_tool_result(call.id(), Ok::<_, String>(result.text().into_owned()))
                .expect("record");
            return;
        }
        let message = std::iter::repeat_with(|| {
            self.turns += 1;
            &pool[self.turns % pool.len()]
        })
        .find(|m| matches!(m.role(), Role::User | Role::Assistant))
        .expect("the pool has turns");
        if message.role() == Role::User {
            let text = message.text().into_owned();
            conversation.add_user(text).expect("record");
            return;
        }
        let calls = message
            .tool_calls()
            .iter()
            .enumerate()
            .map(|(k, c)| ToolCall::new(format!("loop_{}_{k}", self.step), c.name(), c.arguments()))
            .collect();
        conversation
            .record_assistant(Message::assistant_with_calls(message.content().cloned(), calls))
            .expect("record");
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
    targets = record_and_request, loop_in_sqlite, snapshots
}
criterion_main!(benches);
