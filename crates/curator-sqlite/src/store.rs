//! `SqliteStore`: the session store on one SQLite file.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use chrono::{DateTime, Utc};
use curator_model::{Entry, EvaluationId, Message, MessageId, PromptRef};
use curator_session::{
    Appended, Checkpoint, EvaluationSummary, SessionStore, Snapshot, StoreErrorKind,
};
use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, TransactionBehavior, params};
use serde_json::Value;

use crate::error::kind_of;
use crate::schema::{self, Found};
use crate::{Error, Options, Result};

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
/// use curator_model::{Message, PromptRef};
/// use curator_session::{Conversation, SessionStore};
/// use curator_sqlite::SqliteStore;
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
    /// Stops (after a last checkpoint) when the store is dropped. Declared after `conn` so
    /// that the connection, whose commit hook holds a wake-up sender, closes first: the
    /// thread only ends once every sender is gone.
    _checkpointer: Option<crate::checkpointer::Checkpointer>,
}

fn open_error<'a>(path: &'a Path, context: &'static str) -> impl Fn(rusqlite::Error) -> Error + 'a {
    move |e| Error::sqlite(path, context, e)
}

impl SqliteStore {
    /// Opens (or creates) a session file with the default [`Options`] (full durability).
    ///
    /// # Errors
    ///
    /// [`Error::NotADatabase`], [`Error::ForeignDatabase`] or [`Error::NewerSchema`] when the
    /// file is not one this build can use (the file is then untouched), or [`Error::Sqlite`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, Options::default())
    }

    /// Opens (or creates) a session file.
    ///
    /// # Errors
    ///
    /// As [`open`](SqliteStore::open).
    pub fn open_with(path: impl AsRef<Path>, options: Options) -> Result<Self> {
        let path = path.as_ref();
        schema::inspect(path)?;
        let mut conn = Connection::open(path).map_err(open_error(path, "opening"))?;
        conn.busy_timeout(options.busy_timeout)
            .map_err(open_error(path, "setting the busy timeout"))?;
        // SQLite answers a journal-mode change with "busy" at once, without waiting, while
        // another process creates the file: retry until the busy timeout.
        retry_busy(options.busy_timeout, || {
            conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
        })
        .map_err(open_error(path, "switching to write-ahead logging"))?;
        conn.pragma_update(None, "synchronous", options.durability.pragma())
            .map_err(open_error(path, "setting durability"))?;
        // 32 MiB of page cache (the default is 2 MiB): a batch's index pages stay in memory
        // instead of spilling to the log and being read back.
        conn.pragma_update(None, "cache_size", -32_768)
            .map_err(open_error(path, "sizing the page cache"))?;
        schema::migrate(path, &mut conn)?;
        let checkpointer = crate::checkpointer::Checkpointer::start(path, options);
        crate::checkpointer::Checkpointer::hook(checkpointer.as_ref(), &mut conn)
            .map_err(open_error(path, "installing the checkpoint hook"))?;
        Ok(Self {
            conn: Mutex::new(conn),
            path: path.to_owned(),
            read_only: false,
            _checkpointer: checkpointer,
        })
    }

    /// Opens an existing session file for reading only (for inspection tools): nothing is
    /// ever written, and writes through the store fail.
    ///
    /// # Errors
    ///
    /// As [`open`](SqliteStore::open); [`Error::Sqlite`] when the file does not exist.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        if let Found::New = schema::inspect(path)? {
            return Err(Error::Sqlite {
                path: path.to_owned(),
                context: "opening read-only",
                kind: StoreErrorKind::NotFound,
                source: "no session file here".into(),
            });
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(open_error(path, "opening read-only"))?;
        conn.busy_timeout(Options::default().busy_timeout)
            .map_err(open_error(path, "setting the busy timeout"))?;
        Ok(Self {
            conn: Mutex::new(conn),
            path: path.to_owned(),
            read_only: true,
            _checkpointer: None,
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
                "the store was opened read-only",
                None,
            ));
        }
        Ok(self.lock())
    }
}

/// Runs `f` until it does not fail with "busy" or "locked", or `timeout` has passed.
fn retry_busy<T>(
    timeout: std::time::Duration,
    mut f: impl FnMut() -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    let started = std::time::Instant::now();
    let mut pause = std::time::Duration::from_millis(1);
    loop {
        match f() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && started.elapsed() < timeout =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

fn store_error(e: rusqlite::Error) -> curator_session::Error {
    curator_session::Error::store("sqlite", kind_of(&e), "the database failed", Some(Box::new(e)))
}

/// A row this build cannot read: `what` is wrong with it, `cause` says why.
fn corrupt(
    what: String,
    cause: impl std::error::Error + Send + Sync + 'static,
) -> curator_session::Error {
    curator_session::Error::store("sqlite", StoreErrorKind::Corrupt, what, Some(Box::new(cause)))
}

/// A row this build cannot read, with no underlying error to quote.
fn corrupt_row(what: String) -> curator_session::Error {
    curator_session::Error::store("sqlite", StoreErrorKind::Corrupt, what, None)
}

const COLUMNS: &str =
    "message_id, evaluation_id, sequence, turn, prompt_ns, prompt_key, created_ns, message";

/// One row, read before it is checked and turned into an [`Entry`].
struct RawEntry {
    message_id: Vec<u8>,
    evaluation_id: Vec<u8>,
    sequence: i64,
    turn: i64,
    prompt: Option<(String, String)>,
    created_ns: i64,
    message: String,
}

fn raw(row: &Row<'_>) -> rusqlite::Result<RawEntry> {
    let ns: Option<String> = row.get(4)?;
    let key: Option<String> = row.get(5)?;
    Ok(RawEntry {
        message_id: row.get(0)?,
        evaluation_id: row.get(1)?,
        sequence: row.get(2)?,
        turn: row.get(3)?,
        prompt: ns.zip(key),
        created_ns: row.get(6)?,
        message: row.get(7)?,
    })
}

impl RawEntry {
    fn into_entry(self) -> SessionResult<Entry> {
        let id = |bytes: &[u8], what: &str| {
            uuid::Uuid::from_slice(bytes).map_err(|e| corrupt(format!("bad {what} in the file"), e))
        };
        let message: Message = serde_json::from_str(&self.message).map_err(|e| {
            corrupt(format!("bad message at sequence {} in the file", self.sequence), e)
        })?;
        Ok(Entry {
            id: MessageId::from_uuid(id(&self.message_id, "message id")?),
            evaluation_id: EvaluationId::from_uuid(id(&self.evaluation_id, "evaluation id")?),
            sequence: u64::try_from(self.sequence)
                .map_err(|_| corrupt_row(format!("negative sequence {}", self.sequence)))?,
            turn: u32::try_from(self.turn)
                .map_err(|_| corrupt_row(format!("bad turn {}", self.turn)))?,
            prompt: self.prompt.map(|(ns, key)| PromptRef { ns, key }),
            created_at: DateTime::from_timestamp_nanos(self.created_ns),
            message,
        })
    }
}

fn nanos(at: DateTime<Utc>) -> SessionResult<i64> {
    at.timestamp_nanos_opt().ok_or_else(|| {
        curator_session::Error::store(
            "sqlite",
            StoreErrorKind::Other,
            format!("time {at} is outside the range the file can hold (1677 to 2262)"),
            None,
        )
    })
}

/// Inserts one entry inside an open transaction.
fn insert(tx: &rusqlite::Transaction<'_>, entry: &Entry) -> SessionResult<Appended> {
    let id = entry.id.as_uuid().as_bytes().as_slice();
    let evaluation = entry.evaluation_id.as_uuid().as_bytes().as_slice();
    let exists = tx
        .prepare_cached("SELECT 1 FROM entries WHERE message_id = ?1")
        .and_then(|mut s| s.exists([id]))
        .map_err(store_error)?;
    if exists {
        return Ok(Appended::Duplicate);
    }
    let message = serde_json::to_string(&entry.message).map_err(|e| {
        curator_session::Error::store(
            "sqlite",
            StoreErrorKind::Other,
            "cannot serialise the message",
            Some(Box::new(e)),
        )
    })?;
    let sequence = i64::try_from(entry.sequence).map_err(|e| {
        curator_session::Error::store(
            "sqlite",
            StoreErrorKind::Other,
            format!("sequence {} is too large", entry.sequence),
            Some(Box::new(e)),
        )
    })?;
    let inserted = tx
        .prepare_cached(&format!(
            "INSERT INTO entries ({COLUMNS}, role) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
        ))
        .and_then(|mut s| {
            s.execute(params![
                id,
                evaluation,
                sequence,
                entry.turn,
                entry.prompt.as_ref().map(|p| p.ns.as_str()),
                entry.prompt.as_ref().map(|p| p.key.as_str()),
                nanos(entry.created_at)
                    .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?,
                message,
                entry.message.role().as_str(),
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
                    params![evaluation, sequence],
                    |r| r.get(0),
                )
                .map_err(store_error)?;
            let existing = uuid::Uuid::from_slice(&existing)
                .map_err(|e| corrupt("bad message id in the file".into(), e))?;
            Err(curator_session::Error::SequenceTaken {
                evaluation: entry.evaluation_id,
                sequence: entry.sequence,
                existing: MessageId::from_uuid(existing),
            })
        }
        Err(rusqlite::Error::ToSqlConversionFailure(e)) => Err(curator_session::Error::store(
            "sqlite",
            StoreErrorKind::Other,
            "storing the entry",
            Some(e),
        )),
        Err(e) => Err(store_error(e)),
    }
}

impl SessionStore for SqliteStore {
    fn append(&self, entry: &Entry) -> SessionResult<Appended> {
        self.append_batch(std::slice::from_ref(entry))
            .map(|outcomes| outcomes.first().copied().unwrap_or(Appended::Duplicate))
    }

    fn append_batch(&self, entries: &[Entry]) -> SessionResult<Vec<Appended>> {
        let mut conn = self.writable()?;
        let tx =
            conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(store_error)?;
        let outcomes = entries.iter().map(|e| insert(&tx, e)).collect::<SessionResult<Vec<_>>>()?;
        tx.commit().map_err(store_error)?;
        Ok(outcomes)
    }

    fn entries(&self, evaluation: EvaluationId) -> SessionResult<Vec<Entry>> {
        let conn = self.lock();
        let mut statement = conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM entries WHERE evaluation_id = ?1 ORDER BY sequence"
            ))
            .map_err(store_error)?;
        let rows = statement
            .query_map([evaluation.as_uuid().as_bytes().as_slice()], raw)
            .map_err(store_error)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(store_error)?;
        rows.into_iter().map(RawEntry::into_entry).collect()
    }

    fn evaluations(&self) -> SessionResult<Vec<EvaluationSummary>> {
        let conn = self.lock();
        let mut statement = conn
            .prepare_cached(
                "SELECT evaluation_id, MIN(created_ns), MAX(created_ns), COUNT(*), MAX(turn),
                    (SELECT prompt_ns || char(0) || prompt_key FROM entries p
                      WHERE p.evaluation_id = e.evaluation_id AND prompt_ns IS NOT NULL ORDER BY sequence LIMIT 1)
                 FROM entries e GROUP BY evaluation_id ORDER BY MIN(created_ns), MIN(rowid)",
            )
            .map_err(store_error)?;
        let rows = statement
            .query_map([], |r| {
                Ok((
                    r.get::<_, Vec<u8>>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, Option<String>>(5)?,
                ))
            })
            .map_err(store_error)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(store_error)?;
        rows.into_iter()
            .map(|(id, first, last, count, turns, prompt)| {
                let id = uuid::Uuid::from_slice(&id)
                    .map_err(|e| corrupt("bad evaluation id in the file".into(), e))?;
                let prompt = prompt
                    .and_then(|p| p.split_once('\0').map(|(ns, key)| PromptRef::new(ns, key)));
                let mut summary = EvaluationSummary::new(
                    EvaluationId::from_uuid(id),
                    DateTime::from_timestamp_nanos(first),
                );
                summary.prompt = prompt;
                summary.messages = u64::try_from(count).unwrap_or(0);
                summary.turns = u32::try_from(turns).unwrap_or(0);
                summary.last_at = DateTime::from_timestamp_nanos(last);
                Ok(summary)
            })
            .collect()
    }

    fn put_checkpoint(&self, name: &str, document: &Value) -> SessionResult<u64> {
        let conn = self.writable()?;
        let saved = nanos(Utc::now())?;
        let version: i64 = conn
            .prepare_cached(
                "INSERT INTO checkpoints (name, version, document, saved_ns) VALUES (?1, 1, ?2, ?3)
                 ON CONFLICT (name) DO UPDATE SET version = version + 1, document = excluded.document, saved_ns = excluded.saved_ns
                 RETURNING version",
            )
            .and_then(|mut s| s.query_row(params![name, document.to_string(), saved], |r| r.get(0)))
            .map_err(store_error)?;
        Ok(u64::try_from(version).unwrap_or(0))
    }

    fn checkpoint(&self, name: &str) -> SessionResult<Option<Checkpoint>> {
        let conn = self.lock();
        let row: Option<(i64, String, i64)> = conn
            .prepare_cached("SELECT version, document, saved_ns FROM checkpoints WHERE name = ?1")
            .and_then(|mut s| {
                s.query_row([name], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).optional()
            })
            .map_err(store_error)?;
        row.map(|(version, document, saved)| checkpoint(name.to_owned(), version, &document, saved))
            .transpose()
    }

    fn snapshot(&self) -> SessionResult<Snapshot> {
        let conn = self.lock();
        // One read transaction, so the snapshot is consistent while other processes append.
        let tx = conn.unchecked_transaction().map_err(store_error)?;
        let rows = tx
            .prepare(&format!(
                "SELECT {COLUMNS} FROM entries e JOIN (
                    SELECT evaluation_id, MIN(created_ns) AS first, MIN(rowid) AS rank FROM entries GROUP BY evaluation_id
                 ) o USING (evaluation_id) ORDER BY o.first, o.rank, e.sequence"
            ))
            .and_then(|mut s| s.query_map([], raw)?.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(store_error)?;
        let entries =
            rows.into_iter().map(RawEntry::into_entry).collect::<SessionResult<Vec<_>>>()?;
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
            .map(|(name, version, document, saved)| checkpoint(name, version, &document, saved))
            .collect::<SessionResult<Vec<_>>>()?;
        Ok(Snapshot::new(entries, checkpoints))
    }

    fn restore(&self, snapshot: &Snapshot) -> SessionResult<()> {
        snapshot.validate()?;
        let mut conn = self.writable()?;
        let tx =
            conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(store_error)?;
        tx.execute_batch("DELETE FROM entries; DELETE FROM checkpoints;").map_err(store_error)?;
        for entry in &snapshot.entries {
            insert(&tx, entry)?;
        }
        for c in &snapshot.checkpoints {
            tx.execute(
                "INSERT INTO checkpoints (name, version, document, saved_ns) VALUES (?1, ?2, ?3, ?4)",
                params![c.name, i64::try_from(c.version).unwrap_or(i64::MAX), c.document.to_string(), nanos(c.saved_at)?],
            )
            .map_err(store_error)?;
        }
        tx.commit().map_err(store_error)
    }
}

fn checkpoint(
    name: String,
    version: i64,
    document: &str,
    saved_ns: i64,
) -> SessionResult<Checkpoint> {
    let document = serde_json::from_str(document)
        .map_err(|e| corrupt(format!("bad checkpoint `{name}` in the file"), e))?;
    let mut checkpoint = Checkpoint::new(name, document, DateTime::from_timestamp_nanos(saved_ns));
    checkpoint.version = u64::try_from(version).unwrap_or(0);
    Ok(checkpoint)
}
