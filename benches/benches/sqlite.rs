//! The SQLite store: single appends in both durability modes, batches, reads, opening (the
//! scenarios every store runs are in `curator_benches::store`).
#![expect(
    clippy::expect_used,
    reason = "a bench of a failing setup measures nothing and must stop"
)]
#![expect(clippy::print_stderr, reason = "the bench reports how long its setup took")]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use curator_benches::store::{self, entries, key};
use curator_model::{Entry, EvaluationId, Message};
use curator_session::SessionStore;
use curator_sqlite::{Durability, SqliteOptions, SqliteStore};

fn open(dir: &tempfile::TempDir, name: &str, durability: Durability) -> SqliteStore {
    SqliteStore::open_with(
        dir.path().join(name),
        SqliteOptions::default().with_durability(durability),
    )
    .expect("open")
}

fn single_appends(c: &mut Criterion) {
    let mut group = c.benchmark_group("sqlite/append_one");
    for (durability, label) in [(Durability::Normal, "normal"), (Durability::Full, "full")] {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = open(&dir, "single.db", durability);
        store::append_one(&mut group, label, &store);
    }
    group.finish();
}

/// 10,000 short messages (a one-line user or assistant turn) of a new evaluation, to
/// separate per-row cost from bytes.
fn short_batch() -> Vec<Entry> {
    let evaluation = EvaluationId::new();
    (0..10_000u64)
        .map(|i| {
            let m = Message::user(format!("Short message number {i} about the task."));
            Entry::builder(evaluation, m).sequence(i).build().expect("entry")
        })
        .collect()
}

fn batches_and_reads(c: &mut Criterion) {
    let mut group = c.benchmark_group("sqlite");
    group.sample_size(10);
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(&dir, "batch.db", Durability::Normal);
    store::append_batch(&mut group, "append_batch/10k", &store, 10_000);
    group.throughput(Throughput::Elements(10_000));
    group.bench_function("append_batch_short/10k", |b| {
        b.iter_batched(
            short_batch,
            |batch| store.append_batch(&key(), &batch).expect("batch"),
            BatchSize::LargeInput,
        );
    });
    group.bench_function("append_batch_short_fresh/10k", |b| {
        b.iter_batched(
            || {
                let dir = tempfile::tempdir().expect("tempdir");
                let fresh = open(&dir, "fresh.db", Durability::Normal);
                (dir, fresh, short_batch())
            },
            |(dir, fresh, batch)| {
                fresh.append_batch(&key(), &batch).expect("batch");
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
                |batch| store.append_batch(&key(), &batch).expect("batch"),
                BatchSize::LargeInput,
            );
        });
        row_checksums(&mut group, "row_checksum/corpus_10k", &messages);
    }
    store::read(&mut group, "read/10k", &store, 10_000);
    // The same messages `read/10k` reads: written in batches of 1,000.
    let read: Vec<Message> = (0..10_000u64)
        .step_by(1_000)
        .flat_map(|from| entries(EvaluationId::new(), from, 1_000))
        .map(|e| e.message)
        .collect();
    row_checksums(&mut group, "row_checksum/read_10k", &read);
    group.finish();
}

/// The row checksum alone (written on every append, verified on every read) over the rows
/// of `messages`: its share of the append and read scenarios of the same rows is its cost,
/// measured apart from the noise of the disk.
fn row_checksums(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    id: &str,
    messages: &[Message],
) {
    let evaluation = EvaluationId::new();
    let rows: Vec<(Vec<u8>, String)> = messages
        .iter()
        .map(|m| {
            let id = EvaluationId::new().as_uuid().as_bytes().to_vec();
            (id, serde_json::to_string(m).expect("json"))
        })
        .collect();
    group.throughput(Throughput::Bytes(rows.iter().map(|(_, json)| json.len() as u64).sum()));
    group.bench_function(id, |b| {
        b.iter(|| {
            rows.iter().zip(0i64..).fold(0i64, |acc, ((id, json), i)| {
                acc ^ curator_session::rows::row_checksum(
                    id,
                    evaluation.as_uuid().as_bytes(),
                    i,
                    1,
                    None,
                    None,
                    1_700_000_000_000_000_000,
                    black_box(json),
                )
            })
        });
    });
}

fn opening(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("big.db");
    {
        let store = SqliteStore::open_with(
            &path,
            SqliteOptions::default().with_durability(Durability::Normal),
        )
        .expect("open");
        for chunk in 0..10u64 {
            store
                .append_batch(&key(), &entries(EvaluationId::new(), chunk * 10_000, 10_000))
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

/// Opening a key's conversation in a file of 1M messages.
fn open_by_key(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(&dir, "million.db", Durability::Normal);
    let started = Instant::now();
    store::million_rows(&store);
    eprintln!("built a file of 1M messages in {:.1} s", started.elapsed().as_secs_f64());
    store::open_by_key(c, "sqlite", &store);
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    targets = single_appends, batches_and_reads, opening, open_by_key
}
criterion_main!(benches);
