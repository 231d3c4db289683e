//! The harness of the process tests: a harness-less test binary that is its own child.
//!
//! Run with its role variable set (`CURATOR_SQLITE_CHILD=writer`, say), the binary plays that
//! role (a writer, a worker) and exits; run without, it is the parent that starts children
//! in roles, kills them with SIGKILL at chosen moments, and gathers what it finds wrong in a
//! [`Check`], so that one run reports every failure before it fails.
//!
//! # Examples
//!
//! ```no_run
//! use curator_testkit::processes::{Check, Roles};
//!
//! const ROLES: Roles = Roles::new("CURATOR_DEMO_CHILD");
//!
//! if let Some(role) = ROLES.role() {
//!     println!("child in role {role}");
//!     return;
//! }
//! let mut check = Check::new();
//! let output = ROLES.command("writer").output().expect("the child runs");
//! check.expect(output.status.success(), "the writer succeeded".into());
//! check.finish();
//! ```

use std::io::{BufRead as _, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command};
use std::time::Duration;

/// The failed checks of one run, each printed as it fails.
#[derive(Debug, Default)]
pub struct Check {
    failures: Vec<String>,
}

impl Check {
    /// No failures yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `what` as a failure unless `ok`.
    pub fn expect(&mut self, ok: bool, what: String) {
        if !ok {
            eprintln!("FAILED: {what}");
            self.failures.push(what);
        }
    }

    /// The failures so far.
    pub fn failures(&self) -> &[String] {
        &self.failures
    }

    /// Ends the run: exits with status 1 after counting the failures, or says that all
    /// checks passed.
    #[expect(clippy::print_stdout, reason = "the test program reports its result")]
    pub fn finish(self) {
        if !self.failures.is_empty() {
            eprintln!("{} failure(s)", self.failures.len());
            std::process::exit(1);
        }
        println!("processes: all checks passed");
    }
}

/// The roles this binary plays as a child, chosen by one environment variable.
#[derive(Clone, Copy, Debug)]
pub struct Roles {
    var: &'static str,
}

impl Roles {
    /// Roles named by the variable `var`.
    pub const fn new(var: &'static str) -> Self {
        Self { var }
    }

    /// The role this process plays, or `None` for the parent.
    pub fn role(&self) -> Option<String> {
        std::env::var(self.var).ok()
    }

    /// A command that runs this binary as a child in `role`.
    ///
    /// # Panics
    ///
    /// When the binary cannot be found.
    pub fn command(&self, role: &str) -> Command {
        let exe =
            std::env::current_exe().unwrap_or_else(|e| panic!("cannot find the test binary: {e}"));
        self.command_at(&exe, role)
    }

    /// A command that runs the binary at `exe` (a copy of this one) as a child in `role`.
    pub fn command_at(&self, exe: &Path, role: &str) -> Command {
        let mut command = Command::new(exe);
        command.env(self.var, role);
        command
    }
}

/// The environment variable `name`, which the parent sets for its children.
///
/// # Panics
///
/// When it is not set.
pub fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"))
}

/// Writes `line` to `out` and flushes it, so that the parent reads it at once.
///
/// # Panics
///
/// When the parent has gone.
pub fn say(out: &mut impl Write, line: &str) {
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .unwrap_or_else(|e| panic!("cannot write to the parent: {e}"));
}

/// Kills `child` with SIGKILL and waits for it.
///
/// # Panics
///
/// When it cannot be killed or waited for.
pub fn kill(child: &mut Child) {
    child.kill().unwrap_or_else(|e| panic!("cannot kill a child: {e}"));
    child.wait().unwrap_or_else(|e| panic!("cannot wait for a child: {e}"));
}

/// A xorshift generator: pseudo-random moments that are the same in every run.
#[derive(Clone, Debug)]
pub struct Xorshift(u64);

impl Xorshift {
    /// A generator from `seed` (not 0).
    pub const fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The lines a child prints, read on a thread so that the parent can wait for one.
#[derive(Debug)]
pub struct Lines(std::sync::mpsc::Receiver<String>);

impl Lines {
    /// Reads `stdout` on a thread of its own.
    pub fn of(stdout: ChildStdout) -> Self {
        let (send, receive) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Self(receive)
    }

    /// The next line, waiting up to 60 s.
    pub fn next(&self) -> Option<String> {
        self.0.recv_timeout(Duration::from_mins(1)).ok()
    }
}
