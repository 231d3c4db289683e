//! A background thread that moves the write-ahead log into the database file, so that
//! appends never pay for it.
//!
//! SQLite checkpoints by default inside the commit that pushes the log past 1,000 pages: that
//! commit then copies the log into the database and syncs the file, a pause of milliseconds
//! every few hundred appends (it was the p99 of the loop-overhead bench). Here a commit only
//! wakes this thread, which waits for a quiet moment (no write for 25 ms, as between the
//! model calls of an agent loop, or at most a second) and runs a passive checkpoint (never
//! blocking writers or readers) on its own connection. A checkpoint that finds no new write
//! completes, and the next write starts the log over, so the log stays small. Under writes
//! that never pause, the log grows until the appending connection checkpoints by itself at
//! 20,000 pages, as SQLite would have done at 1,000: a bounded fallback.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;
use rusqlite::hooks::Wal;

use crate::SqliteOptions;

/// The log size, in pages, at which the appending connection checkpoints by itself (when
/// this thread is not keeping up, or could not start).
pub(crate) const FALLBACK_PAGES: i64 = 20_000;

/// How long without a write counts as a quiet moment.
const QUIET: Duration = Duration::from_millis(25);

/// The longest a checkpoint waits for a quiet moment.
const MAX_DELAY: Duration = Duration::from_secs(1);

/// Handle to the thread: dropping it stops the thread after a last checkpoint.
#[derive(Debug)]
pub(crate) struct Checkpointer {
    /// Wakes the thread after a quiet spell; only the first write after one sends.
    wake: Option<SyncSender<()>>,
    /// Set by every commit, cleared by the thread as it waits for a quiet moment.
    dirty: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts the thread on its own connection to `path`; `None` if it cannot start (the
    /// store then relies on the fallback checkpoints).
    pub(crate) fn start(path: &Path, options: SqliteOptions) -> Option<Self> {
        let conn = Connection::open(path).ok()?;
        conn.busy_timeout(options.busy_timeout).ok()?;
        conn.pragma_update(None, "synchronous", options.durability.pragma()).ok()?;
        let (wake, woken) = sync_channel(1);
        let dirty = Arc::new(AtomicBool::new(false));
        let seen = Arc::clone(&dirty);
        let thread = std::thread::Builder::new()
            .name("curator-sqlite-checkpoint".into())
            .spawn(move || run(&conn, &woken, &seen))
            .ok()?;
        Some(Self { wake: Some(wake), dirty, thread: Some(thread) })
    }

    /// Installs the commit hook on the appending connection: wake this thread past the
    /// threshold, checkpoint inline past the fallback. Without a thread, the hook does the
    /// fallback alone. The hook never fails: SQLite would report its error as the commit's,
    /// though the commit has happened.
    pub(crate) fn hook(this: Option<&Self>, conn: &mut Connection) -> rusqlite::Result<()> {
        let wake = this.and_then(|c| c.wake.clone().map(|w| (w, Arc::clone(&c.dirty))));
        conn.wal_hook(Some(move |wal: &mut Wal, pages: std::ffi::c_int| {
            let pages = i64::from(pages);
            if pages >= FALLBACK_PAGES || (wake.is_none() && pages >= 1_000) {
                // The commit has happened whatever this returns, and an error here would be
                // reported as the commit's: a checkpoint that cannot run now (another one is
                // running) is simply left to the next commit.
                let _ = wal.checkpoint();
            } else if let Some((wake, dirty)) = &wake {
                // An atomic store per commit; a message only for the first commit after a
                // quiet spell, when the thread is asleep.
                if !dirty.swap(true, Ordering::AcqRel) {
                    match wake.try_send(()) {
                        Ok(()) | Err(TrySendError::Full(()) | TrySendError::Disconnected(())) => {}
                    }
                }
            }
            Ok(())
        }))
    }
}

fn run(conn: &Connection, woken: &Receiver<()>, dirty: &AtomicBool) {
    let checkpoint = || {
        // A checkpoint that cannot run now (another process runs one) is retried after the
        // next write; nothing is lost meanwhile, the log only grows a little.
        let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(0));
    };
    // Sleeps until a write after a quiet spell; returns when the store is dropped.
    while woken.recv().is_ok() {
        // Wait for a quiet moment (no write for QUIET), or at most MAX_DELAY.
        let first = std::time::Instant::now();
        while dirty.swap(false, Ordering::AcqRel) && first.elapsed() < MAX_DELAY {
            std::thread::sleep(QUIET);
        }
        checkpoint();
    }
    checkpoint();
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        drop(self.wake.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
