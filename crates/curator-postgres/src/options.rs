//! Connection settings: a URL or the standard `PG*` environment variables, the schema that
//! holds the tables, the pool's size, and whether connections are encrypted.

use std::path::{Path, PathBuf};
use std::str::FromStr as _;
use std::time::Duration;

use crate::params::take_own_params;
use crate::pgpass::{self, DEFAULT_SOCKET_DIR, Lookup, Target};
use crate::{Error, Result};

/// Whether connections are encrypted with TLS, and what is checked of the server's
/// certificate: libpq's `sslmode`, read from the URL (`?sslmode=verify-full`) or `PGSSLMODE`.
///
/// Encryption needs the crate's `tls` feature (the facade's `postgres-tls`); without it,
/// `prefer` connects unencrypted and the modes that insist on TLS are refused when the
/// settings are read.
///
/// | mode | encrypted | certificate checked |
/// |---|---|---|
/// | `disable` | never | - |
/// | `prefer` (default) | when the server offers TLS (and the build has it) | against the root certificates when some are given (`sslrootcert`, `PGSSLROOTCERT`, `~/.postgresql/root.crt`), else not |
/// | `require` | always | as for `prefer` |
/// | `verify-ca` | always | signed by a trusted authority |
/// | `verify-full` | always | signed by a trusted authority, and issued for the host name connected to |
///
/// # Examples
///
/// ```
/// use curator::postgres::SslMode;
///
/// let mode: SslMode = "verify-full".parse()?;
/// assert_eq!((mode, mode.as_str()), (SslMode::VerifyFull, "verify-full"));
/// assert!("sometimes".parse::<SslMode>().is_err());
/// Ok::<(), curator::postgres::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SslMode {
    /// Never encrypt.
    Disable,
    /// Encrypt when the server offers it.
    #[default]
    Prefer,
    /// Always encrypt; check the certificate only against root certificates given.
    Require,
    /// Always encrypt, and check that a trusted authority signed the server's certificate.
    VerifyCa,
    /// As `VerifyCa`, and check that the certificate names the host connected to.
    VerifyFull,
}

impl SslMode {
    /// libpq's name of the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    /// Whether a connection must be encrypted.
    pub fn requires_tls(self) -> bool {
        matches!(self, SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull)
    }
}

impl std::fmt::Display for SslMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for SslMode {
    type Err = Error;

    /// # Errors
    ///
    /// [`Error::Config`] for a name libpq does not know (`allow` is read as `prefer`).
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "disable" => SslMode::Disable,
            "allow" | "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(Error::Config {
                    reason: format!(
                        "sslmode `{other}`: use disable, prefer, require, verify-ca or verify-full"
                    ),
                    source: None,
                });
            }
        })
    }
}

/// The authorities whose certificates are trusted: libpq's `sslrootcert`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RootCertificates {
    /// The certificates in a PEM file.
    File(PathBuf),
    /// The operating system's trusted authorities (`sslrootcert=system`).
    System,
}

impl RootCertificates {
    fn from_setting(value: &str) -> Self {
        if value == "system" {
            RootCertificates::System
        } else {
            RootCertificates::File(PathBuf::from(value))
        }
    }
}

/// How to reach PostgreSQL and where the store's tables live.
///
/// Settings come from a URL (`postgres://user:password@host:port/database?...`) or a
/// `key=value` connection string, as libpq reads them; whatever the URL leaves out is taken
/// from the standard environment variables (`PGHOST`, `PGPORT`, `PGUSER`, `PGPASSWORD`,
/// `PGDATABASE`, `PGAPPNAME`, `PGCONNECT_TIMEOUT`, `PGSSLMODE`, `PGSSLROOTCERT`,
/// `PGPASSFILE`), and then from libpq's defaults (the local socket folder
/// `/var/run/postgresql` when it exists, else `localhost`; port 5432; the `USER` of the
/// process; a database named as the user; `sslmode=prefer`; the password file
/// `~/.pgpass`). Encryption is described at [`SslMode`].
///
/// # Password file
///
/// When neither the URL nor `PGPASSWORD` gives a password, the store reads it, as libpq
/// does, from a password file when it opens: the URL's `passfile`, else `PGPASSFILE`, else
/// `~/.pgpass` (or the file given to [`with_password_file`](PgOptions::with_password_file)).
/// Each line is `hostname:port:database:username:password`; a field that is only `*`
/// matches anything, `\:` and `\\` stand for `:` and `\`, lines starting with `#` are
/// comments, and the first line that matches gives the password. A connection through the
/// default socket folder matches `localhost`; with several hosts, the first host that has a
/// matching line gives the password for all. The file is ignored, as libpq ignores it, when
/// it is not a plain file or when its group or others have any permission (a password file
/// others may read is not one to trust: `chmod 600 ~/.pgpass`); libpq warns on its standard
/// error then, this library says nothing, and the server's refusal of the missing password
/// follows.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use curator::postgres::PgOptions;
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
    ssl_mode: SslMode,
    root_certificates: Option<RootCertificates>,
    password_file: Option<PathBuf>,
}

/// The schema the tables live in unless another is chosen.
pub const DEFAULT_SCHEMA: &str = "curator";

/// The longest a statement of the store waits for a row lock (`lock_timeout` on every
/// connection) before it fails as [`Busy`](curator_session::StoreErrorKind::Busy): a worker
/// stalled inside a fenced write (stopped, or cut off by the network) holds its session's
/// claim row, and a takeover waiting on it returns within its claim wait and this margin.
///
/// # Examples
///
/// ```
/// assert_eq!(curator::postgres::LOCK_TIMEOUT.as_secs(), 2);
/// ```
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(2);

/// How long the server keeps a connection of the store that stays idle inside a transaction
/// (`idle_in_transaction_session_timeout`): the store's transactions send their statements
/// one after another, so a connection idle that long belongs to a stopped worker, and the
/// server ends it, releasing its locks (its uncommitted write is rolled back).
///
/// # Examples
///
/// ```
/// assert_eq!(curator::postgres::STALLED_TRANSACTION_TIMEOUT.as_secs(), 15);
/// ```
pub const STALLED_TRANSACTION_TIMEOUT: Duration = Duration::from_secs(15);

/// The longest one statement of the store may run (`statement_timeout`): reading a record of
/// a million messages takes seconds; a statement still running after this is stuck.
///
/// # Examples
///
/// ```
/// assert_eq!(curator::postgres::STATEMENT_TIMEOUT.as_secs(), 300);
/// ```
pub const STATEMENT_TIMEOUT: Duration = Duration::from_mins(5);

/// TCP keepalives, on both ends of every connection: a peer that stops answering (a
/// network partition, a machine gone) is found within about idle + interval x count
/// seconds (25), instead of the system's two hours, and the server then ends its session
/// and releases its locks.
pub(crate) const KEEPALIVE_IDLE_SECS: u64 = 10;
pub(crate) const KEEPALIVE_INTERVAL_SECS: u64 = 5;
pub(crate) const KEEPALIVE_COUNT: u32 = 3;

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl PgOptions {
    /// Settings from a URL or `key=value` string, completed from the `PG*` variables.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the text cannot be read, no user can be found, or the
    /// `sslmode` insists on TLS and the build leaves TLS out (the `tls` feature).
    pub fn from_url(url: &str) -> Result<Self> {
        let (rest, own) = take_own_params(url)?;
        let config = postgres::Config::from_str(&rest).map_err(|e| Error::Config {
            reason: "cannot read the connection URL".into(),
            source: Some(Box::new(e)),
        })?;
        let ssl_mode = own.ssl_mode.as_deref().map(str::parse).transpose()?;
        Self::complete(config, ssl_mode, own.root_certificates.as_deref(), own.password_file)
    }

    /// Settings from the `PG*` environment variables alone.
    ///
    /// # Examples
    ///
    /// ```
    /// // PGHOST, PGPORT, PGUSER, PGDATABASE... (or libpq's defaults).
    /// let options = curator::postgres::PgOptions::from_env();
    /// # let _ = options;
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when a variable cannot be used or no user can be found.
    pub fn from_env() -> Result<Self> {
        Self::complete(postgres::Config::new(), None, None, None)
    }

    /// Fills in from the environment and libpq's defaults what `config` (and the TLS and
    /// password file settings read beside it) leave out.
    fn complete(
        mut config: postgres::Config,
        ssl_mode: Option<SslMode>,
        root_certificates: Option<&str>,
        password_file: Option<String>,
    ) -> Result<Self> {
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
                None if Path::new(DEFAULT_SOCKET_DIR).is_dir() => {
                    config.host(DEFAULT_SOCKET_DIR);
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
        let ssl_mode = match ssl_mode {
            Some(mode) => mode,
            None => match env("PGSSLMODE") {
                Some(mode) => mode.parse().map_err(|_| bad("PGSSLMODE", &mode))?,
                None => SslMode::Prefer,
            },
        };
        let root_certificates = root_certificates
            .map(str::to_owned)
            .or_else(|| env("PGSSLROOTCERT"))
            .map(|value| RootCertificates::from_setting(&value));
        let password_file = password_file
            .or_else(|| env("PGPASSFILE"))
            .map(PathBuf::from)
            .or_else(|| env("HOME").map(|home| Path::new(&home).join(".pgpass")));
        let options = Self {
            config,
            schema: DEFAULT_SCHEMA.to_owned(),
            pool_size: 4,
            ssl_mode: SslMode::Prefer,
            root_certificates,
            password_file,
        };
        options.with_ssl_mode(ssl_mode)
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

    /// Encrypts connections as `mode` says (see [`SslMode`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::postgres::{PgOptions, SslMode};
    ///
    /// let options = PgOptions::from_url("postgres://agent@db.internal/records")?
    ///     .with_ssl_mode(SslMode::Disable)?;
    /// assert_eq!(options.ssl_mode(), SslMode::Disable);
    /// # Ok::<(), curator::postgres::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when `mode` insists on TLS and this build leaves TLS out (the
    /// crate's `tls` feature).
    pub fn with_ssl_mode(mut self, mode: SslMode) -> Result<Self> {
        if mode.requires_tls() && !cfg!(feature = "tls") {
            return Err(Error::Config {
                reason: format!(
                    "sslmode={mode} needs TLS, which this build leaves out: enable the `tls` \
                     feature of curator-postgres (`postgres-tls` of curator)"
                ),
                source: None,
            });
        }
        self.config.ssl_mode(match mode {
            SslMode::Disable => postgres::config::SslMode::Disable,
            SslMode::Prefer => postgres::config::SslMode::Prefer,
            _ => postgres::config::SslMode::Require,
        });
        self.ssl_mode = mode;
        Ok(self)
    }

    /// Trusts the authorities whose certificates are in the PEM file at `path` (libpq's
    /// `sslrootcert`); the file is read when the store is opened.
    #[must_use]
    pub fn with_root_certificates(mut self, path: impl AsRef<Path>) -> Self {
        self.root_certificates = Some(RootCertificates::File(path.as_ref().to_path_buf()));
        self
    }

    /// Trusts the operating system's authorities (libpq's `sslrootcert=system`), as for a
    /// managed server with a certificate from a public authority.
    #[must_use]
    pub fn with_system_root_certificates(mut self) -> Self {
        self.root_certificates = Some(RootCertificates::System);
        self
    }

    /// Reads the password from the password file at `path` (libpq's `passfile`) when the
    /// settings give none, instead of `PGPASSFILE` or `~/.pgpass`; the file is read when the
    /// store is opened, as described under [Password file](PgOptions#password-file).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::postgres::PgOptions;
    ///
    /// let options = PgOptions::from_url("postgres://agent@db.internal/records")?
    ///     .with_password_file("/etc/curator/pgpass");
    /// assert_eq!(options.password_file(), Some(std::path::Path::new("/etc/curator/pgpass")));
    /// # Ok::<(), curator::postgres::Error>(())
    /// ```
    #[must_use]
    pub fn with_password_file(mut self, path: impl AsRef<Path>) -> Self {
        self.password_file = Some(path.as_ref().to_path_buf());
        self
    }

    /// The password file read when the settings give no password (`None` when there is no
    /// home folder to find `~/.pgpass` in and none was named).
    pub fn password_file(&self) -> Option<&Path> {
        self.password_file.as_deref()
    }

    /// The client's settings, with the password from the password file when the settings
    /// give none (or an empty one) and the file has a matching line.
    pub(crate) fn into_connection_config(self) -> postgres::Config {
        let found = self.file_password();
        let mut config = self.config;
        if let Some(password) = found {
            config.password(password);
        }
        config
    }

    /// The password the password file gives, when the settings need one from it.
    fn file_password(&self) -> Option<Vec<u8>> {
        if self.config.get_password().is_some_and(|p| !p.is_empty()) {
            return None;
        }
        match pgpass::read(self.password_file.as_deref()?, &self.password_targets()) {
            Lookup::Found(password) => Some(password),
            Lookup::NotFound | Lookup::Ignored(_) => None,
        }
    }

    /// What the lines of a password file are matched against: each host in turn, with its
    /// port, the database (named as the user when not given) and the user.
    fn password_targets(&self) -> Vec<Target<'_>> {
        let user = self.config.get_user().unwrap_or_default();
        let database = self.config.get_dbname().unwrap_or(user);
        let ports = self.config.get_ports();
        let hosts = self.config.get_hosts();
        let mut targets = Vec::with_capacity(hosts.len().max(1));
        for (i, host) in hosts.iter().enumerate() {
            let host = match host {
                postgres::config::Host::Tcp(name) => std::borrow::Cow::Borrowed(name.as_str()),
                #[cfg(unix)]
                postgres::config::Host::Unix(dir) if dir == Path::new(DEFAULT_SOCKET_DIR) => {
                    std::borrow::Cow::Borrowed("localhost")
                }
                #[cfg(unix)]
                postgres::config::Host::Unix(dir) => dir.to_string_lossy(),
            };
            let port = match ports {
                [] => 5432,
                [port] => *port,
                many => many.get(i).copied().unwrap_or(5432),
            };
            targets.push(Target { host, port, database, user });
        }
        targets
    }

    /// How connections are encrypted.
    pub fn ssl_mode(&self) -> SslMode {
        self.ssl_mode
    }

    /// The authorities trusted, when some were given (else `~/.postgresql/root.crt` is used
    /// when it exists, as libpq does).
    pub fn root_certificates(&self) -> Option<&RootCertificates> {
        self.root_certificates.as_ref()
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

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    /// The password the store would connect with, given a password file holding `lines`.
    fn password(url: &str, lines: &str) -> Option<String> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(&file, lines).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let options = PgOptions::from_url(url).unwrap().with_password_file(&file);
        options
            .into_connection_config()
            .get_password()
            .map(|p| String::from_utf8_lossy(p).into_owned())
    }

    #[test]
    fn the_password_file_fills_in_a_missing_password_only() {
        if std::env::var_os("PGPASSWORD").is_some() {
            return; // The variable gives the password before any file.
        }
        let lines = "db.internal:6543:records:agent:from-file\n\
                     localhost:5432:agent:agent:socket\n\
                     second:5432:records:agent:second\n";
        assert_eq!(
            password("postgres://agent@db.internal:6543/records", lines).as_deref(),
            Some("from-file")
        );
        assert_eq!(
            password("postgres://agent:given@db.internal:6543/records", lines).as_deref(),
            Some("given")
        );
        assert_eq!(password("postgres://agent@db.internal/records", lines), None, "port 5432");
        // The default socket folder matches `localhost`; the database defaults to the user.
        assert_eq!(
            password("host=/var/run/postgresql user=agent", lines).as_deref(),
            Some("socket")
        );
        assert_eq!(password("host=/tmp user=agent", lines), None);
        // Several hosts: the first one with a line gives the password.
        assert_eq!(
            password("postgres://agent@first,second/records", lines).as_deref(),
            Some("second")
        );
    }

    #[test]
    fn the_password_file_is_named_by_the_url_or_defaults_to_the_home_folder() {
        let options =
            PgOptions::from_url("postgres://a@h/db?passfile=%2Fsecrets%2Fpgpass").unwrap();
        assert_eq!(options.password_file(), Some(Path::new("/secrets/pgpass")));
        if std::env::var_os("PGPASSFILE").is_none()
            && let Some(home) = std::env::var_os("HOME")
        {
            let options = PgOptions::from_url("postgres://a@h/db").unwrap();
            assert_eq!(options.password_file(), Some(Path::new(&home).join(".pgpass").as_path()));
        }
    }
}
