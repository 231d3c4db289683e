//! Connection settings: a URL or the standard `PG*` environment variables, the schema that
//! holds the tables, the pool's size.

use std::str::FromStr as _;
use std::time::Duration;

use crate::{Error, Result};

/// How to reach PostgreSQL and where the store's tables live.
///
/// Settings come from a URL (`postgres://user:password@host:port/database?...`) or a
/// `key=value` connection string, as libpq reads them; whatever the URL leaves out is taken
/// from the standard environment variables (`PGHOST`, `PGPORT`, `PGUSER`, `PGPASSWORD`,
/// `PGDATABASE`, `PGAPPNAME`, `PGCONNECT_TIMEOUT`, `PGSSLMODE`), and then from libpq's
/// defaults (the local socket folder `/var/run/postgresql` when it exists, else
/// `localhost`; port 5432; the `USER` of the process; a database named as the user).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use curator_postgres::PgOptions;
///
/// let options = PgOptions::from_url("postgres://agent@db.internal:6543/records")?
///     .with_schema("support_bot")?
///     .with_pool_size(8)
///     .with_connect_timeout(Duration::from_secs(5));
/// assert_eq!((options.schema(), options.pool_size()), ("support_bot", 8));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PgOptions {
    pub(crate) config: postgres::Config,
    schema: String,
    pool_size: usize,
}

/// The schema the tables live in unless another is chosen.
pub const DEFAULT_SCHEMA: &str = "curator";

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl PgOptions {
    /// Settings from a URL or `key=value` string, completed from the `PG*` variables.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the text cannot be read, or no user can be found.
    pub fn from_url(url: &str) -> Result<Self> {
        let config = postgres::Config::from_str(url).map_err(|e| Error::Config {
            reason: "cannot read the connection URL".into(),
            source: Some(Box::new(e)),
        })?;
        Self::complete(config)
    }

    /// Settings from the `PG*` environment variables alone.
    ///
    /// # Examples
    ///
    /// ```
    /// // PGHOST, PGPORT, PGUSER, PGDATABASE... (or libpq's defaults).
    /// let options = curator_postgres::PgOptions::from_env();
    /// # let _ = options;
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when a variable cannot be used or no user can be found.
    pub fn from_env() -> Result<Self> {
        Self::complete(postgres::Config::new())
    }

    /// Fills in from the environment and libpq's defaults what `config` leaves out.
    fn complete(mut config: postgres::Config) -> Result<Self> {
        let bad = |name: &str, value: &str| Error::Config {
            reason: format!("{name}={value} cannot be used"),
            source: None,
        };
        if config.get_hosts().is_empty() {
            match env("PGHOST") {
                Some(hosts) => {
                    for host in hosts.split(',') {
                        config.host(host);
                    }
                }
                None if std::path::Path::new("/var/run/postgresql").is_dir() => {
                    config.host("/var/run/postgresql");
                }
                None => {
                    config.host("localhost");
                }
            }
        }
        if config.get_ports().is_empty()
            && let Some(port) = env("PGPORT")
        {
            config.port(port.parse().map_err(|_| bad("PGPORT", &port))?);
        }
        if config.get_user().is_none() {
            let user = env("PGUSER").or_else(|| env("USER")).ok_or_else(|| Error::Config {
                reason: "no user: give one in the URL, PGUSER or USER".into(),
                source: None,
            })?;
            config.user(&user);
        }
        if config.get_password().is_none()
            && let Some(password) = env("PGPASSWORD")
        {
            config.password(password);
        }
        if config.get_dbname().is_none()
            && let Some(database) = env("PGDATABASE")
        {
            config.dbname(&database);
        }
        if config.get_application_name().is_none() {
            config.application_name(&env("PGAPPNAME").unwrap_or_else(|| "curator".to_owned()));
        }
        if config.get_connect_timeout().is_none() {
            let timeout = match env("PGCONNECT_TIMEOUT") {
                Some(t) => t.parse().map_err(|_| bad("PGCONNECT_TIMEOUT", &t))?,
                None => 10,
            };
            config.connect_timeout(Duration::from_secs(timeout));
        }
        if let Some(mode) = env("PGSSLMODE") {
            config.ssl_mode(match mode.as_str() {
                "disable" => postgres::config::SslMode::Disable,
                "prefer" => postgres::config::SslMode::Prefer,
                "require" => postgres::config::SslMode::Require,
                _ => return Err(bad("PGSSLMODE", &mode)),
            });
        }
        Ok(Self { config, schema: DEFAULT_SCHEMA.to_owned(), pool_size: 4 })
    }

    /// Keeps the tables in `schema` (created when missing) instead of `curator`: a name of
    /// ASCII letters, digits and `_`, not starting with a digit, at most 63 bytes.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for any other name.
    pub fn with_schema(mut self, schema: &str) -> Result<Self> {
        let valid = !schema.is_empty()
            && schema.len() <= 63
            && !schema.starts_with(|c: char| c.is_ascii_digit())
            && schema.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(Error::Config {
                reason: format!(
                    "schema name `{schema}`: use ASCII letters, digits and `_` (not first), at most 63"
                ),
                source: None,
            });
        }
        schema.clone_into(&mut self.schema);
        Ok(self)
    }

    /// Keeps up to `size` connections open (at least 1; 4 by default): one process serves
    /// that many conversations' store calls at once, and the others wait for a connection.
    #[must_use]
    pub fn with_pool_size(mut self, size: usize) -> Self {
        self.pool_size = size.max(1);
        self
    }

    /// Gives up connecting after `timeout` (10 s by default, or `PGCONNECT_TIMEOUT`); it also
    /// bounds how long a store call waits for a free connection of the pool.
    #[must_use]
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.config.connect_timeout(timeout);
        self
    }

    /// The schema the tables live in.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The most connections the store keeps open.
    pub fn pool_size(&self) -> usize {
        self.pool_size
    }

    /// How long connecting may take.
    pub fn connect_timeout(&self) -> Duration {
        self.config.get_connect_timeout().copied().unwrap_or(Duration::from_secs(10))
    }
}
