//! The SQLite store: single appends in both durability modes, batches, reads, opening.
#![expect(
    clippy::expect_used,
    reason = "a bench of a failing setup measures nothing and must stop"
)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use curator_model::{Entry, EvaluationId, Message};
use curator_session::SessionStore;
use curator_sqlite::{Durability, Options, SqliteStore};

/// `n` entries of one evaluation, from the synthetic agent history, starting at `from`.
fn entries(evaluation: EvaluationId, from: u64, n: usize) -> Vec<Entry> {
    let messages = curator_testkit::synthetic::agent_history(n + 2, from);
    messages
        .into_iter()
        .take(n)
        .enumerate()
        .map(|(i, m): (usize, Message)| {
            let turn = u32::from(!matches!(
                m.role(),
                curator_model::Role::System | curator_model::Role::User
            ));
            Entry::builder(evaluation, m)
                .sequence(from + i as u64)
                .turn(turn)
                .build()
                .expect("entry")
        })
        .collect()
}

fn open(dir: &tempfile::TempDir, name: &str, durability: Durability) -> SqliteStore {
    SqliteStore::open_with(dir.path().join(name), Options::default().with_durability(durability))
        .expect("open")
}

fn single_appends(c: &mut Criterion) {
    let mut group = c.benchmark_group("sqlite/append_one");
    group.throughput(Throughput::Elements(1));
    for (durability, label) in [(Durability::Normal, "normal"), (Durability::Full, "full")] {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open(&dir, "single.db", durability);
        let evaluation = EvaluationId::new();
        let mut next = 0u64;
        group.bench_function(label, |b| {
            b.iter_custom(|iters| {
                let batch = entries(evaluation, next, usize::try_from(iters).expect("iterations"));
                next += iters;
                let start = Instant::now();
                for entry in &batch {
                    store.append(entry).expect("append");
                }
                start.elapsed()
            });
        });
    }
    group.finish();
}

fn batches_and_reads(c: &mut Criterion) {
    let mut group = c.benchmark_group("sqlite");
    group.sample_size(10);
    group.throughput(Throughput::Elements(10_000));
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(&dir, "batch.db", Durability::Normal);
    group.bench_function("append_batch/10k", |b| {
        b.iter_batched(
            || entries(EvaluationId::new(), 0, 10_000),
            |batch| store.append_batch(&batch).expect("batch"),
            BatchSize::LargeInput,
        );
    });
    // Short messages (a one-line user or assistant turn), to separate per-row cost from bytes.
    group.bench_function("append_batch_short/10k", |b| {
        b.iter_batched(
            || {
                let evaluation = EvaluationId::new();
                (0..10_000u64)
                    .map(|i| {
                        let m = Message::user(format!("Short message number {i} about the task."));
                        Entry::builder(evaluation, m).sequence(i).build().expect("entry")
                    })
                    .collect::<Vec<_>>()
            },
            |batch| store.append_batch(&batch).expect("batch"),
            BatchSize::LargeInput,
        );
    });
    group.bench_function("append_batch_short_fresh/10k", |b| {
        b.iter_batched(
            || {
                let dir = tempfile::tempdir().expect("tempdir");
                let fresh = open(&dir, "fresh.db", Durability::Normal);
                let evaluation = EvaluationId::new();
                let batch = (0..10_000u64)
                    .map(|i| {
                        let m = Message::user(format!("Short message number {i} about the task."));
                        Entry::builder(evaluation, m).sequence(i).build().expect("entry")
                    })
                    .collect::<Vec<_>>();
                (dir, fresh, batch)
            },
            |(dir, fresh, batch)| {
                fresh.append_batch(&batch).expect("batch");
                (dir, fresh)
            },
            BatchSize::PerIteration,
        );
    });
    if let Some(corpus) = curator_testkit::corpus::load() {
        // Real transcripts: every corpus message, cycled to 10k, in one evaluation per batch.
        let messages: Vec<Message> = corpus
            .iter()
            .flat_map(|c| curator_model::formats::openai::to_messages(&c.messages).expect("corpus"))
            .cycle()
            .take(10_000)
            .collect();
        group.bench_function("append_batch_corpus/10k", |b| {
            b.iter_batched(
                || {
                    let evaluation = EvaluationId::new();
                    messages
                        .iter()
                        .enumerate()
                        .map(|(i, m)| {
                            Entry::builder(evaluation, m.clone())
                                .sequence(i as u64)
                                .turn(1)
                                .build()
                                .expect("entry")
                        })
                        .collect::<Vec<_>>()
                },
                |batch| store.append_batch(&batch).expect("batch"),
                BatchSize::LargeInput,
            );
        });
    }
    let evaluation = EvaluationId::new();
    store.append_batch(&entries(evaluation, 0, 10_000)).expect("batch");
    group.bench_function("read/10k", |b| {
        b.iter(|| black_box(store.entries(evaluation).expect("read")));
    });
    group.finish();
}

fn opening(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("big.db");
    {
        let store =
            SqliteStore::open_with(&path, Options::default().with_durability(Durability::Normal))
                .expect("open");
        for chunk in 0..10u64 {
            store
                .append_batch(&entries(EvaluationId::new(), chunk * 10_000, 10_000))
                .expect("batch");
        }
    }
    let mut group = c.benchmark_group("sqlite");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(3));
    group.bench_function("open/100k", |b| {
        b.iter(|| black_box(SqliteStore::open(&path).expect("open")));
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    targets = single_appends, batches_and_reads, opening
}
criterion_main!(benches);
