//! A throwaway PostgreSQL server for tests and benches: `initdb` into a temporary folder,
//! `pg_ctl` on a free loopback port, torn down when dropped and, through a watchdog process,
//! when the test process ends any other way (a panic that aborts, a kill).
//!
//! PostgreSQL refuses to run as root: when the process is root, the server's commands run
//! as the `postgres` system user (or `nobody` when there is none) through `runuser`.
//!
//! The server binaries are looked for in `CURATOR_PG_BIN`, on `PATH`, then in
//! `/usr/lib/postgresql/*/bin` (Debian's layout, newest version first). When they cannot be
//! found, [`PgServer::start`] prints why and returns `None` so that the test skips, unless
//! the `CI` variable is `true` (or `1`): then it panics, since a skipped test checks nothing.

use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::corpus::{Decision, decide};

/// Settings that make a test server quick on a shared machine: no waiting for the disk
/// (a test server's data is thrown away), and room for many pooled connections.
pub const FAST: &[(&str, &str)] = &[
    ("fsync", "off"),
    ("synchronous_commit", "off"),
    ("full_page_writes", "off"),
    ("max_connections", "300"),
    ("shared_buffers", "64MB"),
];

/// Settings of a durable server, as PostgreSQL ships them (for benches), with room for
/// pooled connections.
pub const DURABLE: &[(&str, &str)] = &[("max_connections", "300"), ("shared_buffers", "128MB")];

/// A running PostgreSQL server in a temporary folder, reached at
/// [`url`](PgServer::url) by the superuser `curator` without a password (trust
/// authentication on the loopback interface only).
#[derive(Debug)]
pub struct PgServer {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
    run_as: Option<String>,
    settings: Vec<(String, String)>,
    /// Stops the server and removes the folder when its standard input closes: when this
    /// value is dropped, or when the process ends without dropping it.
    watchdog: Option<Child>,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

/// Where the server binaries are, if anywhere.
pub fn binaries() -> Option<PathBuf> {
    let has = |dir: &Path| dir.join("pg_ctl").is_file() && dir.join("initdb").is_file();
    if let Some(dir) = std::env::var_os("CURATOR_PG_BIN").map(PathBuf::from) {
        return has(&dir).then_some(dir);
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if has(&dir) {
                // Debian links only some tools onto PATH: prefer the folder they point into.
                let real = std::fs::canonicalize(dir.join("pg_ctl"))
                    .ok()
                    .and_then(|p| p.parent().map(Path::to_path_buf));
                return Some(real.filter(|r| has(r)).unwrap_or(dir));
            }
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            has(&bin).then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// Whether this process runs as root (read from `/proc/self`, which belongs to the
/// process's user).
fn is_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// The user the server runs as when this process is root.
fn unprivileged_user() -> String {
    let exists = |user: &str| {
        Command::new("id")
            .arg("-u")
            .arg(user)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if exists("postgres") { "postgres".to_owned() } else { "nobody".to_owned() }
}

fn free_port() -> u16 {
    match std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()) {
        Ok(address) => address.port(),
        Err(e) => panic!("no free loopback port: {e}"),
    }
}

impl PgServer {
    /// Starts a server with the [`FAST`] settings, or returns `None` (saying why) when the
    /// binaries are missing and `CI` is not set.
    ///
    /// # Panics
    ///
    /// When the binaries are missing under CI, or the server does not start.
    pub fn start() -> Option<Self> {
        Self::start_with(FAST)
    }

    /// Starts a server with the given `postgresql.conf` settings.
    ///
    /// # Panics
    ///
    /// As [`start`](PgServer::start).
    pub fn start_with(settings: &[(&str, &str)]) -> Option<Self> {
        Self::start_inner(settings, false)
    }

    /// Starts a server with the [`FAST`] settings that accepts TCP connections only over
    /// TLS (`hostssl` in `pg_hba.conf`), with a certificate for the name `localhost` (not
    /// for `127.0.0.1`) signed by a throwaway authority, [`ca_file`](PgServer::ca_file). A
    /// second authority, [`other_ca_file`](PgServer::other_ca_file), signed nothing. Needs
    /// the `openssl` command.
    ///
    /// # Panics
    ///
    /// As [`start`](PgServer::start), and when the certificates cannot be made.
    pub fn start_tls() -> Option<Self> {
        Self::start_inner(FAST, true)
    }

    fn start_inner(settings: &[(&str, &str)], tls: bool) -> Option<Self> {
        let bin = binaries();
        match decide(bin.is_some(), std::env::var("CI").ok().as_deref()) {
            Decision::Load => {}
            Decision::Skip => {
                eprintln!(
                    "skipping: no PostgreSQL server binaries (initdb, pg_ctl) on PATH, in \
                     /usr/lib/postgresql/*/bin or in CURATOR_PG_BIN (apt-get install postgresql)"
                );
                return None;
            }
            Decision::Fail => panic!(
                "no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in \
                 /usr/lib/postgresql/*/bin, and CI is set: the PostgreSQL tests must not pass \
                 without a server (apt-get install postgresql)"
            ),
        }
        let bin = bin?;
        let run_as = is_root().then(unprivileged_user);
        let dir = std::env::temp_dir().join(format!(
            "curator-pg-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        let mut server = Self {
            dir,
            bin,
            port: 0,
            run_as,
            settings: settings.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            watchdog: None,
        };
        server.watch();
        if let Some(user) = &server.run_as {
            Self::run(Command::new("chown").arg(user).arg(&server.dir), "chown");
        }
        let mut initdb = server.command("initdb");
        initdb.arg("-D").arg(server.data()).args([
            "-U",
            "curator",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
            "--locale=C",
        ]);
        Self::run(&mut initdb, "initdb");
        if tls {
            server.make_certificates();
        }
        let mut last = String::new();
        for _ in 0..5 {
            server.port = free_port();
            match server.pg_ctl_start() {
                Ok(()) => return Some(server),
                Err(log) => last = log,
            }
        }
        panic!("the PostgreSQL test server did not start:\n{last}");
    }

    /// The server's data folder.
    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The PEM certificate of the authority that signed the server's certificate (servers
    /// started with [`start_tls`](PgServer::start_tls)).
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("tls/ca.pem")
    }

    /// The PEM certificate of an authority that signed nothing the server uses.
    pub fn other_ca_file(&self) -> PathBuf {
        self.dir.join("tls/other-ca.pem")
    }

    /// Makes the authorities and the server's certificate, turns TLS on, and lets TCP
    /// clients in over TLS only.
    fn make_certificates(&mut self) {
        let tls = self.dir.join("tls");
        std::fs::create_dir_all(&tls)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", tls.display()));
        let openssl = |args: &[&str]| {
            Self::run(Command::new("openssl").current_dir(&tls).args(args), "openssl");
        };
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
        for ca in ["ca", "other-ca"] {
            let (key, pem, subject) =
                (format!("{ca}.key"), format!("{ca}.pem"), format!("/CN=curator test {ca}"));
            let args = ["-keyout", &key, "-out", &pem, "-days", "2", "-subj", &subject];
            openssl(&[&["req", "-x509"][..], &ec, &args].concat());
        }
        let args = ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"];
        openssl(&[&["req"][..], &ec, &args].concat());
        std::fs::write(
            tls.join("server.ext"),
            "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\n\
             extendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost\n",
        )
        .unwrap_or_else(|e| panic!("cannot write the certificate's extensions: {e}"));
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "server.ext",
        ]);
        // PostgreSQL refuses a key that others may read.
        std::fs::set_permissions(tls.join("server.key"), std::fs::Permissions::from_mode(0o600))
            .unwrap_or_else(|e| panic!("cannot restrict the server's key: {e}"));
        if let Some(user) = &self.run_as {
            Self::run(Command::new("chown").arg("-R").arg(user).arg(&tls), "chown");
        }
        let data = self.data();
        std::fs::write(
            data.join("pg_hba.conf"),
            "local all all trust\nhostssl all all 127.0.0.1/32 trust\n",
        )
        .unwrap_or_else(|e| panic!("cannot write pg_hba.conf: {e}"));
        if let Some(user) = &self.run_as {
            Self::run(Command::new("chown").arg(user).arg(data.join("pg_hba.conf")), "chown");
        }
        for (name, file) in [("ssl_cert_file", "server.pem"), ("ssl_key_file", "server.key")] {
            self.settings.push((name.to_owned(), tls.join(file).to_string_lossy().into_owned()));
        }
        self.settings.push(("ssl".to_owned(), "on".to_owned()));
    }

    /// A command of the server's binaries, run as the server's user.
    fn command(&self, tool: &str) -> Command {
        let program = self.bin.join(tool);
        match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(program);
                c
            }
            None => Command::new(program),
        }
    }

    fn run(command: &mut Command, what: &str) {
        let output = command
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
        assert!(
            output.status.success(),
            "{what} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// Starts a watchdog shell that, once its standard input closes (this value dropped, or
    /// the process gone), stops the server at once and removes the folder.
    fn watch(&mut self) {
        let data = self.data();
        let mut stop = self.command("pg_ctl");
        stop.arg("-D").arg(&data).args(["stop", "-m", "immediate", "-w"]);
        let stop = std::iter::once(stop.get_program())
            .chain(stop.get_args())
            .map(|a| shell_quote(&a.to_string_lossy()))
            .collect::<Vec<_>>()
            .join(" ");
        let script = format!(
            "trap '' INT TERM HUP; read -r _ || true; if [ -f {pid} ]; then {stop} >/dev/null 2>&1; fi; rm -rf {dir}",
            pid = shell_quote(&data.join("postmaster.pid").to_string_lossy()),
            dir = shell_quote(&self.dir.to_string_lossy()),
        );
        let child = Command::new("sh")
            .arg("-c")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the PostgreSQL watchdog: {e}"));
        self.watchdog = Some(child);
    }

    fn pg_ctl_start(&self) -> Result<(), String> {
        let mut options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories={}",
            self.port,
            shell_quote(&self.data().to_string_lossy())
        );
        for (name, value) in &self.settings {
            let _ = write!(options, " -c {name}={}", shell_quote(value));
        }
        let log = self.dir.join("server.log");
        let output = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(&log)
            .args(["-w", "-t", "60", "-o"])
            .arg(options)
            .arg("start")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run pg_ctl: {e}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{}{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr),
                std::fs::read_to_string(&log).unwrap_or_default()
            ))
        }
    }

    /// A server shared by every test of this process, started on first use (with the
    /// [`FAST`] settings) and stopped by its watchdog when the process ends; `None` as for
    /// [`start`](PgServer::start).
    pub fn shared() -> Option<&'static Self> {
        static SHARED: OnceLock<Option<PgServer>> = OnceLock::new();
        SHARED.get_or_init(Self::start).as_ref()
    }

    /// The loopback port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A connection URL for the database `postgres`.
    pub fn url(&self) -> String {
        self.url_for("postgres")
    }

    /// A connection URL for `database`.
    pub fn url_for(&self, database: &str) -> String {
        format!("postgres://curator@127.0.0.1:{}/{database}", self.port)
    }

    /// Stops the server (fast shutdown: sessions are ended, what was committed is kept).
    ///
    /// # Panics
    ///
    /// When `pg_ctl stop` fails.
    pub fn stop(&self) {
        let mut stop = self.command("pg_ctl");
        stop.arg("-D").arg(self.data()).args(["stop", "-m", "fast", "-w"]);
        Self::run(&mut stop, "pg_ctl stop");
    }

    /// Starts the server again after [`stop`](PgServer::stop), on the same port.
    ///
    /// # Panics
    ///
    /// When it does not start.
    pub fn start_again(&self) {
        if let Err(log) = self.pg_ctl_start() {
            panic!("the PostgreSQL test server did not start again:\n{log}");
        }
    }

    /// Stops and starts the server: every open connection is ended.
    ///
    /// # Panics
    ///
    /// As [`stop`](PgServer::stop) and [`start_again`](PgServer::start_again).
    pub fn restart(&self) {
        self.stop();
        self.start_again();
    }

    /// Runs SQL through `psql` as the superuser (for setting up tests).
    ///
    /// # Panics
    ///
    /// When `psql` is missing or the SQL fails.
    pub fn psql(&self, database: &str, sql: &str) -> String {
        let output = self
            .command("psql")
            .args(["-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-U"])
            .arg("curator")
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-d")
            .arg(database)
            .arg("-c")
            .arg(sql)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run psql: {e}"));
        assert!(
            output.status.success(),
            "psql failed on {sql}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    /// Creates the login role `role` with `password`, and makes the server ask it for that
    /// password over TCP (a `scram-sha-256` line ahead of the `trust` lines of
    /// `pg_hba.conf`): for tests of how clients find passwords. Returns once the server
    /// refuses the role without a password.
    ///
    /// # Panics
    ///
    /// When the role cannot be created, `pg_hba.conf` cannot be rewritten, or the server
    /// still lets the role in without a password after 10 s.
    pub fn password_role(&self, role: &str, password: &str) {
        static HBA: std::sync::Mutex<()> = std::sync::Mutex::new(());
        self.psql("postgres", &format!("CREATE ROLE {role} LOGIN PASSWORD '{password}'"));
        let hba = PathBuf::from(self.psql("postgres", "SHOW hba_file"));
        {
            let _one_at_a_time = HBA.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let old = std::fs::read_to_string(&hba)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", hba.display()));
            let line = format!("host all {role} 127.0.0.1/32 scram-sha-256\n");
            std::fs::write(&hba, line + &old)
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", hba.display()));
        }
        self.psql("postgres", "SELECT pg_reload_conf()");
        let refused = || {
            self.command("psql")
                .args(["-X", "-w", "-q", "-h", "127.0.0.1", "-d", "postgres", "-c", "SELECT 1"])
                .arg("-U")
                .arg(role)
                .arg("-p")
                .arg(self.port.to_string())
                .env_remove("PGPASSWORD")
                .env("PGPASSFILE", "/nonexistent")
                .stdin(Stdio::null())
                .output()
                .is_ok_and(|o| !o.status.success())
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !refused() {
            assert!(
                std::time::Instant::now() < deadline,
                "the server still lets {role} in without a password"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if let Some(mut watchdog) = self.watchdog.take() {
            // Closing its input (a newline first, for good measure) makes it stop the server
            // and remove the folder.
            if let Some(mut input) = watchdog.stdin.take() {
                let _ = input.write_all(b"\n");
            }
            let _ = watchdog.wait();
        }
    }
}

/// `text` quoted for `sh`.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::shell_quote;

    #[test]
    fn quoting_keeps_quotes() {
        assert_eq!(shell_quote("a'b"), r"'a'\''b'");
    }
}
