//! Running store calls on a pooled connection, and turning their failures into the session
//! layer's errors.

use curator_session::Error as SessionError;

use crate::error::store_error;
use crate::pool::{Conn, Pool, off_runtime};

/// Why a store call failed: PostgreSQL failed while doing something, or the call refused the
/// request (a taken sequence, a key mismatch).
pub(crate) enum Failure {
    /// PostgreSQL failed while doing the named thing.
    Pg(&'static str, postgres::Error),
    /// The request was refused, or a row could not be read.
    Session(SessionError),
}

impl From<SessionError> for Failure {
    fn from(e: SessionError) -> Self {
        Failure::Session(e)
    }
}

/// Names what a PostgreSQL call was doing when it failed.
pub(crate) trait During<T> {
    /// The failure, with what was being done.
    fn during(self, what: &'static str) -> Result<T, Failure>;
}

impl<T> During<T> for Result<T, postgres::Error> {
    fn during(self, what: &'static str) -> Result<T, Failure> {
        self.map_err(|e| Failure::Pg(what, e))
    }
}

/// Runs `f` on a connection of `pool` (off any tokio runtime's thread: see
/// [`off_runtime`]). A connection that a failure shows to be gone is not returned to the
/// pool (and neither are those opened before it).
pub(crate) fn run<T: Send>(
    pool: &Pool,
    f: impl FnOnce(&mut Conn) -> Result<T, Failure> + Send,
) -> Result<T, SessionError> {
    off_runtime(|| run_here(pool, f))
}

fn run_here<T>(
    pool: &Pool,
    f: impl FnOnce(&mut Conn) -> Result<T, Failure>,
) -> Result<T, SessionError> {
    let mut pooled = pool.get()?;
    match f(pooled.conn()) {
        Ok(value) => Ok(value),
        Err(Failure::Session(e)) => Err(e),
        Err(Failure::Pg(what, e)) => {
            pooled.saw(&e);
            Err(store_error(what, e))
        }
    }
}
