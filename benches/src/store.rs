//! The store benches, written once for every [`SessionStore`]: single appends, batches,
//! reading an evaluation, and opening a session by key among 1M messages. `benches/sqlite.rs`
//! and `benches/postgres.rs` run them under their own group names, so that the scenarios of
//! the two stores are the same code and their results compare.

use std::hint::black_box;
use std::time::Instant;

use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, Criterion, Throughput};
use curator_model::{Entry, EvaluationId, Message, PromptRef, Role};
use curator_session::{Conversation, SessionKey, SessionStore};

/// The key every bench records under, but the 1M-message one.
pub fn key() -> SessionKey {
    SessionKey::new("bench")
}

/// `n` entries of one evaluation, from the synthetic agent history, starting at `from`.
///
/// # Panics
///
/// When an entry cannot be built.
pub fn entries(evaluation: EvaluationId, from: u64, n: usize) -> Vec<Entry> {
    curator_testkit::synthetic::agent_history(n + 2, from)
        .into_iter()
        .take(n)
        .enumerate()
        .map(|(i, m): (usize, Message)| {
            let turn = u32::from(!matches!(m.role(), Role::System | Role::User));
            Entry::builder(evaluation, m)
                .sequence(from + i as u64)
                .turn(turn)
                .build()
                .expect("entry")
        })
        .collect()
}

/// `id`: one append at a time to one evaluation, after its first message (so that every
/// timed append is a conversation's next message, as a store with a fast path for those
/// takes it).
///
/// # Panics
///
/// When an append fails.
pub fn append_one<S: SessionStore>(group: &mut BenchmarkGroup<'_, WallTime>, id: &str, store: &S) {
    group.throughput(Throughput::Elements(1));
    let evaluation = EvaluationId::new();
    store.append_batch(&key(), &entries(evaluation, 0, 1)).expect("first");
    let mut next = 1u64;
    group.bench_function(id, |b| {
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

/// `id`: batches of `n` entries, each a new evaluation.
///
/// # Panics
///
/// When an append fails.
pub fn append_batch<S: SessionStore>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: &str,
    store: &S,
    n: usize,
) {
    group.throughput(Throughput::Elements(n as u64));
    group.bench_function(id, |b| {
        b.iter_batched(
            || entries(EvaluationId::new(), 0, n),
            |batch| store.append_batch(&key(), &batch).expect("batch"),
            BatchSize::LargeInput,
        );
    });
}

/// `id`: reading the `n` entries of one evaluation (written in batches of 1,000).
///
/// # Panics
///
/// When an append or a read fails.
pub fn read<S: SessionStore>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: &str,
    store: &S,
    n: usize,
) {
    let evaluation = EvaluationId::new();
    for from in (0..n).step_by(1_000) {
        let batch = entries(evaluation, from as u64, (n - from).min(1_000));
        store.append_batch(&key(), &batch).expect("batch");
    }
    group.throughput(Throughput::Elements(n as u64));
    group.bench_function(id, |b| {
        b.iter(|| black_box(store.entries(evaluation).expect("read")));
    });
}

/// Records 1M messages: 10,000 evaluations of 100 messages (system, then user and assistant
/// in turn), one prompt, under 1,000 session keys of 10 evaluations each.
///
/// # Panics
///
/// When an append fails.
pub fn million_rows<S: SessionStore>(store: &S) {
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

/// `<group>/latest_of_key/1m` and `<group>/open_by_key/1m`: opening a key's conversation in
/// a store of [`million_rows`], the lookup of its latest evaluation (an index lookup), and
/// the whole open (lookup, reading its 100 entries, rebuilding the driver).
///
/// # Panics
///
/// When a lookup or an open fails.
pub fn open_by_key<S: SessionStore>(c: &mut Criterion, group: &str, store: &S) {
    let prompt = PromptRef::new("bench", "agent");
    let mut group = c.benchmark_group(group);
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
                    Conversation::open(store, session, prompt.clone(), Message::system("s"))
                        .expect("open");
                black_box(conversation.next_sequence())
            },
            BatchSize::SmallInput,
        );
    });
    group.finish();
}
