//! The schema, its version and forward migrations, and the checks made before opening.

use std::io::Read;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use curator_session::StoreErrorKind;

use crate::{Error, Result};

/// `PRAGMA application_id` of curator session files ("CURA").
pub(crate) const APPLICATION_ID: i32 = 0x4355_5241;

/// The schema version this build writes; `PRAGMA user_version` holds a file's version.
pub const SCHEMA_VERSION: i64 = 2;

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
];

/// What a file holds before it is opened for writing.
pub(crate) enum Found {
    /// No file, or an empty one: a new store.
    New,
    /// A curator session file whose schema this build can open (migrating it if older).
    Curator,
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

/// Looks at a file without changing it: its header, application id and schema version.
pub(crate) fn inspect(path: &Path) -> Result<Found> {
    let mut header = [0u8; 16];
    let read = match std::fs::File::open(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::New),
        Err(e) => {
            return Err(io_error(path, "reading the file", e));
        }
        Ok(mut file) => {
            file.read(&mut header).map_err(|e| io_error(path, "reading the file", e))?
        }
    };
    if read == 0 {
        return Ok(Found::New);
    }
    if read < 16 || &header != b"SQLite format 3\0" {
        return Err(Error::NotADatabase { path: path.to_owned() });
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| Error::sqlite(path, "opening read-only", e))?;
    let pragma = |name: &'static str| -> Result<i64> {
        conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0)).map_err(|e| match e {
            rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::NotADatabase => {
                Error::NotADatabase { path: path.to_owned() }
            }
            other => Error::sqlite(path, "reading the header", other),
        })
    };
    let application_id = pragma("application_id")?;
    let version = pragma("user_version")?;
    let tables: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_schema WHERE type = 'table'", [], |r| r.get(0))
        .map_err(|e| Error::sqlite(path, "reading the schema", e))?;
    if application_id != i64::from(APPLICATION_ID) {
        if application_id == 0 && tables == 0 && version == 0 {
            return Ok(Found::New);
        }
        return Err(Error::ForeignDatabase {
            path: path.to_owned(),
            application_id: i32::try_from(application_id).unwrap_or(i32::MAX),
            tables,
        });
    }
    if version > SCHEMA_VERSION {
        return Err(Error::NewerSchema {
            path: path.to_owned(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(Found::Curator)
}

/// Brings a writable connection's schema to [`SCHEMA_VERSION`], in one transaction, so that
/// two processes opening a new file at once do not both create it.
pub(crate) fn migrate(path: &Path, conn: &mut Connection) -> Result<()> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(|e| Error::sqlite(path, "starting the migration", e))?;
    let version: i64 = tx
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| Error::sqlite(path, "reading the schema version", e))?;
    if version > SCHEMA_VERSION {
        return Err(Error::NewerSchema {
            path: path.to_owned(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    let from = usize::try_from(version).unwrap_or(0);
    for (step, sql) in MIGRATIONS.iter().enumerate().skip(from) {
        tx.execute_batch(sql).map_err(|e| Error::sqlite(path, "migrating the schema", e))?;
        tx.pragma_update(None, "user_version", i64::try_from(step + 1).unwrap_or(i64::MAX))
            .map_err(|e| Error::sqlite(path, "migrating the schema", e))?;
    }
    tx.pragma_update(None, "application_id", APPLICATION_ID)
        .map_err(|e| Error::sqlite(path, "marking the file", e))?;
    tx.commit().map_err(|e| Error::sqlite(path, "committing the migration", e))
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
