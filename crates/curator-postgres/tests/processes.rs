//! Many workers, one record, with real processes against a real server.
//!
//! This binary is its own child: run with `CURATOR_PG_CHILD=<mode>` it is a worker; run
//! without, it is the parent that starts a PostgreSQL server (`curator_testkit::postgres`),
//! starts workers, kills them with SIGKILL and checks the record. (A harness-less test,
//! because the parent needs its own `main` to re-run itself as a child.)
#![allow(
    clippy::unwrap_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test program"
)]

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use curator_model::{Entry, EvaluationId, Message, MessageId, PromptRef, ToolCall};
use curator_postgres::{PgOptions, PgStore};
use curator_session::{Action, ClaimStore, Conversation, Error, SessionKey, SessionStore};
use curator_testkit::postgres::PgServer;
use curator_testkit::processes::{Check, Lines, Roles, kill, say, var};

/// The roles this binary plays as a child.
const ROLES: Roles = Roles::new("CURATOR_PG_CHILD");

fn prompt() -> PromptRef {
    PromptRef::new("workers", "agent")
}

/// The store the child's environment names.
fn child_store() -> PgStore {
    let options =
        PgOptions::from_url(&var("CURATOR_PG_URL")).unwrap().with_schema(&var("CURATOR_PG_SCHEMA"));
    PgStore::open(options.unwrap()).unwrap()
}

/// A worker with its own key: records `limit` messages, printing each sequence once its
/// record call returned.
fn appender(limit: u64) {
    let store = child_store();
    let key = var("CURATOR_PG_KEY");
    let mut c = Conversation::open(&store, key.as_str(), prompt(), Message::system("s")).unwrap();
    let mut out = std::io::stdout().lock();
    say(&mut out, &format!("{} {}", c.evaluation_id(), c.next_sequence() - 1));
    while c.next_sequence() < limit {
        if c.next_step() == Action::CallModel {
            c.record_assistant(Message::assistant(format!("reply {}", c.turn()))).unwrap();
        } else {
            c.add_user(format!("message {}", c.next_sequence())).unwrap();
        }
        say(&mut out, &format!("{} {}", c.evaluation_id(), c.next_sequence() - 1));
    }
}

/// A writer racing another process for the places of one evaluation: each message takes the
/// next free sequence, and a taken one is tried again at the next (same message id). Prints
/// each message id once its append returned `New`.
fn racer(count: usize) {
    let store = child_store();
    let key = SessionKey::new(var("CURATOR_PG_KEY"));
    let evaluation: EvaluationId = var("CURATOR_PG_EVALUATION").parse().unwrap();
    let mut out = std::io::stdout().lock();
    let mut next = 1;
    for i in 0..count {
        let id = MessageId::new();
        loop {
            let entry =
                Entry::builder(evaluation, Message::user(format!("{} {i}", std::process::id())))
                    .id(id)
                    .sequence(next)
                    .prompt(prompt())
                    .build()
                    .unwrap();
            match store.append(&key, &entry) {
                Ok(_) => {
                    say(&mut out, &id.to_string());
                    next += 1;
                    break;
                }
                Err(Error::SequenceTaken { .. }) => next += 1,
                Err(e) if e.is_retryable() => {}
                Err(e) => panic!("append failed: {e:?}"),
            }
        }
    }
}

/// An agent worker that claims its session, then drives it: two tool calls in the first
/// turn, one in the second, then an answer. Each call's start is logged (the side effect
/// that must not happen twice); the call named by `CURATOR_PG_HANG` never finishes (the
/// worker keeps renewing its claim until it is killed).
fn agent() {
    let store = child_store();
    let key = SessionKey::new(var("CURATOR_PG_KEY"));
    let lease = Duration::from_millis(var("CURATOR_PG_LEASE_MS").parse().unwrap());
    let wait = Duration::from_millis(var("CURATOR_PG_WAIT_MS").parse().unwrap());
    let hang = std::env::var("CURATOR_PG_HANG").unwrap_or_default();
    let log = var("CURATOR_PG_LOG");
    let mut out = std::io::stdout().lock();
    let asked = Instant::now();
    let claim = match store.claim_within(&key, lease, wait) {
        Ok(claim) => claim,
        Err(Error::Claimed { .. }) => {
            say(&mut out, "refused");
            return;
        }
        Err(e) => panic!("claim failed: {e:?}"),
    };
    say(&mut out, &format!("claimed {}", asked.elapsed().as_millis()));
    let mut c = Conversation::open(&store, key.clone(), prompt(), Message::system("s")).unwrap();
    let mut log = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
    loop {
        match c.next_step() {
            Action::WaitForUser => {
                c.add_user("send the emails").unwrap();
            }
            Action::CallModel => {
                let k = key.as_str();
                let reply = match c.turn() + 1 {
                    1 => Message::assistant_with_calls(
                        None,
                        vec![
                            ToolCall::new(format!("{k}-c1"), "send_email", "{}"),
                            ToolCall::new(format!("{k}-c2"), "send_email", "{}"),
                        ],
                    ),
                    2 => Message::assistant_with_calls(
                        None,
                        vec![ToolCall::new(format!("{k}-c3"), "send_email", "{}")],
                    ),
                    _ => Message::assistant("done"),
                };
                c.record_assistant(reply).unwrap();
            }
            Action::Run(calls) => {
                for call in calls {
                    claim.renew().unwrap();
                    writeln!(log, "start {} {}", call.call_id(), std::process::id()).unwrap();
                    log.flush().unwrap();
                    if call.call_id().ends_with(&hang) && !hang.is_empty() {
                        say(&mut out, &format!("in-call {}", call.call_id()));
                        loop {
                            std::thread::sleep(lease / 4);
                            claim.renew().unwrap();
                        }
                    }
                    c.record_tool_result(call.call_id(), Ok::<_, String>("sent")).unwrap();
                }
            }
            Action::Finished(_) => {
                say(&mut out, "finished");
                claim.release().unwrap();
                return;
            }
            other => panic!("unexpected step {other:?}"),
        }
    }
}

/// A worker that claims `CURATOR_PG_KEY` with a one-second lease and appends under its
/// fence every 200 ms, printing each acknowledged message, until an append is fenced.
fn stalling() {
    let store = child_store();
    let key = SessionKey::new(var("CURATOR_PG_KEY"));
    let claim = store.claim(&key, Duration::from_secs(1)).unwrap();
    let fence = claim.fence().unwrap();
    let mut c = Conversation::open(&store, key, prompt(), Message::system("s"))
        .unwrap()
        .with_fence(fence.clone());
    let mut out = std::io::stdout().lock();
    say(&mut out, &format!("token {}", fence.token));
    for n in 1.. {
        match c.add_user(format!("a{n}")) {
            Ok(_) => say(&mut out, &format!("appended a{n}")),
            Err(Error::Fenced { current, .. }) => {
                say(&mut out, &format!("fenced at a{n} (session token {current:?})"));
                return;
            }
            Err(e) => panic!("unexpected error: {e}"),
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The sessions the chaos workers share.
const CHAOS_SESSIONS: u64 = 6;

/// A chaos worker: over and over, claims a random session (one-second lease), resumes it
/// under its fence (a call interrupted while it ran is answered as interrupted, one that
/// never started is run), and records three exchanges of a user message, a tool call, its
/// result and an answer, each text holding the claim's token. Prints `effect <call>` when a
/// tool's side effect happens and `ack <key> <text>` once a record call returned; a
/// refused (fenced) append or a lost claim prints `fenced` and starts over.
fn chaos_worker() {
    use curator_session::ResumePolicy;
    let store = child_store();
    let me = std::process::id();
    let mut random = curator_testkit::processes::Xorshift::new(u64::from(me) * 2_654_435_761 + 1);
    let mut out = std::io::stdout().lock();
    loop {
        let key = SessionKey::new(format!("chaos-{}", random.next_u64() % CHAOS_SESSIONS));
        let claim =
            match store.claim_within(&key, Duration::from_secs(1), Duration::from_millis(300)) {
                Ok(claim) => claim,
                Err(Error::Claimed { .. }) => continue,
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(200));
                    continue;
                }
            };
        let token = claim.fence().unwrap().token;
        let outcome = (|| -> Result<(), Error> {
            let mut c = Conversation::open(&store, key.clone(), prompt(), Message::system("s"))?
                .with_start_marks()?
                .with_fence(claim.fence().unwrap());
            let ack = |out: &mut std::io::StdoutLock<'_>, text: &str| {
                say(out, &format!("ack {key} {text}"));
            };
            for context in c.repair(ResumePolicy::AnswerInterrupted)? {
                // Never started: run it now.
                claim.renew()?;
                c.mark_started(&[context.call_id()])?;
                say(&mut out, &format!("effect {}", context.call_id()));
                let text = format!("result t{token}");
                c.record_tool_result(context.call_id(), Ok::<_, String>(text.clone()))?;
                ack(&mut out, &text);
            }
            if c.next_step() == Action::CallModel {
                let text = format!("answer t{token} resumed");
                c.record_assistant(Message::assistant(text.clone()))?;
                ack(&mut out, &text);
            }
            for k in 0..3 {
                let text = format!("user t{token} w{me} {k}");
                c.add_user(text.clone())?;
                ack(&mut out, &text);
                let call = format!("t{token}-w{me}-{k}");
                let text = format!("call t{token}");
                c.record_assistant(Message::assistant_with_calls(
                    Some(text.clone().into()),
                    vec![ToolCall::new(call.clone(), "effect", "{}")],
                ))?;
                ack(&mut out, &text);
                claim.renew()?;
                c.mark_started(&[call.as_str()])?;
                say(&mut out, &format!("effect {call}"));
                std::thread::sleep(Duration::from_millis(random.next_u64() % 40));
                let text = format!("result t{token}");
                c.record_tool_result(&call, Ok::<_, String>(text.clone()))?;
                ack(&mut out, &text);
                let text = format!("answer t{token}");
                c.record_assistant(Message::assistant(text.clone()))?;
                ack(&mut out, &text);
            }
            Ok(())
        })();
        match outcome {
            Ok(()) => {
                let _ = claim.release();
            }
            Err(Error::Fenced { .. } | Error::ClaimLost { .. }) => say(&mut out, "fenced"),
            Err(e) => {
                say(&mut out, &format!("error {e}"));
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

/// The texts of each chaos session's latest evaluation, after the system message.
fn chaos_records(store: &PgStore) -> HashMap<String, Vec<String>> {
    let mut recorded: HashMap<String, Vec<String>> = HashMap::new();
    for i in 0..CHAOS_SESSIONS {
        let key = format!("chaos-{i}");
        let latest = store.latest_evaluation_of(&SessionKey::new(key.clone()), &prompt()).unwrap();
        let texts: Vec<String> = match latest {
            Some(evaluation) => store
                .entries(evaluation)
                .unwrap()
                .into_iter()
                .skip(1)
                .map(|e| e.message.text().into_owned())
                .collect(),
            None => Vec::new(),
        };
        recorded.insert(key, texts);
    }
    recorded
}

/// Eight chaos workers over six sessions for a while: random SIGKILLs (the worker started
/// again), SIGSTOPs past the lease then SIGCONT, and a PostgreSQL restart in the middle.
/// Checks: every acknowledged message is recorded (none lost); in each session the tokens
/// of the messages never go down (no append from a worker fenced by a newer claim); every
/// tool call's side effect happened at most once.
fn chaos_test(server: &PgServer, check: &mut Check) {
    let schema = "chaos";
    let spawn_worker = || spawn(server, schema, "chaos", &[]);
    let collected = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let collect = |child: &mut Child| {
        let lines = Lines::of(child.stdout.take().unwrap());
        let collected = std::sync::Arc::clone(&collected);
        std::thread::spawn(move || {
            while let Some(line) = lines.next() {
                collected.lock().unwrap().push(line);
            }
        });
    };
    let mut workers: Vec<Child> = (0..8).map(|_| spawn_worker()).collect();
    for worker in &mut workers {
        collect(worker);
    }
    let mut random = curator_testkit::processes::Xorshift::new(0x5eed);
    let (mut kills, mut stops, mut restarted) = (0, 0, false);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(24) {
        std::thread::sleep(Duration::from_millis(400 + random.next_u64() % 600));
        let i = usize::try_from(random.next_u64() % 8).unwrap();
        if random.next_u64().is_multiple_of(2) {
            kill(&mut workers[i]);
            workers[i] = spawn_worker();
            collect(&mut workers[i]);
            kills += 1;
        } else {
            signal(&workers[i], "-STOP");
            std::thread::sleep(Duration::from_millis(1_500 + random.next_u64() % 1_500));
            signal(&workers[i], "-CONT");
            stops += 1;
        }
        if !restarted && start.elapsed() > Duration::from_secs(12) {
            server.restart();
            restarted = true;
        }
    }
    for worker in &mut workers {
        kill(worker);
    }
    std::thread::sleep(Duration::from_millis(300));
    let lines = collected.lock().unwrap().clone();
    let store = store(server, schema);
    let recorded = chaos_records(&store);
    // None lost.
    let mut lost = 0;
    let mut acknowledged = 0;
    for line in lines.iter().filter_map(|l| l.strip_prefix("ack ")) {
        let (key, text) = line.split_once(' ').unwrap();
        acknowledged += 1;
        if !recorded.get(key).is_some_and(|texts| texts.iter().any(|t| t == text)) {
            lost += 1;
        }
    }
    // No append from a fenced worker: tokens never go down within a session.
    let token = |text: &str| -> Option<u64> {
        text.split_whitespace().find_map(|w| w.strip_prefix('t').and_then(|t| t.parse().ok()))
    };
    let mut out_of_order = 0;
    for texts in recorded.values() {
        let tokens: Vec<u64> = texts.iter().filter_map(|t| token(t)).collect();
        out_of_order += tokens.windows(2).filter(|w| w[1] < w[0]).count();
    }
    // No call ran twice.
    let mut effects: HashMap<&str, usize> = HashMap::new();
    for call in lines.iter().filter_map(|l| l.strip_prefix("effect ")) {
        *effects.entry(call).or_default() += 1;
    }
    let twice = effects.values().filter(|&&n| n > 1).count();
    let fenced = lines.iter().filter(|l| *l == "fenced").count();
    let errors = lines.iter().filter(|l| l.starts_with("error ")).count();
    let messages: usize = recorded.values().map(Vec::len).sum();
    check.expect(acknowledged > 100, format!("chaos: only {acknowledged} messages acknowledged"));
    check.expect(lost == 0, format!("chaos: {lost} acknowledged messages lost"));
    check.expect(out_of_order == 0, format!("chaos: {out_of_order} appends from fenced workers"));
    check.expect(twice == 0, format!("chaos: {twice} tool calls ran twice"));
    check.expect(restarted, "chaos: the server was not restarted".to_owned());
    for (key, texts) in &recorded {
        let messages: Vec<Message> = store
            .latest_evaluation_of(&SessionKey::new(key.clone()), &prompt())
            .unwrap()
            .map(|e| store.entries(e).unwrap().into_iter().map(|e| e.message).collect())
            .unwrap_or_default();
        check.expect(
            curator_model::validate::openai(&messages).is_ok()
                || messages.last().is_some_and(|m| !m.tool_calls().is_empty()),
            format!("chaos: {key}'s record is not a valid conversation ({} messages)", texts.len()),
        );
    }
    println!(
        "chaos: 8 workers, {CHAOS_SESSIONS} sessions, {kills} SIGKILLs, {stops} SIGSTOPs past the lease, a PostgreSQL restart: {acknowledged} messages acknowledged, {messages} recorded, {lost} lost, {fenced} fenced runs, {out_of_order} appends from fenced workers, {} tool calls with an effect, {twice} run twice, {errors} store errors",
        effects.len()
    );
}

/// Sends `signal` (`-STOP`, `-CONT`) to a child.
fn signal(child: &Child, signal: &str) {
    let status = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {signal} failed");
}

/// A worker stopped (SIGSTOP) past its lease, another claims the session and appends, the
/// first continues (SIGCONT): its appends are refused, the second's are all there, in order.
fn stopped_past_its_lease_test(server: &PgServer, check: &mut Check) {
    let schema = "fencing";
    let key = "stalled-1";
    let mut child = spawn(server, schema, "stalling", &[("CURATOR_PG_KEY", key.to_owned())]);
    let lines = Lines::of(child.stdout.take().unwrap());
    let first_token: u64 = lines.next().unwrap().trim_start_matches("token ").parse().unwrap();
    let mut acknowledged = Vec::new();
    while acknowledged.len() < 3 {
        let line = lines.next().unwrap();
        acknowledged.push(line.trim_start_matches("appended ").to_owned());
    }
    signal(&child, "-STOP");
    std::thread::sleep(Duration::from_millis(1_500));
    // The lease ran out: another worker takes the session over (in a thread, in case the
    // stopped one holds the claim's row in an unfinished append: then this waits for it).
    let takeover = {
        let store = store(server, schema);
        std::thread::spawn(move || {
            let key = SessionKey::new(key);
            let claim = store.claim(&key, Duration::from_secs(30)).unwrap();
            let mut c = Conversation::open(&store, key, prompt(), Message::system("s"))
                .unwrap()
                .with_fence(claim.fence().unwrap());
            for n in 1..=3 {
                c.add_user(format!("b{n}")).unwrap();
            }
            (claim, c.history().messages().len())
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, "-CONT");
    let (claim, _) = takeover.join().unwrap();
    let mut fenced = None;
    // Unfenced, the worker would append for ever: a few lines are enough to tell.
    for _ in 0..10 {
        let Some(line) = lines.next() else { break };
        if let Some(rest) = line.strip_prefix("appended ") {
            acknowledged.push(rest.to_owned());
        } else if line.starts_with("fenced") {
            fenced = Some(line);
            break;
        }
    }
    if fenced.is_some() {
        let status = child.wait().unwrap();
        check.expect(status.success(), format!("the stopped worker ended with {status}"));
    } else {
        kill(&mut child);
    }
    check.expect(fenced.is_some(), "the stopped worker was never fenced".to_owned());
    check.expect(claim.fence().unwrap().token > first_token, "the new token is larger".to_owned());
    let c = Conversation::open(store(server, schema), key, prompt(), Message::system("s")).unwrap();
    let texts: Vec<String> =
        c.history().messages().iter().skip(1).map(|m| m.text().into_owned()).collect();
    let expected: Vec<String> =
        acknowledged.iter().cloned().chain((1..=3).map(|n| format!("b{n}"))).collect();
    check.expect(
        texts == expected,
        format!("the record holds every acknowledged message, the stalled worker's before the new holder's, and nothing else: {texts:?}"),
    );
    println!(
        "a worker stopped past its lease: {} messages before, fenced after ({}); the new holder's 3 kept",
        acknowledged.len(),
        fenced.unwrap_or_default()
    );
}

/// Starts a child in `mode` with `env`, its output piped.
fn spawn(server: &PgServer, schema: &str, mode: &str, env: &[(&str, String)]) -> Child {
    let mut command = ROLES.command(mode);
    command
        .env("CURATOR_PG_URL", server.url())
        .env("CURATOR_PG_SCHEMA", schema)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    command.spawn().unwrap()
}

fn store(server: &PgServer, schema: &str) -> PgStore {
    PgStore::open(PgOptions::from_url(&server.url()).unwrap().with_schema(schema).unwrap()).unwrap()
}

/// Eight workers append to eight sessions at once; every acknowledged message is there.
fn eight_workers_test(server: &PgServer, check: &mut Check) {
    let schema = "eight_workers";
    let limit = 300;
    let children: Vec<Child> = (0..8)
        .map(|i| {
            spawn(
                server,
                schema,
                "appender",
                &[
                    ("CURATOR_PG_KEY", format!("worker-{i}")),
                    ("CURATOR_PG_LIMIT", limit.to_string()),
                ],
            )
        })
        .collect();
    let store = store(server, schema);
    let mut acknowledged = 0;
    for (i, child) in children.into_iter().enumerate() {
        let output = child.wait_with_output().unwrap();
        check.expect(
            output.status.success(),
            format!("worker {i} failed: {}", String::from_utf8_lossy(&output.stderr)),
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        let acks: Vec<(&str, u64)> = stdout
            .lines()
            .map(|l| {
                let (e, s) = l.split_once(' ').unwrap();
                (e, s.parse().unwrap())
            })
            .collect();
        let Some(&(evaluation, _)) = acks.first() else {
            check.expect(false, format!("worker {i} acknowledged nothing"));
            continue;
        };
        let evaluation: EvaluationId = evaluation.parse().unwrap();
        let recorded: Vec<u64> =
            store.entries(evaluation).unwrap().iter().map(|e| e.sequence).collect();
        let sequences: Vec<u64> = acks.iter().map(|a| a.1).collect();
        check.expect(
            recorded == sequences && recorded.len() as u64 == limit,
            format!("worker {i}: {} acknowledged, {} recorded", sequences.len(), recorded.len()),
        );
        let summary = store.evaluation(evaluation).unwrap().unwrap();
        check.expect(
            summary.key == SessionKey::new(format!("worker-{i}")),
            format!("worker {i}: recorded under {}", summary.key),
        );
        acknowledged += acks.len();
    }
    println!(
        "eight workers, eight sessions at once: {acknowledged} messages acknowledged, all present"
    );
}

/// Two processes append to one evaluation, racing for its places: every acknowledged
/// message is there exactly once, and the sequences have no gap.
fn same_evaluation_test(server: &PgServer, check: &mut Check) {
    let schema = "same_evaluation";
    let store = store(server, schema);
    let key = SessionKey::new("shared");
    let evaluation = EvaluationId::new();
    store
        .append(
            &key,
            &Entry::builder(evaluation, Message::system("s")).prompt(prompt()).build().unwrap(),
        )
        .unwrap();
    let count = 250;
    let children: Vec<Child> = (0..2)
        .map(|_| {
            spawn(
                server,
                schema,
                "racer",
                &[
                    ("CURATOR_PG_KEY", key.to_string()),
                    ("CURATOR_PG_EVALUATION", evaluation.to_string()),
                    ("CURATOR_PG_LIMIT", count.to_string()),
                ],
            )
        })
        .collect();
    let mut acked: Vec<String> = Vec::new();
    for child in children {
        let output = child.wait_with_output().unwrap();
        check.expect(
            output.status.success(),
            format!("a racer failed: {}", String::from_utf8_lossy(&output.stderr)),
        );
        acked.extend(String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned));
    }
    let entries = store.entries(evaluation).unwrap();
    let mut times: HashMap<String, usize> = HashMap::new();
    for e in &entries {
        *times.entry(e.id.to_string()).or_default() += 1;
    }
    let wrong: Vec<&String> = acked.iter().filter(|id| times.get(*id) != Some(&1)).collect();
    check.expect(wrong.is_empty(), format!("acknowledged but not there exactly once: {wrong:?}"));
    let sequences: Vec<u64> = entries.iter().map(|e| e.sequence).collect();
    check.expect(
        sequences == (0..sequences.len() as u64).collect::<Vec<_>>(),
        "the sequences have a gap".into(),
    );
    check.expect(
        acked.len() == 2 * count && entries.len() == acked.len() + 1,
        format!("{} acknowledged, {} recorded", acked.len(), entries.len()),
    );
    println!(
        "two processes, one evaluation: {} messages acknowledged, each recorded exactly once",
        acked.len()
    );
}

/// Starts an agent, returning it and its lines.
fn agent_child(
    server: &PgServer,
    schema: &str,
    key: &str,
    log: &Path,
    lease: Duration,
    wait: Duration,
    hang: &str,
) -> (Child, Lines) {
    let mut child = spawn(
        server,
        schema,
        "agent",
        &[
            ("CURATOR_PG_KEY", key.to_owned()),
            ("CURATOR_PG_LEASE_MS", lease.as_millis().to_string()),
            ("CURATOR_PG_WAIT_MS", wait.as_millis().to_string()),
            ("CURATOR_PG_HANG", hang.to_owned()),
            ("CURATOR_PG_LOG", log.display().to_string()),
        ],
    );
    let lines = Lines::of(child.stdout.take().unwrap());
    (child, lines)
}

/// A worker killed mid-tool-call is resumed by another process at once, without waiting out
/// its five-minute lease (its connection closed, and with it the lock that marked it alive),
/// which re-runs exactly the pending call; a second resumer racing the live one is refused;
/// the resumer, killed mid-call in turn, is taken over by a third worker at once too.
fn kill_and_take_over_test(server: &PgServer, check: &mut Check) {
    let schema = "take_over";
    let dir = tempfile::tempdir().unwrap();
    let lease = Duration::from_mins(5);
    let wait = Duration::from_secs(30);
    for round in 0..3 {
        let key = format!("ticket-{round}");
        let log = dir.path().join(format!("{key}.log"));
        let claimed_after =
            |line: Option<String>| -> Option<u128> { line?.strip_prefix("claimed ")?.parse().ok() };

        // The first worker runs c1, starts c2 and is killed in the middle of it.
        let (mut first, lines) =
            agent_child(server, schema, &key, &log, lease, Duration::ZERO, "c2");
        check.expect(claimed_after(lines.next()).is_some(), format!("{key}: first not claimed"));
        let said = lines.next();
        check.expect(
            said.as_deref() == Some(&format!("in-call {key}-c2")),
            format!("{key}: {said:?}"),
        );
        kill(&mut first);

        // The resumer takes over without waiting for the lease, re-runs only c2, and hangs in
        // c3.
        let (mut second, lines) = agent_child(server, schema, &key, &log, lease, wait, "c3");
        let waited = claimed_after(lines.next());
        check.expect(
            waited.is_some_and(|ms| ms < 10_000),
            format!("{key}: the resumer claimed after {waited:?} ms (the lease is 300 s)"),
        );
        let said = lines.next();
        check.expect(
            said.as_deref() == Some(&format!("in-call {key}-c3")),
            format!("{key}: {said:?}"),
        );

        // A racer is refused while the resumer lives.
        let (racer, lines) = agent_child(server, schema, &key, &log, lease, Duration::ZERO, "");
        let said = lines.next();
        check.expect(said.as_deref() == Some("refused"), format!("{key}: the racer said {said:?}"));
        let output = racer.wait_with_output().unwrap();
        check.expect(output.status.success(), format!("{key}: the racer failed"));

        // The resumer dies too; a third worker takes over at once and finishes.
        kill(&mut second);
        let (third, lines) = agent_child(server, schema, &key, &log, lease, wait, "");
        let waited = claimed_after(lines.next());
        check.expect(
            waited.is_some_and(|ms| ms < 10_000),
            format!("{key}: the third worker claimed after {waited:?} ms"),
        );
        let said = lines.next();
        check
            .expect(said.as_deref() == Some("finished"), format!("{key}: the third said {said:?}"));
        let output = third.wait_with_output().unwrap();
        check.expect(
            output.status.success(),
            format!("{key}: the third failed: {}", String::from_utf8_lossy(&output.stderr)),
        );

        // c1 ran once; c2 and c3 ran twice (once by the worker killed in them, once after).
        let log = std::fs::read_to_string(&log).unwrap();
        let starts = |call: &str| {
            log.lines().filter(|l| l.split(' ').nth(1) == Some(&format!("{key}-{call}"))).count()
        };
        check.expect(
            (starts("c1"), starts("c2"), starts("c3")) == (1, 2, 2),
            format!("{key}: calls started {:?}", (starts("c1"), starts("c2"), starts("c3"))),
        );
        let store = store(server, schema);
        let c = Conversation::resume(&store, key.as_str(), &prompt()).unwrap();
        let record = store.entries(c.evaluation_id()).unwrap();
        let messages: Vec<Message> = record.iter().map(|e| e.message.clone()).collect();
        let results: Vec<String> =
            messages.iter().filter_map(Message::tool_call_id).map(str::to_owned).collect();
        check.expect(
            results == [format!("{key}-c1"), format!("{key}-c2"), format!("{key}-c3")],
            format!("{key}: results recorded {results:?}"),
        );
        check.expect(matches!(c.next_step(), Action::Finished(_)), format!("{key}: not finished"));
        check.expect(
            curator_model::validate::openai(&messages).is_ok(),
            format!("{key}: invalid record"),
        );
        println!(
            "{key}: killed mid-call twice; resumed at once each time (lease 300 s), each pending call re-run once, a racer refused"
        );
    }
}

fn main() {
    if let Some(mode) = ROLES.role() {
        let limit = || var("CURATOR_PG_LIMIT").parse().unwrap();
        match mode.as_str() {
            "appender" => appender(limit()),
            "racer" => racer(limit() as usize),
            "agent" => agent(),
            "stalling" => stalling(),
            "chaos" => chaos_worker(),
            other => panic!("unknown child mode {other}"),
        }
        return;
    }
    let Some(server) = PgServer::start() else { return };
    let mut check = Check::new();
    eight_workers_test(&server, &mut check);
    same_evaluation_test(&server, &mut check);
    kill_and_take_over_test(&server, &mut check);
    stopped_past_its_lease_test(&server, &mut check);
    chaos_test(&server, &mut check);
    drop(server);
    check.finish();
}
