//! The async driver on SQLite: a store call that waits for another process's write lock
//! does not stall a current-thread runtime.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use curator_model::{Message, PromptRef};
use curator_session::{AsyncConversation, SessionStore};
use curator_sqlite::SqliteStore;

#[test]
fn a_held_write_lock_does_not_freeze_a_current_thread_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("async.db");
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    runtime.block_on(async {
        let mut conversation = AsyncConversation::open(
            Arc::clone(&store),
            "async",
            PromptRef::new("test", "async"),
            Message::system("s"),
        )
        .await
        .unwrap();
        // Another connection (as another process would) holds the write lock for 600 ms.
        let (locked, is_locked) = std::sync::mpsc::channel();
        let holder = std::thread::spawn({
            let path = path.clone();
            move || {
                let conn = rusqlite::Connection::open(&path).unwrap();
                conn.execute_batch("BEGIN IMMEDIATE").unwrap();
                locked.send(()).unwrap();
                std::thread::sleep(Duration::from_millis(600));
                conn.execute_batch("COMMIT").unwrap();
            }
        });
        is_locked.recv().unwrap();
        // Another task on the same (only) runtime thread keeps ticking meanwhile.
        let ticks = Arc::new(AtomicU32::new(0));
        let ticker = tokio::spawn({
            let ticks = Arc::clone(&ticks);
            async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    ticks.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        let before = ticks.load(Ordering::Relaxed);
        conversation.add_user("written once the lock is free").await.unwrap();
        let during = ticks.load(Ordering::Relaxed) - before;
        ticker.abort();
        holder.join().unwrap();
        // The append waited about 600 ms for the lock; a runtime frozen by it would not have
        // ticked at all.
        assert!(during >= 10, "the runtime ticked {during} times while the append waited");
        let id = conversation.with(curator_session::Conversation::evaluation_id).await;
        assert_eq!(store.entries(id).unwrap().len(), 2);
    });
}
