//! How a session file is opened: durability and waiting for other processes.

use std::time::Duration;

/// What a committed append survives.
///
/// Both modes use SQLite's write-ahead log, so readers never block the writer and a crash
/// never corrupts the file.
///
/// | mode | `synchronous` | process killed (crash, SIGKILL, panic) | power loss or OS crash |
/// |---|---|---|---|
/// | [`Full`](Durability::Full) | `FULL` | nothing acknowledged is lost | nothing acknowledged is lost |
/// | [`Normal`](Durability::Normal) | `NORMAL` | nothing acknowledged is lost | the last appends before the loss may be rolled back (the file stays consistent) |
///
/// `Full` syncs the log to disk at every commit; `Normal` only at checkpoints, which makes
/// single appends several times faster.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Durability {
    /// Survives process crashes; may lose the latest appends on power loss.
    Normal,
    /// Survives process crashes and power loss (the default).
    #[default]
    Full,
}

impl Durability {
    pub(crate) fn pragma(self) -> &'static str {
        match self {
            Durability::Normal => "NORMAL",
            Durability::Full => "FULL",
        }
    }
}

/// Options for [`SqliteStore::open_with`](crate::SqliteStore::open_with).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use curator::sqlite::{Durability, SqliteOptions};
///
/// let options = SqliteOptions::default().with_durability(Durability::Normal).with_busy_timeout(Duration::from_secs(30));
/// assert_eq!(options.durability, Durability::Normal);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SqliteOptions {
    /// What a committed append survives.
    pub durability: Durability,
    /// How long to wait for another process's write to finish before giving up.
    pub busy_timeout: Duration,
}

/// The former name of [`SqliteOptions`].
#[deprecated(note = "renamed `SqliteOptions`, beside PostgreSQL's `PgOptions`")]
pub type Options = SqliteOptions;

impl Default for SqliteOptions {
    fn default() -> Self {
        Self { durability: Durability::Full, busy_timeout: Duration::from_secs(30) }
    }
}

impl SqliteOptions {
    /// Sets the durability.
    #[must_use]
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Sets how long to wait for other processes.
    #[must_use]
    pub fn with_busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }
}
