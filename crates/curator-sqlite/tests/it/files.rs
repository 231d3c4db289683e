//! Opening files: what is refused (and left untouched), migrations, durability, read-only
//! use, and snapshots moving between stores.

use curator_model::{Entry, EvaluationId, Message, PromptRef};
use curator_session::{Conversation, MemoryStore, SessionStore, Snapshot};
use curator_sqlite::{Durability, Error, Options, SCHEMA_VERSION, SqliteStore};

use crate::support::TempStore;

#[track_caller]
fn untouched(path: &std::path::Path, before: &[u8]) {
    assert_eq!(std::fs::read(path).unwrap(), before, "the file was changed");
}

#[test]
fn random_bytes_are_not_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("noise.db");
    let bytes: Vec<u8> =
        (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(&path, &bytes).unwrap();
    assert!(matches!(SqliteStore::open(&path), Err(Error::NotADatabase { .. })));
    assert!(matches!(SqliteStore::open_read_only(&path), Err(Error::NotADatabase { .. })));
    untouched(&path, &bytes);
    // A file that starts like SQLite but is not one is refused too.
    let mut fake = b"SQLite format 3\0".to_vec();
    fake.extend(&bytes);
    std::fs::write(&path, &fake).unwrap();
    let err = SqliteStore::open(&path).unwrap_err();
    assert!(matches!(err, Error::NotADatabase { .. }), "{err}");
    untouched(&path, &fake);
}

#[test]
fn another_applications_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL); INSERT INTO invoices VALUES (1, 9.5);").unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let err = SqliteStore::open(&path).unwrap_err();
    assert!(matches!(err, Error::ForeignDatabase { application_id: 0, tables: 1, .. }), "{err}");
    assert!(err.to_string().contains("another application"));
    untouched(&path, &before);
}

#[test]
fn a_newer_schema_is_refused() {
    let temp = TempStore::new();
    let path = temp.store.path().to_owned();
    drop(temp.store);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 7).unwrap();
        conn.pragma_update(None, "journal_mode", "DELETE").unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let err = SqliteStore::open(&path).unwrap_err();
    assert!(
        matches!(err, Error::NewerSchema { found, supported: SCHEMA_VERSION, .. } if found == SCHEMA_VERSION + 7),
        "{err}"
    );
    assert!(matches!(SqliteStore::open_read_only(&path), Err(Error::NewerSchema { .. })));
    untouched(&path, &before);
    // The session layer sees it as an incompatible store.
    let as_session: curator_session::Error = err.into();
    assert!(matches!(as_session, curator_session::Error::Incompatible { backend: "sqlite", .. }));
}

#[test]
fn empty_and_missing_files_become_new_stores() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    assert!(SqliteStore::open(&empty).unwrap().evaluations().unwrap().is_empty());
    assert!(SqliteStore::open(dir.path().join("new.db")).is_ok());
    assert!(matches!(
        SqliteStore::open_read_only(dir.path().join("missing.db")),
        Err(Error::Sqlite { .. })
    ));
}

#[test]
fn older_files_migrate_forward_keeping_their_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    curator_sqlite::create_at_version(&path, 1).unwrap();
    {
        // Record into the version 1 file through a store, then take it back to version 1.
        let conn = rusqlite::Connection::open(&path).unwrap();
        assert_eq!(
            conn.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0)).unwrap(),
            1
        );
    }
    let store = SqliteStore::open(&path).unwrap();
    let mut c =
        Conversation::start(&store, PromptRef::new("m", "k"), Message::system("kept")).unwrap();
    c.add_user("also kept").unwrap();
    let evaluation = c.evaluation_id();
    drop(c);
    drop(store);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("DROP INDEX entries_by_evaluation_time; PRAGMA user_version = 1;")
            .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    assert_eq!(
        conn.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0)).unwrap(),
        SCHEMA_VERSION
    );
    let index: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE name = 'entries_by_evaluation_time'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(index, 1);
    assert_eq!(store.entries(evaluation).unwrap().len(), 2);
}

#[test]
fn durability_modes_are_applied() {
    let dir = tempfile::tempdir().unwrap();
    let normal = SqliteStore::open_with(
        dir.path().join("n.db"),
        Options::default().with_durability(Durability::Normal),
    )
    .unwrap();
    assert_eq!(normal.durability().unwrap(), Durability::Normal);
    let full = SqliteStore::open(dir.path().join("f.db")).unwrap();
    assert_eq!(full.durability().unwrap(), Durability::Full);
    let conn = rusqlite::Connection::open(dir.path().join("f.db")).unwrap();
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn read_only_stores_read_and_refuse_writes() {
    let temp = TempStore::new();
    let mut c =
        Conversation::start(&temp.store, PromptRef::new("r", "o"), Message::system("s")).unwrap();
    let reader = SqliteStore::open_read_only(temp.store.path()).unwrap();
    // The reader sees what the writer commits, while the writer keeps writing.
    c.add_user("one").unwrap();
    assert_eq!(reader.entries(c.evaluation_id()).unwrap().len(), 2);
    c.add_user("two").unwrap();
    assert_eq!(reader.entries(c.evaluation_id()).unwrap().len(), 3);
    let entry = Entry::builder(EvaluationId::new(), Message::system("x")).build().unwrap();
    assert!(matches!(reader.append(&entry), Err(curator_session::Error::Store { .. })));
    assert!(reader.put_checkpoint("x", &serde_json::json!(1)).is_err());
}

#[test]
fn snapshots_move_between_memory_and_sqlite() {
    let memory = MemoryStore::new();
    let mut c =
        Conversation::start(&memory, PromptRef::new("s", "m"), Message::system("s")).unwrap();
    c.add_user("from memory").unwrap();
    memory.put_checkpoint("loop", &serde_json::json!({"i": 1})).unwrap();
    let json = memory.snapshot_json().unwrap();

    let temp = TempStore::new();
    temp.store.restore(&Snapshot::from_json(&json).unwrap()).unwrap();
    assert_eq!(temp.store.snapshot().unwrap(), memory.snapshot().unwrap());
    assert_eq!(temp.store.snapshot_json().unwrap(), json);

    let back = MemoryStore::new();
    back.restore_json(&temp.store.snapshot_json().unwrap()).unwrap();
    assert_eq!(back.snapshot().unwrap(), memory.snapshot().unwrap());
}

#[test]
fn a_bad_message_row_is_a_typed_error_not_a_panic() {
    let temp = TempStore::new();
    let c =
        Conversation::start(&temp.store, PromptRef::new("b", "r"), Message::system("s")).unwrap();
    let conn = rusqlite::Connection::open(temp.store.path()).unwrap();
    conn.execute("UPDATE entries SET message = '{broken'", []).unwrap();
    let error = temp.store.entries(c.evaluation_id()).unwrap_err();
    assert!(matches!(
        error,
        curator_session::Error::Store { kind: curator_session::StoreErrorKind::Corrupt, .. }
    ));
    assert!(!error.is_retryable());
    // The cause is kept whole: the JSON parser's own error, not a string.
    let cause = std::error::Error::source(&error).expect("a cause");
    assert!(cause.downcast_ref::<serde_json::Error>().is_some(), "{cause:?}");
}

#[test]
fn the_write_ahead_log_stays_small_when_writes_pause_and_bounded_when_they_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("steady.db");
    let wal = dir.path().join("steady.db-wal");
    let store =
        SqliteStore::open_with(&path, Options::default().with_durability(Durability::Normal))
            .unwrap();
    let evaluation = EvaluationId::new();
    let mut sequence = 0u64;
    let mut append = |n: u64| {
        for _ in 0..n {
            let message = Message::user(format!("message {sequence} {}", "x".repeat(300)));
            store
                .append(&Entry::builder(evaluation, message).sequence(sequence).build().unwrap())
                .unwrap();
            sequence += 1;
        }
    };
    // An agent loop: bursts of writes with pauses between them (the model calls). Each pause
    // lets a checkpoint complete, so the log starts over instead of growing. The pause is
    // several times the checkpointer's quiet spell (25 ms) so that a loaded machine running
    // other tests beside this one still gives the checkpoint its moment.
    // Without checkpoints the log would hold all 25 bursts; with them it holds about one. Up to
    // three are allowed, for a checkpoint that a busy machine delays past one pause.
    append(200);
    let burst = std::fs::metadata(&wal).map_or(0, |m| m.len());
    let mut largest = burst;
    for _ in 1..25 {
        std::thread::sleep(std::time::Duration::from_millis(150));
        append(200);
        largest = largest.max(std::fs::metadata(&wal).map_or(0, |m| m.len()));
    }
    assert!(burst > 0);
    assert!(largest <= 3 * burst, "with pauses the log grew to {largest} bytes, {burst} a burst");
    // Writes that never pause: the log is bounded by the fallback checkpoint (20,000 pages).
    let mut largest = 0;
    for _ in 0..30 {
        append(1_000);
        largest = largest.max(std::fs::metadata(&wal).map_or(0, |m| m.len()));
    }
    assert!(largest < 21_000 * 4_200, "without pauses the log grew to {largest} bytes");
    assert_eq!(store.entries(evaluation).unwrap().len() as u64, sequence);
    assert_eq!(store.integrity_check().unwrap(), "ok");
}
