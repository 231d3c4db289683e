//! The tables, their version and forward migrations, and the checks made while opening.
//!
//! Opening reads the schema's version without writing anything; only a missing or older
//! schema is created or migrated, in one transaction that holds an advisory lock (so that
//! workers starting together agree on who creates it) and reads the version again first.

use crate::pool::Pool;
use crate::{Error, Result};

/// The schema version this build writes; the `schema_version` table holds a schema's version.
pub const PG_SCHEMA_VERSION: i32 = 3;

/// Forward migrations: `MIGRATIONS[n]` takes a schema from version `n` to `n + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: evaluations (the key each belongs to, and its first message's prompt and time for
    // opening by key), entries (one row per recorded message), checkpoints, claims.
    "CREATE TABLE evaluations (
        evaluation_id uuid   PRIMARY KEY,
        session_key   text   NOT NULL,
        rank          bigint GENERATED ALWAYS AS IDENTITY,
        prompt_ns     text,
        prompt_key    text,
        started_ns    bigint
    );
    CREATE INDEX evaluations_by_key ON evaluations (session_key);
    CREATE INDEX evaluations_by_session
        ON evaluations (session_key, prompt_ns, prompt_key, started_ns DESC, rank DESC)
        WHERE started_ns IS NOT NULL;
    CREATE TABLE entries (
        message_id    uuid    NOT NULL UNIQUE,
        evaluation_id uuid    NOT NULL,
        sequence      bigint  NOT NULL,
        turn          integer NOT NULL,
        prompt_ns     text,
        prompt_key    text,
        created_ns    bigint  NOT NULL,
        role          text    NOT NULL,
        message       text    NOT NULL,
        UNIQUE (evaluation_id, sequence)
    );
    CREATE TABLE checkpoints (
        name     text   PRIMARY KEY,
        version  bigint NOT NULL,
        document text   NOT NULL,
        saved_ns bigint NOT NULL
    );
    CREATE TABLE claims (
        session_key text        PRIMARY KEY,
        holder      uuid        NOT NULL,
        expires_at  timestamptz NOT NULL
    );",
    // 2: fencing tokens: each claim takes the next number of one sequence, and appends made
    // under a claim are refused once the session's row holds another.
    "CREATE SEQUENCE claim_tokens;
    ALTER TABLE claims ADD COLUMN token bigint NOT NULL DEFAULT nextval('claim_tokens');",
    // 3: the advisory lock a claim's holder keeps on a connection of its own while it lives:
    // once no connection holds it, the holder is gone and its claim is taken over at once.
    "ALTER TABLE claims ADD COLUMN lock_key bigint;",
];

/// What a schema holds.
enum Found {
    /// Nothing: create it.
    Missing,
    /// Tables without a curator version.
    Foreign(i64),
    /// A curator schema of this version.
    Version(i32),
}

fn look(client: &mut impl postgres::GenericClient, schema: &str) -> Result<Found> {
    let row = client
        .query_one(
            "SELECT (SELECT count(*) FROM pg_tables WHERE schemaname = $1),
                    to_regclass(quote_ident($1) || '.schema_version') IS NOT NULL",
            &[&schema],
        )
        .map_err(|e| Error::postgres("reading the schema", e))?;
    let (tables, versioned): (i64, bool) = (row.get(0), row.get(1));
    if !versioned {
        return Ok(if tables == 0 { Found::Missing } else { Found::Foreign(tables) });
    }
    let version: Option<i32> = client
        .query_one("SELECT max(version) FROM schema_version", &[])
        .map_err(|e| Error::postgres("reading the schema version", e))?
        .get(0);
    Ok(Found::Version(version.unwrap_or(0)))
}

/// What to do with what was found: `Ok(true)` to migrate, `Ok(false)` when current.
fn judge(schema: &str, found: &Found) -> Result<bool> {
    match *found {
        Found::Missing => Ok(true),
        Found::Foreign(tables) => Err(Error::ForeignSchema { schema: schema.to_owned(), tables }),
        Found::Version(v) if v > PG_SCHEMA_VERSION => Err(Error::NewerSchema {
            schema: schema.to_owned(),
            found: v,
            supported: PG_SCHEMA_VERSION,
        }),
        Found::Version(v) => Ok(v < PG_SCHEMA_VERSION),
    }
}

/// Checks, without writing anything, that the schema holds curator's tables of a version
/// this build reads, for a store opened read-only (which never creates or migrates). An
/// older version is read as it is: the store's reads use only the tables and columns of
/// version 1.
pub(crate) fn check(pool: &Pool) -> Result<()> {
    let schema = pool.schema().to_owned();
    let mut pooled = pool.get()?;
    let conn = pooled.conn();
    match look(&mut conn.client, &schema)? {
        // A version table without a version is no schema a migration committed.
        Found::Missing | Found::Version(0) => {
            let database: String = conn
                .client
                .query_one("SELECT current_database()", &[])
                .map_err(|e| Error::postgres("reading the database's name", e))?
                .get(0);
            Err(Error::NoSchema { schema, database })
        }
        found => judge(&schema, &found).map(drop),
    }
}

/// Checks the schema and creates or migrates it when needed. Returns whether anything was
/// written.
pub(crate) fn prepare(pool: &Pool) -> Result<bool> {
    let schema = pool.schema().to_owned();
    let mut pooled = pool.get()?;
    let conn = pooled.conn();
    let found = look(&mut conn.client, &schema)?;
    if !judge(&schema, &found)? {
        return Ok(false);
    }
    let mut tx =
        conn.client.transaction().map_err(|e| Error::postgres("starting the migration", e))?;
    // Workers starting together take turns here; the loser finds the schema made.
    tx.execute("SELECT pg_advisory_xact_lock(hashtext('curator schema ' || $1))", &[&schema])
        .map_err(|e| Error::postgres("waiting for another process's migration", e))?;
    let exists = tx
        .query_opt("SELECT 1 FROM pg_namespace WHERE nspname = $1", &[&schema])
        .map_err(|e| Error::postgres("reading the schema", e))?
        .is_some();
    if !exists {
        tx.batch_execute(&format!("CREATE SCHEMA \"{schema}\""))
            .map_err(|e| Error::postgres("creating the schema", e))?;
    }
    let found = look(&mut tx, &schema)?;
    if !judge(&schema, &found)? {
        tx.commit().map_err(|e| Error::postgres("ending a read", e))?;
        return Ok(false);
    }
    let from = if let Found::Version(v) = found {
        usize::try_from(v).unwrap_or(0)
    } else {
        tx.batch_execute("CREATE TABLE schema_version (version integer NOT NULL)")
            .map_err(|e| Error::postgres("creating the version table", e))?;
        0
    };
    for (step, sql) in MIGRATIONS.iter().enumerate().skip(from) {
        tx.batch_execute(sql).map_err(|e| Error::postgres("migrating the schema", e))?;
        let version = i32::try_from(step + 1).unwrap_or(i32::MAX);
        tx.execute("DELETE FROM schema_version", &[])
            .and_then(|_| {
                tx.execute("INSERT INTO schema_version (version) VALUES ($1)", &[&version])
            })
            .map_err(|e| Error::postgres("recording the schema version", e))?;
    }
    tx.commit().map_err(|e| Error::postgres("committing the migration", e))?;
    Ok(true)
}
