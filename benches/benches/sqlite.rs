//! The SQLite store: single appends in both durability modes, batches, reads, opening.
#![expect(
    clippy::expect_used,
    reason = "a bench of a failing setup measures nothing and must stop"
)]
#![expect(clippy::print_stderr, reason = "the bench reports how long its setup took")]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use curator_model::{Entry, EvaluationId, Message, PromptRef};
use curator_session::{Conversation, SessionKey, SessionStore};
use curator_sqlite::{Durability, SqliteOptions, SqliteStore};

fn key() -> SessionKey {
    SessionKey::new("bench")
}

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
    SqliteStore::open_with(
        dir.path().join(name),
        SqliteOptions::default().with_durability(durability),
    )
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
                    store.append(&key(), entry).expect("append");
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
            |batch| store.append_batch(&key(), &batch).expect("batch"),
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
            |batch| store.append_batch(&key(), &batch).expect("batch"),
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
    }
    let evaluation = EvaluationId::new();
    store.append_batch(&key(), &entries(evaluation, 0, 10_000)).expect("batch");
    group.bench_function("read/10k", |b| {
        b.iter(|| black_box(store.entries(evaluation).expect("read")));
    });
    group.finish();
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

/// A file of 1M messages: 10,000 evaluations of 100 messages (system, then user and
/// assistant in turn), one prompt, under 1,000 session keys of 10 evaluations each.
fn million_row_file(path: &std::path::Path) -> SqliteStore {
    let store =
        SqliteStore::open_with(path, SqliteOptions::default().with_durability(Durability::Normal))
            .expect("open");
    let base = chrono::Utc::now() - chrono::Duration::days(30);
    let prompt = PromptRef::new("bench", "agent");
    for key in 0..1_000u32 {
        let mut batch = Vec::with_capacity(1_000);
        let session = SessionKey::new(format!("user-{key}"));
        for run in 0..10u32 {
            let evaluation = EvaluationId::new();
            let at = base + chrono::Duration::seconds(i64::from(run * 1_000 + key));
            for i in 0..100u32 {
                let (message, turn) = match i {
                    0 => (Message::system("You are a support agent."), 0),
                    i if i % 2 == 1 => {
                        (Message::user(format!("Question {i} about order {key}.")), (i - 1) / 2)
                    }
                    i => (Message::assistant(format!("Answer {i} for order {key}.")), i / 2),
                };
                batch.push(
                    Entry::builder(evaluation, message)
                        .sequence(u64::from(i))
                        .turn(turn)
                        .prompt(prompt.clone())
                        .created_at(at + chrono::Duration::milliseconds(i64::from(i)))
                        .build()
                        .expect("entry"),
                );
            }
        }
        store.append_batch(&session, &batch).expect("batch");
    }
    store
}

/// Opening a key's conversation in a file of 1M messages: the lookup of its latest
/// evaluation (an index lookup), and the whole open (lookup, reading its 100 entries,
/// rebuilding the driver).
fn open_by_key(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("million.db");
    let started = Instant::now();
    let store = million_row_file(&path);
    eprintln!("built a file of 1M messages in {:.1} s", started.elapsed().as_secs_f64());
    let prompt = PromptRef::new("bench", "agent");
    let mut group = c.benchmark_group("sqlite");
    group.sample_size(50);
    let mut next = 0u32;
    let mut key = || {
        next = (next + 389) % 1_000;
        SessionKey::new(format!("user-{next}"))
    };
    group.bench_function("latest_of_key/1m", |b| {
        b.iter_batched(
            &mut key,
            |session| black_box(store.latest_evaluation_of(&session, &prompt).expect("lookup")),
            BatchSize::SmallInput,
        );
    });
    group.bench_function("open_by_key/1m", |b| {
        b.iter_batched(
            &mut key,
            |session| {
                let conversation =
                    Conversation::open(&store, session, prompt.clone(), Message::system("s"))
                        .expect("open");
                black_box(conversation.next_sequence())
            },
            BatchSize::SmallInput,
        );
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    targets = single_appends, batches_and_reads, opening, open_by_key
}
criterion_main!(benches);
