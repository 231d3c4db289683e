//! The PostgreSQL store against a local server that the bench starts (Debian's binaries,
//! `initdb` into a temporary folder, PostgreSQL's durable defaults): single appends, batches
//! of 1k, reading 10k entries, opening a session by key at 1M rows. Without server binaries
//! it says so and measures nothing.
#![expect(
    clippy::expect_used,
    reason = "a bench of a failing setup measures nothing and must stop"
)]
#![expect(clippy::print_stderr, reason = "the bench reports its setup, or why it skips")]

use std::hint::black_box;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use curator_model::{Entry, EvaluationId, Message, PromptRef};
use curator_postgres::{PgOptions, PgStore};
use curator_session::{ClaimStore, Conversation, SessionKey, SessionStore};
use curator_testkit::postgres::{DURABLE, PgServer};

fn key() -> SessionKey {
    SessionKey::new("bench")
}

/// The server, started once (with PostgreSQL's durable settings), or `None` when the
/// binaries are missing.
fn server() -> Option<&'static PgServer> {
    static SERVER: OnceLock<Option<PgServer>> = OnceLock::new();
    SERVER.get_or_init(|| PgServer::start_with(DURABLE)).as_ref()
}

/// A store in its own schema.
fn store(schema: &str) -> Option<PgStore> {
    let server = server()?;
    let options =
        PgOptions::from_url(&server.url()).expect("url").with_schema(schema).expect("schema");
    Some(PgStore::open(options).expect("open"))
}

/// `n` entries of one evaluation, from the synthetic agent history, starting at `from`.
fn entries(evaluation: EvaluationId, from: u64, n: usize) -> Vec<Entry> {
    curator_testkit::synthetic::agent_history(n + 2, from)
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

fn single_appends(c: &mut Criterion) {
    let Some(store) = store("bench_single") else { return };
    let mut group = c.benchmark_group("postgres");
    group.throughput(Throughput::Elements(1));
    let evaluation = EvaluationId::new();
    store.append_batch(&key(), &entries(evaluation, 0, 1)).expect("first");
    let mut next = 1u64;
    group.bench_function("append_one", |b| {
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
    let claimed = SessionKey::new("claimed");
    group.bench_function("claim_and_release", |b| {
        b.iter(|| {
            store
                .claim(&claimed, Duration::from_secs(30))
                .expect("claim")
                .release()
                .expect("release");
        });
    });
    group.finish();
}

fn batches_and_reads(c: &mut Criterion) {
    let Some(store) = store("bench_batches") else { return };
    let mut group = c.benchmark_group("postgres");
    group.throughput(Throughput::Elements(1_000));
    group.bench_function("append_batch/1k", |b| {
        b.iter_batched(
            || entries(EvaluationId::new(), 0, 1_000),
            |batch| store.append_batch(&key(), &batch).expect("batch"),
            BatchSize::LargeInput,
        );
    });
    let evaluation = EvaluationId::new();
    for chunk in 0..10u64 {
        store.append_batch(&key(), &entries(evaluation, chunk * 1_000, 1_000)).expect("batch");
    }
    group.throughput(Throughput::Elements(10_000));
    group.bench_function("read/10k", |b| {
        b.iter(|| black_box(store.entries(evaluation).expect("read")));
    });
    group.finish();
}

/// A schema of 1M messages: 10,000 evaluations of 100 messages (system, then user and
/// assistant in turn), one prompt, under 1,000 session keys of 10 evaluations each (the
/// layout of the SQLite bench).
fn million_rows(store: &PgStore) {
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
}

/// Opening a key's conversation among 1M messages: the lookup of its latest evaluation (an
/// index lookup), and the whole open (lookup, reading its 100 entries, rebuilding the
/// driver).
fn open_by_key(c: &mut Criterion) {
    let Some(store) = store("bench_million") else { return };
    let started = Instant::now();
    million_rows(&store);
    eprintln!("loaded 1M messages into PostgreSQL in {:.1} s", started.elapsed().as_secs_f64());
    let prompt = PromptRef::new("bench", "agent");
    let mut group = c.benchmark_group("postgres");
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

fn skip_note(_: &mut Criterion) {
    if server().is_none() {
        eprintln!(
            "postgres benches skipped: no PostgreSQL server binaries (apt-get install postgresql)"
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    targets = skip_note, single_appends, batches_and_reads, open_by_key
}
criterion_main!(benches);
