//! Pause and resume across processes: a child process runs the loop until a human pause and
//! is killed; the parent resumes it from the SQLite file.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use curator_loop::LoopOutcome;
use curator_sqlite::SqliteStore;

use crate::persist::{build, finish};

const CHILD_DB: &str = "CURATOR_LOOP_CHILD_DB";

/// Runs in the child process only (the parent sets `CURATOR_LOOP_CHILD_DB`): two
/// iterations, then the third pauses for the human; the child says so with a file and waits
/// to be killed.
#[test]
fn child_runs_until_the_pause() {
    let Some(db) = std::env::var_os(CHILD_DB) else { return };
    let db = Path::new(&db);
    let mut l = build(SqliteStore::open(db).unwrap(), "interview-42");
    assert!(l.run("Tell me about your last project").unwrap().is_paused());
    assert!(l.resume("answer 1").unwrap().is_paused());
    assert!(l.resume("answer 2").unwrap().is_paused());
    std::fs::write(db.with_extension("paused"), "paused").unwrap();
    std::thread::sleep(Duration::from_mins(10));
}

#[test]
fn a_loop_paused_in_a_killed_process_resumes_in_another() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("loop.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "processes::child_runs_until_the_pause", "--test-threads=1"])
        .env(CHILD_DB, &db)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_mins(2);
    while !db.with_extension("paused").exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the child ended before pausing: {status}");
        }
        assert!(Instant::now() < deadline, "the child did not pause in time");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();

    let mut l = build(SqliteStore::open(&db).unwrap(), "interview-42");
    assert_eq!(l.iteration(), 2);
    assert!(l.paused().is_some());
    let resumed = finish(&mut l, LoopOutcome::Paused { step: "human".into(), prompt: None });

    let mut reference = build(curator_session::MemoryStore::new(), "interview-42");
    let first = reference.run("Tell me about your last project").unwrap();
    let expected = finish(&mut reference, first);
    assert_eq!(l.turns(), reference.turns());
    assert_eq!(resumed, expected);
    assert_eq!(l.iteration(), 6);
}
