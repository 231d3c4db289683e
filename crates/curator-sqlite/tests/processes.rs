//! Crash safety and multi-process use, with real processes.
//!
//! This binary is its own child: run with `CURATOR_SQLITE_CHILD=<mode>` it is the writer; run
//! without, it is the parent that starts writers, kills them with SIGKILL at pseudo-random
//! moments and checks the file. (A harness-less test, because the parent needs its own
//! `main` to re-run itself as a child.)
#![allow(
    clippy::unwrap_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test program"
)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use curator_model::{Message, PromptRef, ToolCall};
use curator_session::{Conversation, SessionStore};
use curator_sqlite::{Durability, Options, SqliteStore};

fn prompt() -> PromptRef {
    PromptRef::new("crash", "writer")
}

/// The writer: records an agent loop forever (or `limit` messages), printing the sequence of
/// each message once its record call has returned.
fn writer(path: &Path, limit: Option<u64>) {
    let store =
        SqliteStore::open_with(path, Options::default().with_durability(Durability::Normal))
            .unwrap();
    let mut c = Conversation::start(&store, "test", prompt(), Message::system("You write a lot.")).unwrap();
    let mut out = std::io::stdout().lock();
    let ack = |c: &Conversation<&SqliteStore>, out: &mut std::io::StdoutLock<'_>| {
        writeln!(out, "{} {}", c.evaluation_id(), c.next_sequence() - 1).unwrap();
        out.flush().unwrap();
    };
    ack(&c, &mut out);
    let mut step = 0u64;
    while limit.is_none_or(|l| c.next_sequence() < l) {
        let call = ToolCall::new(format!("c{step}"), "work", format!(r#"{{"step":{step}}}"#));
        c.record_assistant(Message::assistant_with_calls(None, vec![call.clone()])).unwrap();
        ack(&c, &mut out);
        c.record_tool_result(call.id(), Ok::<_, String>("result ".repeat(50))).unwrap();
        ack(&c, &mut out);
        step += 1;
    }
}

struct Check {
    failures: Vec<String>,
}

impl Check {
    fn expect(&mut self, ok: bool, what: String) {
        if !ok {
            eprintln!("FAILED: {what}");
            self.failures.push(what);
        }
    }
}

/// Kills a writer at pseudo-random moments, 20 times, and checks every acknowledged message
/// is in a sound file that a resumed conversation continues.
fn crash_test(check: &mut Check) {
    let exe = std::env::current_exe().unwrap();
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    for round in 0..20 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let kill_after = Duration::from_millis(20 + seed % 280);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("crash.db");
        let mut child = Command::new(&exe)
            .env("CURATOR_SQLITE_CHILD", "writer")
            .env("CURATOR_SQLITE_PATH", &path)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        // Start the clock once the writer is writing (its first acknowledgement), so that a
        // slow start never leaves a round with nothing to check.
        let mut lines = BufReader::new(stdout).lines();
        let first = lines.next().and_then(Result::ok);
        let reader = std::thread::spawn(move || {
            first.into_iter().chain(lines.map_while(Result::ok)).collect::<Vec<String>>()
        });
        let started = Instant::now();
        while started.elapsed() < kill_after {
            std::thread::sleep(Duration::from_millis(1));
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let acks = reader.join().unwrap();

        let store = SqliteStore::open(&path).unwrap();
        check.expect(
            store.integrity_check().unwrap() == "ok",
            format!("round {round}: integrity_check failed"),
        );
        let Some(last) = acks.last() else {
            check.expect(
                false,
                format!("round {round}: the writer acknowledged nothing in {kill_after:?}"),
            );
            continue;
        };
        let (evaluation, _) = last.split_once(' ').unwrap();
        let evaluation: curator_model::EvaluationId = evaluation.parse().unwrap();
        let recorded: std::collections::HashSet<u64> =
            store.entries(evaluation).unwrap().iter().map(|e| e.sequence).collect();
        let missing: Vec<&String> = acks
            .iter()
            .filter(|a| !recorded.contains(&a.split_once(' ').unwrap().1.parse::<u64>().unwrap()))
            .collect();
        check.expect(
            missing.is_empty(),
            format!("round {round}: acknowledged but missing: {missing:?}"),
        );

        // A resumed conversation continues: pending calls re-run, numbering goes on.
        let mut resumed = Conversation::resume(&store, "test", &prompt()).unwrap();
        let next = resumed.next_sequence();
        for context in resumed.tool_contexts() {
            resumed
                .record_tool_result(context.call_id(), Ok::<_, String>("re-run after the crash"))
                .unwrap();
        }
        resumed.record_assistant(Message::assistant("done")).unwrap();
        let after = store.entries(evaluation).unwrap();
        check.expect(
            after.len() as u64 == resumed.next_sequence() && resumed.next_sequence() > next,
            format!("round {round}: resume did not continue the record"),
        );
        check.expect(
            curator_model::validate::openai(
                &after.iter().map(|e| e.message.clone()).collect::<Vec<_>>(),
            )
            .is_ok(),
            format!("round {round}: the resumed record is not valid"),
        );
        println!(
            "round {round:2}: killed after {:>3} ms, {} messages acknowledged, all present",
            kill_after.as_millis(),
            acks.len()
        );
    }
}

/// Two writers append to one file at the same time; nothing is lost and no "database is
/// locked" surfaces.
fn concurrency_test(check: &mut Check) {
    let exe = std::env::current_exe().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let limit = 400;
    let children: Vec<_> = (0..2)
        .map(|_| {
            Command::new(&exe)
                .env("CURATOR_SQLITE_CHILD", "bounded")
                .env("CURATOR_SQLITE_PATH", &path)
                .env("CURATOR_SQLITE_LIMIT", limit.to_string())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut writers = Vec::new();
    for child in children {
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        check.expect(output.status.success(), format!("a concurrent writer failed: {stderr}"));
        check.expect(
            !stderr.contains("locked"),
            format!("a writer saw a locked database: {stderr}"),
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        let acks = stdout.lines().count();
        if let Some(last) = stdout.lines().last() {
            writers.push((
                last.split_once(' ').unwrap().0.parse::<curator_model::EvaluationId>().unwrap(),
                acks,
            ));
        }
    }
    let store = SqliteStore::open(&path).unwrap();
    for (evaluation, acks) in &writers {
        let n = store.entries(*evaluation).unwrap().len();
        check.expect(
            n == *acks && n as u64 >= limit,
            format!("writer {evaluation}: {n} recorded, {acks} acknowledged"),
        );
    }
    check.expect(writers.len() == 2, "both writers reported".into());
    println!(
        "two concurrent writers: {:?} messages acknowledged, all present",
        writers.iter().map(|w| w.1).collect::<Vec<_>>()
    );
}

fn main() {
    if let Ok(mode) = std::env::var("CURATOR_SQLITE_CHILD") {
        let path = std::env::var("CURATOR_SQLITE_PATH").unwrap();
        let limit = std::env::var("CURATOR_SQLITE_LIMIT").ok().map(|l| l.parse().unwrap());
        match mode.as_str() {
            "writer" | "bounded" => writer(Path::new(&path), limit),
            other => panic!("unknown child mode {other}"),
        }
        return;
    }
    let mut check = Check { failures: Vec::new() };
    crash_test(&mut check);
    concurrency_test(&mut check);
    if !check.failures.is_empty() {
        eprintln!("{} failure(s)", check.failures.len());
        std::process::exit(1);
    }
    println!("processes: all checks passed");
}
