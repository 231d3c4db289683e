//! A small connection pool: up to N connections, each with its prepared statements.
//!
//! Why not a general pool: the store needs two things general pools do not give together.
//! A connection is handed out without a test query (a round trip per store call), and when
//! one connection finds the server gone (restarted, failed over), every idle connection is
//! dropped with it, since they all point at the server that went away: the next call then
//! connects afresh instead of failing once per stale connection.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use curator_session::StoreErrorKind;
use postgres::{Client, NoTls, Statement};

use crate::options::{
    KEEPALIVE_COUNT, KEEPALIVE_IDLE_SECS, KEEPALIVE_INTERVAL_SECS, LOCK_TIMEOUT, PgOptions,
    STALLED_TRANSACTION_TIMEOUT, STATEMENT_TIMEOUT,
};

use crate::error::connection_lost;
use crate::{Error, Result};

/// Runs `f` where the blocking client may block: on this thread, or, when this thread is
/// inside a tokio runtime (where the client's own `block_on` would panic), on a scoped
/// thread of its own, waited for. So the store's synchronous API works (blocking the
/// caller for the call's duration) from async code too, and dropping it there is safe.
pub(crate) fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    if tokio::runtime::Handle::try_current().is_err() {
        return f();
    }
    std::thread::scope(|scope| scope.spawn(f).join())
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// One open connection and the statements prepared on it.
pub(crate) struct Conn {
    pub(crate) client: Client,
    statements: HashMap<&'static str, Statement>,
    /// The pool's generation when it was opened: older ones are dropped when returned.
    generation: u64,
}

impl Conn {
    /// `sql` prepared on this connection (once).
    pub(crate) fn prepare(&mut self, sql: &'static str) -> Result<Statement, postgres::Error> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql)?;
        self.statements.insert(sql, statement.clone());
        Ok(statement)
    }
}

struct State {
    idle: Vec<Conn>,
    /// Connections open, idle or lent.
    open: usize,
    generation: u64,
}

/// How connections are made: plain, or encrypted (the `tls` feature).
#[derive(Clone)]
pub(crate) enum Connector {
    Plain,
    #[cfg(feature = "tls")]
    Tls(tokio_postgres_rustls::MakeRustlsConnect),
}

impl Connector {
    /// The connector `options` ask for.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when TLS is asked for and its root certificates cannot be used.
    #[cfg_attr(
        not(feature = "tls"),
        expect(clippy::unnecessary_wraps, reason = "fails only when TLS is built in")
    )]
    pub(crate) fn for_options(options: &PgOptions) -> Result<Self> {
        #[cfg(feature = "tls")]
        if options.ssl_mode() != crate::SslMode::Disable {
            return crate::tls::connector(options.ssl_mode(), options.root_certificates())
                .map(Connector::Tls);
        }
        let _ = options;
        Ok(Connector::Plain)
    }

    fn connect(&self, config: &postgres::Config) -> Result<Client, postgres::Error> {
        match self {
            Connector::Plain => config.connect(NoTls),
            #[cfg(feature = "tls")]
            Connector::Tls(tls) => config.connect(tls.clone()),
        }
    }
}

/// The pool.
pub(crate) struct Pool {
    config: postgres::Config,
    connector: Connector,
    schema: String,
    /// Whether every connection's transactions are read-only (a store opened with
    /// `open_read_only`): the server then refuses any write, whatever the statement.
    read_only: bool,
    size: usize,
    wait: Duration,
    state: Mutex<State>,
    freed: Condvar,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state();
        f.debug_struct("Pool")
            .field("schema", &self.schema)
            .field("size", &self.size)
            .field("open", &state.open)
            .field("idle", &state.idle.len())
            .finish_non_exhaustive()
    }
}

impl Pool {
    pub(crate) fn new(
        mut config: postgres::Config,
        connector: Connector,
        schema: String,
        size: usize,
        wait: Duration,
    ) -> Self {
        // The client's end of the keepalives (the server's is set per session).
        config
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(KEEPALIVE_IDLE_SECS))
            .keepalives_interval(Duration::from_secs(KEEPALIVE_INTERVAL_SECS))
            .keepalives_retries(KEEPALIVE_COUNT);
        Self {
            config,
            connector,
            schema,
            read_only: false,
            size,
            wait,
            state: Mutex::new(State { idle: Vec::new(), open: 0, generation: 0 }),
            freed: Condvar::new(),
        }
    }

    /// Makes every connection's transactions read-only (`default_transaction_read_only`).
    pub(crate) fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A connection: an idle one (the most recently used), a new one while fewer than the
    /// pool's size are open, or the first one returned within the connect timeout.
    pub(crate) fn get(&self) -> Result<Pooled<'_>> {
        let deadline = Instant::now() + self.wait;
        let mut state = self.state();
        loop {
            if let Some(conn) = state.idle.pop() {
                return Ok(Pooled { pool: self, conn: Some(conn), lost: false });
            }
            if state.open < self.size {
                state.open += 1;
                let generation = state.generation;
                drop(state);
                return match self.connect(generation) {
                    Ok(conn) => Ok(Pooled { pool: self, conn: Some(conn), lost: false }),
                    Err(e) => {
                        self.state().open -= 1;
                        self.freed.notify_one();
                        Err(e)
                    }
                };
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::Postgres {
                    context: "waiting for a free connection of the pool",
                    kind: StoreErrorKind::Busy,
                    source: format!(
                        "all {} connections stayed in use for {:?}",
                        self.size, self.wait
                    )
                    .into(),
                });
            }
            state = self
                .freed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    fn connect(&self, generation: u64) -> Result<Conn> {
        let mut client =
            self.connector.connect(&self.config).map_err(|e| Error::postgres("connecting", e))?;
        // The schema name was checked to need no quoting; quoting it keeps its case.
        let mut setup = format!(
            "SET search_path TO \"{}\"; SET lock_timeout = {}; \
             SET idle_in_transaction_session_timeout = {}; SET statement_timeout = {}; \
             SET tcp_keepalives_idle = {KEEPALIVE_IDLE_SECS}; \
             SET tcp_keepalives_interval = {KEEPALIVE_INTERVAL_SECS}; \
             SET tcp_keepalives_count = {KEEPALIVE_COUNT}",
            self.schema,
            LOCK_TIMEOUT.as_millis(),
            STALLED_TRANSACTION_TIMEOUT.as_millis(),
            STATEMENT_TIMEOUT.as_millis(),
        );
        if self.read_only {
            setup.push_str("; SET default_transaction_read_only = on");
        }
        client.batch_execute(&setup).map_err(|e| Error::postgres("choosing the schema", e))?;
        Ok(Conn { client, statements: HashMap::new(), generation })
    }

    /// A connection of its own, outside the pool's count and never returned to it (a claim's
    /// holder keeps one while it lives).
    pub(crate) fn dedicated(&self) -> Result<Conn> {
        let generation = self.state().generation;
        self.connect(generation)
    }

    /// The schema the connections use.
    pub(crate) fn schema(&self) -> &str {
        &self.schema
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // Closing a connection tells the server goodbye through the blocking client.
        let idle =
            std::mem::take(&mut self.state.get_mut().unwrap_or_else(PoisonError::into_inner).idle);
        if !idle.is_empty() {
            off_runtime(move || drop(idle));
        }
    }
}

/// A connection lent by the pool, returned when dropped.
pub(crate) struct Pooled<'p> {
    pool: &'p Pool,
    conn: Option<Conn>,
    /// Whether a call found the connection gone.
    lost: bool,
}

impl Pooled<'_> {
    /// The connection.
    pub(crate) fn conn(&mut self) -> &mut Conn {
        match self.conn {
            Some(ref mut conn) => conn,
            None => unreachable!("a pooled connection is present from construction until drop"),
        }
    }

    /// Looks at a failure before it is reported: a connection found gone is not returned to
    /// the pool, and neither is any connection opened before it.
    pub(crate) fn saw(&mut self, e: &postgres::Error) {
        if connection_lost(e) {
            self.lost = true;
        }
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else { return };
        let mut state = self.pool.state();
        if self.lost || conn.client.is_closed() {
            // The server went away: so did every connection opened before now.
            state.open -= 1 + state.idle.len();
            state.idle.clear();
            state.generation += 1;
        } else if conn.generation < state.generation {
            state.open -= 1;
        } else {
            state.idle.push(conn);
        }
        drop(state);
        self.pool.freed.notify_all();
    }
}
