//! A background thread that moves the write-ahead log into the database file, so that
//! appends never pay for it.
//!
//! SQLite checkpoints by default inside the commit that pushes the log past 1,000 pages: that
//! commit then copies the log into the database and syncs the file, a pause of milliseconds
//! every few hundred appends (it was the p99 of the loop-overhead bench). Here a commit that
//! leaves the log past 500 pages only wakes this thread, which runs a passive checkpoint
//! (never blocking writers or readers) on its own connection; the appending connection
//! checkpoints by itself only past 20,000 pages, as a fallback.

use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;
use rusqlite::hooks::Wal;

use crate::Options;

/// The log size, in pages, at which the appending connection checkpoints by itself (when
/// this thread is not keeping up, or could not start).
pub(crate) const FALLBACK_PAGES: i64 = 20_000;

/// The log size, in pages, past which a commit wakes this thread.
const THRESHOLD_PAGES: i64 = 500;

/// Handle to the thread: dropping it stops the thread after a last checkpoint.
#[derive(Debug)]
pub(crate) struct Checkpointer {
    wake: Option<SyncSender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts the thread on its own connection to `path`; `None` if it cannot start (the
    /// store then relies on the fallback checkpoints).
    pub(crate) fn start(path: &Path, options: Options) -> Option<Self> {
        let conn = Connection::open(path).ok()?;
        conn.busy_timeout(options.busy_timeout).ok()?;
        conn.pragma_update(None, "synchronous", options.durability.pragma()).ok()?;
        let (wake, woken) = sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("curator-sqlite-checkpoint".into())
            .spawn(move || run(&conn, &woken))
            .ok()?;
        Some(Self { wake: Some(wake), thread: Some(thread) })
    }

    /// Installs the commit hook on the appending connection: wake this thread past the
    /// threshold, checkpoint inline past the fallback. Without a thread, the hook does the
    /// fallback alone.
    pub(crate) fn hook(this: Option<&Self>, conn: &mut Connection) -> rusqlite::Result<()> {
        let wake = this.and_then(|c| c.wake.clone());
        conn.wal_hook(Some(move |wal: &mut Wal, pages: std::ffi::c_int| {
            let pages = i64::from(pages);
            if pages >= FALLBACK_PAGES || (wake.is_none() && pages >= 1_000) {
                wal.checkpoint()?;
            } else if pages >= THRESHOLD_PAGES
                && let Some(wake) = &wake
            {
                match wake.try_send(()) {
                    Ok(()) | Err(TrySendError::Full(()) | TrySendError::Disconnected(())) => {}
                }
            }
            Ok(())
        }))
    }
}

fn run(conn: &Connection, woken: &Receiver<()>) {
    loop {
        match woken.recv_timeout(Duration::from_mins(1)) {
            // A failed checkpoint (another process holds the checkpoint lock) is retried at
            // the next wake-up; nothing is lost, the log only grows a little meanwhile.
            Ok(()) | Err(RecvTimeoutError::Timeout) => {
                let _ =
                    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(0));
            }
            Err(RecvTimeoutError::Disconnected) => {
                let _ =
                    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get::<_, i64>(0));
                return;
            }
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        drop(self.wake.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
