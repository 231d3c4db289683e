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
use std::process::Stdio;
use std::time::{Duration, Instant};

use curator_model::{Message, PromptRef, ToolCall};
use curator_session::{Action, Conversation, SessionKey, SessionStore, StoreErrorKind};
use curator_sqlite::{Durability, Error, SqliteOptions, SqliteStore};
use curator_testkit::processes::{Check, Roles, Xorshift, kill};

/// The roles this binary plays as a child.
const ROLES: Roles = Roles::new("CURATOR_SQLITE_CHILD");

fn prompt() -> PromptRef {
    PromptRef::new("crash", "writer")
}

/// The writer: records an agent loop forever (or `limit` messages), printing the sequence of
/// each message once its record call has returned.
fn writer(path: &Path, limit: Option<u64>) {
    let store =
        SqliteStore::open_with(path, SqliteOptions::default().with_durability(Durability::Normal))
            .unwrap();
    let mut c =
        Conversation::start(&store, "test", prompt(), Message::system("You write a lot.")).unwrap();
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

/// Kills a writer at pseudo-random moments, 20 times, and checks every acknowledged message
/// is in a sound file that a resumed conversation continues.
fn crash_test(check: &mut Check) {
    let mut random = Xorshift::new(0x9E37_79B9_7F4A_7C15);
    for round in 0..20 {
        let kill_after = Duration::from_millis(20 + random.next_u64() % 280);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("crash.db");
        let mut child = ROLES
            .command("writer")
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
        kill(&mut child);
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
        check.expect(
            resumed.evaluation_id() == evaluation,
            format!("round {round}: resumed another evaluation"),
        );
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
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let limit = 400;
    let children: Vec<_> = (0..2)
        .map(|_| {
            ROLES
                .command("bounded")
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

/// The creator: creates session files `0.db`, `1.db`, ... in a directory, one after the
/// other, until it is killed, printing each file's name before it starts creating it.
fn creator(dir: &Path) {
    let mut out = std::io::stdout().lock();
    for i in 0u64.. {
        let path = dir.join(format!("{i}.db"));
        writeln!(out, "{}", path.display()).unwrap();
        out.flush().unwrap();
        drop(
            SqliteStore::open_with(
                &path,
                SqliteOptions::default().with_durability(Durability::Normal),
            )
            .unwrap(),
        );
    }
}

/// Kills a process creating session files at pseudo-random moments, 300 times, and checks
/// that every file opens afterwards (read-only, then read-write) and records: a kill while a
/// file is being created never strands it.
fn kill_during_creation_test(check: &mut Check) {
    let mut random = Xorshift::new(0x2545_F491_4F6C_DD1D);
    let (mut files, started) = (0, Instant::now());
    for round in 0..300 {
        let seed = random.next_u64();
        let dir = tempfile::tempdir().unwrap();
        let mut child = ROLES
            .command("creator")
            .env("CURATOR_SQLITE_PATH", dir.path())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        // The first name is printed once the child runs: kill it 0 to 6 ms later, which is
        // one to a few creations in.
        let _ = lines.next();
        let wait = Duration::from_micros(seed % 6_000);
        let clock = Instant::now();
        while clock.elapsed() < wait {
            std::hint::spin_loop();
        }
        kill(&mut child);
        drop(lines);
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "db"))
            .collect();
        names.sort();
        for path in names {
            files += 1;
            match SqliteStore::open_read_only(&path) {
                // A file killed before its schema was committed holds no session yet.
                Ok(_) | Err(Error::Sqlite { kind: StoreErrorKind::NotFound, .. }) => {}
                Err(e) => check.expect(
                    false,
                    format!("round {round}: {} does not open read-only: {e}", path.display()),
                ),
            }
            match SqliteStore::open(&path) {
                Ok(store) => {
                    let recorded =
                        Conversation::open(&store, "after", prompt(), Message::system("s"))
                            .and_then(|mut c| c.add_user("still works"));
                    check.expect(
                        recorded.is_ok(),
                        format!("round {round}: {} does not record: {recorded:?}", path.display()),
                    );
                }
                Err(e) => check
                    .expect(false, format!("round {round}: {} does not open: {e}", path.display())),
            }
        }
    }
    println!(
        "kill during creation: 300 kills, {files} files, every one opens and records ({:.1} s)",
        started.elapsed().as_secs_f64()
    );
}

/// Opens the file at a given moment and records one message under its own key.
fn opener(path: &Path, key: &str) {
    let at: u128 = std::env::var("CURATOR_SQLITE_START").unwrap().parse().unwrap();
    while std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
        < at
    {
        std::hint::spin_loop();
    }
    match SqliteStore::open(path) {
        Ok(store) => {
            let mut c = Conversation::open(&store, key, prompt(), Message::system("s")).unwrap();
            c.add_user("here").unwrap();
        }
        Err(e) => {
            eprintln!("open failed: {e:?}");
            std::process::exit(3);
        }
    }
}

/// Eight processes open one new file at the same moment, 100 times: none is refused (no
/// false `ForeignDatabase`), and each records.
fn concurrent_creation_test(check: &mut Check) {
    let started = Instant::now();
    for round in 0..100 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared.db");
        let start = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap()
            + Duration::from_millis(60);
        let children: Vec<_> = (0..8)
            .map(|i| {
                ROLES
                    .command("opener")
                    .env("CURATOR_SQLITE_PATH", &path)
                    .env("CURATOR_SQLITE_KEY", format!("opener-{i}"))
                    .env("CURATOR_SQLITE_START", start.as_nanos().to_string())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let output = child.wait_with_output().unwrap();
            check.expect(
                output.status.success(),
                format!(
                    "round {round}: an opener failed: {}",
                    String::from_utf8_lossy(&output.stderr)
                ),
            );
        }
        let store = SqliteStore::open(&path).unwrap();
        let evaluations = store.evaluations().unwrap();
        check.expect(
            evaluations.len() == 8 && evaluations.iter().all(|e| e.messages == 2),
            format!("round {round}: {} evaluations recorded, not 8", evaluations.len()),
        );
    }
    println!(
        "concurrent creation: 100 rounds of 8 processes opening one new file, no refusal ({:.1} s)",
        started.elapsed().as_secs_f64()
    );
}

/// One agent worker with its own key: records, runs each tool call (logging when it starts
/// and when its result is recorded), and stops when the model has answered.
fn worker(path: &Path, key: &str, log: &Path) {
    let store =
        SqliteStore::open_with(path, SqliteOptions::default().with_durability(Durability::Normal))
            .unwrap();
    let mut c =
        Conversation::open(&store, key, prompt(), Message::system("You send emails.")).unwrap();
    let mut log = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
    let mut out = std::io::stdout().lock();
    loop {
        match c.next_step() {
            Action::WaitForUser => {
                c.add_user(format!("work for {key}")).unwrap();
            }
            Action::CallModel => {
                let turn = c.turn() + 1;
                let reply = if turn <= 6 {
                    Message::assistant_with_calls(
                        None,
                        vec![
                            ToolCall::new(format!("{key}-{turn}-a"), "send_email", "{}"),
                            ToolCall::new(format!("{key}-{turn}-b"), "send_email", "{}"),
                        ],
                    )
                } else {
                    Message::assistant("all sent")
                };
                c.record_assistant(reply).unwrap();
            }
            Action::Run(calls) => {
                for call in calls {
                    writeln!(log, "start {}", call.call_id()).unwrap();
                    writeln!(out, "start {}", call.call_id()).unwrap();
                    out.flush().unwrap();
                    // The email goes out here.
                    std::thread::sleep(Duration::from_millis(15));
                    c.record_tool_result(call.call_id(), Ok::<_, String>("sent")).unwrap();
                    writeln!(log, "recorded {}", call.call_id()).unwrap();
                }
            }
            Action::Finished(_) => return,
            other => panic!("unexpected step {other:?}"),
        }
    }
}

/// Two workers share one file, each killed mid-tool-call four times and restarted with its
/// own key: each resumes only its own conversation, every call interrupted by a kill runs
/// again once per restart, no call whose result was recorded runs again, and nothing is lost.
fn keyed_workers_test(check: &mut Check) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("workers.db");
    let handles: Vec<_> = ["alice", "bob"]
        .into_iter()
        .enumerate()
        .map(|(w, key)| {
            let (path, log) = (path.clone(), dir.path().join(format!("{key}.log")));
            std::thread::spawn(move || {
                let (finished, kills) = run_killing(&path, key, &log, w as u64);
                (key, log, finished, kills)
            })
        })
        .collect();
    let store = SqliteStore::open(&path).unwrap();
    for handle in handles {
        let (key, log, finished, kills) = handle.join().unwrap();
        check.expect(finished, format!("{key}: the last run did not finish"));
        let evaluations = store.evaluations_of(&SessionKey::new(key)).unwrap();
        check.expect(
            evaluations.len() == 1,
            format!("{key}: {} evaluations, not 1", evaluations.len()),
        );
        let Some(evaluation) = evaluations.first() else { continue };
        let record = store.entries(evaluation.evaluation_id).unwrap();
        let messages: Vec<Message> = record.iter().map(|e| e.message.clone()).collect();
        check.expect(
            curator_model::validate::openai(&messages).is_ok(),
            format!("{key}: the record is not valid"),
        );
        check.expect(
            messages.last().is_some_and(|m| m.text() == "all sent"),
            format!("{key}: the conversation did not finish"),
        );
        let calls: Vec<String> = messages
            .iter()
            .flat_map(|m| m.tool_calls().iter().map(|c| c.id().to_owned()))
            .collect();
        let results: Vec<String> =
            messages.iter().filter_map(|m| m.tool_call_id().map(str::to_owned)).collect();
        check.expect(calls.len() == 12, format!("{key}: {} calls recorded, not 12", calls.len()));
        check.expect(
            calls.iter().all(|c| c.starts_with(key)),
            format!("{key}: ran another worker's call"),
        );
        let mut sorted = results.clone();
        sorted.sort();
        sorted.dedup();
        check.expect(
            sorted.len() == results.len() && results.len() == calls.len(),
            format!("{key}: each call needs exactly one result"),
        );
        // The log: no call starts again once its result is recorded; every call is recorded.
        let text = std::fs::read_to_string(&log).unwrap();
        let mut recorded = std::collections::HashSet::new();
        let mut reruns = 0;
        let mut starts = std::collections::HashMap::<&str, u32>::new();
        for line in text.lines() {
            let (what, call) = line.split_once(' ').unwrap();
            match what {
                "start" => {
                    check.expect(
                        !recorded.contains(call),
                        format!("{key}: {call} ran again after its result was recorded"),
                    );
                    let n = starts.entry(call).or_default();
                    *n += 1;
                    reruns += u32::from(*n > 1);
                }
                _ => {
                    recorded.insert(call);
                }
            }
        }
        check.expect(
            recorded.len() == 12,
            format!("{key}: {} results recorded in the log, not 12", recorded.len()),
        );
        // A call runs again only after a kill interrupted it: one extra start per kill at most
        // (a kill can interrupt the re-run of a call again).
        check.expect(
            reruns <= kills,
            format!("{key}: {reruns} re-runs for {kills} kills: {starts:?}"),
        );
        println!(
            "keyed worker {key}: killed {kills} times, {reruns} interrupted calls run again, 12 calls recorded once each"
        );
    }
}

/// Runs the worker of `key`, killing it during a tool call four times and restarting it,
/// then lets it finish: whether the last run finished, and how many kills there were.
fn run_killing(path: &Path, key: &str, log: &Path, worker: u64) -> (bool, u32) {
    let mut kills = 0;
    let mut random = Xorshift::new(0x9E37_79B9_7F4A_7C15_u64 + worker);
    loop {
        let mut child = ROLES
            .command("worker")
            .env("CURATOR_SQLITE_PATH", path)
            .env("CURATOR_SQLITE_KEY", key)
            .env("CURATOR_SQLITE_LOG", log)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        if kills == 4 {
            for _ in lines.by_ref() {}
            return (child.wait().unwrap().success(), kills);
        }
        let seed = random.next_u64();
        // Kill during the n-th tool call of this run, while it runs (a call takes 15 ms).
        let nth = 1 + seed % 3;
        let mut started = 0;
        while started < nth && lines.next().is_some_and(|l| l.is_ok()) {
            started += 1;
        }
        std::thread::sleep(Duration::from_millis(seed % 10));
        kill(&mut child);
        kills += 1;
    }
}

/// Reads a session file as another user, from a directory and a file it cannot write.
fn read_only_reader(path: &Path) {
    match SqliteStore::open_read_only(path) {
        Ok(store) => println!("{}", store.evaluations().unwrap().len()),
        Err(e) => {
            eprintln!("open_read_only failed: {e:?}");
            std::process::exit(3);
        }
    }
    // A read-write open cannot work here; its error says what to use instead.
    match SqliteStore::open(path) {
        Ok(_) => println!("open succeeded"),
        Err(e) => println!("{:?} {e}", e.kind()),
    }
}

/// `open_read_only` works on a read-only file in a read-only directory and leaves nothing
/// there. The reader runs as user `nobody` when this test runs as root (for whom no
/// permission is ever missing); otherwise the permissions are simply taken away.
fn read_only_directory_test(check: &mut Check) {
    read_only_test(check, true);
    read_only_test(check, false);
}

/// As [`read_only_directory_test`], the folder read-only (`folder_too`) or writable by anyone:
/// either way `open` refuses the file at once, naming `open_read_only`, and leaves nothing
/// beside it, and its owner writes to it afterwards.
fn read_only_test(check: &mut Check, folder_too: bool) {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    use std::os::unix::process::CommandExt as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ro.db");
    {
        let store = SqliteStore::open(&path).unwrap();
        let mut c = Conversation::open(&store, "ro", prompt(), Message::system("s")).unwrap();
        c.add_user("read me").unwrap();
    }
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    let folder_mode = if folder_too { 0o555 } else { 0o777 };
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(folder_mode)).unwrap();
    // The binary must be reachable by the reader: as `nobody`, run a copy of it.
    let bin = tempfile::tempdir().unwrap();
    let exe = if root {
        let copy = bin.path().join("reader");
        std::fs::copy(std::env::current_exe().unwrap(), &copy).unwrap();
        std::fs::set_permissions(bin.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
        copy
    } else {
        std::env::current_exe().unwrap()
    };
    let mut command = ROLES.command_at(&exe, "read-only");
    command.env("CURATOR_SQLITE_PATH", &path);
    if root {
        command.uid(65_534).gid(65_534);
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut lines = stdout.lines();
    check.expect(
        output.status.success() && lines.next() == Some("1"),
        format!(
            "open_read_only in a read-only directory failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ),
    );
    let open = lines.next().unwrap_or_default();
    check.expect(
        open.starts_with("ReadOnly ") && open.contains("open_read_only"),
        format!("open in a read-only directory should point to open_read_only: {open}"),
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    check.expect(left.len() == 1, format!("files left beside the database: {left:?}"));
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // The owner still writes to it: nothing was left that would stop it.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let owner = SqliteStore::open(&path).unwrap();
    let mut c = Conversation::open(&owner, "ro", prompt(), Message::system("s")).unwrap();
    check.expect(c.add_user("written by the owner").is_ok(), "the owner cannot write".to_owned());
    let place =
        if folder_too { "read-only directory" } else { "read-only file in a writable directory" };
    println!("{place}: open_read_only reads, open refused naming it, nothing left beside the file");
}

/// A worker that claims the session `key` and holds the claim until it is killed.
fn claimer(path: &Path, key: &str) {
    use curator_session::ClaimStore as _;
    let store = SqliteStore::open(path).unwrap();
    let claim = store.claim(&SessionKey::new(key), Duration::from_hours(1)).unwrap();
    println!("claimed");
    std::io::stdout().flush().unwrap();
    loop {
        std::thread::sleep(Duration::from_mins(1));
        claim.renew().unwrap();
    }
}

/// A claim holds against other processes while its worker lives, and ends the moment the
/// worker is killed (the operating system drops its lock), whatever its lease.
fn claims_test(check: &mut Check) {
    use curator_session::ClaimStore as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("claims.db");
    let store = SqliteStore::open(&path).unwrap();
    let key = SessionKey::new("ticket-7");
    for round in 0..5 {
        let mut child = ROLES
            .command("claimer")
            .env("CURATOR_SQLITE_PATH", &path)
            .env("CURATOR_SQLITE_KEY", key.as_str())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let said = lines.next().and_then(Result::ok);
        check.expect(said.as_deref() == Some("claimed"), format!("round {round}: {said:?}"));
        let refused = store.claim(&key, Duration::from_secs(1));
        check.expect(
            matches!(refused, Err(curator_session::Error::Claimed { .. })),
            format!("round {round}: a live worker's claim was not refused: {refused:?}"),
        );
        kill(&mut child);
        let taken = store.claim(&key, Duration::from_secs(1));
        check.expect(
            taken.is_ok(),
            format!("round {round}: a killed worker's claim held: {taken:?}"),
        );
    }
    println!("claims: a live worker's claim refused, a killed worker's taken at once (5 rounds)");
}

/// A worker that claims `key` with a one-second lease and appends six messages under its
/// fence, one every 200 ms, printing each, then releases the claim.
fn fenced_appender(path: &Path, key: &str) {
    use curator_session::ClaimStore as _;
    let store = SqliteStore::open(path).unwrap();
    let key = SessionKey::new(key);
    let claim = store.claim(&key, Duration::from_secs(1)).unwrap();
    let mut c =
        Conversation::open(&store, key, PromptRef::new("workers", "agent"), Message::system("s"))
            .unwrap()
            .with_fence(claim.fence().unwrap());
    for n in 1..=6 {
        c.add_user(format!("a{n}")).unwrap();
        println!("appended a{n}");
        std::io::stdout().flush().unwrap();
        std::thread::sleep(Duration::from_millis(200));
    }
    claim.release().unwrap();
}

/// A worker stopped (SIGSTOP) past its lease keeps its claim: a SQLite claim is a file lock
/// that lasts while its process lives, so no other worker can take the session over and
/// interleave; continued (SIGCONT), the worker finishes, and the next claim's token is larger.
fn stopped_worker_test(check: &mut Check) {
    use curator_session::ClaimStore as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fenced.db");
    let store = SqliteStore::open(&path).unwrap();
    let key = SessionKey::new("stalled-1");
    let mut child = ROLES
        .command("fenced")
        .env("CURATOR_SQLITE_PATH", &path)
        .env("CURATOR_SQLITE_KEY", key.as_str())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().and_then(Result::ok);
    check.expect(first.as_deref() == Some("appended a1"), format!("first line: {first:?}"));
    let signal = |name: &str| {
        std::process::Command::new("kill").args([name, &child.id().to_string()]).status().unwrap()
    };
    check.expect(signal("-STOP").success(), "SIGSTOP".to_owned());
    std::thread::sleep(Duration::from_millis(1_500));
    let refused = store.claim(&key, Duration::from_secs(30));
    check.expect(
        matches!(refused, Err(curator_session::Error::Claimed { .. })),
        format!("a stopped worker's claim was taken over: {refused:?}"),
    );
    check.expect(signal("-CONT").success(), "SIGCONT".to_owned());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    check.expect(status.success(), format!("the continued worker ended with {status}"));
    check.expect(rest.len() == 5, format!("the continued worker's lines: {rest:?}"));
    let c = Conversation::open(
        &store,
        key.clone(),
        PromptRef::new("workers", "agent"),
        Message::system("s"),
    )
    .unwrap();
    let texts: Vec<String> =
        c.history().messages().iter().skip(1).map(|m| m.text().into_owned()).collect();
    check.expect(
        texts == (1..=6).map(|n| format!("a{n}")).collect::<Vec<_>>(),
        format!("the record: {texts:?}"),
    );
    let next = store.claim(&key, Duration::from_secs(1)).unwrap();
    check.expect(next.fence().unwrap().token == 2, format!("the next token: {:?}", next.fence()));
    println!(
        "a worker stopped past its lease kept its claim (refused to another), finished in order"
    );
}

fn main() {
    if let Some(mode) = ROLES.role() {
        let path = std::env::var("CURATOR_SQLITE_PATH").unwrap();
        let limit = std::env::var("CURATOR_SQLITE_LIMIT").ok().map(|l| l.parse().unwrap());
        let key = std::env::var("CURATOR_SQLITE_KEY").unwrap_or_default();
        match mode.as_str() {
            "writer" | "bounded" => writer(Path::new(&path), limit),
            "creator" => creator(Path::new(&path)),
            "opener" => opener(Path::new(&path), &key),
            "worker" => {
                worker(
                    Path::new(&path),
                    &key,
                    Path::new(&std::env::var("CURATOR_SQLITE_LOG").unwrap()),
                );
            }
            "read-only" => read_only_reader(Path::new(&path)),
            "claimer" => claimer(Path::new(&path), &key),
            "fenced" => fenced_appender(Path::new(&path), &key),
            other => panic!("unknown child mode {other}"),
        }
        return;
    }
    let mut check = Check::new();
    crash_test(&mut check);
    concurrency_test(&mut check);
    kill_during_creation_test(&mut check);
    concurrent_creation_test(&mut check);
    keyed_workers_test(&mut check);
    read_only_directory_test(&mut check);
    claims_test(&mut check);
    stopped_worker_test(&mut check);
    check.finish();
}
