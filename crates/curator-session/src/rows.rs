//! The row codec of the SQL stores, for store implementations: entries, evaluation summaries
//! and checkpoints to and from plain column values, with one policy for rows that cannot be
//! read.
//!
//! A store reads a row's columns as plain values (nanoseconds as `i64`, JSON as text, ids as
//! 16 bytes) and hands them to a [`RowCodec`], which checks them and builds the typed value.
//! Every value that cannot be read (a negative sequence, version or count, a turn out of
//! range, an id that is not 16 bytes, JSON that is not a message) is one error:
//! [`Error::Store`] of kind [`Corrupt`](StoreErrorKind::Corrupt), naming the table, the
//! column and the row. Nothing is read as a default instead.
//!
//! # Examples
//!
//! ```
//! use curator::session::rows::{EntryRow, RowCodec};
//! use curator::session::{Error, StoreErrorKind};
//!
//! let codec = RowCodec::new("sqlite");
//! let evaluation = [7u8; 16];
//! let row = EntryRow {
//!     message_id: &[1; 16],
//!     evaluation_id: &evaluation,
//!     sequence: 0,
//!     turn: 0,
//!     prompt_ns: None,
//!     prompt_key: None,
//!     created_ns: 0,
//!     message: r#"{"role": "system", "content": "s"}"#,
//!     checksum: None,
//! };
//! assert_eq!(codec.entry(row)?.sequence, 0);
//!
//! let negative = EntryRow { sequence: -1, ..row };
//! assert!(matches!(codec.entry(negative), Err(Error::Store { kind: StoreErrorKind::Corrupt, .. })));
//! Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, Utc};
use curator_model::{BoxError, Entry, EvaluationId, Message, MessageId, PromptRef};
use serde_json::Value;
use uuid::Uuid;

use crate::{Checkpoint, Error, EvaluationSummary, Result, SessionKey, Snapshot, StoreErrorKind};

/// Turns rows into entries, summaries and checkpoints and back, for the store named
/// [`backend`](RowCodec::backend) (which every error it makes names).
///
/// # Examples
///
/// ```
/// use curator::session::rows::RowCodec;
///
/// let codec = RowCodec::new("postgres");
/// let checkpoint = codec.checkpoint("progress".into(), 3, r#"{"done": 2}"#, 0)?;
/// assert_eq!((checkpoint.version, checkpoint.document["done"].as_u64()), (3, Some(2)));
/// assert!(codec.checkpoint("progress".into(), -1, "{}", 0).is_err());
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowCodec {
    backend: &'static str,
}

/// The columns of one row of `entries`, as a store reads them.
///
/// # Examples
///
/// ```
/// use curator::session::rows::{EntryRow, RowCodec};
///
/// let row = EntryRow {
///     message_id: &[1; 16],
///     evaluation_id: &[2; 16],
///     sequence: 1,
///     turn: 1,
///     prompt_ns: Some("demo".into()),
///     prompt_key: Some("agent".into()),
///     created_ns: 1_700_000_000_000_000_000,
///     message: r#"{"role": "user", "content": "Hi!"}"#,
///     checksum: None,
/// };
/// let entry = RowCodec::new("sqlite").entry(row)?;
/// assert_eq!(entry.prompt.map(|p| p.key), Some("agent".to_owned()));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct EntryRow<'a> {
    /// `message_id`: 16 bytes.
    pub message_id: &'a [u8],
    /// `evaluation_id`: 16 bytes.
    pub evaluation_id: &'a [u8],
    /// `sequence`: not negative.
    pub sequence: i64,
    /// `turn`: from 0 to `u32::MAX`.
    pub turn: i64,
    /// `prompt_ns`: a prompt is read when both it and `prompt_key` are there.
    pub prompt_ns: Option<&'a str>,
    /// `prompt_key`.
    pub prompt_key: Option<&'a str>,
    /// `created_ns`: nanoseconds since the Unix epoch.
    pub created_ns: i64,
    /// `message`: the message as JSON.
    pub message: &'a str,
    /// `checksum`: the row's [`row_checksum`] as it was written, verified on read; `None`
    /// for stores (or rows written before) without one.
    pub checksum: Option<i64>,
}

/// A checksum of a row of `entries` (the columns a store writes for an entry), written with
/// the row and verified when it is read, so that a row changed by something other than the
/// store (a damaged page, a stray write) is an error, not wrong data: SQLite has no page
/// checksums. Not cryptographic: a fast 64-bit hash of the columns, eight bytes at a time.
///
/// # Examples
///
/// ```
/// use curator::session::rows::row_checksum;
///
/// let a = row_checksum(&[1; 16], &[2; 16], 0, 0, None, None, 5, "{}");
/// assert_eq!(a, row_checksum(&[1; 16], &[2; 16], 0, 0, None, None, 5, "{}"));
/// assert_ne!(a, row_checksum(&[1; 16], &[2; 16], 0, 0, None, None, 5, "{ }"));
/// ```
#[expect(clippy::too_many_arguments, reason = "one argument per column, as the rows have them")]
pub fn row_checksum(
    message_id: &[u8],
    evaluation_id: &[u8],
    sequence: i64,
    turn: i64,
    prompt_ns: Option<&str>,
    prompt_key: Option<&str>,
    created_ns: i64,
    message: &str,
) -> i64 {
    let mut h = Lanes::new();
    h.bytes(message_id);
    h.bytes(evaluation_id);
    h.bytes(&sequence.to_le_bytes());
    h.bytes(&turn.to_le_bytes());
    for text in [prompt_ns, prompt_key] {
        match text {
            Some(text) => h.bytes(text.as_bytes()),
            None => h.bytes(&[0xff; 9]),
        }
    }
    h.bytes(&created_ns.to_le_bytes());
    h.bytes(message.as_bytes());
    i64::from_ne_bytes(h.finish().to_ne_bytes())
}

/// The state of [`row_checksum`]: four independent lanes over 32-byte blocks (so that the
/// processor mixes them at once), each word mixed by a multiply and a rotation.
struct Lanes([u64; 4]);

impl Lanes {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;

    fn new() -> Self {
        Self([
            0x243F_6A88_85A3_08D3,
            0x1319_8A2E_0370_7344,
            0xA409_3822_299F_31D0,
            0x082E_FA98_EC4E_6C89,
        ])
    }

    fn mix(lane: &mut u64, word: u64) {
        *lane = (*lane ^ word).wrapping_mul(Self::K).rotate_left(29);
    }

    fn word(bytes: &[u8]) -> u64 {
        let mut word = [0u8; 8];
        word[..bytes.len()].copy_from_slice(bytes);
        u64::from_le_bytes(word)
    }

    /// Mixes `data` and its length in (so that field boundaries count).
    fn bytes(&mut self, data: &[u8]) {
        // The lanes live in locals over the blocks and each block is read as four words at
        // fixed offsets, so that the four lanes' multiplies run side by side (three times
        // the throughput of mixing through the array word by word; the same result, which
        // the tests check against that simple form).
        let (blocks, rest) = data.as_chunks::<32>();
        let [mut a, mut b, mut c, mut d] = self.0;
        for block in blocks {
            if let ([w0, w1, w2, w3], []) = block.as_chunks::<8>() {
                Self::mix(&mut a, u64::from_le_bytes(*w0));
                Self::mix(&mut b, u64::from_le_bytes(*w1));
                Self::mix(&mut c, u64::from_le_bytes(*w2));
                Self::mix(&mut d, u64::from_le_bytes(*w3));
            }
        }
        self.0 = [a, b, c, d];
        for (i, word) in rest.chunks(8).enumerate() {
            Self::mix(&mut self.0[i], Self::word(word));
        }
        Self::mix(&mut self.0[3], data.len() as u64);
    }

    fn finish(&self) -> u64 {
        let [first, second, third, fourth] = self.0;
        let mut hash =
            first ^ second.rotate_left(17) ^ third.rotate_left(31) ^ fourth.rotate_left(47);
        hash = (hash ^ (hash >> 29)).wrapping_mul(Self::K);
        hash ^ (hash >> 32)
    }
}

/// The columns of one evaluation's summary, as a store aggregates them from `entries`.
///
/// # Examples
///
/// ```
/// use curator::session::rows::{RowCodec, SummaryRow};
///
/// let row = SummaryRow {
///     evaluation_id: &[2; 16],
///     key: "ticket-7".into(),
///     first_ns: 0,
///     last_ns: 5,
///     messages: 4,
///     turns: 2,
///     prompt_ns: None,
///     prompt_key: None,
/// };
/// let summary = RowCodec::new("sqlite").summary(row)?;
/// assert_eq!((summary.messages, summary.turns), (4, 2));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct SummaryRow<'a> {
    /// The evaluation: 16 bytes.
    pub evaluation_id: &'a [u8],
    /// The session key the evaluation belongs to.
    pub key: String,
    /// The first entry's `created_ns`.
    pub first_ns: i64,
    /// The last entry's `created_ns`.
    pub last_ns: i64,
    /// How many entries: not negative.
    pub messages: i64,
    /// The highest turn: from 0 to `u32::MAX`.
    pub turns: i64,
    /// The first prompt's namespace.
    pub prompt_ns: Option<String>,
    /// The first prompt's key.
    pub prompt_key: Option<String>,
}

/// One entry as the columns of its row, ready to be bound to an insert.
///
/// # Examples
///
/// ```
/// use curator::model::{Entry, EvaluationId, Message};
/// use curator::session::rows::RowCodec;
///
/// let entry = Entry::builder(EvaluationId::new(), Message::user("Hi!")).sequence(3).build()?;
/// let values = RowCodec::new("sqlite").entry_values(&entry)?;
/// assert_eq!((values.sequence, values.role), (3, "user"));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct EntryValues<'a> {
    /// `message_id`.
    pub message_id: &'a [u8; 16],
    /// `evaluation_id`.
    pub evaluation_id: &'a [u8; 16],
    /// `sequence`.
    pub sequence: i64,
    /// `turn`: an `i32`, the narrowest column of the stores, so that every record one store
    /// takes moves to the others.
    pub turn: i32,
    /// `prompt_ns`.
    pub prompt_ns: Option<&'a str>,
    /// `prompt_key`.
    pub prompt_key: Option<&'a str>,
    /// `created_ns`: nanoseconds since the Unix epoch.
    pub created_ns: i64,
    /// `role`.
    pub role: &'static str,
    /// `message`: the message as JSON.
    pub message: String,
    /// `checksum`: [`row_checksum`] of the columns above.
    pub checksum: i64,
}

impl EntryValues<'_> {
    fn with_checksum(mut self) -> Self {
        self.checksum = row_checksum(
            self.message_id,
            self.evaluation_id,
            self.sequence,
            i64::from(self.turn),
            self.prompt_ns,
            self.prompt_key,
            self.created_ns,
            &self.message,
        );
        self
    }
}

/// One checkpoint as the columns of its row.
///
/// # Examples
///
/// ```
/// use curator::session::Checkpoint;
/// use curator::session::rows::RowCodec;
///
/// let mut checkpoint = Checkpoint::new("progress".into(), serde_json::json!({"done": 2}), chrono::Utc::now());
/// checkpoint.version = 4;
/// let values = RowCodec::new("postgres").checkpoint_values(&checkpoint)?;
/// assert_eq!((values.version, values.document.as_str()), (4, r#"{"done":2}"#));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct CheckpointValues {
    /// `version`.
    pub version: i64,
    /// `document`: JSON text.
    pub document: String,
    /// `saved_ns`: nanoseconds since the Unix epoch.
    pub saved_ns: i64,
}

/// Where a row is, for the messages of the errors about it.
struct Place {
    sequence: i64,
    evaluation: Option<EvaluationId>,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "entries row at sequence {}", self.sequence)?;
        match self.evaluation {
            Some(evaluation) => write!(f, " of evaluation {evaluation}"),
            None => Ok(()),
        }
    }
}

impl RowCodec {
    /// A codec for the store named `backend` (`"sqlite"`, `"postgres"`).
    pub const fn new(backend: &'static str) -> Self {
        Self { backend }
    }

    /// The store's name, as its errors give it.
    pub const fn backend(&self) -> &'static str {
        self.backend
    }

    /// A row that cannot be read: [`Error::Store`] of kind
    /// [`Corrupt`](StoreErrorKind::Corrupt), saying `what` is wrong and where.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::session::rows::RowCodec;
    ///
    /// let e = RowCodec::new("sqlite").corrupt("checkpoints row `a`: version -1 is negative", None);
    /// assert!(e.to_string().contains("version -1"));
    /// ```
    pub fn corrupt(&self, what: impl Into<String>, cause: Option<BoxError>) -> Error {
        Error::store(self.backend, StoreErrorKind::Corrupt, what, cause)
    }

    /// A value the store cannot hold: [`Error::Store`] of kind [`Other`](StoreErrorKind::Other).
    fn unstorable(&self, what: String, cause: Option<BoxError>) -> Error {
        Error::store(self.backend, StoreErrorKind::Other, what, cause)
    }

    /// A time as nanoseconds since the Unix epoch, the stores' column of times.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::session::rows::RowCodec;
    ///
    /// let codec = RowCodec::new("sqlite");
    /// assert_eq!(codec.nanos(chrono::DateTime::<chrono::Utc>::UNIX_EPOCH)?, 0);
    /// assert!(codec.nanos(chrono::DateTime::<chrono::Utc>::MAX_UTC).is_err());
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Store`] of kind [`Other`](StoreErrorKind::Other) when the time is outside the
    /// years 1677 to 2262.
    pub fn nanos(&self, at: DateTime<Utc>) -> Result<i64> {
        at.timestamp_nanos_opt().ok_or_else(|| {
            self.unstorable(
                format!("time {at} is outside the range the store can hold (1677 to 2262)"),
                None,
            )
        })
    }

    /// A UUID from 16 bytes of the column `column` at `place`.
    fn uuid(&self, bytes: &[u8], column: &str, place: &dyn fmt::Display) -> Result<Uuid> {
        Uuid::from_slice(bytes)
            .map_err(|e| self.corrupt(format!("{place}: {column} is not an id"), Some(Box::new(e))))
    }

    /// A message id from 16 bytes, read from the column `column` of the row `row`.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::session::rows::RowCodec;
    ///
    /// let codec = RowCodec::new("sqlite");
    /// assert!(codec.message_id(&[1; 16], "entries.message_id", "row 1").is_ok());
    /// let e = codec.message_id(&[1; 3], "entries.message_id", "row 1").unwrap_err();
    /// assert!(e.to_string().contains("row 1: entries.message_id"));
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Store`] of kind [`Corrupt`](StoreErrorKind::Corrupt) when the bytes are not
    /// 16.
    pub fn message_id(&self, bytes: &[u8], column: &str, row: &str) -> Result<MessageId> {
        self.uuid(bytes, column, &row).map(MessageId::from_uuid)
    }

    /// An evaluation id from 16 bytes, read from the column `column` of the row `row`.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::session::rows::RowCodec;
    ///
    /// let codec = RowCodec::new("postgres");
    /// assert!(codec.evaluation_id(&[], "entries.evaluation_id", "the latest").is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Store`] of kind [`Corrupt`](StoreErrorKind::Corrupt) when the bytes are not
    /// 16.
    pub fn evaluation_id(&self, bytes: &[u8], column: &str, row: &str) -> Result<EvaluationId> {
        self.uuid(bytes, column, &row).map(EvaluationId::from_uuid)
    }

    /// The entry a row of `entries` holds.
    ///
    /// # Examples
    ///
    /// See [`EntryRow`].
    ///
    /// # Errors
    ///
    /// [`Error::Store`] of kind [`Corrupt`](StoreErrorKind::Corrupt), naming the row, when an
    /// id is not 16 bytes, the sequence is negative, the turn is out of range or the message
    /// is not a message this build reads (the JSON parser's error is the source).
    pub fn entry(&self, row: EntryRow<'_>) -> Result<Entry> {
        let mut place = Place { sequence: row.sequence, evaluation: None };
        let evaluation_id =
            EvaluationId::from_uuid(self.uuid(row.evaluation_id, "evaluation_id", &place)?);
        place.evaluation = Some(evaluation_id);
        if let Some(written) = row.checksum {
            let read = row_checksum(
                row.message_id,
                row.evaluation_id,
                row.sequence,
                row.turn,
                row.prompt_ns,
                row.prompt_key,
                row.created_ns,
                row.message,
            );
            if read != written {
                return Err(self.corrupt(
                    format!(
                        "{place}: the row does not match the checksum it was written with (the file was damaged or changed by something else)"
                    ),
                    None,
                ));
            }
        }
        let id = MessageId::from_uuid(self.uuid(row.message_id, "message_id", &place)?);
        let sequence = u64::try_from(row.sequence)
            .map_err(|_| self.corrupt(format!("{place}: the sequence is negative"), None))?;
        let turn = u32::try_from(row.turn).map_err(|_| {
            self.corrupt(format!("{place}: turn {} is out of range", row.turn), None)
        })?;
        let message: Message = serde_json::from_str(row.message).map_err(|e| {
            self.corrupt(format!("{place}: the message cannot be read"), Some(Box::new(e)))
        })?;
        Ok(Entry {
            id,
            evaluation_id,
            sequence,
            turn,
            prompt: prompt(row.prompt_ns, row.prompt_key),
            created_at: DateTime::from_timestamp_nanos(row.created_ns),
            message,
        })
    }

    /// The columns of `entry`'s row.
    ///
    /// # Examples
    ///
    /// See [`EntryValues`].
    ///
    /// # Errors
    ///
    /// [`Error::Store`] of kind [`Other`](StoreErrorKind::Other) when a value does not fit
    /// its column: a sequence beyond `i64::MAX`, a turn beyond `i32::MAX`, a time outside the
    /// years 1677 to 2262, or a message that cannot be serialised.
    pub fn entry_values<'e>(&self, entry: &'e Entry) -> Result<EntryValues<'e>> {
        let message = serde_json::to_string(&entry.message).map_err(|e| {
            self.unstorable("cannot serialise the message".into(), Some(Box::new(e)))
        })?;
        Ok(EntryValues {
            message_id: entry.id.as_uuid().as_bytes(),
            evaluation_id: entry.evaluation_id.as_uuid().as_bytes(),
            sequence: i64::try_from(entry.sequence).map_err(|e| {
                self.unstorable(
                    format!("sequence {} is too large", entry.sequence),
                    Some(Box::new(e)),
                )
            })?,
            turn: i32::try_from(entry.turn).map_err(|e| {
                self.unstorable(format!("turn {} is too large", entry.turn), Some(Box::new(e)))
            })?,
            prompt_ns: entry.prompt.as_ref().map(|p| p.ns.as_str()),
            prompt_key: entry.prompt.as_ref().map(|p| p.key.as_str()),
            created_ns: self.nanos(entry.created_at)?,
            role: entry.message.role().as_str(),
            checksum: 0,
            message,
        }
        .with_checksum())
    }

    /// The summary of an evaluation, from the aggregates of its rows.
    ///
    /// # Examples
    ///
    /// See [`SummaryRow`].
    ///
    /// # Errors
    ///
    /// [`Error::Store`] of kind [`Corrupt`](StoreErrorKind::Corrupt), naming the evaluation,
    /// when its id is not 16 bytes, the count is negative or the highest turn is out of range.
    pub fn summary(&self, row: SummaryRow<'_>) -> Result<EvaluationSummary> {
        let evaluation = EvaluationId::from_uuid(self.uuid(
            row.evaluation_id,
            "evaluation_id",
            &"summary of entries",
        )?);
        let messages = u64::try_from(row.messages).map_err(|_| {
            self.corrupt(
                format!(
                    "summary of evaluation {evaluation}: message count {} is negative",
                    row.messages
                ),
                None,
            )
        })?;
        let turns = u32::try_from(row.turns).map_err(|_| {
            self.corrupt(
                format!("summary of evaluation {evaluation}: turn {} is out of range", row.turns),
                None,
            )
        })?;
        let mut summary = EvaluationSummary::new(
            evaluation,
            SessionKey::new(row.key),
            DateTime::from_timestamp_nanos(row.first_ns),
        );
        summary.prompt = prompt(row.prompt_ns.as_deref(), row.prompt_key.as_deref());
        summary.messages = messages;
        summary.turns = turns;
        summary.last_at = DateTime::from_timestamp_nanos(row.last_ns);
        Ok(summary)
    }

    /// The version a row of `checkpoints` named `name` holds.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::session::rows::RowCodec;
    ///
    /// let codec = RowCodec::new("sqlite");
    /// assert_eq!(codec.checkpoint_version("progress", 2)?, 2);
    /// assert!(codec.checkpoint_version("progress", -1).unwrap_err().to_string().contains("`progress`"));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Store`] of kind [`Corrupt`](StoreErrorKind::Corrupt), naming the checkpoint,
    /// when the version is negative.
    pub fn checkpoint_version(&self, name: &str, version: i64) -> Result<u64> {
        u64::try_from(version).map_err(|_| {
            self.corrupt(format!("checkpoints row `{name}`: version {version} is negative"), None)
        })
    }

    /// The checkpoint a row of `checkpoints` holds.
    ///
    /// # Examples
    ///
    /// See [`RowCodec`].
    ///
    /// # Errors
    ///
    /// [`Error::Store`] of kind [`Corrupt`](StoreErrorKind::Corrupt), naming the checkpoint,
    /// when the version is negative or the document is not JSON (the parser's error is the
    /// source).
    pub fn checkpoint(
        &self,
        name: String,
        version: i64,
        document: &str,
        saved_ns: i64,
    ) -> Result<Checkpoint> {
        let version = self.checkpoint_version(&name, version)?;
        let document: Value = serde_json::from_str(document).map_err(|e| {
            self.corrupt(
                format!("checkpoints row `{name}`: the document is not JSON"),
                Some(Box::new(e)),
            )
        })?;
        let mut checkpoint =
            Checkpoint::new(name, document, DateTime::from_timestamp_nanos(saved_ns));
        checkpoint.version = version;
        Ok(checkpoint)
    }

    /// The `document` column of checkpoint `name`: its JSON text, refused when it is nested
    /// deeper than a store can read back ([`MAX_DOCUMENT_DEPTH`] levels of arrays and
    /// objects: JSON readers stop there), so that a checkpoint that was saved can always be
    /// read.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::session::rows::{MAX_DOCUMENT_DEPTH, RowCodec};
    ///
    /// let codec = RowCodec::new("sqlite");
    /// assert_eq!(codec.checkpoint_document("c", &serde_json::json!({"a": [1]}))?, r#"{"a":[1]}"#);
    /// let mut deep = serde_json::json!(0);
    /// for _ in 0..=MAX_DOCUMENT_DEPTH {
    ///     deep = serde_json::json!([deep]);
    /// }
    /// assert!(codec.checkpoint_document("c", &deep).unwrap_err().to_string().contains("deeper than"));
    /// # Ok::<(), curator::session::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Store`] of kind [`Other`](StoreErrorKind::Other), naming the checkpoint, for
    /// a document nested deeper than [`MAX_DOCUMENT_DEPTH`].
    pub fn checkpoint_document(&self, name: &str, document: &Value) -> Result<String> {
        self.checkpoint_document_depth(name, document)?;
        Ok(document.to_string())
    }

    /// The check of [`checkpoint_document`](Self::checkpoint_document) alone, for a store
    /// that keeps documents as values.
    ///
    /// # Errors
    ///
    /// As [`checkpoint_document`](Self::checkpoint_document).
    pub fn checkpoint_document_depth(&self, name: &str, document: &Value) -> Result<()> {
        check_document_depth(document).map_err(|_| {
            self.unstorable(
                format!(
                    "checkpoint `{name}`: the document is nested deeper than the {MAX_DOCUMENT_DEPTH} levels of arrays and objects a store can read back"
                ),
                None,
            )
        })
    }

    /// The columns of `checkpoint`'s row.
    ///
    /// # Examples
    ///
    /// See [`CheckpointValues`].
    ///
    /// # Errors
    ///
    /// [`Error::Store`] of kind [`Other`](StoreErrorKind::Other) when the version is beyond
    /// `i64::MAX` or the time outside the years 1677 to 2262.
    pub fn checkpoint_values(&self, checkpoint: &Checkpoint) -> Result<CheckpointValues> {
        Ok(CheckpointValues {
            version: i64::try_from(checkpoint.version).map_err(|e| {
                self.unstorable(
                    format!(
                        "checkpoint `{}`: version {} is too large",
                        checkpoint.name, checkpoint.version
                    ),
                    Some(Box::new(e)),
                )
            })?,
            document: self.checkpoint_document(&checkpoint.name, &checkpoint.document)?,
            saved_ns: self.nanos(checkpoint.saved_at)?,
        })
    }
}

/// The deepest nesting of arrays and objects a checkpoint's document may have: what the
/// stores' JSON reader reads back (it refuses deeper text, to bound its recursion).
pub const MAX_DOCUMENT_DEPTH: usize = 127;

/// `Ok` when `document` is nested at most [`MAX_DOCUMENT_DEPTH`] levels deep, else the depth
/// at which the walk stopped. Iterative: a document of any depth is checked without
/// recursion.
fn check_document_depth(document: &Value) -> std::result::Result<(), usize> {
    let mut stack: Vec<(&Value, usize)> = vec![(document, 0)];
    while let Some((value, depth)) = stack.pop() {
        let depth = depth + 1;
        match value {
            Value::Array(_) | Value::Object(_) if depth > MAX_DOCUMENT_DEPTH => {
                return Err(MAX_DOCUMENT_DEPTH);
            }
            Value::Array(items) => stack.extend(items.iter().map(|c| (c, depth))),
            Value::Object(map) => stack.extend(map.values().map(|c| (c, depth))),
            _ => {}
        }
    }
    Ok(())
}

/// A prompt from its two columns, when both are there.
fn prompt(ns: Option<&str>, key: Option<&str>) -> Option<PromptRef> {
    ns.zip(key).map(|(ns, key)| PromptRef::new(ns, key))
}

/// A [`Snapshot`] gathered from rows: the entries in the store's order, each with its
/// session key, then the checkpoints.
///
/// # Examples
///
/// ```
/// use curator::model::{Entry, EvaluationId, Message};
/// use curator::session::rows::SnapshotRows;
/// use curator::session::SessionKey;
///
/// let evaluation = EvaluationId::new();
/// let mut rows = SnapshotRows::with_capacity(1);
/// rows.push("ticket-7", Entry::builder(evaluation, Message::system("s")).build()?);
/// let snapshot = rows.into_snapshot(Vec::new());
/// assert_eq!(snapshot.key_of(evaluation), SessionKey::new("ticket-7"));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct SnapshotRows {
    entries: Vec<Entry>,
    sessions: BTreeMap<EvaluationId, SessionKey>,
}

impl SnapshotRows {
    /// Room for `entries` entries.
    pub fn with_capacity(entries: usize) -> Self {
        Self { entries: Vec::with_capacity(entries), sessions: BTreeMap::new() }
    }

    /// The next entry, recorded under `key` (the default key is left implicit, as snapshots
    /// write it).
    pub fn push(&mut self, key: &str, entry: Entry) {
        if key != SessionKey::DEFAULT {
            self.sessions.entry(entry.evaluation_id).or_insert_with(|| SessionKey::new(key));
        }
        self.entries.push(entry);
    }

    /// The snapshot of the entries pushed and `checkpoints`.
    pub fn into_snapshot(self, checkpoints: Vec<Checkpoint>) -> Snapshot {
        Snapshot::new(self.entries, checkpoints).with_sessions(self.sessions)
    }
}

#[cfg(test)]
mod tests {
    use super::{Lanes, row_checksum};

    /// [`Lanes::bytes`] in its simplest form: the reference the fast one must match.
    fn simple_bytes(lanes: &mut Lanes, data: &[u8]) {
        let mut blocks = data.chunks_exact(32);
        for block in &mut blocks {
            for (lane, word) in lanes.0.iter_mut().zip(block.chunks_exact(8)) {
                Lanes::mix(lane, Lanes::word(word));
            }
        }
        for (i, word) in blocks.remainder().chunks(8).enumerate() {
            Lanes::mix(&mut lanes.0[i], Lanes::word(word));
        }
        Lanes::mix(&mut lanes.0[3], data.len() as u64);
    }

    #[test]
    fn the_fast_checksum_gives_what_the_simple_form_gives_at_every_length() {
        let data: Vec<u8> =
            (0..300u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        for len in 0..data.len() {
            for pieces in [1, 2, 3] {
                let (mut fast, mut simple) = (Lanes::new(), Lanes::new());
                for piece in data[..len].chunks(len.div_ceil(pieces).max(1)) {
                    fast.bytes(piece);
                    simple_bytes(&mut simple, piece);
                }
                assert_eq!(fast.finish(), simple.finish(), "length {len} in {pieces} pieces");
            }
        }
    }

    #[test]
    fn the_checksum_of_a_row_is_what_files_were_written_with() {
        // Fixed values: a change of the function would make every row written before it
        // read as damaged.
        let sum =
            row_checksum(&[1; 16], &[2; 16], 3, 4, Some("ns"), None, 5, "{\"role\":\"user\"}");
        assert_eq!(sum, PINNED);
    }
    const PINNED: i64 = 134_469_462_475_446_765;

    #[test]
    fn a_document_at_the_deepest_allowed_nesting_reads_back_and_one_deeper_would_not() {
        let codec = RowCodec::new("test");
        let mut document = serde_json::json!("bottom");
        for _ in 0..MAX_DOCUMENT_DEPTH {
            document = serde_json::json!([document]);
        }
        let text = codec.checkpoint_document("c", &document).unwrap();
        assert_eq!(codec.checkpoint("c".into(), 1, &text, 0).unwrap().document, document);
        // One level more: the reader would refuse its text, so it is refused when written.
        let deeper = serde_json::json!([document]);
        assert!(serde_json::from_str::<Value>(&deeper.to_string()).is_err());
        let err = codec.checkpoint_document("c", &deeper).unwrap_err();
        assert!(err.to_string().contains("checkpoint `c`"), "{err}");
    }

    use super::*;

    const SYSTEM: &str = r#"{"role": "system", "content": "s"}"#;

    fn row(sequence: i64, turn: i64) -> EntryRow<'static> {
        EntryRow {
            message_id: &[1; 16],
            evaluation_id: &[2; 16],
            sequence,
            turn,
            prompt_ns: None,
            prompt_key: None,
            created_ns: 0,
            message: SYSTEM,
            checksum: None,
        }
    }

    /// The message of the `Corrupt` error reading `row` gives.
    #[track_caller]
    fn corrupt(result: Result<impl fmt::Debug>) -> String {
        match result {
            Err(Error::Store {
                kind: StoreErrorKind::Corrupt, backend: "test", message, ..
            }) => message,
            other => panic!("expected a Corrupt error of backend `test`, got {other:?}"),
        }
    }

    const CODEC: RowCodec = RowCodec::new("test");

    #[test]
    fn a_sound_row_round_trips() {
        let entry = CODEC.entry(row(3, 1)).unwrap();
        let values = CODEC.entry_values(&entry).unwrap();
        let back = CODEC
            .entry(EntryRow {
                message_id: values.message_id,
                evaluation_id: values.evaluation_id,
                sequence: values.sequence,
                turn: i64::from(values.turn),
                prompt_ns: values.prompt_ns,
                prompt_key: values.prompt_key,
                created_ns: values.created_ns,
                message: &values.message,
                checksum: Some(values.checksum),
            })
            .unwrap();
        assert_eq!(back, entry);
    }

    #[test]
    fn every_unreadable_value_is_corrupt_and_names_its_row() {
        let evaluation = EvaluationId::from_uuid(Uuid::from_bytes([2; 16]));
        let at = format!("entries row at sequence 4 of evaluation {evaluation}");
        assert_eq!(
            corrupt(CODEC.entry(row(-1, 0))),
            format!(
                "entries row at sequence -1 of evaluation {evaluation}: the sequence is negative"
            )
        );
        assert_eq!(corrupt(CODEC.entry(row(4, -1))), format!("{at}: turn -1 is out of range"));
        assert_eq!(
            corrupt(CODEC.entry(row(4, i64::from(u32::MAX) + 1))),
            format!("{at}: turn 4294967296 is out of range")
        );
        assert_eq!(
            corrupt(CODEC.entry(EntryRow { message_id: &[1; 5], ..row(4, 0) })),
            format!("{at}: message_id is not an id")
        );
        assert_eq!(
            corrupt(CODEC.entry(EntryRow { evaluation_id: &[], ..row(4, 0) })),
            "entries row at sequence 4: evaluation_id is not an id"
        );
        assert_eq!(
            corrupt(CODEC.entry(EntryRow { message: "{broken", ..row(4, 0) })),
            format!("{at}: the message cannot be read")
        );
    }

    #[test]
    fn negative_counts_and_versions_are_corrupt_not_zero() {
        let summary = |messages, turns| SummaryRow {
            evaluation_id: &[2; 16],
            key: "k".into(),
            first_ns: 0,
            last_ns: 0,
            messages,
            turns,
            prompt_ns: None,
            prompt_key: None,
        };
        assert!(corrupt(CODEC.summary(summary(-1, 0))).contains("message count -1 is negative"));
        assert!(corrupt(CODEC.summary(summary(1, -1))).contains("turn -1 is out of range"));
        assert_eq!(
            corrupt(CODEC.checkpoint("progress".into(), -1, "{}", 0)),
            "checkpoints row `progress`: version -1 is negative"
        );
        assert_eq!(
            corrupt(CODEC.checkpoint("progress".into(), 1, "{", 0)),
            "checkpoints row `progress`: the document is not JSON"
        );
        assert!(corrupt(CODEC.checkpoint_version("p", i64::MIN)).contains("`p`"));
    }

    #[test]
    fn values_a_column_cannot_hold_are_refused() {
        let mut entry = CODEC.entry(row(0, 0)).unwrap();
        entry.turn = u32::MAX;
        assert!(CODEC.entry_values(&entry).is_err());
        entry.turn = 0;
        entry.sequence = u64::MAX;
        assert!(CODEC.entry_values(&entry).is_err());
        let mut checkpoint = Checkpoint::new("c".into(), Value::Null, DateTime::<Utc>::UNIX_EPOCH);
        checkpoint.version = u64::MAX;
        assert!(CODEC.checkpoint_values(&checkpoint).is_err());
    }
}
