//! Claims on PostgreSQL: a lease row per session key, timed by the server's clock.

use std::sync::Arc;
use std::time::Duration;

use curator_session::{Claim, ClaimStore, Lease, SessionKey};
use uuid::Uuid;

use crate::PgStore;
use crate::conn::{During, run};
use crate::pool::Pool;

type SessionResult<T> = curator_session::Result<T>;

/// Takes the key's row when there is none or its lease ran out (by the server's clock, so
/// that workers on machines whose clocks differ agree).
const TAKE: &str = "INSERT INTO claims (session_key, holder, expires_at, token)
    VALUES ($1, $2, clock_timestamp() + $3::bigint * interval '1 microsecond', nextval('claim_tokens'))
    ON CONFLICT (session_key) DO UPDATE
        SET holder = excluded.holder, expires_at = excluded.expires_at, token = excluded.token
        WHERE claims.expires_at <= clock_timestamp()
    RETURNING token";

const LEFT: &str = "SELECT extract(epoch FROM expires_at - clock_timestamp())::float8
    FROM claims WHERE session_key = $1";

const RENEW: &str = "UPDATE claims
    SET expires_at = clock_timestamp() + $3::bigint * interval '1 microsecond'
    WHERE session_key = $1 AND holder = $2";

const RELEASE: &str = "DELETE FROM claims WHERE session_key = $1 AND holder = $2";

fn micros(lease: Duration) -> i64 {
    i64::try_from(lease.as_micros()).unwrap_or(i64::MAX).max(1)
}

/// Claims across every process and machine that shares the database: a row in `claims`
/// names the holder and when its lease runs out. A worker that dies stops renewing, and its
/// claim is taken over once the lease runs out; a worker that releases (or drops) its claim
/// deletes the row. Renewing fails with `ClaimLost` once another worker took the row.
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
        let taken = run(&self.pool, |conn| {
            let take = conn.prepare(TAKE).during("claiming the session")?;
            let row = conn
                .client
                .query_opt(&take, &[&key.as_str(), &holder, &micros(lease)])
                .during("claiming the session")?;
            if let Some(row) = row {
                let token: i64 = row.try_get(0).during("reading a row")?;
                return Ok(Ok(token));
            }
            let left = conn.prepare(LEFT).during("reading the other claim")?;
            let row =
                conn.client.query_opt(&left, &[&key.as_str()]).during("reading the other claim")?;
            let seconds: Option<f64> = match row {
                Some(row) => row.try_get(0).during("reading a row")?,
                None => None,
            };
            Ok(Err(seconds.map(|s| Duration::from_secs_f64(s.max(0.0)))))
        })?;
        match taken {
            Ok(fencing_token) => {
                let handle =
                    PgLease { pool: Arc::clone(&self.pool), key: key.clone(), holder, lease };
                let claim = Claim::new(key.clone(), lease, Box::new(handle));
                Ok(claim.with_token(u64::try_from(fencing_token).unwrap_or_default()))
            }
            Err(expires_in) => {
                Err(curator_session::Error::Claimed { key: key.clone(), expires_in })
            }
        }
    }
}

/// One claim's row.
#[derive(Debug)]
struct PgLease {
    pool: Arc<Pool>,
    key: SessionKey,
    holder: Uuid,
    lease: Duration,
}

impl Lease for PgLease {
    fn renew(&self) -> SessionResult<()> {
        let renewed = run(&self.pool, |conn| {
            let statement = conn.prepare(RENEW).during("renewing the claim")?;
            conn.client
                .execute(&statement, &[&self.key.as_str(), &self.holder, &micros(self.lease)])
                .during("renewing the claim")
        })?;
        if renewed == 1 {
            Ok(())
        } else {
            Err(curator_session::Error::ClaimLost { key: self.key.clone() })
        }
    }

    fn release(&self) -> SessionResult<()> {
        run(&self.pool, |conn| {
            let statement = conn.prepare(RELEASE).during("releasing the claim")?;
            conn.client
                .execute(&statement, &[&self.key.as_str(), &self.holder])
                .during("releasing the claim")
        })
        .map(drop)
    }
}
