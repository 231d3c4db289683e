//! The schema, its version and forward migrations, and the checks made while opening.
//!
//! Opening never trusts a file before SQLite has looked at it under a lock: the header
//! (application id, schema version, tables) is read in one read transaction, so that it is
//! one consistent state even while another process creates or migrates the file, and a
//! read-write connection rolls back whatever a crashed writer left half-done before it
//! reads. A file that needs no migration is then opened without a single write; one that
//! does is migrated in one `BEGIN IMMEDIATE` transaction that reads the header again first,
//! so that processes creating one file at once agree on who creates it.

use std::io::Read;
use std::path::{Path, PathBuf};

use rusqlite::Connection;

use curator_session::StoreErrorKind;

use crate::{Error, Result};

/// `PRAGMA application_id` of curator session files ("CURA").
pub(crate) const APPLICATION_ID: i32 = 0x4355_5241;

/// The schema version this build writes; `PRAGMA user_version` holds a file's version.
pub const SCHEMA_VERSION: i64 = 5;

/// The first schema version with session keys.
pub(crate) const KEYS_SINCE: i64 = 3;
/// The first version with the index of an evaluation's rows by time.
pub(crate) const TIME_INDEX_SINCE: i64 = 2;

/// The first schema version with a checksum per row.
pub(crate) const CHECKSUMS_SINCE: i64 = 5;

/// Forward migrations: `MIGRATIONS[n]` takes a file from version `n` to `n + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: entries, one row per recorded message; checkpoints, the latest version of each.
    "CREATE TABLE entries (
        message_id    BLOB    NOT NULL UNIQUE,
        evaluation_id BLOB    NOT NULL,
        sequence      INTEGER NOT NULL,
        turn          INTEGER NOT NULL,
        prompt_ns     TEXT,
        prompt_key    TEXT,
        created_ns    INTEGER NOT NULL,
        role          TEXT    NOT NULL,
        message       TEXT    NOT NULL,
        UNIQUE (evaluation_id, sequence)
    );
    CREATE TABLE checkpoints (
        name     TEXT    PRIMARY KEY,
        version  INTEGER NOT NULL,
        document TEXT    NOT NULL,
        saved_ns INTEGER NOT NULL
    );",
    // 2: listing evaluations by their first message reads an index instead of the table.
    "CREATE INDEX entries_by_evaluation_time ON entries (evaluation_id, created_ns);",
    // 3: session keys. Evaluations recorded before keys existed belong to the default key
    // (adding a column with a constant default does not rewrite the table). Opening a key's
    // latest evaluation for a prompt is one lookup in a partial index that holds only the
    // first entry of each evaluation.
    "ALTER TABLE entries ADD COLUMN session_key TEXT NOT NULL DEFAULT 'default';
    CREATE INDEX entries_by_session ON entries (session_key, prompt_ns, prompt_key, created_ns)
        WHERE sequence = 0;",
    // 4: fencing tokens: each claim on a key takes the key's next number, and appends made
    // under a claim are refused once the key's number is another.
    "CREATE TABLE claim_tokens (
        session_key TEXT    PRIMARY KEY,
        token       INTEGER NOT NULL
    );",
    // 5: a checksum per row, verified on read (SQLite has no page checksums); rows written
    // before have none.
    "ALTER TABLE entries ADD COLUMN checksum INTEGER;",
];

/// What the raw bytes of a file say, read before SQLite opens it.
pub(crate) enum Raw {
    /// No file, or an empty one.
    Missing,
    /// Something SQLite should look at.
    Present,
}

fn io_error(path: &Path, context: &'static str, e: std::io::Error) -> Error {
    let kind = match e.kind() {
        std::io::ErrorKind::NotFound => StoreErrorKind::NotFound,
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
            StoreErrorKind::ReadOnly
        }
        std::io::ErrorKind::StorageFull => StoreErrorKind::Full,
        _ => StoreErrorKind::Io,
    };
    Error::Sqlite { path: path.to_owned(), context, kind, source: Box::new(e) }
}

/// `path` with `suffix` appended (`-wal`, `-shm`, `-journal`).
pub(crate) fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn non_empty(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() > 0)
}

/// What one look at a file's bytes found.
#[derive(PartialEq, Eq)]
struct Look {
    /// The file's length before and after its header was read.
    lengths: (u64, u64),
    /// Whether a log or journal beside the file held anything, before and after.
    logged: (bool, bool),
    header: Vec<u8>,
}

impl Look {
    /// Whether nothing changed while the file was looked at (another process creating or
    /// checkpointing it can change it at any moment).
    fn steady(&self) -> bool {
        self.lengths.0 == self.lengths.1 && self.logged.0 == self.logged.1
    }
}

fn look(path: &Path) -> Result<Option<Look>> {
    let logged = || non_empty(&sibling(path, "-wal")) || non_empty(&sibling(path, "-journal"));
    let before = logged();
    let mut file = match std::fs::File::open(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(path, "reading the file", e)),
        Ok(file) => file,
    };
    let length = |file: &std::fs::File| {
        file.metadata().map(|m| m.len()).map_err(|e| io_error(path, "reading the file", e))
    };
    let first = length(&file)?;
    let mut header = vec![0u8; 100];
    let mut read = 0;
    while read < header.len() {
        match file.read(&mut header[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_error(path, "reading the file", e)),
        }
    }
    header.truncate(read);
    let last = length(&file)?;
    Ok(Some(Look { lengths: (first, last), logged: (before, logged()), header }))
}

/// How many bytes the header of a SQLite file says the file holds, when it says so
/// reliably (written with the file's current change counter, SQLite's own rule).
fn stated_length(header: &[u8]) -> Option<u64> {
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(header.get(at..at + 4)?.try_into().ok()?))
    };
    let page_size = match u16::from_be_bytes(header.get(16..18)?.try_into().ok()?) {
        1 => 65_536,
        n => u64::from(n),
    };
    let pages = u64::from(word(28)?);
    (pages > 0 && word(24)? == word(92)?).then_some(pages * page_size)
}

/// Looks at a file's bytes without changing it: the SQLite magic, and whether the file is
/// shorter than its header says (a truncated file). Both checks are skipped while a log or
/// journal beside the file may hold what the file lacks (SQLite sorts that out under its
/// locks), and a file is judged only on looks during which it did not change, twice for a
/// truncation: another process may be creating or checkpointing it right now.
pub(crate) fn raw_check(path: &Path) -> Result<Raw> {
    let mut truncated_before = false;
    for _ in 0..50 {
        let Some(seen) = look(path)? else { return Ok(Raw::Missing) };
        if !seen.steady() {
            std::thread::sleep(std::time::Duration::from_millis(2));
            continue;
        }
        if seen.logged.0 {
            return Ok(Raw::Present);
        }
        if seen.header.is_empty() {
            return Ok(Raw::Missing);
        }
        if seen.header.len() < 100 || &seen.header[..16] != b"SQLite format 3\0" {
            return Err(Error::NotADatabase { path: path.to_owned() });
        }
        let len = seen.lengths.1;
        match stated_length(&seen.header) {
            Some(stated) if len < stated => {
                if truncated_before {
                    return Err(Error::Corrupt {
                        path: path.to_owned(),
                        reason: format!(
                            "the file holds {len} bytes but its header says {stated} (it was truncated)"
                        ),
                        source: None,
                    });
                }
                truncated_before = true;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            _ => return Ok(Raw::Present),
        }
    }
    // The file kept changing: leave it to SQLite and its locks.
    Ok(Raw::Present)
}

/// What the header of a file says, read in one transaction.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Header {
    application_id: i64,
    /// `PRAGMA user_version`.
    pub(crate) version: i64,
    tables: i64,
}

/// What to do with a file, from its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// A new (empty) database: create the schema.
    New,
    /// A curator file of an older schema: migrate it.
    Older,
    /// A curator file of this build's schema: nothing to write.
    Current,
}

/// Maps an error met while reading a file's header or schema to this crate's error.
fn reading<'a>(path: &'a Path, context: &'static str) -> impl Fn(rusqlite::Error) -> Error + 'a {
    move |e| match &e {
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::NotADatabase => {
            Error::NotADatabase { path: path.to_owned() }
        }
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::DatabaseCorrupt => {
            Error::Corrupt {
                path: path.to_owned(),
                reason: context.to_owned(),
                source: Some(Box::new(e)),
            }
        }
        _ => Error::sqlite(path, context, e),
    }
}

/// Reads the header inside the caller's transaction.
fn header(path: &Path, conn: &Connection) -> Result<Header> {
    let pragma = |name: &str| -> Result<i64> {
        conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
            .map_err(reading(path, "reading the header"))
    };
    let application_id = pragma("application_id")?;
    let version = pragma("user_version")?;
    let tables = conn
        .query_row("SELECT count(*) FROM sqlite_schema WHERE type = 'table'", [], |r| r.get(0))
        .map_err(reading(path, "reading the schema"))?;
    Ok(Header { application_id, version, tables })
}

/// What to do with a file whose header is `header`.
pub(crate) fn judge(path: &Path, header: Header) -> Result<Verdict> {
    if header.application_id != i64::from(APPLICATION_ID) {
        if header.application_id == 0 && header.tables == 0 && header.version == 0 {
            return Ok(Verdict::New);
        }
        return Err(Error::ForeignDatabase {
            path: path.to_owned(),
            application_id: i32::try_from(header.application_id).unwrap_or(i32::MAX),
            tables: header.tables,
        });
    }
    if header.version > SCHEMA_VERSION {
        return Err(Error::NewerSchema {
            path: path.to_owned(),
            found: header.version,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(if header.version == SCHEMA_VERSION { Verdict::Current } else { Verdict::Older })
}

/// Reads the header in one read transaction (rolling back a crashed writer's journal first,
/// on a read-write connection), checks the file's structure, and judges it. Nothing is
/// written.
pub(crate) fn read(path: &Path, conn: &mut Connection) -> Result<(Header, Verdict)> {
    let tx = conn.transaction().map_err(reading(path, "starting a read"))?;
    let header = header(path, &tx)?;
    let verdict = judge(path, header)?;
    if verdict != Verdict::New {
        probe(path, &tx, header.version)?;
    }
    tx.finish().map_err(reading(path, "ending a read"))?;
    Ok((header, verdict))
}

/// Descends every table and index of a curator file (of schema `version`) to its first or
/// last row, so that damage there (a page overwritten, an index root that is not one) is
/// reported as [`Error::Corrupt`] before anything is written. Each query reads the few pages
/// on one path from a root to a leaf, whatever the file's size (`min` or `max` alone is
/// answered from one end of a tree). Damage deeper inside a tree is reported, as the same
/// kind, by the read or write that meets it, and a write that meets it is rolled back.
fn probe(path: &Path, conn: &Connection, version: i64) -> Result<()> {
    let mut queries = vec![
        "SELECT max(rowid) FROM entries",
        "SELECT min(rowid) FROM entries",
        // The unique index on message ids.
        "SELECT max(message_id) FROM entries",
        // The unique index on (evaluation, sequence), which an equality lookup on both uses.
        "SELECT 1 FROM entries WHERE evaluation_id = x'00' AND sequence = 0",
        "SELECT max(rowid) FROM checkpoints",
        "SELECT max(name) FROM checkpoints",
    ];
    if version >= 2 {
        queries
            .push("SELECT max(evaluation_id) FROM entries INDEXED BY entries_by_evaluation_time");
    }
    if version >= KEYS_SINCE {
        queries.push(
            "SELECT max(session_key) FROM entries INDEXED BY entries_by_session WHERE sequence = 0",
        );
    }
    for sql in queries {
        conn.query_row(sql, [], |_| Ok(()))
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(()),
                other => Err(other),
            })
            .map_err(reading(path, "checking the file's tables and indexes"))?;
    }
    Ok(())
}

/// Brings a writable connection's schema to [`SCHEMA_VERSION`] in one `BEGIN IMMEDIATE`
/// transaction that reads the header again first: another process may have created or
/// migrated the file since it was read. Returns whether anything was written.
pub(crate) fn migrate(path: &Path, conn: &mut Connection) -> Result<bool> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(reading(path, "starting the migration"))?;
    let header = header(path, &tx)?;
    if judge(path, header)? == Verdict::Current {
        tx.finish().map_err(reading(path, "ending a read"))?;
        return Ok(false);
    }
    let from = usize::try_from(header.version).unwrap_or(0);
    for (step, sql) in MIGRATIONS.iter().enumerate().skip(from) {
        tx.execute_batch(sql).map_err(reading(path, "migrating the schema"))?;
        tx.pragma_update(None, "user_version", i64::try_from(step + 1).unwrap_or(i64::MAX))
            .map_err(|e| Error::sqlite(path, "migrating the schema", e))?;
    }
    tx.pragma_update(None, "application_id", APPLICATION_ID)
        .map_err(|e| Error::sqlite(path, "marking the file", e))?;
    tx.commit().map_err(|e| Error::sqlite(path, "committing the migration", e))?;
    Ok(true)
}

/// Runs only the first `version` migrations on a new file: for tests of forward migration.
#[doc(hidden)]
pub fn create_at_version(path: &Path, version: usize) -> Result<()> {
    let conn = Connection::open(path).map_err(|e| Error::sqlite(path, "opening", e))?;
    for (step, sql) in MIGRATIONS.iter().enumerate().take(version) {
        conn.execute_batch(sql).map_err(|e| Error::sqlite(path, "migrating the schema", e))?;
        conn.pragma_update(None, "user_version", i64::try_from(step + 1).unwrap_or(i64::MAX))
            .map_err(|e| Error::sqlite(path, "migrating the schema", e))?;
    }
    conn.pragma_update(None, "application_id", APPLICATION_ID)
        .map_err(|e| Error::sqlite(path, "marking the file", e))
}
