//! `curator prune` (issue 33): retention from the command line.

use std::time::Duration;

use curator::model::{Message, PromptRef};
use curator::session::{ClaimStore, Conversation, SessionKey, SessionStore};
use curator::sqlite::SqliteStore;

use crate::{curator, fails_with, text};

/// Three sessions of two evaluations each (the second started later), 11 messages each.
fn sessions(path: &std::path::Path) {
    let store = SqliteStore::open(path).unwrap();
    for user in 0..3 {
        for _ in 0..2 {
            let mut c = Conversation::start(
                &store,
                format!("user-{user}"),
                PromptRef::new("d", "a"),
                Message::system("s"),
            )
            .unwrap();
            for n in 0..5 {
                c.add_user(format!("question {n} {}", "x".repeat(4_000))).unwrap();
                c.record_assistant(Message::assistant("answer")).unwrap();
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

#[test]
fn a_dry_run_says_what_would_go_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    sessions(&db);
    let before = std::fs::read(&db).unwrap();
    let output = curator(&["prune", db.to_str().unwrap(), "--keep-last", "1", "--dry-run"]);
    let out = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(out.contains("would delete 3 evaluations (33 messages)"), "{out}");
    assert_eq!(std::fs::read(&db).unwrap(), before, "a dry run wrote to the file");
}

#[test]
fn a_session_is_deleted_and_the_file_shrinks_but_a_held_session_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    sessions(&db);
    let store = SqliteStore::open(&db).unwrap();
    // A worker holds user-1's session.
    let held = store.claim(&SessionKey::new("user-1"), Duration::from_mins(1)).unwrap();
    let output = curator(&["prune", db.to_str().unwrap(), "--key", "user-1"]);
    let out = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(out.contains("deleted 0 evaluations"), "{out}");
    assert!(out.contains("left alone: session `user-1` is held by a worker"), "{out}");
    assert_eq!(store.evaluations_of(&SessionKey::new("user-1")).unwrap().len(), 2);
    drop(held);
    // This process's own connection closed too: a reader left open can keep SQLite from
    // truncating the log after the vacuum (by design), which made the sizes below racy.
    drop(store);
    let output = curator(&["prune", db.to_str().unwrap(), "--key", "user-1", "--vacuum"]);
    let out = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(out.contains("deleted 2 evaluations (22 messages)"), "{out}");
    let sizes: Vec<u64> = out
        .lines()
        .find(|l| l.starts_with("vacuumed: "))
        .unwrap()
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert!(sizes[1] < sizes[0], "{out}");
    let store = SqliteStore::open(&db).unwrap();
    assert!(store.evaluations_of(&SessionKey::new("user-1")).unwrap().is_empty());
    assert_eq!(store.evaluations().unwrap().len(), 4);
    // The older-than rule: everything recorded before now.
    let output = curator(&["prune", db.to_str().unwrap(), "--older-than", "0m"]);
    assert!(text(&output.stdout).contains("deleted 4 evaluations"), "{}", text(&output.stdout));
}

#[test]
fn bad_rules_and_missing_files_are_refused_and_nothing_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.db");
    let output = curator(&["prune", missing.to_str().unwrap(), "--keep-last", "1"]);
    fails_with(&output, 2, "no session file here");
    assert!(!missing.exists());
    // An empty file is no store either: neither a dry run nor a prune makes it one.
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    for dry in [true, false] {
        let mut args = vec!["prune", empty.to_str().unwrap(), "--key", "a"];
        args.extend(dry.then_some("--dry-run"));
        fails_with(&curator(&args), 2, "the file is empty: no session file here");
        assert_eq!(std::fs::read(&empty).unwrap(), b"", "dry run {dry}: the file was written");
    }
    let names = |dir: &std::path::Path| {
        let mut names: Vec<_> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        names
    };
    assert_eq!(names(dir.path()), ["empty.db"], "something was left beside the file");
    let db = dir.path().join("s.db");
    sessions(&db);
    fails_with(&curator(&["prune", db.to_str().unwrap()]), 2, "say what to prune");
    fails_with(
        &curator(&["prune", db.to_str().unwrap(), "--key", "a", "--keep-last", "1"]),
        2,
        "cannot be combined",
    );
    fails_with(&curator(&["prune", db.to_str().unwrap(), "--older-than", "soon"]), 2, "not a date");
    fails_with(&curator(&["prune", db.to_str().unwrap(), "--key", " "]), 2, "only white space");
}

/// A loop session (`curator chat`) keeps its turns in checkpoints: erasing its key deletes
/// them too (a dry run only names it), and another key's prune leaves them.
#[test]
fn erasing_a_key_erases_its_loop_sessions() {
    use curator::session::SessionStore as _;
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chat.db");
    let saved = |db: &std::path::Path| {
        let store = SqliteStore::open_read_only(db).unwrap();
        store.checkpoint_names("curator.loop/").unwrap()
    };
    let db_path = db.clone();
    let db = db.to_str().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_curator"))
        .args(["chat", "--base-url", "http://127.0.0.1:9", "--model", "m", "--db", db])
        .args(["--session", "alice", "--system", "Answer briefly."])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"/quit\n").unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(!saved(&db_path).is_empty());
    let other = text(&curator(&["prune", db, "--key", "bob"]).stdout);
    assert!(!other.contains("loop session"), "{other}");
    assert!(!saved(&db_path).is_empty());
    let output = curator(&["prune", db, "--key", "alice", "--dry-run"]);
    let out = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(out.contains("would delete loop session `alice` (loop `chat`"), "{out}");
    assert!(!saved(&db_path).is_empty(), "a dry run deletes nothing");
    let output = curator(&["prune", db, "--key", "alice"]);
    let out = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(out.contains("  deleted loop session `alice` (loop `chat`"), "{out}");
    assert_eq!(saved(&db_path), Vec::<String>::new());
}

/// The heads the Python sessions keep for a key (their records of pops and clears) go with
/// the key's evaluations; a dry run names them; another key's stay.
#[test]
fn erasing_a_key_erases_its_item_log_heads() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    sessions(&db);
    {
        let store = SqliteStore::open(&db).unwrap();
        for name in [
            "curator.items/responses/user-1",
            "curator.items/openai/user-1",
            "curator.items/responses/user-2",
        ] {
            store.put_checkpoint(name, &serde_json::json!({"removed": []})).unwrap();
        }
    }
    let db = db.to_str().unwrap();
    let output = curator(&["prune", db, "--key", "user-1", "--dry-run"]);
    assert!(
        text(&output.stdout).contains("would delete 2 item log heads"),
        "{}",
        text(&output.stdout)
    );
    let output = curator(&["prune", db, "--key", "user-1"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("deleted 2 item log heads"), "{}", text(&output.stdout));
    let store = SqliteStore::open(db).unwrap();
    assert_eq!(
        store.checkpoint_names("curator.items/").unwrap(),
        ["curator.items/responses/user-2"]
    );
}
