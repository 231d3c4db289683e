//! `PgStore`: the session store on PostgreSQL.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use chrono::Utc;
use curator_model::{Entry, EvaluationId, MessageId, PromptRef};
use curator_session::rows::{EntryRow, RowCodec, SnapshotRows, SummaryRow};
use curator_session::{
    Appended, Checkpoint, EvaluationSummary, SessionKey, SessionStore, Snapshot, StoreErrorKind,
};
use postgres::Row;
use postgres::types::ToSql;
use serde_json::Value;
use uuid::Uuid;

use crate::conn::{During, Failure, run};
use crate::pool::{Conn, Connector, Pool, off_runtime};
use crate::{PgOptions, Result, schema};

type SessionResult<T> = curator_session::Result<T>;

/// The rows of this store, read and written as every SQL store does.
const CODEC: RowCodec = RowCodec::new("postgres");

/// A [`SessionStore`] on PostgreSQL: one durable record shared by agent workers on many
/// machines, with [claims](curator_session::ClaimStore) so that two workers never drive one
/// session at once.
///
/// The tables live in one schema (`curator` unless [`PgOptions::with_schema`] chooses
/// another): `entries` (one row per recorded message, `UNIQUE(message_id)` and
/// `UNIQUE(evaluation_id, sequence)`), `evaluations` (the key each belongs to, and its first
/// message's prompt and time, indexed for opening by key), `checkpoints` and `claims`. A
/// batch is one transaction; a single append to an evaluation the store has checked is one
/// statement. Connections come from a small pool, so one store serves many conversations of
/// one process.
///
/// # Examples
///
/// ```no_run
/// use curator::model::{Message, PromptRef};
/// use curator::postgres::PgStore;
/// use curator::session::Conversation;
///
/// let store = PgStore::connect("postgres://agent@db.internal/records")?;
/// let mut conversation = Conversation::open(&store, "ticket-7", PromptRef::new("support", "triage"), Message::system("Be brief."))?;
/// conversation.add_user("My order is late.")?;
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct PgStore {
    pub(crate) pool: Arc<Pool>,
    /// Evaluations whose key this store checked in a committed append, so that the appends
    /// of a conversation check it once.
    verified: Mutex<HashMap<EvaluationId, SessionKey>>,
}

/// How many evaluations the key cache remembers before it starts over.
const VERIFIED_MAX: usize = 4_096;

/// How many entries one statement inserts while restoring.
const CHUNK: usize = 2_000;

/// The columns [`entry`] reads, of the table `e`.
const COLUMNS: &str =
    "e.message_id, e.evaluation_id, e.sequence, e.turn, e.prompt_ns, e.prompt_key,
    e.created_ns, e.message";

const INSERT_ONE: &str = "INSERT INTO entries
    (message_id, evaluation_id, sequence, turn, prompt_ns, prompt_key, created_ns, role, message)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (message_id) DO NOTHING";

const INSERT_MANY: &str = "INSERT INTO entries
    (message_id, evaluation_id, sequence, turn, prompt_ns, prompt_key, created_ns, role, message)
    SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::bigint[], $4::integer[], $5::text[],
                         $6::text[], $7::bigint[], $8::text[], $9::text[])
    ON CONFLICT (message_id) DO NOTHING RETURNING message_id";

const REGISTER: &str = "INSERT INTO evaluations (evaluation_id, session_key)
    SELECT unnest($1::uuid[]), $2 ON CONFLICT (evaluation_id) DO NOTHING";

const MISMATCH: &str = "SELECT evaluation_id, session_key FROM evaluations
    WHERE evaluation_id = ANY($1) AND session_key <> $2 LIMIT 1";

const STARTED: &str = "UPDATE evaluations SET prompt_ns = $2, prompt_key = $3, started_ns = $4
    WHERE evaluation_id = $1";

const HOLDER: &str = "SELECT x.i, e.message_id
    FROM unnest($1::uuid[], $2::bigint[], $3::uuid[]) WITH ORDINALITY AS x(evaluation_id, sequence, message_id, i)
    JOIN entries e ON e.evaluation_id = x.evaluation_id AND e.sequence = x.sequence
    WHERE e.message_id <> x.message_id ORDER BY x.i LIMIT 1";

/// The token of the session's claim, locked against a takeover until the write commits.
const FENCE: &str = "SELECT token FROM claims WHERE session_key = $1 FOR SHARE";

/// Saves a new version of a checkpoint.
const PUT_CHECKPOINT: &str = "INSERT INTO checkpoints (name, version, document, saved_ns)
    VALUES ($1, 1, $2, $3)
    ON CONFLICT (name) DO UPDATE SET version = checkpoints.version + 1,
        document = excluded.document, saved_ns = excluded.saved_ns
    RETURNING version";

const ENTRIES: &str = "SELECT e.message_id, e.evaluation_id, e.sequence, e.turn, e.prompt_ns,
    e.prompt_key, e.created_ns, e.message FROM entries e WHERE evaluation_id = $1 ORDER BY sequence";

/// An evaluation's entries from a sequence on, through the `(evaluation_id, sequence)` index.
const ENTRIES_FROM: &str = "SELECT e.message_id, e.evaluation_id, e.sequence, e.turn, e.prompt_ns,
    e.prompt_key, e.created_ns, e.message FROM entries e WHERE evaluation_id = $1 AND sequence >= $2
    ORDER BY sequence";

/// Summaries of evaluations: `{filter}` narrows the entries aggregated.
macro_rules! summaries {
    ($filter:literal) => {
        concat!(
            "SELECT s.evaluation_id, v.session_key, s.first_ns, s.last_ns, s.messages, s.turns,
                    p.prompt_ns, p.prompt_key
             FROM (SELECT evaluation_id, min(created_ns) AS first_ns, max(created_ns) AS last_ns,
                          count(*) AS messages, max(turn) AS turns
                   FROM entries ",
            $filter,
            " GROUP BY evaluation_id) s
             JOIN evaluations v USING (evaluation_id)
             LEFT JOIN LATERAL (SELECT prompt_ns, prompt_key FROM entries p
                   WHERE p.evaluation_id = s.evaluation_id AND p.prompt_ns IS NOT NULL
                   ORDER BY p.sequence LIMIT 1) p ON true
             ORDER BY s.first_ns, v.rank"
        )
    };
}

const ALL: &str = summaries!("");
const OF_KEY: &str = summaries!(
    "WHERE evaluation_id IN (SELECT evaluation_id FROM evaluations WHERE session_key = $1)"
);
const ONE: &str = summaries!("WHERE evaluation_id = $1");

const LATEST_OF: &str = "SELECT evaluation_id FROM evaluations
    WHERE session_key = $1 AND prompt_ns = $2 AND prompt_key = $3 AND started_ns IS NOT NULL
    ORDER BY started_ns DESC, rank DESC LIMIT 1";

const LATEST: &str =
    "SELECT e.evaluation_id FROM entries e JOIN evaluations v USING (evaluation_id)
    GROUP BY e.evaluation_id, v.rank ORDER BY min(e.created_ns) DESC, v.rank DESC LIMIT 1";

impl PgStore {
    /// Connects with settings from a URL (completed from the `PG*` variables; see
    /// [`PgOptions::from_url`]) and opens the store in the default schema.
    ///
    /// # Errors
    ///
    /// As [`PgOptions::from_url`] and [`open`](PgStore::open).
    pub fn connect(url: &str) -> Result<Self> {
        Self::open(PgOptions::from_url(url)?)
    }

    /// Opens the store: connects, reads the schema's version, and creates or migrates the
    /// tables only when they are missing or older (in one transaction, under an advisory lock,
    /// so that workers starting together agree). A current schema is opened without writing.
    ///
    /// # Errors
    ///
    /// [`Error::ForeignSchema`](crate::Error::ForeignSchema) or
    /// [`Error::NewerSchema`](crate::Error::NewerSchema), with nothing written, when the
    /// schema is not one this build can use; [`Error::Postgres`](crate::Error::Postgres)
    /// otherwise, of kind [`Unavailable`](StoreErrorKind::Unavailable) (retryable) when the
    /// server cannot be reached.
    pub fn open(options: PgOptions) -> Result<Self> {
        let connector = Connector::for_options(&options)?;
        let (wait, schema, size) =
            (options.connect_timeout(), options.schema().to_owned(), options.pool_size());
        let pool = Pool::new(options.into_connection_config(), connector, schema, size, wait);
        off_runtime(|| schema::prepare(&pool))?;
        Ok(Self { pool: Arc::new(pool), verified: Mutex::new(HashMap::new()) })
    }

    /// Opens an existing store for reading only (for inspection tools): it never creates or
    /// migrates a schema, and never writes.
    ///
    /// It connects, checks that the schema holds curator's tables of a version this build
    /// reads (without writing, as [`open`](PgStore::open) does for a current schema), and
    /// makes every connection's transactions read-only (`default_transaction_read_only`), so
    /// the server itself refuses any write through the store, with kind
    /// [`ReadOnly`](StoreErrorKind::ReadOnly). A database that holds no curator schema is
    /// refused with [`Error::NoSchema`](crate::Error::NoSchema) naming it, and is left as it
    /// was: a mistyped URL never creates tables in someone else's database. It works for a
    /// role that may only read the tables.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use curator::postgres::{PgOptions, PgStore};
    /// use curator::session::{SessionKey, SessionStore, StoreErrorKind};
    ///
    /// let options = PgOptions::from_url("postgres://reader@db.internal/records")?;
    /// let store = PgStore::open_read_only(options)?; // `Error::NoSchema` for another database
    /// let evaluations = store.evaluations_of(&SessionKey::new("ticket-7"))?;
    /// let refused = store.put_checkpoint("x", &serde_json::json!(1)).unwrap_err();
    /// assert!(matches!(refused, curator::session::Error::Store { kind: StoreErrorKind::ReadOnly, .. }));
    /// # let _ = evaluations;
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::NoSchema`](crate::Error::NoSchema) when the schema is missing;
    /// [`Error::ForeignSchema`](crate::Error::ForeignSchema) or
    /// [`Error::NewerSchema`](crate::Error::NewerSchema) when it is not one this build reads;
    /// [`Error::Postgres`](crate::Error::Postgres) otherwise, as for [`open`](PgStore::open).
    pub fn open_read_only(options: PgOptions) -> Result<Self> {
        let connector = Connector::for_options(&options)?;
        let (wait, schema, size) =
            (options.connect_timeout(), options.schema().to_owned(), options.pool_size());
        let pool =
            Pool::new(options.into_connection_config(), connector, schema, size, wait).read_only();
        off_runtime(|| schema::check(&pool))?;
        Ok(Self { pool: Arc::new(pool), verified: Mutex::new(HashMap::new()) })
    }

    /// The schema the tables live in.
    pub fn schema(&self) -> &str {
        self.pool.schema()
    }

    fn verified(&self) -> MutexGuard<'_, HashMap<EvaluationId, SessionKey>> {
        self.verified.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn is_verified(&self, key: &SessionKey, evaluation: EvaluationId) -> bool {
        self.verified().get(&evaluation).is_some_and(|k| k == key)
    }

    fn remember(&self, key: &SessionKey, evaluations: impl IntoIterator<Item = EvaluationId>) {
        let mut verified = self.verified();
        if verified.len() > VERIFIED_MAX {
            verified.clear();
        }
        for evaluation in evaluations {
            verified.insert(evaluation, key.clone());
        }
    }

    fn summaries(
        &self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> SessionResult<Vec<EvaluationSummary>> {
        let rows = run(&self.pool, |conn| {
            let statement = conn.prepare(sql).during("listing evaluations")?;
            conn.client.query(&statement, params).during("listing evaluations")
        })?;
        rows.iter().map(summary).collect()
    }
}

/// The columns of a batch, for one `unnest` insert.
#[derive(Default)]
struct Columns {
    ids: Vec<Uuid>,
    evaluations: Vec<Uuid>,
    sequences: Vec<i64>,
    turns: Vec<i32>,
    prompt_ns: Vec<Option<String>>,
    prompt_keys: Vec<Option<String>>,
    created: Vec<i64>,
    roles: Vec<&'static str>,
    messages: Vec<String>,
}

impl Columns {
    fn of(entries: &[Entry]) -> SessionResult<Self> {
        let mut c = Columns::default();
        for entry in entries {
            let row = CODEC.entry_values(entry)?;
            c.ids.push(Uuid::from_bytes(*row.message_id));
            c.evaluations.push(Uuid::from_bytes(*row.evaluation_id));
            c.sequences.push(row.sequence);
            c.turns.push(row.turn);
            c.prompt_ns.push(row.prompt_ns.map(str::to_owned));
            c.prompt_keys.push(row.prompt_key.map(str::to_owned));
            c.created.push(row.created_ns);
            c.roles.push(row.role);
            c.messages.push(row.message);
        }
        Ok(c)
    }
}

/// Refuses a batch that puts two messages at one place before PostgreSQL sees it (inside one
/// statement the second would be refused without a way to name the first).
fn check_places(entries: &[Entry]) -> SessionResult<()> {
    let mut ids = HashSet::new();
    let mut places: HashMap<(EvaluationId, u64), MessageId> = HashMap::new();
    for entry in entries {
        if !ids.insert(entry.id) {
            continue;
        }
        match places.get(&(entry.evaluation_id, entry.sequence)) {
            Some(&existing) => {
                return Err(curator_session::Error::SequenceTaken {
                    evaluation: entry.evaluation_id,
                    sequence: entry.sequence,
                    existing,
                });
            }
            None => {
                places.insert((entry.evaluation_id, entry.sequence), entry.id);
            }
        }
    }
    Ok(())
}

/// Reads the claim on `key` in `tx` with `fenced` (the [`FENCE`] statement, whose row lock
/// holds off a takeover until `tx` ends) and compares its token with `fence`'s: `None` when
/// `fence` is the current claim, the [`Fenced`](curator_session::Error::Fenced) refusal
/// otherwise (the caller rolls back).
fn check_fence(
    tx: &mut postgres::Transaction<'_>,
    fenced: &postgres::Statement,
    key: &SessionKey,
    fence: &curator_session::Fence,
) -> Result<Option<curator_session::Error>, Failure> {
    let token = i64::try_from(fence.token).unwrap_or(i64::MAX);
    let current: Option<i64> =
        match tx.query_opt(fenced, &[&key.as_str()]).during("reading the session's claim")? {
            Some(row) => Some(row.try_get(0).during("reading a row")?),
            None => None,
        };
    if current != Some(token) || fence.key != *key {
        return Ok(Some(curator_session::Error::Fenced {
            key: key.clone(),
            token: fence.token,
            current: current.and_then(|c| u64::try_from(c).ok()),
        }));
    }
    Ok(None)
}

fn is_unique_violation(e: &postgres::Error) -> bool {
    e.code() == Some(&postgres::error::SqlState::UNIQUE_VIOLATION)
}

/// After a batch was refused for a taken place: which entry met which message.
fn taken(conn: &mut Conn, entries: &[Entry]) -> Result<curator_session::Error, Failure> {
    let c = Columns::of(entries)?;
    let statement = conn.prepare(HOLDER).during("finding the message at a taken place")?;
    let row = conn
        .client
        .query_opt(&statement, &[&c.evaluations, &c.sequences, &c.ids])
        .during("finding the message at a taken place")?;
    let Some(row) = row else {
        // The place was held by a transaction that rolled back since: trying again may work.
        return Ok(curator_session::Error::store(
            "postgres",
            StoreErrorKind::Busy,
            "a concurrent append held the same place and gave it up",
            None,
        ));
    };
    let index: i64 = row.try_get(0).during("reading a row")?;
    let existing: Uuid = row.try_get(1).during("reading a row")?;
    let entry = usize::try_from(index - 1).ok().and_then(|i| entries.get(i));
    Ok(match entry {
        Some(entry) => curator_session::Error::SequenceTaken {
            evaluation: entry.evaluation_id,
            sequence: entry.sequence,
            existing: MessageId::from_uuid(existing),
        },
        None => CODEC.corrupt(format!("the taken place's row {index} is not in the batch"), None),
    })
}

/// Inserts `entries` under `key` inside `tx`; returns what happened to each.
fn insert(
    tx: &mut postgres::Transaction<'_>,
    statements: &Statements,
    key: &SessionKey,
    entries: &[Entry],
    check_key: &[Uuid],
) -> Result<Vec<Appended>, Failure> {
    if !check_key.is_empty() {
        tx.execute(&statements.register, &[&check_key, &key.as_str()])
            .during("registering the evaluation")?;
        if let Some(row) = tx
            .query_opt(&statements.mismatch, &[&check_key, &key.as_str()])
            .during("checking the evaluation's key")?
        {
            let evaluation: Uuid = row.try_get(0).during("reading a row")?;
            let found: String = row.try_get(1).during("reading a row")?;
            return Err(Failure::Session(curator_session::Error::KeyMismatch {
                evaluation: EvaluationId::from_uuid(evaluation),
                expected: key.clone(),
                found: SessionKey::new(found),
            }));
        }
    }
    let c = Columns::of(entries)?;
    let rows = tx
        .query(
            &statements.insert_many,
            &[
                &c.ids,
                &c.evaluations,
                &c.sequences,
                &c.turns,
                &c.prompt_ns,
                &c.prompt_keys,
                &c.created,
                &c.roles,
                &c.messages,
            ],
        )
        .during("appending entries")?;
    let mut new: HashSet<Uuid> = HashSet::with_capacity(rows.len());
    for row in &rows {
        new.insert(row.try_get(0).during("reading a row")?);
    }
    let mut outcomes = Vec::with_capacity(entries.len());
    for entry in entries {
        // A repeated id in the batch: the first is new, the rest are duplicates.
        if new.remove(entry.id.as_uuid()) {
            outcomes.push(Appended::New);
            if entry.sequence == 0 {
                tx.execute(
                    &statements.started,
                    &[
                        entry.evaluation_id.as_uuid(),
                        &entry.prompt.as_ref().map(|p| p.ns.as_str()),
                        &entry.prompt.as_ref().map(|p| p.key.as_str()),
                        &CODEC.nanos(entry.created_at)?,
                    ],
                )
                .during("recording the evaluation's start")?;
            }
        } else {
            outcomes.push(Appended::Duplicate);
        }
    }
    Ok(outcomes)
}

/// The statements of a batch, prepared before its transaction starts.
struct Statements {
    register: postgres::Statement,
    mismatch: postgres::Statement,
    insert_many: postgres::Statement,
    started: postgres::Statement,
}

impl Statements {
    fn prepare(conn: &mut Conn) -> Result<Self, Failure> {
        let mut p = |sql| conn.prepare(sql).during("preparing an append");
        Ok(Self {
            register: p(REGISTER)?,
            mismatch: p(MISMATCH)?,
            insert_many: p(INSERT_MANY)?,
            started: p(STARTED)?,
        })
    }
}

fn uuid_of(row: &Row, column: usize) -> Result<Uuid, Failure> {
    row.try_get(column).during("reading a row")
}

/// An [`Entry`] from a row of [`COLUMNS`].
fn entry(row: &Row) -> Result<Entry, Failure> {
    let message_id = uuid_of(row, 0)?;
    let evaluation_id = uuid_of(row, 1)?;
    let turn: i32 = row.try_get(3).during("reading a row")?;
    CODEC
        .entry(EntryRow {
            message_id: message_id.as_bytes(),
            evaluation_id: evaluation_id.as_bytes(),
            sequence: row.try_get(2).during("reading a row")?,
            turn: i64::from(turn),
            prompt_ns: row.try_get(4).during("reading a row")?,
            prompt_key: row.try_get(5).during("reading a row")?,
            created_ns: row.try_get(6).during("reading a row")?,
            message: row.try_get(7).during("reading a row")?,
            // PostgreSQL checks its own pages (data checksums, when the cluster has them).
            checksum: None,
        })
        .map_err(Failure::from)
}

fn summary(row: &Row) -> SessionResult<EvaluationSummary> {
    let unreadable = |e: postgres::Error| {
        CODEC.corrupt("a summary row this build cannot read", Some(Box::new(e)))
    };
    let id: Uuid = row.try_get(0).map_err(unreadable)?;
    let read = || -> Result<SummaryRow<'_>, postgres::Error> {
        let turns: i32 = row.try_get(5)?;
        Ok(SummaryRow {
            evaluation_id: id.as_bytes(),
            key: row.try_get(1)?,
            first_ns: row.try_get(2)?,
            last_ns: row.try_get(3)?,
            messages: row.try_get(4)?,
            turns: i64::from(turns),
            prompt_ns: row.try_get(6)?,
            prompt_key: row.try_get(7)?,
        })
    };
    CODEC.summary(read().map_err(unreadable)?)
}

impl PgStore {
    /// Asks the server to reclaim the space of deleted rows now (`VACUUM` of the store's
    /// tables), rather than when autovacuum comes to them: after
    /// [`prune`](curator_session::prune). The space goes back to the tables, for new rows;
    /// `VACUUM FULL`, which gives it back to the file system, locks the tables and is left to
    /// the operator.
    ///
    /// # Errors
    ///
    /// A store error.
    pub fn vacuum(&self) -> SessionResult<()> {
        run(&self.pool, |conn| {
            conn.client
                .batch_execute("VACUUM entries, evaluations, checkpoints, claims")
                .during("vacuuming")
        })
    }
}

impl SessionStore for PgStore {
    fn append(&self, key: &SessionKey, entry: &Entry) -> SessionResult<Appended> {
        key.check()?;
        if entry.sequence == 0 || !self.is_verified(key, entry.evaluation_id) {
            return self
                .append_batch(key, std::slice::from_ref(entry))
                .map(|outcomes| outcomes.first().copied().unwrap_or(Appended::Duplicate));
        }
        // A conversation's next message: one statement, committed on its own.
        let row = CODEC.entry_values(entry)?;
        let (id, evaluation) =
            (Uuid::from_bytes(*row.message_id), Uuid::from_bytes(*row.evaluation_id));
        run(&self.pool, |conn| {
            let statement = conn.prepare(INSERT_ONE).during("appending an entry")?;
            let inserted = conn.client.execute(
                &statement,
                &[
                    &id,
                    &evaluation,
                    &row.sequence,
                    &row.turn,
                    &row.prompt_ns,
                    &row.prompt_key,
                    &row.created_ns,
                    &row.role,
                    &row.message,
                ],
            );
            match inserted {
                Ok(1) => Ok(Appended::New),
                Ok(_) => Ok(Appended::Duplicate),
                Err(e) if is_unique_violation(&e) => {
                    Err(Failure::Session(taken(conn, std::slice::from_ref(entry))?))
                }
                Err(e) => Err(Failure::Pg("appending an entry", e)),
            }
        })
    }

    fn append_batch(&self, key: &SessionKey, entries: &[Entry]) -> SessionResult<Vec<Appended>> {
        key.check()?;
        if entries.is_empty() {
            return Ok(Vec::new());
        }
        check_places(entries)?;
        let mut unchecked: Vec<Uuid> = Vec::new();
        for entry in entries {
            if !self.is_verified(key, entry.evaluation_id)
                && !unchecked.contains(entry.evaluation_id.as_uuid())
            {
                unchecked.push(*entry.evaluation_id.as_uuid());
            }
        }
        let outcomes = run(&self.pool, |conn| {
            let statements = Statements::prepare(conn)?;
            let mut tx = conn.client.transaction().during("starting a batch")?;
            match insert(&mut tx, &statements, key, entries, &unchecked) {
                Ok(outcomes) => {
                    tx.commit().during("committing a batch")?;
                    Ok(outcomes)
                }
                Err(Failure::Pg(_, e)) if is_unique_violation(&e) => {
                    tx.rollback().during("rolling back a batch")?;
                    Err(Failure::Session(taken(conn, entries)?))
                }
                Err(other) => Err(other),
            }
        })?;
        self.remember(key, unchecked.into_iter().map(EvaluationId::from_uuid));
        Ok(outcomes)
    }

    fn delete_evaluations(
        &self,
        key: &SessionKey,
        evaluations: &[EvaluationId],
    ) -> SessionResult<u64> {
        let ids: Vec<Uuid> = evaluations.iter().map(|e| *e.as_uuid()).collect();
        let marks: Vec<String> =
            evaluations.iter().flat_map(|e| curator_session::evaluation_checkpoints(*e)).collect();
        let deleted = run(&self.pool, |conn| {
            let mut tx = conn.client.transaction().during("starting a deletion")?;
            let ours: Vec<Uuid> = tx
                .query(
                    "SELECT evaluation_id FROM evaluations WHERE evaluation_id = ANY($1) AND session_key = $2 FOR UPDATE",
                    &[&ids, &key.as_str()],
                )
                .during("finding the evaluations")?
                .iter()
                .map(|row| row.try_get(0))
                .collect::<Result<_, _>>()
                .during("reading a row")?;
            let messages = tx
                .execute("DELETE FROM entries WHERE evaluation_id = ANY($1)", &[&ours])
                .during("deleting entries")?;
            tx.execute("DELETE FROM evaluations WHERE evaluation_id = ANY($1)", &[&ours])
                .during("deleting evaluations")?;
            tx.execute("DELETE FROM checkpoints WHERE name = ANY($1)", &[&marks])
                .during("deleting start marks and usage")?;
            tx.commit().during("committing a deletion")?;
            Ok(messages)
        })?;
        self.verified().retain(|evaluation, _| !evaluations.contains(evaluation));
        Ok(deleted)
    }

    fn delete_checkpoints(&self, names: &[&str]) -> SessionResult<u64> {
        let names: Vec<&str> = names.to_vec();
        run(&self.pool, |conn| {
            conn.client
                .execute("DELETE FROM checkpoints WHERE name = ANY($1)", &[&names])
                .during("deleting checkpoints")
        })
    }

    /// The fence is checked in the append's transaction: the session's claim row is read
    /// `FOR SHARE`, so a worker taking the session over waits until this append commits (or
    /// this append sees its token and is refused).
    fn append_batch_fenced(
        &self,
        key: &SessionKey,
        entries: &[Entry],
        fence: &curator_session::Fence,
    ) -> SessionResult<Vec<Appended>> {
        key.check()?;
        check_places(entries)?;
        let unchecked: Vec<Uuid> = {
            let mut unchecked: Vec<Uuid> = Vec::new();
            for entry in entries {
                if !self.is_verified(key, entry.evaluation_id)
                    && !unchecked.contains(entry.evaluation_id.as_uuid())
                {
                    unchecked.push(*entry.evaluation_id.as_uuid());
                }
            }
            unchecked
        };
        let outcomes = run(&self.pool, |conn| {
            let statements = Statements::prepare(conn)?;
            let fenced = conn.prepare(FENCE).during("preparing a fenced append")?;
            let mut tx = conn.client.transaction().during("starting a fenced append")?;
            if let Some(refused) = check_fence(&mut tx, &fenced, key, fence)? {
                tx.rollback().during("rolling back a fenced append")?;
                return Err(Failure::Session(refused));
            }
            if entries.is_empty() {
                tx.commit().during("committing a fenced append")?;
                return Ok(Vec::new());
            }
            match insert(&mut tx, &statements, key, entries, &unchecked) {
                Ok(outcomes) => {
                    tx.commit().during("committing a fenced append")?;
                    Ok(outcomes)
                }
                Err(Failure::Pg(_, e)) if is_unique_violation(&e) => {
                    tx.rollback().during("rolling back a fenced append")?;
                    Err(Failure::Session(taken(conn, entries)?))
                }
                Err(other) => Err(other),
            }
        })?;
        self.remember(key, unchecked.into_iter().map(EvaluationId::from_uuid));
        Ok(outcomes)
    }

    fn entries(&self, evaluation: EvaluationId) -> SessionResult<Vec<Entry>> {
        run(&self.pool, |conn| {
            let statement = conn.prepare(ENTRIES).during("reading entries")?;
            let rows =
                conn.client.query(&statement, &[evaluation.as_uuid()]).during("reading entries")?;
            rows.iter().map(entry).collect()
        })
    }

    fn entries_from(&self, evaluation: EvaluationId, from: u64) -> SessionResult<Vec<Entry>> {
        // A sequence beyond PostgreSQL's bigint is beyond every stored one.
        let Ok(from) = i64::try_from(from) else { return Ok(Vec::new()) };
        run(&self.pool, |conn| {
            let statement = conn.prepare(ENTRIES_FROM).during("reading entries")?;
            let rows = conn
                .client
                .query(&statement, &[evaluation.as_uuid(), &from])
                .during("reading entries")?;
            rows.iter().map(entry).collect()
        })
    }

    fn evaluations(&self) -> SessionResult<Vec<EvaluationSummary>> {
        self.summaries(ALL, &[])
    }

    fn evaluations_of(&self, key: &SessionKey) -> SessionResult<Vec<EvaluationSummary>> {
        self.summaries(OF_KEY, &[&key.as_str()])
    }

    fn evaluation(&self, evaluation: EvaluationId) -> SessionResult<Option<EvaluationSummary>> {
        Ok(self.summaries(ONE, &[evaluation.as_uuid()])?.pop())
    }

    fn latest_evaluation(&self) -> SessionResult<Option<EvaluationId>> {
        run(&self.pool, |conn| {
            let statement = conn.prepare(LATEST).during("finding the latest evaluation")?;
            let row =
                conn.client.query_opt(&statement, &[]).during("finding the latest evaluation")?;
            row.map(|r| uuid_of(&r, 0).map(EvaluationId::from_uuid)).transpose()
        })
    }

    fn latest_evaluation_of(
        &self,
        key: &SessionKey,
        prompt: &PromptRef,
    ) -> SessionResult<Option<EvaluationId>> {
        run(&self.pool, |conn| {
            let statement = conn.prepare(LATEST_OF).during("finding the session's evaluation")?;
            let row = conn
                .client
                .query_opt(&statement, &[&key.as_str(), &prompt.ns, &prompt.key])
                .during("finding the session's evaluation")?;
            row.map(|r| uuid_of(&r, 0).map(EvaluationId::from_uuid)).transpose()
        })
    }

    fn put_checkpoint(&self, name: &str, document: &Value) -> SessionResult<u64> {
        let saved = CODEC.nanos(Utc::now())?;
        let document = CODEC.checkpoint_document(name, document)?;
        let version: i64 = run(&self.pool, |conn| {
            let statement = conn.prepare(PUT_CHECKPOINT).during("saving a checkpoint")?;
            let row = conn
                .client
                .query_one(&statement, &[&name, &document, &saved])
                .during("saving a checkpoint")?;
            row.try_get(0).during("reading a row")
        })?;
        CODEC.checkpoint_version(name, version)
    }

    /// The fence is checked in the write's transaction, as a fenced append's is: the claim
    /// row is read `FOR SHARE`, so a takeover waits until the checkpoint is committed.
    fn put_checkpoint_fenced(
        &self,
        name: &str,
        document: &Value,
        fence: &curator_session::Fence,
    ) -> SessionResult<u64> {
        fence.key.check()?;
        let saved = CODEC.nanos(Utc::now())?;
        let document = CODEC.checkpoint_document(name, document)?;
        let version: i64 = run(&self.pool, |conn| {
            let fenced = conn.prepare(FENCE).during("preparing a fenced checkpoint")?;
            let statement = conn.prepare(PUT_CHECKPOINT).during("saving a checkpoint")?;
            let mut tx = conn.client.transaction().during("starting a fenced checkpoint")?;
            if let Some(refused) = check_fence(&mut tx, &fenced, &fence.key, fence)? {
                tx.rollback().during("rolling back a fenced checkpoint")?;
                return Err(Failure::Session(refused));
            }
            let row = tx
                .query_one(&statement, &[&name, &document, &saved])
                .during("saving a checkpoint")?;
            let version = row.try_get(0).during("reading a row")?;
            tx.commit().during("committing a fenced checkpoint")?;
            Ok(version)
        })?;
        CODEC.checkpoint_version(name, version)
    }

    fn put_checkpoints(&self, checkpoints: &[(&str, &Value)]) -> SessionResult<Vec<u64>> {
        let saved = CODEC.nanos(Utc::now())?;
        let documents = checkpoints
            .iter()
            .map(|(name, document)| CODEC.checkpoint_document(name, document))
            .collect::<SessionResult<Vec<String>>>()?;
        let versions: Vec<i64> = run(&self.pool, |conn| {
            let statement = conn.prepare(PUT_CHECKPOINT).during("saving checkpoints")?;
            // One transaction: all of them or none.
            let mut tx = conn.client.transaction().during("starting to save checkpoints")?;
            let mut versions = Vec::with_capacity(checkpoints.len());
            for ((name, _), document) in checkpoints.iter().zip(&documents) {
                let row = tx
                    .query_one(&statement, &[name, document, &saved])
                    .during("saving checkpoints")?;
                versions.push(row.try_get(0).during("reading a row")?);
            }
            tx.commit().during("committing checkpoints")?;
            Ok(versions)
        })?;
        checkpoints
            .iter()
            .zip(versions)
            .map(|((name, _), version)| CODEC.checkpoint_version(name, version))
            .collect()
    }

    fn checkpoint_names(&self, prefix: &str) -> SessionResult<Vec<String>> {
        run(&self.pool, |conn| {
            let statement = conn
                .prepare(
                    "SELECT name FROM checkpoints WHERE left(name, char_length($1)) = $1 ORDER BY name COLLATE \"C\"",
                )
                .during("listing checkpoints")?;
            let rows = conn.client.query(&statement, &[&prefix]).during("listing checkpoints")?;
            rows.iter().map(|r| r.try_get(0).during("reading a row")).collect()
        })
    }

    fn checkpoint(&self, name: &str) -> SessionResult<Option<Checkpoint>> {
        let row = run(&self.pool, |conn| {
            let statement = conn
                .prepare("SELECT version, document, saved_ns FROM checkpoints WHERE name = $1")
                .during("reading a checkpoint")?;
            let row = conn.client.query_opt(&statement, &[&name]).during("reading a checkpoint")?;
            row.map(|r| -> Result<(i64, String, i64), Failure> {
                Ok((
                    r.try_get(0).during("reading a row")?,
                    r.try_get(1).during("reading a row")?,
                    r.try_get(2).during("reading a row")?,
                ))
            })
            .transpose()
        })?;
        row.map(|(version, document, saved)| {
            CODEC.checkpoint(name.to_owned(), version, &document, saved)
        })
        .transpose()
    }

    fn snapshot(&self) -> SessionResult<Snapshot> {
        run(&self.pool, |conn| {
            // One repeatable-read transaction: a consistent picture while others append.
            let mut tx = conn
                .client
                .build_transaction()
                .isolation_level(postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .during("starting a snapshot")?;
            let rows = tx
                .query(
                    &format!(
                        "SELECT {COLUMNS}, v.session_key FROM entries e
                         JOIN (SELECT evaluation_id, min(created_ns) AS first FROM entries GROUP BY evaluation_id) o
                           USING (evaluation_id)
                         JOIN evaluations v USING (evaluation_id)
                         ORDER BY o.first, v.rank, e.sequence"
                    ),
                    &[],
                )
                .during("reading the snapshot's entries")?;
            let mut snapshot = SnapshotRows::with_capacity(rows.len());
            for row in &rows {
                snapshot.push(row.try_get(8).during("reading a row")?, entry(row)?);
            }
            let rows = tx
                .query(
                    "SELECT name, version, document, saved_ns FROM checkpoints ORDER BY name",
                    &[],
                )
                .during("reading the snapshot's checkpoints")?;
            let mut checkpoints = Vec::with_capacity(rows.len());
            for r in &rows {
                let document: &str = r.try_get(2).during("reading a row")?;
                checkpoints.push(CODEC.checkpoint(
                    r.try_get(0).during("reading a row")?,
                    r.try_get(1).during("reading a row")?,
                    document,
                    r.try_get(3).during("reading a row")?,
                )?);
            }
            tx.commit().during("ending a snapshot")?;
            Ok(snapshot.into_snapshot(checkpoints))
        })
    }

    fn restore(&self, snapshot: &Snapshot) -> SessionResult<()> {
        // The same rules as every store: a snapshot that breaks one changes nothing.
        snapshot.validate()?;
        self.verified().clear();
        run(&self.pool, |conn| {
            let statements = Statements::prepare(conn)?;
            let mut tx = conn.client.transaction().during("starting a restore")?;
            tx.batch_execute("TRUNCATE entries, evaluations, checkpoints")
                .during("emptying the store")?;
            let mut registered: HashSet<EvaluationId> = HashSet::new();
            for chunk in snapshot.entries.chunks(CHUNK) {
                // Runs of one key, in the snapshot's order (which orders the evaluations).
                let mut start = 0;
                while start < chunk.len() {
                    let key = snapshot.key_of(chunk[start].evaluation_id);
                    let mut end = start + 1;
                    while end < chunk.len() && snapshot.key_of(chunk[end].evaluation_id) == key {
                        end += 1;
                    }
                    let run = &chunk[start..end];
                    let mut new = Vec::new();
                    for e in run {
                        if registered.insert(e.evaluation_id) {
                            new.push(*e.evaluation_id.as_uuid());
                        }
                    }
                    insert(&mut tx, &statements, &key, run, &new)?;
                    start = end;
                }
            }
            for c in &snapshot.checkpoints {
                let row = CODEC.checkpoint_values(c)?;
                tx.execute(
                    "INSERT INTO checkpoints (name, version, document, saved_ns) VALUES ($1, $2, $3, $4)",
                    &[&c.name, &row.version, &row.document, &row.saved_ns],
                )
                .during("restoring a checkpoint")?;
            }
            tx.commit().during("committing the restore")
        })
    }
}
