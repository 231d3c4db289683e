//! Reading rows of `entries`: the columns, their checks, and reads that refuse a record an
//! index hides rows of.

use curator_model::{Entry, EvaluationId};
use curator_session::rows::EntryRow;
use rusqlite::{Connection, Row};

use crate::error::{CODEC, store_error};

type SessionResult<T> = curator_session::Result<T>;

pub(crate) const COLUMNS: &str =
    "message_id, evaluation_id, sequence, turn, prompt_ns, prompt_key, created_ns, message";

/// One row, read before [`CODEC`] checks it and turns it into an [`Entry`].
pub(crate) struct RawEntry {
    message_id: Vec<u8>,
    evaluation_id: Vec<u8>,
    sequence: i64,
    turn: i64,
    prompt: Option<(String, String)>,
    created_ns: i64,
    /// The message's JSON text, or its bytes when they are not UTF-8.
    message: Result<String, Vec<u8>>,
    checksum: Option<i64>,
}

/// A row of [`COLUMNS`] and the session key after them.
pub(crate) fn raw_keyed(row: &Row<'_>) -> rusqlite::Result<(String, RawEntry)> {
    Ok((row.get(9)?, raw(row)?))
}

/// A row of [`COLUMNS`].
pub(crate) fn raw(row: &Row<'_>) -> rusqlite::Result<RawEntry> {
    let ns: Option<String> = row.get(4)?;
    let key: Option<String> = row.get(5)?;
    Ok(RawEntry {
        message_id: row.get(0)?,
        evaluation_id: row.get(1)?,
        sequence: row.get(2)?,
        turn: row.get(3)?,
        prompt: ns.zip(key),
        created_ns: row.get(6)?,
        message: match row.get_ref(7)? {
            rusqlite::types::ValueRef::Text(bytes) | rusqlite::types::ValueRef::Blob(bytes) => {
                String::from_utf8(bytes.to_vec()).map_err(std::string::FromUtf8Error::into_bytes)
            }
            _ => Ok(row.get::<_, String>(7)?),
        },
        checksum: row.get(8)?,
    })
}

impl RawEntry {
    pub(crate) fn into_entry(self) -> SessionResult<Entry> {
        let message = self.message.map_err(|bytes| {
            let evaluation = uuid::Uuid::from_slice(&self.evaluation_id)
                .map_or_else(|_| "(unreadable id)".to_owned(), |id| id.to_string());
            CODEC.corrupt(
                format!(
                    "entries row at sequence {} of evaluation {evaluation}: the message ({} bytes) is not UTF-8",
                    self.sequence,
                    bytes.len()
                ),
                None,
            )
        })?;
        CODEC.entry(EntryRow {
            message_id: &self.message_id,
            evaluation_id: &self.evaluation_id,
            sequence: self.sequence,
            turn: self.turn,
            prompt_ns: self.prompt.as_ref().map(|(ns, _)| ns.as_str()),
            prompt_key: self.prompt.as_ref().map(|(_, key)| key.as_str()),
            created_ns: self.created_ns,
            message: &message,
            checksum: self.checksum,
        })
    }
}

/// Refuses a read of `found` rows of `evaluation` as [`Corrupt`](StoreErrorKind::Corrupt)
/// when the second index over the evaluation's rows counts another number: the rows are
/// read through the `(evaluation_id, sequence)` index, and a damaged page of it hides rows
/// (SQLite's checks cannot see it; the row checksums cannot see a row never returned), so
/// that the record would read shorter and an append would take a sequence number again.
pub(crate) fn whole_or_corrupt(
    conn: &Connection,
    evaluation: EvaluationId,
    found: usize,
) -> SessionResult<()> {
    same_count(evaluation, found, count_by_time(conn, evaluation)?)
}

/// The rows of `evaluation` counted through the second index (by time).
pub(crate) fn count_by_time(conn: &Connection, evaluation: EvaluationId) -> SessionResult<i64> {
    conn.prepare_cached(
        "SELECT count(*) FROM entries INDEXED BY entries_by_evaluation_time WHERE evaluation_id = ?1",
    )
    .and_then(|mut s| s.query_row([evaluation.as_uuid().as_bytes().as_slice()], |r| r.get(0)))
    .map_err(store_error)
}

/// The rows of `evaluation` counted through the first index (by sequence), the one reads
/// go through.
pub(crate) fn count_by_sequence(conn: &Connection, evaluation: EvaluationId) -> SessionResult<i64> {
    conn.prepare_cached(
        "SELECT count(*) FROM entries INDEXED BY sqlite_autoindex_entries_2 WHERE evaluation_id = ?1",
    )
    .and_then(|mut s| s.query_row([evaluation.as_uuid().as_bytes().as_slice()], |r| r.get(0)))
    .map_err(store_error)
}

/// `Corrupt` unless the rows read by sequence (`found`) are as many as the second index
/// counts.
pub(crate) fn same_count(
    evaluation: EvaluationId,
    found: usize,
    counted: i64,
) -> SessionResult<()> {
    if usize::try_from(counted).ok() == Some(found) {
        return Ok(());
    }
    Err(CODEC.corrupt(
        format!(
            "entries of evaluation {evaluation}: {found} rows read by sequence, {counted} by time; an index of the table is damaged (`PRAGMA integrity_check` names it, `REINDEX` rebuilds it)"
        ),
        None,
    ))
}
