//! The PostgreSQL store against a local server that the bench starts (Debian's binaries,
//! `initdb` into a temporary folder, PostgreSQL's durable defaults): single appends, claims,
//! batches of 1k, reading 10k entries, opening a session by key at 1M rows (the scenarios
//! every store runs are in `curator_benches::store`). Without server binaries it says so and
//! measures nothing.
#![expect(
    clippy::expect_used,
    reason = "a bench of a failing setup measures nothing and must stop"
)]
#![expect(clippy::print_stderr, reason = "the bench reports its setup, or why it skips")]

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use curator_benches::store;
use curator_postgres::{PgOptions, PgStore};
use curator_session::{ClaimStore, SessionKey};
use curator_testkit::postgres::{DURABLE, PgServer};

/// The server, started once (with PostgreSQL's durable settings), or `None` when the
/// binaries are missing.
fn server() -> Option<&'static PgServer> {
    static SERVER: OnceLock<Option<PgServer>> = OnceLock::new();
    SERVER.get_or_init(|| PgServer::start_with(DURABLE)).as_ref()
}

/// A store in its own schema.
fn open(schema: &str) -> Option<PgStore> {
    let server = server()?;
    let options =
        PgOptions::from_url(&server.url()).expect("url").with_schema(schema).expect("schema");
    Some(PgStore::open(options).expect("open"))
}

fn single_appends(c: &mut Criterion) {
    let Some(pg) = open("bench_single") else { return };
    let mut group = c.benchmark_group("postgres");
    store::append_one(&mut group, "append_one", &pg);
    let claimed = SessionKey::new("claimed");
    group.bench_function("claim_and_release", |b| {
        b.iter(|| {
            pg.claim(&claimed, Duration::from_secs(30)).expect("claim").release().expect("release");
        });
    });
    group.finish();
}

fn batches_and_reads(c: &mut Criterion) {
    let Some(pg) = open("bench_batches") else { return };
    let mut group = c.benchmark_group("postgres");
    store::append_batch(&mut group, "append_batch/1k", &pg, 1_000);
    store::read(&mut group, "read/10k", &pg, 10_000);
    group.finish();
}

/// Opening a key's conversation among 1M messages (the layout of the SQLite bench).
fn open_by_key(c: &mut Criterion) {
    let Some(pg) = open("bench_million") else { return };
    let started = Instant::now();
    store::million_rows(&pg);
    eprintln!("loaded 1M messages into PostgreSQL in {:.1} s", started.elapsed().as_secs_f64());
    store::open_by_key(c, "postgres", &pg);
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
