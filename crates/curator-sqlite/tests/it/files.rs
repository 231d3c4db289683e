//! Opening files: what is refused (and left untouched), migrations, durability, read-only
//! use, and snapshots moving between stores.

use curator_model::{Entry, EvaluationId, Message, PromptRef};
use curator_session::{Conversation, MemoryStore, SessionStore, Snapshot};
use curator_sqlite::{Durability, Error, SCHEMA_VERSION, SqliteOptions, SqliteStore};

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
    let evaluation = EvaluationId::new();
    {
        // A row as a version 1 build wrote it.
        let conn = rusqlite::Connection::open(&path).unwrap();
        assert_eq!(
            conn.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0)).unwrap(),
            1
        );
        let entry = Entry::builder(evaluation, Message::system("kept"))
            .prompt(PromptRef::new("m", "k"))
            .build()
            .unwrap();
        conn.execute(
            "INSERT INTO entries (message_id, evaluation_id, sequence, turn, prompt_ns, prompt_key, created_ns, role, message)
             VALUES (?1, ?2, 0, 0, 'm', 'k', ?3, 'system', ?4)",
            rusqlite::params![
                entry.id.as_uuid().as_bytes().as_slice(),
                evaluation.as_uuid().as_bytes().as_slice(),
                entry.created_at.timestamp_nanos_opt().unwrap(),
                serde_json::to_string(&entry.message).unwrap()
            ],
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    assert_eq!(
        conn.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0)).unwrap(),
        SCHEMA_VERSION
    );
    let indexes: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE name IN ('entries_by_evaluation_time', 'entries_by_session')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(indexes, 2);
    let mut c = Conversation::open(
        &store,
        curator_session::SessionKey::DEFAULT,
        PromptRef::new("m", "k"),
        Message::system("new"),
    )
    .unwrap();
    assert_eq!((c.evaluation_id(), c.is_resumed()), (evaluation, true));
    c.add_user("also kept").unwrap();
    assert_eq!(store.entries(evaluation).unwrap().len(), 2);
}

#[test]
fn durability_modes_are_applied() {
    let dir = tempfile::tempdir().unwrap();
    let normal = SqliteStore::open_with(
        dir.path().join("n.db"),
        SqliteOptions::default().with_durability(Durability::Normal),
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
        Conversation::start(&temp.store, "test", PromptRef::new("r", "o"), Message::system("s"))
            .unwrap();
    let reader = SqliteStore::open_read_only(temp.store.path()).unwrap();
    // The reader sees what the writer commits, while the writer keeps writing.
    c.add_user("one").unwrap();
    assert_eq!(reader.entries(c.evaluation_id()).unwrap().len(), 2);
    c.add_user("two").unwrap();
    assert_eq!(reader.entries(c.evaluation_id()).unwrap().len(), 3);
    let entry = Entry::builder(EvaluationId::new(), Message::system("x")).build().unwrap();
    let refused = reader.append(&curator_session::SessionKey::default(), &entry).unwrap_err();
    assert!(matches!(refused, curator_session::Error::Store { .. }));
    assert_eq!(
        refused.to_string(),
        "session store (sqlite): writing (the store was opened with `open_read_only`): read-only"
    );
    assert!(reader.put_checkpoint("x", &serde_json::json!(1)).is_err());
}

#[test]
fn snapshots_move_between_memory_and_sqlite() {
    let memory = MemoryStore::new();
    let mut c =
        Conversation::start(&memory, "test", PromptRef::new("s", "m"), Message::system("s"))
            .unwrap();
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
        Conversation::start(&temp.store, "test", PromptRef::new("b", "r"), Message::system("s"))
            .unwrap();
    let conn = rusqlite::Connection::open(temp.store.path()).unwrap();
    // Without its checksum, so that the reading of the message itself is what fails.
    conn.execute("UPDATE entries SET message = '{broken', checksum = NULL", []).unwrap();
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

/// The first `n` bytes of a file (fewer when it is shorter, none when it is missing).
fn head(path: &std::path::Path, n: u64) -> Vec<u8> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    if let Ok(file) = std::fs::File::open(path) {
        let _ = file.take(n).read_to_end(&mut bytes);
    }
    bytes
}

/// What the write-ahead log's files say (formats at <https://sqlite.org/fileformat.html> and
/// <https://sqlite.org/walformat.html>).
struct Wal {
    log: std::path::PathBuf,
    index: std::path::PathBuf,
}

impl Wal {
    fn of(database: &std::path::Path) -> Self {
        let with = |suffix: &str| {
            let mut name = database.as_os_str().to_owned();
            name.push(suffix);
            std::path::PathBuf::from(name)
        };
        Self { log: with("-wal"), index: with("-shm") }
    }

    /// The log file's size: its high-water mark, since SQLite reuses the file from its start
    /// when the log starts over instead of truncating it.
    fn len(&self) -> u64 {
        std::fs::metadata(&self.log).map_or(0, |m| m.len())
    }

    /// How many times the log has started over: the checkpoint sequence number of its header
    /// (big-endian, bytes 12 to 16), which the writer increments as it restarts the log.
    fn restarts(&self) -> u32 {
        head(&self.log, 16).get(12..16).map_or(0, |b| u32::from_be_bytes(b.try_into().unwrap()))
    }

    /// Whether a checkpoint has copied every committed frame back into the database: the
    /// index's `nBackfill` (bytes 96 to 100) has reached its `mxFrame` (bytes 16 to 20), both
    /// in native byte order. The next write then starts the log over.
    fn checkpointed(&self) -> bool {
        let index = head(&self.index, 100);
        let word =
            |at: usize| index.get(at..at + 4).map(|b| u32::from_ne_bytes(b.try_into().unwrap()));
        matches!((word(16), word(96)), (Some(last), Some(copied)) if last > 0 && copied == last)
    }
}

/// The log size at which the appending connection checkpoints by itself (`FALLBACK_PAGES`),
/// in bytes: 20,000 frames of a 4,096-byte page and its 24-byte header.
const FALLBACK_BYTES: u64 = 20_000 * (4_096 + 24);

#[test]
fn the_write_ahead_log_stays_small_when_writes_pause_and_bounded_when_they_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("steady.db");
    let wal = Wal::of(&path);
    let store =
        SqliteStore::open_with(&path, SqliteOptions::default().with_durability(Durability::Normal))
            .unwrap();
    let evaluation = EvaluationId::new();
    let mut sequence = 0u64;
    let mut append = |n: u64| {
        for _ in 0..n {
            let message = Message::user(format!("message {sequence} {}", "x".repeat(300)));
            store
                .append(
                    &curator_session::SessionKey::default(),
                    &Entry::builder(evaluation, message).sequence(sequence).build().unwrap(),
                )
                .unwrap();
            sequence += 1;
        }
    };
    // An agent loop: bursts of writes with pauses between them (the model calls). In each
    // pause the store's own checkpointer, which waits for 25 ms without writes, copies the log
    // back into the database, and the next burst starts the log over instead of growing it.
    // A pause here lasts until that checkpoint has happened (read from the log's index, never
    // run by the test), however late a loaded machine schedules it: the test checks what the
    // checkpointer does, not how soon. The minute is only there so that a checkpointer that
    // never runs fails the test instead of hanging it.
    append(200);
    let burst = wal.len();
    let mut largest = burst;
    let mut restarts = wal.restarts();
    for round in 1..25 {
        let pause = std::time::Instant::now();
        while !wal.checkpointed() && pause.elapsed() < std::time::Duration::from_mins(1) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(wal.checkpointed(), "pause {round}: no checkpoint in a minute without writes");
        append(200);
        assert!(wal.restarts() > restarts, "burst {round} did not start the log over");
        restarts = wal.restarts();
        largest = largest.max(wal.len());
    }
    // Without checkpoints the log would hold all 25 bursts; with them it holds one (a later
    // burst writes a few more pages than the first, about 10%, as the tables grow).
    assert!(burst > 0);
    assert!(largest <= 2 * burst, "with pauses the log grew to {largest} bytes, {burst} a burst");
    // Writes that never pause, about five fallbacks' worth: the log starts over again and
    // again, bounded by the fallback checkpoint at 20,000 pages instead of growing with the
    // writes. The fallback yields to a checkpoint the background thread is running at that
    // moment and is retried at the next commit, so the log can pass 20,000 pages by what is
    // committed meanwhile, which depends on the machine's load: the bound allows a whole
    // second fallback's worth of that, and growth with the writes would still break it.
    let mut largest = 0;
    for _ in 0..30 {
        append(1_000);
        largest = largest.max(wal.len());
    }
    assert!(wal.restarts() >= restarts + 2, "without pauses the log never started over");
    assert!(largest > FALLBACK_BYTES / 2, "the writes were too few to reach the fallback");
    assert!(largest < 2 * FALLBACK_BYTES, "without pauses the log grew to {largest} bytes");
    assert_eq!(store.entries(evaluation).unwrap().len() as u64, sequence);
    assert_eq!(store.integrity_check().unwrap(), "ok");
}

/// The message of the `Corrupt` error `result` holds.
#[track_caller]
fn corrupt<T: std::fmt::Debug>(result: curator_session::Result<T>) -> String {
    match result {
        Err(curator_session::Error::Store {
            kind: curator_session::StoreErrorKind::Corrupt,
            backend: "sqlite",
            message,
            ..
        }) => message,
        other => panic!("expected a Corrupt error of the SQLite store, got {other:?}"),
    }
}

/// Records a system message, returning its evaluation and a connection to edit the rows.
fn one_message(temp: &TempStore) -> (EvaluationId, rusqlite::Connection) {
    let c =
        Conversation::start(&temp.store, "test", PromptRef::new("b", "r"), Message::system("s"))
            .unwrap();
    (c.evaluation_id(), rusqlite::Connection::open(temp.store.path()).unwrap())
}

#[test]
fn a_negative_checkpoint_version_is_corrupt_not_zero() {
    let temp = TempStore::new();
    temp.store.put_checkpoint("progress", &serde_json::json!({"done": 2})).unwrap();
    let conn = rusqlite::Connection::open(temp.store.path()).unwrap();
    conn.execute("UPDATE checkpoints SET version = -1 WHERE name = 'progress'", []).unwrap();
    let message = corrupt(temp.store.checkpoint("progress"));
    assert!(message.contains("checkpoints row `progress`: version -1"), "{message}");
    let message = corrupt(temp.store.snapshot());
    assert!(message.contains("`progress`"), "{message}");
    // Saving again counts on from the bad version: still negative, still refused.
    conn.execute("UPDATE checkpoints SET version = -5 WHERE name = 'progress'", []).unwrap();
    let message = corrupt(temp.store.put_checkpoint("progress", &serde_json::json!({})));
    assert!(message.contains("version -4"), "{message}");
}

#[test]
fn a_negative_turn_is_corrupt_in_the_entries_and_in_the_summary() {
    let temp = TempStore::new();
    let (evaluation, conn) = one_message(&temp);
    conn.execute("UPDATE entries SET turn = -1, checksum = NULL", []).unwrap();
    let message = corrupt(temp.store.evaluations());
    assert!(message.contains(&format!("evaluation {evaluation}: turn -1")), "{message}");
    corrupt(temp.store.evaluation(evaluation));
    let message = corrupt(temp.store.entries(evaluation));
    assert!(message.contains(&format!("sequence 0 of evaluation {evaluation}")), "{message}");
}

#[test]
fn a_negative_sequence_and_a_short_id_are_corrupt_and_named() {
    let temp = TempStore::new();
    let (evaluation, conn) = one_message(&temp);
    conn.execute("UPDATE entries SET sequence = -3, checksum = NULL", []).unwrap();
    let message = corrupt(temp.store.entries(evaluation));
    assert!(message.contains("sequence -3") && message.contains("negative"), "{message}");
    conn.execute("UPDATE entries SET sequence = 0, message_id = x'0102'", []).unwrap();
    let message = corrupt(temp.store.snapshot());
    assert!(message.contains("message_id"), "{message}");
}

#[test]
fn special_files_and_a_missing_folder_are_refused_at_once_naming_them() {
    use curator_session::StoreErrorKind;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.db");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    // Before, opening a FIFO hung (it waited for a writer): now both refuse at once.
    let err = SqliteStore::open(&fifo).unwrap_err();
    assert!(matches!(err, Error::NotAFile { .. }), "{err}");
    assert!(err.to_string().contains("not a regular file but a FIFO"), "{err}");
    let err = SqliteStore::open_read_only(&fifo).unwrap_err();
    assert!(matches!(err, Error::NotAFile { .. }), "{err}");
    let folder = dir.path().join("folder.db");
    std::fs::create_dir(&folder).unwrap();
    assert!(SqliteStore::open(&folder).unwrap_err().to_string().contains("a folder"));
    let device = SqliteStore::open("/dev/null").unwrap_err();
    assert!(device.to_string().contains("a device"), "{device}");
    let missing = dir.path().join("no/such/folder/s.db");
    let err = SqliteStore::open(&missing).unwrap_err();
    assert_eq!(err.kind(), StoreErrorKind::NotFound);
    assert!(err.to_string().contains("the folder to hold the file does not exist"), "{err}");
    assert!(std::error::Error::source(&err).is_some());
    assert!(!dir.path().join("no").exists());
}

#[test]
fn a_row_changed_behind_the_store_is_corrupt_naming_it() {
    let temp = TempStore::new();
    let (evaluation, conn) = one_message(&temp);
    // The same length, one letter changed: valid JSON, a valid message, the wrong text.
    conn.execute("UPDATE entries SET message = replace(message, '\"s\"', '\"t\"')", []).unwrap();
    let message = corrupt(temp.store.entries(evaluation));
    assert!(message.contains(&format!("sequence 0 of evaluation {evaluation}")), "{message}");
    assert!(message.contains("does not match the checksum"), "{message}");
    corrupt(temp.store.snapshot());
}

/// Unmounts a file system when the test ends.
struct Unmount<'a>(&'a std::path::Path);

impl Drop for Unmount<'_> {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(self.0).status();
    }
}

#[test]
fn a_new_file_on_a_full_disk_is_kind_full() {
    use curator_session::StoreErrorKind;
    let dir = tempfile::tempdir().unwrap();
    let mount = dir.path().join("small");
    std::fs::create_dir(&mount).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&mount)
        .output();
    if !mounted.as_ref().is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: a small file system cannot be mounted here (needs root): {mounted:?}");
        return;
    }
    let _unmount = Unmount(&mount);
    // Room for the file's first pages, not for its log: SQLite says "I/O error" there.
    std::fs::write(mount.join("fill"), vec![0u8; 56 * 1024]).unwrap();
    let err = SqliteStore::open(mount.join("s.db")).unwrap_err();
    assert_eq!(err.kind(), StoreErrorKind::Full, "{err}");
    assert!(err.to_string().contains("full"), "{err}");
}
