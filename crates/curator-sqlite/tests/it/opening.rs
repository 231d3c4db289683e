//! Opening files safely: migrations to session keys, no write when nothing needs migrating,
//! busy and damaged files as typed errors, nothing left beside refused or read-only files.

use std::path::{Path, PathBuf};
use std::time::Duration;

use curator_model::{Entry, EvaluationId, Message, PromptRef, ToolCall};
use curator_session::{Action, Conversation, SessionKey, SessionStore, StoreErrorKind};
use curator_sqlite::{Error, SCHEMA_VERSION, SqliteOptions, SqliteStore};

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

#[track_caller]
fn nothing_beside(path: &Path) {
    for suffix in ["-wal", "-shm", "-journal"] {
        assert!(!sibling(path, suffix).exists(), "{suffix} was left beside {}", path.display());
    }
}

/// Inserts a row as a schema-2 build wrote it (no session key column).
fn insert_v2(conn: &rusqlite::Connection, entry: &Entry) {
    conn.execute(
        "INSERT INTO entries (message_id, evaluation_id, sequence, turn, prompt_ns, prompt_key, created_ns, role, message)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        rusqlite::params![
            entry.id.as_uuid().as_bytes().as_slice(),
            entry.evaluation_id.as_uuid().as_bytes().as_slice(),
            i64::try_from(entry.sequence).unwrap(),
            entry.turn,
            entry.prompt.as_ref().map(|p| p.ns.clone()),
            entry.prompt.as_ref().map(|p| p.key.clone()),
            entry.created_at.timestamp_nanos_opt().unwrap(),
            entry.message.role().as_str(),
            serde_json::to_string(&entry.message).unwrap()
        ],
    )
    .unwrap();
}

fn prompt() -> PromptRef {
    PromptRef::new("agent", "worker")
}

/// A schema-2 file (as today's builds before keys write it) with two evaluations of one
/// prompt, the later one stopped mid-tool-call.
fn schema_2_file(path: &Path) -> (EvaluationId, EvaluationId) {
    curator_sqlite::create_at_version(path, 2).unwrap();
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    let (early, late) = (EvaluationId::new(), EvaluationId::new());
    let base = chrono::Utc::now();
    let messages = [
        (early, 0, 0, Message::system("s")),
        (early, 1, 0, Message::user("first job")),
        (early, 2, 1, Message::assistant("done")),
        (late, 0, 0, Message::system("s")),
        (late, 1, 0, Message::user("second job")),
        (
            late,
            2,
            1,
            Message::assistant_with_calls(None, vec![ToolCall::new("c9", "send_email", "{}")]),
        ),
    ];
    for (i, (evaluation, sequence, turn, message)) in messages.into_iter().enumerate() {
        let entry = Entry::builder(evaluation, message)
            .sequence(sequence)
            .turn(turn)
            .prompt(prompt())
            .created_at(base + chrono::Duration::seconds(i64::try_from(i).unwrap()))
            .build()
            .unwrap();
        insert_v2(&conn, &entry);
    }
    (early, late)
}

#[test]
fn schema_2_files_migrate_with_their_evaluations_under_the_default_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.db");
    let (early, late) = schema_2_file(&path);
    // Read-only, the file is read as it is (not migrated), under the default key.
    {
        let reader = SqliteStore::open_read_only(&path).unwrap();
        let listed = reader.evaluations_of(&SessionKey::default()).unwrap();
        assert_eq!(listed.iter().map(|e| e.evaluation_id).collect::<Vec<_>>(), [early, late]);
        assert_eq!(
            reader.latest_evaluation_of(&SessionKey::default(), &prompt()).unwrap(),
            Some(late)
        );
        let conn = rusqlite::Connection::open(&path).unwrap();
        assert_eq!(
            conn.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0)).unwrap(),
            2
        );
    }
    let store = SqliteStore::open(&path).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    assert_eq!(
        conn.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0)).unwrap(),
        SCHEMA_VERSION
    );
    assert!(store.evaluations().unwrap().iter().all(|e| e.key.is_default()));
    assert!(store.evaluations_of(&SessionKey::new("other")).unwrap().is_empty());
    // The default key's worker picks up where the old build stopped: the pending call.
    let resumed =
        Conversation::open(&store, SessionKey::default(), prompt(), Message::system("s")).unwrap();
    assert_eq!(resumed.evaluation_id(), late);
    match resumed.next_step() {
        Action::Run(calls) => {
            assert_eq!((calls[0].call_id(), calls[0].is_resume), ("c9", true));
        }
        other => panic!("expected RunTools, got {other:?}"),
    }
    // Another key starts its own.
    let fresh = Conversation::open(&store, "job-2", prompt(), Message::system("s")).unwrap();
    assert!(!fresh.is_resumed());
    // Opening by key is a lookup in the partial index, not a scan of the table.
    let plan: Vec<String> = conn
        .prepare(
            "EXPLAIN QUERY PLAN SELECT evaluation_id FROM entries
             WHERE session_key = ?1 AND prompt_ns = ?2 AND prompt_key = ?3 AND sequence = 0
             ORDER BY created_ns DESC, rowid DESC LIMIT 1",
        )
        .unwrap()
        .query_map(["default", "agent", "worker"], |r| r.get::<_, String>(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(plan.iter().any(|p| p.contains("USING INDEX entries_by_session")), "{plan:?}");
    assert!(!plan.iter().any(|p| p.contains("TEMP B-TREE")), "{plan:?}");
}

#[test]
fn opening_a_current_file_writes_nothing_and_does_not_wait_for_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("current.db");
    {
        let store = SqliteStore::open(&path).unwrap();
        Conversation::open(&store, "k", prompt(), Message::system("s")).unwrap();
    }
    nothing_beside(&path);
    let before = std::fs::read(&path).unwrap();
    // Another process holds the write lock for the whole open.
    let holder = rusqlite::Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let options = SqliteOptions::default().with_busy_timeout(Duration::from_millis(200));
    let store = SqliteStore::open_with(&path, options).unwrap();
    assert_eq!(store.evaluations().unwrap().len(), 1);
    // Its appends wait for the lock, then fail as busy and retryable.
    let mut c = Conversation::open(&store, "k", prompt(), Message::system("s")).unwrap();
    let error = c.add_user("blocked").unwrap_err();
    assert!(error.is_retryable(), "{error:?}");
    assert!(matches!(error, curator_session::Error::Store { kind: StoreErrorKind::Busy, .. }));
    holder.execute_batch("ROLLBACK").unwrap();
    drop(holder);
    drop(c);
    drop(store);
    assert_eq!(std::fs::read(&path).unwrap(), before, "opening wrote to the file");
}

#[test]
fn a_migration_behind_a_busy_writer_is_a_typed_retryable_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.db");
    schema_2_file(&path);
    let holder = rusqlite::Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let options = SqliteOptions::default().with_busy_timeout(Duration::from_millis(200));
    let error = SqliteStore::open_with(&path, options).unwrap_err();
    assert!(error.is_retryable(), "{error:?}");
    assert_eq!(error.kind(), StoreErrorKind::Busy);
    holder.execute_batch("ROLLBACK").unwrap();
    assert!(
        SqliteStore::open_with(&path, options).is_ok(),
        "the same open succeeds once the lock is free"
    );
}

/// A closed file of `n` recorded messages, its log folded in.
fn recorded_file(path: &Path, n: usize) {
    let store = SqliteStore::open(path).unwrap();
    let mut c = Conversation::open(&store, "k", prompt(), Message::system("s")).unwrap();
    for i in 0..n {
        c.add_user(format!("message {i} {}", "x".repeat(200))).unwrap();
    }
    drop(c);
    drop(store);
    nothing_beside(path);
}

#[track_caller]
fn corrupt(result: Result<SqliteStore, Error>) -> Error {
    match result {
        Err(e @ Error::Corrupt { .. }) => {
            assert_eq!(e.kind(), StoreErrorKind::Corrupt);
            let as_session: curator_session::Error =
                Error::Corrupt { path: "x".into(), reason: "r".into(), source: None }.into();
            assert!(matches!(
                as_session,
                curator_session::Error::Store { kind: StoreErrorKind::Corrupt, .. }
            ));
            e
        }
        Err(other) => panic!("expected Error::Corrupt, got {other:?}"),
        Ok(_) => panic!("expected Error::Corrupt, the damaged file opened"),
    }
}

#[test]
fn a_truncated_file_is_corrupt_before_any_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("truncated.db");
    recorded_file(&path, 300);
    let bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 8 * 1024);
    std::fs::write(&path, &bytes[..8 * 1024]).unwrap();
    corrupt(SqliteStore::open(&path));
    corrupt(SqliteStore::open_read_only(&path));
    assert_eq!(std::fs::read(&path).unwrap(), &bytes[..8 * 1024], "the damaged file was written");
    nothing_beside(&path);
}

#[test]
fn a_corrupt_index_page_is_corrupt_before_any_write() {
    for index in ["entries_by_session", "entries_by_evaluation_time", "sqlite_autoindex_entries_1"]
    {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index.db");
        recorded_file(&path, 300);
        let (root, page_size): (i64, i64) = {
            let conn = rusqlite::Connection::open(&path).unwrap();
            let root = conn
                .query_row("SELECT rootpage FROM sqlite_schema WHERE name = ?1", [index], |r| {
                    r.get(0)
                })
                .unwrap();
            (root, conn.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap())
        };
        let mut bytes = std::fs::read(&path).unwrap();
        let at = usize::try_from((root - 1) * page_size).unwrap();
        bytes[at..at + usize::try_from(page_size).unwrap()].fill(0xA5);
        std::fs::write(&path, &bytes).unwrap();
        nothing_beside(&path);
        let error = corrupt(SqliteStore::open(&path));
        assert!(std::error::Error::source(&error).is_some(), "{index}: SQLite's error is kept");
        corrupt(SqliteStore::open_read_only(&path));
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{index}: the damaged file was written");
        nothing_beside(&path);
    }
}

#[test]
fn refused_and_read_only_files_get_nothing_left_beside_them() {
    let dir = tempfile::tempdir().unwrap();
    // Another application's database, in write-ahead-log mode as many are.
    let foreign = dir.path().join("foreign.db");
    {
        let conn = rusqlite::Connection::open(&foreign).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);").unwrap();
    }
    nothing_beside(&foreign);
    let before = std::fs::read(&foreign).unwrap();
    assert!(matches!(SqliteStore::open(&foreign), Err(Error::ForeignDatabase { .. })));
    assert!(matches!(SqliteStore::open_read_only(&foreign), Err(Error::ForeignDatabase { .. })));
    nothing_beside(&foreign);
    assert_eq!(std::fs::read(&foreign).unwrap(), before);
    // A session file nobody has open is read without creating the log's files.
    let ours = dir.path().join("ours.db");
    recorded_file(&ours, 3);
    let reader = SqliteStore::open_read_only(&ours).unwrap();
    assert_eq!(reader.evaluations().unwrap()[0].messages, 4);
    nothing_beside(&ours);
    drop(reader);
    nothing_beside(&ours);
}

/// A log left beside a file by a writer that stopped (a `-wal` without its `-shm`) is read
/// whole by a read-only open, which creates nothing beside the file: the messages only the
/// log holds are there, and no `-shm` appears.
#[test]
fn a_log_left_without_its_index_is_read_and_nothing_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("live.db");
    let store = SqliteStore::open(&live).unwrap();
    let evaluation = EvaluationId::new();
    let append = |sequence: u64| {
        let message = Message::user(format!("message {sequence}"));
        let entry = Entry::builder(evaluation, message).sequence(sequence).build().unwrap();
        store.append(&SessionKey::default(), &entry).unwrap();
    };
    append(0);
    // A reader holding a snapshot keeps the next commits in the log: no checkpoint can copy
    // them into the file while it reads.
    let reader = rusqlite::Connection::open(&live).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let _: i64 = reader.query_row("SELECT count(*) FROM entries", [], |r| r.get(0)).unwrap();
    for sequence in 1..6 {
        append(sequence);
    }
    // What a stopped writer leaves: the file and its log, no index.
    let left = tempfile::tempdir().unwrap();
    let copy = left.path().join("left.db");
    std::fs::copy(&live, &copy).unwrap();
    std::fs::copy(sibling(&live, "-wal"), sibling(&copy, "-wal")).unwrap();
    let wal_bytes = std::fs::read(sibling(&copy, "-wal")).unwrap();
    let file_bytes = std::fs::read(&copy).unwrap();
    let read = SqliteStore::open_read_only(&copy).unwrap();
    assert_eq!(read.entries(evaluation).unwrap().len(), 6, "the log's messages are read");
    drop(read);
    assert!(!sibling(&copy, "-shm").exists(), "an index was created beside the file");
    assert_eq!(std::fs::read(&copy).unwrap(), file_bytes);
    assert_eq!(std::fs::read(sibling(&copy, "-wal")).unwrap(), wal_bytes);
    drop(reader);
}
