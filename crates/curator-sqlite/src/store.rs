//! `SqliteStore`: the session store on one SQLite file.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use chrono::Utc;
use curator_model::{Entry, EvaluationId, PromptRef};
use curator_session::rows::{SnapshotRows, SummaryRow};
use curator_session::{
    Appended, ChangeStamp, Checkpoint, EvaluationSummary, SessionKey, SessionStore, Snapshot,
    StoreErrorKind,
};
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};
use serde_json::Value;

use crate::error::{CODEC, store_error};
use crate::leftover_log::PrivateCopy;
use crate::place::{check_place, check_writable, named_when_full, open_error, retry_open, uri};
use crate::reading::{
    COLUMNS, count_by_sequence, count_by_time, raw, raw_keyed, same_count, whole_or_corrupt,
};
use crate::schema::{self, Raw, Verdict};
use crate::{Error, Result, SqliteOptions};

type SessionResult<T> = curator_session::Result<T>;

/// A [`SessionStore`] on one SQLite file: durable (see [`Durability`](crate::Durability)),
/// crash-safe, and shared safely by several processes.
///
/// The file holds one row per recorded message with `UNIQUE(message_id)` and
/// `UNIQUE(evaluation_id, sequence)`, plus the checkpoints. Writes take SQLite's write lock
/// for the length of one transaction, and a busy timeout makes other processes wait for it
/// instead of failing with "database is locked".
///
/// # Examples
///
/// ```
/// use curator::model::{Message, PromptRef};
/// use curator::session::{Conversation, SessionStore};
/// use curator::sqlite::SqliteStore;
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("sessions.db");
/// let store = SqliteStore::open(&path)?;
/// let mut conversation = Conversation::start(&store, "test", PromptRef::new("demo", "agent"), Message::system("Hello."))?;
/// conversation.add_user("Hi!")?;
/// drop(conversation);
/// drop(store);
///
/// let reader = SqliteStore::open_read_only(&path)?;
/// let evaluation = reader.latest_evaluation()?.expect("one evaluation");
/// assert_eq!(reader.entries(evaluation)?.len(), 2);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct SqliteStore {
    conn: Mutex<Connection>,
    path: PathBuf,
    read_only: bool,
    /// What rows say their session key is: the column, or the default key for a file of a
    /// schema before keys, opened read-only (and so not migrated).
    key_column: &'static str,
    /// Whether the file has the second index over an evaluation's rows (from version 2),
    /// against which a read counts what the first returned (see [`whole_or_corrupt`]).
    second_index: bool,
    /// `checksum`, or `NULL` for a file read as it is whose rows have none (before
    /// version 5).
    checksum_column: &'static str,
    /// The evaluation (and its key) the latest append checked, so that the appends of one
    /// conversation check their key once. Locked only while `conn` is.
    verified: Mutex<Option<(EvaluationId, SessionKey)>>,
    /// Stops (after a last checkpoint) when the store is dropped. Declared after `conn` so
    /// that the connection, whose commit hook holds a wake-up sender, closes first: the
    /// thread only ends once every sender is gone.
    _checkpointer: Option<crate::checkpointer::Checkpointer>,
    /// The private copy a read-only store reads, removed after the connection closes.
    _copy: Option<PrivateCopy>,
}

impl SqliteStore {
    /// Opens (or creates) a session file with the default [`SqliteOptions`] (full durability).
    ///
    /// # Errors
    ///
    /// As [`open_with`](SqliteStore::open_with).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, SqliteOptions::default())
    }

    /// Opens (or creates) a session file.
    ///
    /// The file's header is read in one read transaction on a read-write connection, so a
    /// journal left by a writer killed mid-write is rolled back first, and the header is one
    /// consistent state even while other processes create or migrate the file. A file of this
    /// build's schema is opened without writing into it (so a full disk, or another writer
    /// holding the lock, does not stop it); a new or older one is created or migrated in one
    /// `BEGIN IMMEDIATE` transaction that checks the header again. The connection still
    /// writes beside the file (the `-wal` and `-shm` files; rolling back a journal a killed
    /// writer left), so a read-only file or folder is refused with kind
    /// [`ReadOnly`](StoreErrorKind::ReadOnly): [`open_read_only`](SqliteStore::open_read_only)
    /// reads those.
    ///
    /// # Errors
    ///
    /// At once, nothing read or written: [`Error::NotAFile`] for a FIFO, a device, a folder
    /// or a socket at the path; [`Error::Sqlite`] of kind
    /// [`NotFound`](StoreErrorKind::NotFound) when the folder to hold a new file does not
    /// exist, and of kind [`ReadOnly`](StoreErrorKind::ReadOnly) (naming
    /// [`open_read_only`](SqliteStore::open_read_only)) for a file this process cannot
    /// write, nothing left beside it.
    ///
    /// Before anything is written, the file untouched: [`Error::NotADatabase`],
    /// [`Error::ForeignDatabase`] or [`Error::NewerSchema`] when the file is not one this
    /// build can use; [`Error::Corrupt`] when it is damaged (truncated, or a table or index
    /// that does not read back). [`Error::Sqlite`] otherwise, with a
    /// [`kind`](Error::kind): [`Busy`](StoreErrorKind::Busy) (retryable) when a migration
    /// waited for another writer longer than the busy timeout,
    /// [`ReadOnly`](StoreErrorKind::ReadOnly) when the file or its folder cannot be written.
    pub fn open_with(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self> {
        let path = path.as_ref();
        Self::open_here(path, options).map_err(|e| named_when_full(path, e))
    }

    fn open_here(path: &Path, options: SqliteOptions) -> Result<Self> {
        if check_place(path)? {
            check_writable(path)?;
        }
        schema::raw_check(path)?;
        let mut conn = Connection::open(path).map_err(open_error(path, "opening"))?;
        conn.busy_timeout(options.busy_timeout)
            .map_err(open_error(path, "setting the busy timeout"))?;
        let timeout = options.busy_timeout;
        let (_, verdict) = retry_open(timeout, || schema::read(path, &mut conn))?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .map_err(open_error(path, "reading the journal mode"))?;
        if !mode.eq_ignore_ascii_case("wal") {
            // A new file (or one another tool switched back): SQLite answers a journal-mode
            // change with "busy" at once, without waiting, while another process creates the
            // file, so retry until the busy timeout.
            retry_open(timeout, || {
                conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
                    .map_err(open_error(path, "switching to write-ahead logging"))
            })?;
        }
        if verdict != Verdict::Current {
            retry_open(timeout, || schema::migrate(path, &mut conn))?;
        }
        conn.pragma_update(None, "synchronous", options.durability.pragma())
            .map_err(open_error(path, "setting durability"))?;
        // 32 MiB of page cache (the default is 2 MiB): a batch's index pages stay in memory
        // instead of spilling to the log and being read back.
        conn.pragma_update(None, "cache_size", -32_768)
            .map_err(open_error(path, "sizing the page cache"))?;
        let checkpointer = crate::checkpointer::Checkpointer::start(path, options);
        crate::checkpointer::Checkpointer::hook(checkpointer.as_ref(), &mut conn)
            .map_err(open_error(path, "installing the checkpoint hook"))?;
        Ok(Self {
            conn: Mutex::new(conn),
            path: path.to_owned(),
            read_only: false,
            key_column: "session_key",
            second_index: true,
            checksum_column: "checksum",
            verified: Mutex::new(None),
            _checkpointer: checkpointer,
            _copy: None,
        })
    }

    /// Opens an existing session file for reading only (for inspection tools): nothing is
    /// ever written, and writes through the store fail.
    ///
    /// It works on read-only files and in read-only directories, and leaves nothing beside
    /// the file: while another process has the file open (its `-wal` and `-shm` files are
    /// there) it reads through them, seeing each write as it commits; otherwise it reads the
    /// file as it is, without creating them. A log a stopped writer left (a `-wal` without
    /// its `-shm`) holds committed messages that only SQLite's index of it can read, which
    /// SQLite would create beside the file: the file and its log are read from a private
    /// copy in the temporary directory instead (removed when the store is dropped). Files
    /// of an older schema are read as they are (not migrated), their evaluations under the
    /// default key.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::sqlite::SqliteStore;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("s.db");
    /// drop(SqliteStore::open(&path)?);
    /// let reader = SqliteStore::open_read_only(&path)?;
    /// drop(reader);
    /// assert!(!dir.path().join("s.db-wal").exists() && !dir.path().join("s.db-shm").exists());
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`open`](SqliteStore::open); [`Error::Sqlite`] of kind
    /// [`NotFound`](StoreErrorKind::NotFound) when there is no session file.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let not_found = |why: &str| Error::Sqlite {
            path: path.to_owned(),
            context: "opening read-only",
            kind: StoreErrorKind::NotFound,
            source: why.into(),
        };
        if !check_place(path)? {
            return Err(not_found("no session file here"));
        }
        if let Raw::Missing = schema::raw_check(path)? {
            return Err(not_found("the file is empty: no session file here"));
        }
        let wal = schema::sibling(path, "-wal").exists();
        let shm = schema::sibling(path, "-shm").exists();
        // A log without its index: read from a private copy (see `PrivateCopy`).
        let copy = if wal && !shm {
            Some(PrivateCopy::of(path).map_err(|e| Error::Sqlite {
                path: path.to_owned(),
                context: "copying the log a stopped writer left, to read it",
                kind: StoreErrorKind::Other,
                source: e.into(),
            })?)
        } else {
            None
        };
        let opened = copy.as_ref().map_or(path, |c| c.file.as_path());
        let query = if wal || shm { "mode=ro" } else { "mode=ro&immutable=1" };
        let mut conn = Connection::open_with_flags(
            uri(opened, query),
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_URI,
        )
        .map_err(open_error(path, "opening read-only"))?;
        let timeout = SqliteOptions::default().busy_timeout;
        conn.busy_timeout(timeout).map_err(open_error(path, "setting the busy timeout"))?;
        let (header, verdict) = retry_open(timeout, || schema::read(path, &mut conn))?;
        if verdict == Verdict::New {
            return Err(not_found("a SQLite database with nothing in it: no session file here"));
        }
        Ok(Self {
            conn: Mutex::new(conn),
            path: path.to_owned(),
            read_only: true,
            checksum_column: if header.version >= schema::CHECKSUMS_SINCE {
                "checksum"
            } else {
                "NULL"
            },
            key_column: if header.version >= schema::KEYS_SINCE {
                "session_key"
            } else {
                "'default'"
            },
            second_index: header.version >= schema::TIME_INDEX_SINCE,
            verified: Mutex::new(None),
            _checkpointer: None,
            _copy: copy,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The durability the connection runs with, as SQLite reports it.
    ///
    /// # Errors
    ///
    /// A store error when SQLite cannot be asked.
    pub fn durability(&self) -> SessionResult<crate::Durability> {
        let level: i64 =
            self.lock().query_row("PRAGMA synchronous", [], |r| r.get(0)).map_err(store_error)?;
        Ok(if level >= 2 { crate::Durability::Full } else { crate::Durability::Normal })
    }

    /// SQLite's own check of the file: `"ok"` when it is sound.
    ///
    /// # Errors
    ///
    /// A store error when the check cannot run.
    pub fn integrity_check(&self) -> SessionResult<String> {
        self.lock().query_row("PRAGMA integrity_check", [], |r| r.get(0)).map_err(store_error)
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn writable(&self) -> SessionResult<MutexGuard<'_, Connection>> {
        if self.read_only {
            return Err(curator_session::Error::store(
                "sqlite",
                StoreErrorKind::ReadOnly,
                "writing (the store was opened with `open_read_only`)",
                None,
            ));
        }
        Ok(self.lock())
    }

    fn verified(&self) -> MutexGuard<'_, Option<(EvaluationId, SessionKey)>> {
        self.verified.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Summaries of the evaluations whose rows match `filter` (SQL on the table `e`).
    fn summaries(
        &self,
        filter: &str,
        params: &[&dyn rusqlite::ToSql],
    ) -> SessionResult<Vec<EvaluationSummary>> {
        let conn = self.lock();
        let mut statement = conn
            .prepare_cached(&format!(
                "SELECT evaluation_id, MIN(created_ns), MAX(created_ns), COUNT(*), MAX(turn),
                    (SELECT prompt_ns || char(0) || prompt_key FROM entries p
                      WHERE p.evaluation_id = e.evaluation_id AND prompt_ns IS NOT NULL ORDER BY sequence LIMIT 1),
                    {key}
                 FROM entries e {filter} GROUP BY evaluation_id ORDER BY MIN(created_ns), MIN(rowid)",
                key = self.key_column
            ))
            .map_err(store_error)?;
        let rows = statement
            .query_map(params, |r| {
                Ok((
                    r.get::<_, Vec<u8>>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, Option<String>>(5)?,
                    r.get::<_, String>(6)?,
                ))
            })
            .map_err(store_error)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(store_error)?;
        rows.into_iter()
            .map(|(id, first_ns, last_ns, messages, turns, prompt, key)| {
                let (prompt_ns, prompt_key) = prompt
                    .and_then(|p| {
                        p.split_once('\0').map(|(ns, k)| (Some(ns.to_owned()), Some(k.to_owned())))
                    })
                    .unwrap_or_default();
                CODEC.summary(SummaryRow {
                    evaluation_id: &id,
                    key,
                    first_ns,
                    last_ns,
                    messages,
                    turns,
                    prompt_ns,
                    prompt_key,
                })
            })
            .collect()
    }
}

/// Refuses an append under `key` to an evaluation of another key. `verified` is the last
/// evaluation found to be `key`'s (or new), so that a conversation's appends look once.
fn check_key(
    tx: &rusqlite::Transaction<'_>,
    key: &SessionKey,
    entry: &Entry,
    verified: &mut Option<(EvaluationId, SessionKey)>,
) -> SessionResult<()> {
    if verified.as_ref().is_some_and(|(e, k)| *e == entry.evaluation_id && k == key) {
        return Ok(());
    }
    let found: Option<String> = tx
        .prepare_cached("SELECT session_key FROM entries WHERE evaluation_id = ?1 LIMIT 1")
        .and_then(|mut s| {
            s.query_row([entry.evaluation_id.as_uuid().as_bytes().as_slice()], |r| r.get(0))
                .optional()
        })
        .map_err(store_error)?;
    match found {
        Some(found) if found != key.as_str() => Err(curator_session::Error::KeyMismatch {
            evaluation: entry.evaluation_id,
            expected: key.clone(),
            found: SessionKey::new(found),
        }),
        Some(_) => {
            // An evaluation's first append here: its rows must read whole, or the append
            // could take the sequence of a row a damaged index hides.
            let by_sequence = count_by_sequence(tx, entry.evaluation_id)?;
            let by_sequence = usize::try_from(by_sequence).map_err(|_| {
                CODEC.corrupt(format!("entries: a count of {by_sequence} rows"), None)
            })?;
            whole_or_corrupt(tx, entry.evaluation_id, by_sequence)?;
            *verified = Some((entry.evaluation_id, key.clone()));
            Ok(())
        }
        None => {
            *verified = Some((entry.evaluation_id, key.clone()));
            Ok(())
        }
    }
}

/// Inserts one entry under `key` inside an open transaction.
fn insert(
    tx: &rusqlite::Transaction<'_>,
    key: &SessionKey,
    entry: &Entry,
    verified: &mut Option<(EvaluationId, SessionKey)>,
) -> SessionResult<Appended> {
    check_key(tx, key, entry, verified)?;
    let row = CODEC.entry_values(entry)?;
    let id = row.message_id.as_slice();
    let evaluation = row.evaluation_id.as_slice();
    let exists = tx
        .prepare_cached("SELECT 1 FROM entries WHERE message_id = ?1")
        .and_then(|mut s| s.exists([id]))
        .map_err(store_error)?;
    if exists {
        return Ok(Appended::Duplicate);
    }
    let inserted = tx
        .prepare_cached(&format!(
            "INSERT INTO entries ({COLUMNS}, checksum, role, session_key) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
        ))
        .and_then(|mut s| {
            s.execute(params![
                id,
                evaluation,
                row.sequence,
                row.turn,
                row.prompt_ns,
                row.prompt_key,
                row.created_ns,
                row.message,
                row.checksum,
                row.role,
                key.as_str(),
            ])
        });
    match inserted {
        Ok(_) => Ok(Appended::New),
        Err(rusqlite::Error::SqliteFailure(f, _))
            if f.code == rusqlite::ErrorCode::ConstraintViolation =>
        {
            let existing: Vec<u8> = tx
                .query_row(
                    "SELECT message_id FROM entries WHERE evaluation_id = ?1 AND sequence = ?2",
                    params![evaluation, row.sequence],
                    |r| r.get(0),
                )
                .map_err(store_error)?;
            let place = format!(
                "entries row at sequence {} of evaluation {}",
                entry.sequence, entry.evaluation_id
            );
            Err(curator_session::Error::SequenceTaken {
                evaluation: entry.evaluation_id,
                sequence: entry.sequence,
                existing: CODEC.message_id(&existing, "message_id", &place)?,
            })
        }
        Err(e) => Err(store_error(e)),
    }
}

/// Saves a new version of the checkpoint `name` on `conn` (in its transaction, if any).
fn put_checkpoint(
    conn: &Connection,
    name: &str,
    document: &Value,
    saved: i64,
) -> SessionResult<u64> {
    let document = CODEC.checkpoint_document(name, document)?;
    let version: i64 = conn
        .prepare_cached(
            "INSERT INTO checkpoints (name, version, document, saved_ns) VALUES (?1, 1, ?2, ?3)
             ON CONFLICT (name) DO UPDATE SET version = version + 1, document = excluded.document, saved_ns = excluded.saved_ns
             RETURNING version",
        )
        .and_then(|mut s| s.query_row(params![name, document, saved], |r| r.get(0)))
        .map_err(store_error)?;
    CODEC.checkpoint_version(name, version)
}

impl SqliteStore {
    /// Checks, on `tx` (an immediate transaction, so an exclusive one: no claim can be taken
    /// between the check and its commit), that `fence` is the current claim on `key`;
    /// [`Fenced`](curator_session::Error::Fenced) otherwise. The fenced writes make it
    /// before they write.
    fn check_fence(
        &self,
        tx: &Connection,
        key: &SessionKey,
        fence: &curator_session::Fence,
    ) -> SessionResult<()> {
        let current: Option<i64> = tx
            .prepare_cached("SELECT token FROM claim_tokens WHERE session_key = ?1")
            .and_then(|mut s| s.query_row(params![key.as_str()], |r| r.get(0)).optional())
            .map_err(store_error)?;
        let current = current.and_then(|c| u64::try_from(c).ok());
        // The token stays the key's newest after its claim ends, until another claim takes
        // the next one, so a claim must also hold the key's lock now. A claim that took the
        // lock meanwhile takes its token after this transaction, and reads what it wrote.
        let held = current == Some(fence.token)
            && fence.key == *key
            && crate::locks::is_held(self.path(), key)?;
        if !held {
            let current = current.filter(|&c| c != fence.token);
            return Err(curator_session::Error::Fenced {
                key: key.clone(),
                token: fence.token,
                current,
            });
        }
        Ok(())
    }

    /// The next fencing token of `key`, taken in a write transaction of its own.
    pub(crate) fn next_claim_token(&self, key: &SessionKey) -> SessionResult<u64> {
        let conn = self.writable()?;
        let token: i64 = conn
            .prepare_cached(
                "INSERT INTO claim_tokens (session_key, token) VALUES (?1, 1)
                 ON CONFLICT (session_key) DO UPDATE SET token = token + 1 RETURNING token",
            )
            .and_then(|mut s| s.query_row(params![key.as_str()], |r| r.get(0)))
            .map_err(store_error)?;
        Ok(u64::try_from(token).unwrap_or_default())
    }
}

impl SqliteStore {
    /// Gives the space of deleted rows back to the file system (`VACUUM`, then a truncating
    /// checkpoint of the write-ahead log: the file is rewritten, so it takes as long as a
    /// copy of the file and needs as much free space): after
    /// [`prune`](curator_session::prune).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::sqlite::SqliteStore;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let store = SqliteStore::open(dir.path().join("s.db"))?;
    /// store.vacuum()?;
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A store error (kind `Full` when the disk cannot hold the copy; `Busy` when another
    /// connection keeps the log from being copied back for longer than the store's busy
    /// timeout, [`SqliteOptions::busy_timeout`](crate::SqliteOptions::busy_timeout)).
    pub fn vacuum(&self) -> SessionResult<()> {
        let conn = self.writable()?;
        conn.execute_batch("VACUUM").map_err(store_error)?;
        // In WAL mode the rewritten pages are in the log: copy them back and truncate, so
        // the file itself shrinks now. While another connection holds the log (the store's
        // background checkpointer, a reader), the checkpoint reports itself busy and copies
        // nothing: it is tried again, 10 ms apart, for as long as the store waits on a lock.
        let timeout_ms: i64 =
            conn.query_row("PRAGMA busy_timeout", [], |row| row.get(0)).map_err(store_error)?;
        let timeout = std::time::Duration::from_millis(u64::try_from(timeout_ms).unwrap_or(0));
        let started = std::time::Instant::now();
        loop {
            let busy: i64 = conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| row.get(0))
                .map_err(store_error)?;
            if busy == 0 {
                return Ok(());
            }
            if started.elapsed() >= timeout {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        Err(curator_session::Error::store(
            "sqlite",
            StoreErrorKind::Busy,
            format!(
                "checkpointing after VACUUM: another connection kept the log busy for {timeout_ms} ms, the busy timeout (the file shrinks at the next checkpoint)"
            ),
            None,
        ))
    }
}

impl SessionStore for SqliteStore {
    fn delete_evaluations(
        &self,
        key: &SessionKey,
        evaluations: &[EvaluationId],
    ) -> SessionResult<u64> {
        let mut conn = self.writable()?;
        let tx =
            conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(store_error)?;
        let mut messages = 0u64;
        for evaluation in evaluations {
            let id = evaluation.as_uuid().as_bytes().as_slice();
            let deleted = tx
                .prepare_cached(&format!(
                    "DELETE FROM entries WHERE evaluation_id = ?1 AND {} = ?2",
                    self.key_column
                ))
                .and_then(|mut s| s.execute(params![id, key.as_str()]))
                .map_err(store_error)?;
            if deleted > 0 {
                for name in curator_session::evaluation_checkpoints(*evaluation) {
                    tx.prepare_cached("DELETE FROM checkpoints WHERE name = ?1")
                        .and_then(|mut s| s.execute(params![name]))
                        .map_err(store_error)?;
                }
            }
            messages += deleted as u64;
        }
        tx.commit().map_err(store_error)?;
        // What was checked may be gone.
        *self.verified() = None;
        Ok(messages)
    }

    fn delete_checkpoints(&self, names: &[&str]) -> SessionResult<u64> {
        let mut conn = self.writable()?;
        let tx =
            conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(store_error)?;
        let mut deleted = 0u64;
        for name in names {
            deleted += tx
                .prepare_cached("DELETE FROM checkpoints WHERE name = ?1")
                .and_then(|mut s| s.execute(params![name]))
                .map_err(store_error)? as u64;
        }
        tx.commit().map_err(store_error)?;
        Ok(deleted)
    }

    fn append_batch_fenced(
        &self,
        key: &SessionKey,
        entries: &[Entry],
        fence: &curator_session::Fence,
    ) -> SessionResult<Vec<Appended>> {
        key.check()?;
        let mut conn = self.writable()?;
        let mut verified = self.verified();
        let tx =
            conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(store_error)?;
        self.check_fence(&tx, key, fence)?;
        let outcomes = entries
            .iter()
            .map(|e| insert(&tx, key, e, &mut verified))
            .collect::<SessionResult<Vec<_>>>()
            .and_then(|outcomes| tx.commit().map_err(store_error).map(|()| outcomes));
        if outcomes.is_err() {
            *verified = None;
        }
        outcomes
    }

    fn append(&self, key: &SessionKey, entry: &Entry) -> SessionResult<Appended> {
        self.append_batch(key, std::slice::from_ref(entry))
            .map(|outcomes| outcomes.first().copied().unwrap_or(Appended::Duplicate))
    }

    fn append_batch(&self, key: &SessionKey, entries: &[Entry]) -> SessionResult<Vec<Appended>> {
        key.check()?;
        let mut conn = self.writable()?;
        let mut verified = self.verified();
        let tx =
            conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(store_error)?;
        let outcomes = entries
            .iter()
            .map(|e| insert(&tx, key, e, &mut verified))
            .collect::<SessionResult<Vec<_>>>()
            .and_then(|outcomes| tx.commit().map_err(store_error).map(|()| outcomes));
        if outcomes.is_err() {
            // What was checked may not have been committed: check again next time.
            *verified = None;
        }
        outcomes
    }

    fn entries(&self, evaluation: EvaluationId) -> SessionResult<Vec<Entry>> {
        let conn = self.lock();
        // The rows and their count through the second index are read in one transaction,
        // so both see the same moment of the record: a row another connection commits
        // between them is not a damaged index.
        let tx = conn.unchecked_transaction().map_err(store_error)?;
        let mut statement = tx
            .prepare_cached(&format!(
                "SELECT {COLUMNS}, {} FROM entries WHERE evaluation_id = ?1 ORDER BY sequence",
                self.checksum_column
            ))
            .map_err(store_error)?;
        // Each row is checked and decoded as it is read, while its bytes are still in the
        // cache (collecting the rows first made the checksum and the JSON parser read them
        // back from memory).
        let entries = statement
            .query_map([evaluation.as_uuid().as_bytes().as_slice()], raw)
            .map_err(store_error)?
            .map(|row| row.map_err(store_error)?.into_entry())
            .collect::<SessionResult<Vec<Entry>>>()?;
        drop(statement);
        if self.second_index {
            whole_or_corrupt(&tx, evaluation, entries.len())?;
        }
        tx.commit().map_err(store_error)?;
        Ok(entries)
    }

    fn entries_from(&self, evaluation: EvaluationId, from: u64) -> SessionResult<Vec<Entry>> {
        // A sequence beyond SQLite's integers is beyond every stored one.
        let Ok(from) = i64::try_from(from) else { return Ok(Vec::new()) };
        let conn = self.lock();
        let mut statement = conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS}, {} FROM entries WHERE evaluation_id = ?1 AND sequence >= ?2 ORDER BY sequence",
                self.checksum_column
            ))
            .map_err(store_error)?;
        statement
            .query_map(params![evaluation.as_uuid().as_bytes().as_slice(), from], raw)
            .map_err(store_error)?
            .map(|row| row.map_err(store_error)?.into_entry())
            .collect()
    }

    fn entries_in_pages(
        &self,
        evaluation: EvaluationId,
        page: usize,
        each: &mut dyn FnMut(Vec<Entry>) -> std::ops::ControlFlow<()>,
    ) -> SessionResult<()> {
        // Each page is read by sequence after the last one read, the connection free between
        // pages (so `each` may use the store). The rows are counted through the second index
        // before the first page; fewer rows read than counted is `Corrupt` (a damaged index
        // hid some), so the record never reads shorter. Rows appended while the pages are
        // read are read too, and only add to the rows read.
        let page = page.max(1);
        let limit = i64::try_from(page).unwrap_or(i64::MAX);
        let id = evaluation.as_uuid().as_bytes().as_slice();
        let counted =
            if self.second_index { Some(count_by_time(&self.lock(), evaluation)?) } else { None };
        let (mut read, mut last): (usize, i64) = (0, -1);
        loop {
            let entries = {
                let conn = self.lock();
                let mut statement = conn
                .prepare_cached(&format!(
                    "SELECT {COLUMNS}, {} FROM entries WHERE evaluation_id = ?1 AND sequence > ?2 ORDER BY sequence LIMIT ?3",
                    self.checksum_column
                ))
                .map_err(store_error)?;
                statement
                    .query_map(params![id, last, limit], raw)
                    .map_err(store_error)?
                    .map(|row| row.map_err(store_error)?.into_entry())
                    .collect::<SessionResult<Vec<Entry>>>()?
            };
            let full = entries.len() == page;
            let Some(newest) = entries.last() else { break };
            last = i64::try_from(newest.sequence).unwrap_or(i64::MAX);
            read += entries.len();
            if each(entries).is_break() {
                return Ok(());
            }
            if !full {
                break;
            }
        }
        match counted {
            // Fewer rows than counted before the pages: rows another connection removed
            // meanwhile, or rows a damaged index hides. Both indexes counted in one
            // transaction tell which.
            Some(counted) if usize::try_from(counted).is_ok_and(|c| read < c) => {
                let conn = self.lock();
                let tx = conn.unchecked_transaction().map_err(store_error)?;
                let by_sequence = count_by_sequence(&tx, evaluation)?;
                let by_time = count_by_time(&tx, evaluation)?;
                drop(tx);
                if by_sequence == by_time {
                    return Ok(());
                }
                same_count(evaluation, usize::try_from(by_sequence).unwrap_or(read), by_time)
            }
            _ => Ok(()),
        }
    }

    fn evaluations(&self) -> SessionResult<Vec<EvaluationSummary>> {
        self.summaries("", &[])
    }

    fn evaluations_of(&self, key: &SessionKey) -> SessionResult<Vec<EvaluationSummary>> {
        self.summaries(&format!("WHERE {} = ?1", self.key_column), &[&key.as_str()])
    }

    fn evaluation(&self, evaluation: EvaluationId) -> SessionResult<Option<EvaluationSummary>> {
        let id = evaluation.as_uuid().as_bytes().as_slice();
        Ok(self.summaries("WHERE evaluation_id = ?1", &[&id])?.pop())
    }

    fn latest_evaluation_of(
        &self,
        key: &SessionKey,
        prompt: &PromptRef,
    ) -> SessionResult<Option<EvaluationId>> {
        // One lookup in the partial index of first entries: the key and prompt, then the
        // latest time (ties to the row written last).
        let index =
            if self.key_column == "session_key" { "INDEXED BY entries_by_session" } else { "" };
        let conn = self.lock();
        let id: Option<Vec<u8>> = conn
            .prepare_cached(&format!(
                "SELECT evaluation_id FROM entries {index}
                 WHERE {} = ?1 AND prompt_ns = ?2 AND prompt_key = ?3 AND sequence = 0
                 ORDER BY created_ns DESC, rowid DESC LIMIT 1",
                self.key_column
            ))
            .and_then(|mut s| {
                s.query_row(params![key.as_str(), prompt.ns, prompt.key], |r| r.get(0)).optional()
            })
            .map_err(store_error)?;
        id.map(|id| {
            CODEC.evaluation_id(
                &id,
                "evaluation_id",
                &format!("first entries row of session `{key}`"),
            )
        })
        .transpose()
    }

    fn put_checkpoint(&self, name: &str, document: &Value) -> SessionResult<u64> {
        let conn = self.writable()?;
        let saved = CODEC.nanos(Utc::now())?;
        put_checkpoint(&conn, name, document, saved)
    }

    /// The fence is checked in the write's own immediate transaction, as a fenced append's is.
    fn put_checkpoint_fenced(
        &self,
        name: &str,
        document: &Value,
        fence: &curator_session::Fence,
    ) -> SessionResult<u64> {
        fence.key.check()?;
        let mut conn = self.writable()?;
        let saved = CODEC.nanos(Utc::now())?;
        let tx =
            conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(store_error)?;
        self.check_fence(&tx, &fence.key, fence)?;
        let version = put_checkpoint(&tx, name, document, saved)?;
        tx.commit().map_err(store_error)?;
        Ok(version)
    }

    fn put_checkpoints(&self, checkpoints: &[(&str, &Value)]) -> SessionResult<Vec<u64>> {
        let mut conn = self.writable()?;
        let saved = CODEC.nanos(Utc::now())?;
        // One transaction, so one commit (and one sync with full durability) for them all.
        let tx =
            conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(store_error)?;
        let versions = checkpoints
            .iter()
            .map(|(name, document)| put_checkpoint(&tx, name, document, saved))
            .collect::<SessionResult<Vec<_>>>()?;
        tx.commit().map_err(store_error)?;
        Ok(versions)
    }

    fn checkpoint(&self, name: &str) -> SessionResult<Option<Checkpoint>> {
        let conn = self.lock();
        let row: Option<(i64, String, i64)> = conn
            .prepare_cached("SELECT version, document, saved_ns FROM checkpoints WHERE name = ?1")
            .and_then(|mut s| {
                s.query_row([name], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).optional()
            })
            .map_err(store_error)?;
        row.map(|(version, document, saved)| {
            CODEC.checkpoint(name.to_owned(), version, &document, saved)
        })
        .transpose()
    }

    /// `PRAGMA data_version`, which changes when another connection (another process, or
    /// another store on the file) commits, with the number of rows this connection has
    /// changed, which its own commits change.
    fn change_stamp(&self) -> SessionResult<Option<ChangeStamp>> {
        let conn = self.lock();
        let version: i64 = conn
            .prepare_cached("PRAGMA data_version")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .map_err(store_error)?;
        Ok(Some(ChangeStamp::new(version.cast_unsigned(), conn.total_changes())))
    }

    fn checkpoint_names(&self, prefix: &str) -> SessionResult<Vec<String>> {
        let conn = self.lock();
        // `substr` compares the prefix exactly (LIKE would read `_` and `%` as patterns).
        conn.prepare_cached(
            "SELECT name FROM checkpoints WHERE substr(name, 1, length(?1)) = ?1 ORDER BY name",
        )
        .and_then(|mut s| s.query_map([prefix], |r| r.get(0))?.collect())
        .map_err(store_error)
    }

    fn snapshot(&self) -> SessionResult<Snapshot> {
        let conn = self.lock();
        // One read transaction, so the snapshot is consistent while other processes append.
        let tx = conn.unchecked_transaction().map_err(store_error)?;
        let rows = tx
            .prepare(&format!(
                "SELECT {COLUMNS}, {}, {} FROM entries e JOIN (
                    SELECT evaluation_id, MIN(created_ns) AS first, MIN(rowid) AS rank FROM entries GROUP BY evaluation_id
                 ) o USING (evaluation_id) ORDER BY o.first, o.rank, e.sequence",
                self.checksum_column,
                self.key_column
            ))
            .and_then(|mut s| s.query_map([], raw_keyed)?.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(store_error)?;
        let mut snapshot = SnapshotRows::with_capacity(rows.len());
        for (key, row) in rows {
            snapshot.push(&key, row.into_entry()?);
        }
        let checkpoints = tx
            .prepare("SELECT name, version, document, saved_ns FROM checkpoints ORDER BY name")
            .and_then(|mut s| {
                s.query_map([], |r| {
                    Ok((r.get::<_, String>(0)?, r.get(1)?, r.get::<_, String>(2)?, r.get(3)?))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()
            })
            .map_err(store_error)?;
        let checkpoints = checkpoints
            .into_iter()
            .map(|(name, version, document, saved)| {
                CODEC.checkpoint(name, version, &document, saved)
            })
            .collect::<SessionResult<Vec<_>>>()?;
        Ok(snapshot.into_snapshot(checkpoints))
    }

    fn restore(&self, snapshot: &Snapshot) -> SessionResult<()> {
        // The same rules as every store: a snapshot that breaks one changes nothing.
        snapshot.validate()?;
        let mut conn = self.writable()?;
        let mut verified = self.verified();
        *verified = None;
        let restored = (|| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(store_error)?;
            tx.execute_batch("DELETE FROM entries; DELETE FROM checkpoints;")
                .map_err(store_error)?;
            for entry in &snapshot.entries {
                insert(&tx, &snapshot.key_of(entry.evaluation_id), entry, &mut verified)?;
            }
            for c in &snapshot.checkpoints {
                let row = CODEC.checkpoint_values(c)?;
                tx.execute(
                    "INSERT INTO checkpoints (name, version, document, saved_ns) VALUES (?1, ?2, ?3, ?4)",
                    params![c.name, row.version, row.document, row.saved_ns],
                )
                .map_err(store_error)?;
            }
            tx.commit().map_err(store_error)
        })();
        if restored.is_err() {
            // What was checked was rolled back: check again next time.
            *verified = None;
        }
        restored
    }
}
