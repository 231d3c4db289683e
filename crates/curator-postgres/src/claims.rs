//! Claims on PostgreSQL: a lease row per session key, timed by the server's clock, and an
//! advisory lock that shows whether the holder still lives.
//!
//! A holder keeps a connection of its own for as long as it holds the claim, and on it a
//! session-level advisory lock whose number is stored in the claim's row (`lock_key`). When
//! the holder's process dies, its connection closes and the server drops the lock: the next
//! worker that asks finds the lock free and takes the claim over at once, without waiting
//! out the lease. A holder that lives but stops renewing (stopped, stalled) keeps its lock,
//! and is taken over when its lease runs out, as before.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use curator_session::{Claim, ClaimStore, Lease, SessionKey};
use uuid::Uuid;

use crate::PgStore;
use crate::conn::{During, Failure, run};
use crate::error::{connection_lost, store_error};
use crate::pool::{Conn, Pool, off_runtime};

type SessionResult<T> = curator_session::Result<T>;

/// Takes the key's row when there is none, its lease ran out (by the server's clock, so that
/// workers on machines whose clocks differ agree), or its holder is gone: no connection holds
/// its lock any more (the transaction-level probe is released when the statement ends).
const TAKE: &str = "INSERT INTO claims (session_key, holder, expires_at, token, lock_key)
    VALUES ($1, $2, clock_timestamp() + $3::bigint * interval '1 microsecond', nextval('claim_tokens'), $4)
    ON CONFLICT (session_key) DO UPDATE
        SET holder = excluded.holder, expires_at = excluded.expires_at, token = excluded.token,
            lock_key = excluded.lock_key
        WHERE claims.expires_at <= clock_timestamp()
            OR (claims.lock_key IS NOT NULL AND pg_try_advisory_xact_lock(claims.lock_key))
    RETURNING token";

const LOCK: &str = "SELECT pg_try_advisory_lock($1)";

const LEFT: &str = "SELECT extract(epoch FROM expires_at - clock_timestamp())::float8
    FROM claims WHERE session_key = $1";

const RENEW: &str = "UPDATE claims
    SET expires_at = clock_timestamp() + $3::bigint * interval '1 microsecond'
    WHERE session_key = $1 AND holder = $2";

const RELEASE: &str = "DELETE FROM claims WHERE session_key = $1 AND holder = $2";

fn micros(lease: Duration) -> i64 {
    i64::try_from(lease.as_micros()).unwrap_or(i64::MAX).max(1)
}

/// The advisory lock number of a holder: the first half of its UUID (random bits after the
/// time stamp's), so that two holders practically never share one.
fn lock_key(holder: Uuid) -> i64 {
    let (high, low) = holder.as_u64_pair();
    i64::from_ne_bytes((low ^ high.rotate_left(32)).to_ne_bytes())
}

/// A holder's own connection with its lock taken, or why it could not be had.
fn watched(pool: &Pool, key: i64) -> SessionResult<Conn> {
    let mut conn = pool.dedicated()?;
    let locked: bool = conn
        .client
        .query_one(LOCK, &[&key])
        .and_then(|row| row.try_get(0))
        .map_err(|e| store_error("locking the claim's holder", e))?;
    if locked {
        Ok(conn)
    } else {
        // Another connection holds this number: a new holder takes another one.
        Err(curator_session::Error::store(
            "postgres",
            curator_session::StoreErrorKind::Busy,
            "locking the claim's holder: its lock number is taken".to_owned(),
            None,
        ))
    }
}

/// Runs `f` on the holder's own connection.
fn on(conn: &mut Conn, f: impl FnOnce(&mut Conn) -> Result<u64, Failure>) -> SessionResult<u64> {
    match f(conn) {
        Ok(value) => Ok(value),
        Err(Failure::Session(e)) => Err(e),
        Err(Failure::Pg(what, e)) => Err(store_error(what, e)),
    }
}

/// Claims across every process and machine that shares the database: a row in `claims`
/// names the holder and when its lease runs out. A worker that releases (or drops) its claim
/// deletes the row. A worker whose process dies is taken over at once: its connection to the
/// server closed, and with it the lock that marked it alive. A worker that lives but stops
/// renewing is taken over once its lease runs out. Renewing fails with `ClaimLost` once
/// another worker took the row.
///
/// Each claim keeps one connection of its own (outside the store's pool) while it is held.
/// A holder whose connection is lost while it lives (a server restart, a network cut longer
/// than the keepalives' 25 seconds) counts as gone: another worker may take the session, and
/// the holder's next renewal, or its next fenced append, fails.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use curator::postgres::PgStore;
/// use curator::session::{ClaimStore, Error, SessionKey};
///
/// let store = PgStore::connect("postgres://agent@db.internal/records")?;
/// match store.claim(&SessionKey::new("ticket-7"), Duration::from_secs(30)) {
///     Ok(claim) => { /* drive the session, claim.renew()? before each tool call */ }
///     Err(Error::Claimed { .. }) => { /* another worker drives it */ }
///     Err(e) => return Err(e.into()),
/// }
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl ClaimStore for PgStore {
    fn claim(&self, key: &SessionKey, lease: Duration) -> SessionResult<Claim> {
        key.check()?;
        let holder = Uuid::now_v7();
        let lock = lock_key(holder);
        let pool = &self.pool;
        let taken = off_runtime(|| -> SessionResult<_> {
            let mut conn = watched(pool, lock)?;
            let token = on(&mut conn, |conn| {
                let take = conn.prepare(TAKE).during("claiming the session")?;
                let row = conn
                    .client
                    .query_opt(&take, &[&key.as_str(), &holder, &micros(lease), &lock])
                    .during("claiming the session")?;
                match row {
                    Some(row) => {
                        let token: i64 = row.try_get(0).during("reading a row")?;
                        Ok(u64::try_from(token).unwrap_or_default())
                    }
                    None => Ok(0),
                }
            })?;
            // Not taken: the connection closes (its lock with it) when dropped here.
            Ok((token > 0).then_some((conn, token)))
        })?;
        if let Some((conn, token)) = taken {
            let handle = PgLease {
                pool: Arc::clone(&self.pool),
                key: key.clone(),
                holder,
                lock,
                lease,
                conn: Mutex::new(Some(conn)),
            };
            return Ok(Claim::new(key.clone(), lease, Box::new(handle)).with_token(token));
        }
        let expires_in = run(&self.pool, |conn| {
            let left = conn.prepare(LEFT).during("reading the other claim")?;
            let row =
                conn.client.query_opt(&left, &[&key.as_str()]).during("reading the other claim")?;
            let seconds: Option<f64> = match row {
                Some(row) => row.try_get(0).during("reading a row")?,
                None => None,
            };
            Ok(seconds.map(|s| Duration::from_secs_f64(s.max(0.0))))
        })?;
        Err(curator_session::Error::Claimed { key: key.clone(), expires_in })
    }
}

/// One claim's row, and the connection that holds its holder's lock.
struct PgLease {
    pool: Arc<Pool>,
    key: SessionKey,
    holder: Uuid,
    lock: i64,
    lease: Duration,
    /// The holder's own connection (`None` once released, or lost and not yet replaced).
    conn: Mutex<Option<Conn>>,
}

impl std::fmt::Debug for PgLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgLease")
            .field("key", &self.key)
            .field("holder", &self.holder)
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

impl PgLease {
    /// Runs `sql` with the key and holder (and the lease) on the holder's connection: opened
    /// again, its lock taken again, when the server lost it (once per call). The row decides:
    /// a holder taken over while its lock was down finds another holder in it.
    fn execute(&self, sql: &'static str, what: &'static str, lease: bool) -> SessionResult<u64> {
        off_runtime(|| {
            let mut slot = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
            let micros = micros(self.lease);
            let mut reopened = false;
            loop {
                let conn = match slot.take() {
                    Some(conn) if !conn.client.is_closed() => conn,
                    _ => {
                        reopened = true;
                        watched(&self.pool, self.lock)?
                    }
                };
                let conn = slot.insert(conn);
                let result = conn.prepare(sql).and_then(|statement| {
                    let (key, holder) = (self.key.as_str(), &self.holder);
                    if lease {
                        conn.client.execute(&statement, &[&key, holder, &micros])
                    } else {
                        conn.client.execute(&statement, &[&key, holder])
                    }
                });
                match result {
                    Ok(rows) => return Ok(rows),
                    Err(e) if connection_lost(&e) => {
                        drop(slot.take());
                        if reopened {
                            return Err(store_error(what, e));
                        }
                    }
                    Err(e) => return Err(store_error(what, e)),
                }
            }
        })
    }
}

impl Lease for PgLease {
    fn renew(&self) -> SessionResult<()> {
        if self.execute(RENEW, "renewing the claim", true)? == 1 {
            Ok(())
        } else {
            Err(curator_session::Error::ClaimLost { key: self.key.clone() })
        }
    }

    fn release(&self) -> SessionResult<()> {
        let released = self.execute(RELEASE, "releasing the claim", false).map(drop);
        // Closing the connection drops the lock.
        let conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner).take();
        off_runtime(move || drop(conn));
        released
    }
}

impl Drop for PgLease {
    fn drop(&mut self) {
        let conn = self.conn.get_mut().unwrap_or_else(PoisonError::into_inner).take();
        if conn.is_some() {
            off_runtime(move || drop(conn));
        }
    }
}
