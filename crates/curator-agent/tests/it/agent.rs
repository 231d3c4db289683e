//! `Agent` (issue 32): parallel tools killed at every point resume exactly once, a repeated
//! message id returns its own answer, a tool stops the run, secrets never reach the store.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use curator::sqlite::SqliteStore;
use curator_agent::{Agent, AgentEnd, ToolError, Tools};
use curator_client::{ClientError, ModelClient, ModelReply, ModelRequest};
use curator_model::{Message, Role, ToolCall};
use curator_session::{Conversation, Error, Keyed, MemoryStore, ResumePolicy, SessionStore};
use curator_strategies::Redactor;
use curator_testkit::processes::{Lines, kill, say};
use serde_json::json;

/// A stand-in model: the first call of a turn asks for three calls at once (`a`, `b`, `c`),
/// then it answers with what they gave. Counts its calls.
#[derive(Clone, Default)]
struct Model {
    calls: Arc<AtomicUsize>,
}

impl ModelClient for Model {
    fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelReply, ClientError> {
        point("model");
        self.calls.fetch_add(1, Ordering::SeqCst);
        let last = request.messages.last().unwrap();
        let reply = if last.role() == Role::Tool {
            let results: Vec<String> = request
                .messages
                .iter()
                .filter(|m| m.role() == Role::Tool)
                .map(|m| m.text().into_owned())
                .collect();
            Message::assistant(format!("done: {}", results.join(", ")))
        } else {
            let turn = request.messages.iter().filter(|m| m.role() == Role::User).count();
            Message::assistant_with_calls(
                None,
                ["a", "b", "c"]
                    .iter()
                    .map(|n| {
                        ToolCall::new(format!("{n}{turn}"), "effect", format!(r#"{{"n":"{n}"}}"#))
                    })
                    .collect(),
            )
        };
        point("model");
        Ok(ModelReply::new(reply))
    }
}

/// A kill point of the child: the child announces point k and waits to be killed.
fn point(_what: &str) {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let Ok(at) = std::env::var("CURATOR_AGENT_KILL_AT") else { return };
    let k = COUNT.fetch_add(1, Ordering::SeqCst) + 1;
    if at.parse::<usize>().ok() == Some(k) {
        say(&mut std::io::stdout(), &format!("\n[child] at {k}"));
        std::thread::sleep(std::time::Duration::from_mins(2));
    }
}

/// The side effects, one line per effect, appended and synced.
fn effects(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap_or_default().lines().map(str::to_owned).collect()
}

/// A tool with a side effect (a line in `log`). `idempotent`: a call that may have started
/// before (`started`) checks the log for its id, as a payment checks its idempotency key.
fn tools(log: &Path, idempotent: bool) -> Tools {
    let log = log.to_owned();
    Tools::new().add_with_context(
        "effect",
        "Has an effect.",
        json!({"type": "object"}),
        move |input| {
            let id = input.context.call_id().to_owned();
            point("tool");
            let done = idempotent && input.context.started && effects(&log).contains(&id);
            if !done {
                let mut file =
                    std::fs::OpenOptions::new().create(true).append(true).open(&log).unwrap();
                // One write per line: the three tools append at once.
                file.write_all(format!("{id}\n").as_bytes()).unwrap();
                file.sync_all().unwrap();
            }
            point("tool");
            Ok(format!("{} ok", input.args["n"].as_str().unwrap_or("?")))
        },
    )
}

fn agent(log: &Path, policy: ResumePolicy, idempotent: bool, model: Model) -> Agent {
    Agent::new(model, tools(log, idempotent)).system("You have effects.").resume_policy(policy)
}

/// Runs in the child process only: asks once on the SQLite file, until killed.
#[test]
fn child_asks_the_agent() {
    let Ok(spec) = std::env::var("CURATOR_AGENT_CHILD") else { return };
    let mut parts = spec.splitn(3, '|');
    let (policy, db, log) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
    let (policy, idempotent) = policy_of(policy);
    let agent = agent(Path::new(log), policy, idempotent, Model::default());
    agent.ask(SqliteStore::open(db).unwrap(), "user-1", "m1", "have effects").unwrap();
    say(&mut std::io::stdout(), "\n[child] done");
}

fn policy_of(name: &str) -> (ResumePolicy, bool) {
    match name {
        "rerun" => (ResumePolicy::Rerun, true),
        _ => (ResumePolicy::AnswerInterrupted, false),
    }
}

/// Starts a child that stops at point `k`; `true` when it got there (and was killed).
fn run_child_until(policy: &str, db: &Path, log: &Path, k: usize) -> bool {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "agent::child_asks_the_agent", "--test-threads=1", "--nocapture"])
        .env("CURATOR_AGENT_CHILD", format!("{policy}|{}|{}", db.display(), log.display()))
        .env("CURATOR_AGENT_KILL_AT", k.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = Lines::of(child.stdout.take().unwrap());
    loop {
        let Some(line) = lines.next() else {
            kill(&mut child);
            panic!("the child said nothing for a minute");
        };
        if line.starts_with("[child] at ") {
            kill(&mut child);
            return true;
        }
        if line.starts_with("[child] done") {
            assert!(child.wait().unwrap().success());
            return false;
        }
    }
}

/// Kills a child at every point (before and after each model call and each tool's effect,
/// the three tools running at once), resumes in this process, and checks the side effects.
fn killed_at_every_point(policy: &str) {
    let mut k = 1;
    loop {
        let dir = tempfile::tempdir().unwrap();
        let (db, log) = (dir.path().join("agent.db"), dir.path().join("effects.log"));
        if !run_child_until(policy, &db, &log, k) {
            break;
        }
        let (resume_policy, idempotent) = policy_of(policy);
        let model = Model::default();
        let agent = agent(&log, resume_policy, idempotent, model.clone());
        let outcome =
            agent.ask(SqliteStore::open(&db).unwrap(), "user-1", "m1", "have effects").unwrap();
        let effects = effects(&log);
        let store = SqliteStore::open(&db).unwrap();
        let evaluation = store.evaluations().unwrap()[0].evaluation_id;
        let record: Vec<Message> =
            store.entries(evaluation).unwrap().into_iter().map(|e| e.message).collect();
        let interrupted: Vec<&str> = record
            .iter()
            .filter(|m| m.is_error() && m.text().contains("was interrupted"))
            .filter_map(|m| m.tool_call_id())
            .collect();
        for id in ["a1", "b1", "c1"] {
            let count = effects.iter().filter(|e| *e == id).count();
            if policy == "rerun" {
                // Re-run, and the tool's idempotency key holds: exactly once.
                assert_eq!(count, 1, "point {k}: {id} ran {count} times: {effects:?}");
            } else {
                // Answered as interrupted: at most once, and exactly once unless it was
                // interrupted while it ran.
                assert!(count <= 1, "point {k}: {id} ran {count} times: {effects:?}");
                assert!(
                    count == 1 || interrupted.contains(&id),
                    "point {k}: {id} never ran and was not answered as interrupted: {record:?}"
                );
            }
        }
        // Exactly one answer was recorded, and it is what the resumed ask returned.
        let answers: Vec<&Message> = record
            .iter()
            .filter(|m| m.role() == Role::Assistant && m.tool_calls().is_empty())
            .collect();
        assert_eq!(answers.len(), 1, "point {k}: {record:?}");
        assert_eq!(outcome.end, AgentEnd::Answered(answers[0].clone()), "point {k}");
        assert!(answers[0].text().starts_with("done: "), "point {k}");
        // A call recorded with its result never ran again: one result per call.
        for id in ["a1", "b1", "c1"] {
            let results = record.iter().filter(|m| m.tool_call_id() == Some(id)).count();
            assert_eq!(results, 1, "point {k}: {id} has {results} results");
        }
        k += 1;
    }
    // Two points per model call (two calls) and per tool (three tools).
    assert_eq!(k - 1, 2 * 2 + 2 * 3, "every point was a kill point");
}

#[test]
fn parallel_tools_killed_at_every_point_rerun_exactly_once_with_an_idempotency_key() {
    killed_at_every_point("rerun");
}

#[test]
fn parallel_tools_killed_at_every_point_run_at_most_once_when_interrupted_calls_are_answered() {
    killed_at_every_point("answer");
}

#[test]
fn calls_that_never_started_are_run_not_answered_as_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("effects.log");
    let store = MemoryStore::new();
    let agent = agent(&log, ResumePolicy::AnswerInterrupted, false, Model::default());
    // A crash right after the reply was recorded: no call started.
    {
        let mut c = Conversation::open(
            &store,
            "user-1",
            curator_model::PromptRef::new("agent", "default"),
            Message::system("You have effects."),
        )
        .unwrap()
        .with_start_marks()
        .unwrap();
        assert_eq!(c.add_user_keyed("m1", "have effects").unwrap(), Keyed::New);
        c.record_assistant(Message::assistant_with_calls(
            None,
            vec![
                ToolCall::new("a1", "effect", r#"{"n":"a"}"#),
                ToolCall::new("b1", "effect", r#"{"n":"b"}"#),
            ],
        ))
        .unwrap();
        c.mark_started(&["a1"]).unwrap();
    }
    let outcome = agent.ask(&store, "user-1", "m1", "have effects").unwrap();
    assert_eq!(
        outcome.text(),
        "done: The call to `effect` was interrupted before it finished and was not run again; its effects, if any, are unknown., b ok"
    );
    // `b1` never started: it ran; `a1` had started: it was answered, not run again.
    assert_eq!(effects(&log), ["b1"]);
}

#[test]
fn a_repeated_message_id_returns_its_own_answer_and_a_new_one_waits_for_the_turn_before() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("effects.log");
    let model = Model::default();
    let agent = agent(&log, ResumePolicy::Rerun, true, model.clone());
    let store = MemoryStore::new();
    let first = agent.ask(&store, "user-1", "job-1", "first").unwrap();
    let second = agent.ask(&store, "user-1", "job-2", "second").unwrap();
    assert_ne!(first, second);
    assert_eq!(model.calls.load(Ordering::SeqCst), 4);
    // Redelivered, each job gets its own answer, not the latest one, and the model is not
    // called again.
    assert_eq!(agent.ask(&store, "user-1", "job-1", "first").unwrap().end, first.end);
    assert_eq!(agent.ask(&store, "user-1", "job-2", "second").unwrap().end, second.end);
    assert_eq!(model.calls.load(Ordering::SeqCst), 4);
    assert_eq!(effects(&log).len(), 6);
    // A job whose turn was cut short (the model failed) is finished by the next ask, before
    // the next job's message is recorded: nothing is ignored.
    let failing = Agent::new(Failing, Tools::new());
    assert!(matches!(failing.ask(&store, "user-2", "job-3", "third"), Err(Error::Provider(_))));
    let echo = Agent::new(Echo, Tools::new());
    let outcome = echo.ask(&store, "user-2", "job-4", "fourth").unwrap();
    assert_eq!(outcome.text(), "echo: fourth");
    let mut c = Conversation::open(
        &store,
        "user-2",
        curator_model::PromptRef::new("agent", "default"),
        Message::system(""),
    )
    .unwrap();
    assert_eq!(c.answer_to("job-3").map(|m| m.text().into_owned()).as_deref(), Some("echo: third"));
    assert_eq!(
        c.add_user_keyed("job-4", "fourth").unwrap(),
        Keyed::Answered(Message::assistant("echo: fourth"))
    );
}

struct Failing;
impl ModelClient for Failing {
    fn complete(&self, _request: &ModelRequest<'_>) -> Result<ModelReply, ClientError> {
        Err(ClientError::MalformedReply {
            provider: "test",
            field: None,
            detail: "down".into(),
            source: None,
        })
    }
}

struct Echo;
impl ModelClient for Echo {
    fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelReply, ClientError> {
        let last = request.messages.iter().rev().find(|m| m.role() == Role::User).unwrap();
        Ok(ModelReply::new(Message::assistant(format!("echo: {}", last.text()))))
    }
}

#[test]
fn a_tool_can_stop_the_run_and_the_next_run_resumes_its_call() {
    let stop = Arc::new(AtomicUsize::new(1));
    let stops = Arc::clone(&stop);
    let tools = Tools::new().add_with_context(
        "effect",
        "Has an effect.",
        json!({"type": "object"}),
        move |input| {
            if stops.fetch_sub(1, Ordering::SeqCst) == 1 {
                return Err(ToolError::stop("the claim was lost"));
            }
            Ok(format!(
                "{} ok (started before: {})",
                input.args["n"].as_str().unwrap_or("?"),
                input.context.started
            ))
        },
    );
    let agent = Agent::new(Model::default(), tools);
    let store = MemoryStore::new();
    let outcome = agent.ask(&store, "user-1", "m1", "go").unwrap();
    let AgentEnd::Stopped { call_id, tool, reason } = &outcome.end else { panic!("{outcome:?}") };
    assert_eq!((tool.as_str(), reason.as_str()), ("effect", "the claim was lost"));
    // The stopped call has no result; the others were recorded.
    let c = Conversation::open(
        &store,
        "user-1",
        curator_model::PromptRef::new("agent", "default"),
        Message::system(""),
    )
    .unwrap();
    assert_eq!(c.pending_tool_calls().len(), 1);
    assert_eq!(c.pending_tool_calls()[0].id(), call_id);
    // The next ask resumes it (it had started: the tool is told) and answers.
    let outcome = agent.ask(&store, "user-1", "m1", "go").unwrap();
    assert!(outcome.text().contains("ok (started before: true)"), "{outcome:?}");
}

/// A model that repeats the secret it was told, in a tool call and in its answer.
struct Leaky;
impl ModelClient for Leaky {
    fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelReply, ClientError> {
        let secret = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3i";
        Ok(ModelReply::new(if request.messages.last().unwrap().role() == Role::Tool {
            Message::assistant(format!("Your key {secret} is fine."))
        } else {
            Message::assistant_with_calls(
                None,
                vec![ToolCall::new("c1", "effect", format!(r#"{{"key":"{secret}"}}"#))],
            )
        }))
    }
}

#[test]
fn secrets_redacted_before_recording_are_absent_from_the_raw_sqlite_files() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("agent.db");
    let secret = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3i";
    let seen = Arc::new(std::sync::Mutex::new(String::new()));
    let seen_by_tool = Arc::clone(&seen);
    let tools =
        Tools::new().add("effect", "Has an effect.", json!({"type": "object"}), move |args| {
            *seen_by_tool.lock().unwrap() = args.to_string();
            Ok(format!("the key {secret} works"))
        });
    let agent = Agent::new(Leaky, tools).redact_before_recording(Redactor::new());
    let store = SqliteStore::open(&db).unwrap();
    let outcome = agent.ask(&store, "user-1", "m1", &format!("check my key {secret}")).unwrap();
    // The caller gets the answer redacted as recorded; the tool ran with the real argument.
    assert_eq!(outcome.text(), "Your key [REDACTED:openai_key] is fine.");
    assert!(seen.lock().unwrap().contains(secret));
    // The database, its WAL and shared memory while open, then what is left once closed.
    let check = || {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            assert!(
                !bytes.windows(12).any(|w| w == b"Ab3dEf6hIj9k"),
                "{} holds the secret",
                path.display()
            );
            files.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
        files
    };
    let open = check();
    assert!(open.iter().any(|f| f.ends_with("-wal")), "{open:?}");
    drop(store);
    assert!(check().contains(&"agent.db".to_owned()));
}

/// A model that answers as `reply` says from the request's messages.
struct Script<F>(F);

impl<F: Fn(&[Message]) -> Message + Send + Sync> ModelClient for Script<F> {
    fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelReply, ClientError> {
        Ok(ModelReply::new((self.0)(request.messages)))
    }
}

fn prompt() -> curator_model::PromptRef {
    curator_model::PromptRef::new("agent", "default")
}

/// Two calls per turn (`pay`, `notify`), then an answer.
fn pay_and_notify(messages: &[Message]) -> Message {
    if messages.last().is_some_and(|m| m.role() == Role::Tool) {
        return Message::assistant("paid and notified");
    }
    let n = messages.iter().filter(|m| m.role() == Role::User).count();
    Message::assistant_with_calls(
        None,
        vec![
            ToolCall::new(format!("pay{n}"), "pay", "{}"),
            ToolCall::new(format!("notify{n}"), "notify", "{}"),
        ],
    )
}

#[test]
fn a_finished_parallel_result_is_recorded_while_another_tool_still_runs() {
    let store = Arc::new(MemoryStore::new());
    let (release, wait) = std::sync::mpsc::channel::<()>();
    let wait = std::sync::Mutex::new(wait);
    let tools = Tools::new()
        .add("pay", "Pays.", json!({"type": "object"}), move |_| {
            wait.lock().unwrap().recv().unwrap();
            Ok("paid".to_owned())
        })
        .add("notify", "Notifies.", json!({"type": "object"}), |_| Ok("notified".to_owned()));
    let agent = Agent::new(Script(pay_and_notify), tools);
    let running = {
        let (agent, store) = (agent.clone(), Arc::clone(&store));
        std::thread::spawn(move || agent.ask(store, "user-1", "m1", "pay").unwrap())
    };
    // While `pay` runs, `notify`'s result is already in the store.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let evaluations = store.evaluations().unwrap();
        let recorded =
            evaluations.first().map_or(Vec::new(), |e| store.entries(e.evaluation_id).unwrap());
        if recorded.iter().any(|e| e.message.tool_call_id() == Some("notify1")) {
            assert!(!recorded.iter().any(|e| e.message.tool_call_id() == Some("pay1")));
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "notify's result was not recorded while pay ran"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    release.send(()).unwrap();
    assert_eq!(running.join().unwrap().text(), "paid and notified");
}

#[test]
fn two_asks_on_one_session_at_once_run_each_call_once_and_answer_both() {
    let store = Arc::new(MemoryStore::new());
    let pays = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&pays);
    let tools = Tools::new()
        .add("pay", "Pays.", json!({"type": "object"}), move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(200));
            Ok("paid".to_owned())
        })
        .add("notify", "Notifies.", json!({"type": "object"}), |_| Ok("notified".to_owned()));
    let agent = Agent::new(Script(pay_and_notify), tools);
    let threads: Vec<_> = ["m1", "m2", "m1"]
        .into_iter()
        .map(|id| {
            let (agent, store) = (agent.clone(), Arc::clone(&store));
            std::thread::spawn(move || agent.ask(store, "user-1", id, id).unwrap())
        })
        .collect();
    for thread in threads {
        assert_eq!(thread.join().unwrap().text(), "paid and notified");
    }
    // One pay per message: m1 asked twice at once ran once.
    assert_eq!(pays.load(Ordering::SeqCst), 2);
    let c = Conversation::open(&*store, "user-1", prompt(), Message::system("")).unwrap();
    assert!(c.answer_to("m1").is_some() && c.answer_to("m2").is_some());
}

#[test]
fn an_empty_reply_or_message_is_refused_and_nothing_is_recorded() {
    let empty_once = Arc::new(AtomicUsize::new(0));
    let calls = Arc::clone(&empty_once);
    let agent = Agent::new(
        Script(move |_: &[Message]| {
            if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                Message::assistant("")
            } else {
                Message::assistant("hello")
            }
        }),
        Tools::new(),
    );
    let store = MemoryStore::new();
    assert!(matches!(agent.ask(&store, "user-1", "m0", "  "), Err(Error::EmptyMessage)));
    let err = agent.ask(&store, "user-1", "m1", "hi").unwrap_err();
    assert!(matches!(err, Error::EmptyReply), "{err}");
    let c = Conversation::open(&store, "user-1", prompt(), Message::system("")).unwrap();
    assert_eq!(c.history().len(), 2, "the system message and `hi`: no empty message recorded");
    // Asked again, the model is called again and answers.
    assert_eq!(agent.ask(&store, "user-1", "m1", "hi").unwrap().text(), "hello");
}

#[test]
fn a_new_message_after_a_turn_out_of_turns_is_recorded_and_after_a_stopped_one_refused() {
    // A model that always calls a tool.
    let looping = |messages: &[Message]| {
        let n = messages.iter().filter(|m| m.role() == Role::Assistant).count();
        Message::assistant_with_calls(None, vec![ToolCall::new(format!("c{n}"), "look", "{}")])
    };
    let tools =
        Tools::new().add("look", "Looks.", json!({"type": "object"}), |_| Ok("nothing".into()));
    let agent = Agent::new(Script(looping), tools).max_turns(2);
    let store = MemoryStore::new();
    // Out of turns is an error, not an outcome that reads like a reply; `max_turns` bounds
    // the model calls of one ask, an earlier turn finished first included.
    let calls = |store: &MemoryStore| {
        let c = Conversation::open(store, "user-1", prompt(), Message::system("")).unwrap();
        c.history().messages().iter().filter(|m| m.role() == Role::Assistant).count()
    };
    for (message, text) in [("m1", "first"), ("m2", "second")] {
        let before = calls(&store);
        match agent.ask(&store, "user-1", message, text) {
            Err(Error::TurnLimit { max_turns: 2, model_calls: 2, .. }) => {}
            other => panic!("{message}: expected TurnLimit, got {other:?}"),
        }
        assert_eq!(calls(&store) - before, 2, "{message}: two model calls at most");
    }
    let c = Conversation::open(&store, "user-1", prompt(), Message::system("")).unwrap();
    let users: Vec<String> = c
        .history()
        .messages()
        .iter()
        .filter(|m| m.role() == Role::User)
        .map(|m| m.text().into_owned())
        .collect();
    assert_eq!(users, ["first", "second"], "the second message is recorded, not dropped");

    let tools = Tools::new().add("look", "Looks.", json!({"type": "object"}), |_| {
        Err(ToolError::stop("a person must decide"))
    });
    let agent = Agent::new(Script(looping), tools);
    let store = MemoryStore::new();
    assert!(matches!(
        agent.ask(&store, "user-1", "m1", "first").unwrap().end,
        AgentEnd::Stopped { .. }
    ));
    let err = agent.ask(&store, "user-1", "m2", "second").unwrap_err();
    assert!(matches!(err, Error::TurnInProgress { .. }), "{err}");
    assert!(err.to_string().contains("message `m2` was not recorded"), "{err}");
}

#[test]
fn a_worker_whose_claim_ran_out_during_a_tool_records_nothing_more() {
    use curator_session::ClaimStore as _;
    let store = Arc::new(MemoryStore::new());
    let (started, tool_started) = std::sync::mpsc::channel::<()>();
    let started = std::sync::Mutex::new(started);
    let tools = Tools::new().add("slow", "Is slow.", json!({"type": "object"}), move |_| {
        started.lock().unwrap().send(()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(600));
        Ok("done".to_owned())
    });
    let one_call = |messages: &[Message]| match messages.last().map(Message::role) {
        Some(Role::Tool) => Message::assistant("finished"),
        _ => Message::assistant_with_calls(None, vec![ToolCall::new("s1", "slow", "{}")]),
    };
    let agent = Agent::new(Script(one_call), tools)
        .claim(std::time::Duration::from_millis(200), std::time::Duration::ZERO);
    let worker = {
        let (agent, store) = (agent.clone(), Arc::clone(&store));
        std::thread::spawn(move || agent.ask_claimed(store, "user-1", "m1", "go"))
    };
    tool_started.recv().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    // The lease ran out: another worker takes the session.
    let taken = store.claim(&"user-1".into(), std::time::Duration::from_secs(30)).unwrap();
    let err = worker.join().unwrap().unwrap_err();
    assert!(matches!(err, Error::ClaimLost { .. }), "{err}");
    let c = Conversation::open(&*store, "user-1", prompt(), Message::system("")).unwrap();
    assert_eq!(c.pending_tool_calls().len(), 1, "the result of the lost worker was not recorded");
    taken.release().unwrap();
}

#[test]
fn reused_empty_or_repeated_call_ids_are_made_unique_and_every_call_runs() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    let tools = Tools::new().add("poll", "Polls.", json!({"type": "object"}), move |_| {
        Ok(format!("poll {}", counted.fetch_add(1, Ordering::SeqCst) + 1))
    });
    // A server that numbers calls from 0 every turn, and gives two calls one id.
    let model = |messages: &[Message]| {
        let results = messages.iter().filter(|m| m.role() == Role::Tool).count();
        match results {
            // The same call twice: a poll, not a retry.
            0 | 1 => {
                Message::assistant_with_calls(None, vec![ToolCall::new("call_0", "poll", "{}")])
            }
            2 => Message::assistant_with_calls(
                None,
                vec![ToolCall::new("", "poll", "{}"), ToolCall::new("", "poll", "{}")],
            ),
            _ => Message::assistant("polled"),
        }
    };
    let agent = Agent::new(Script(model), tools);
    let store = MemoryStore::new();
    assert_eq!(agent.ask(&store, "user-1", "m1", "poll").unwrap().text(), "polled");
    assert_eq!(runs.load(Ordering::SeqCst), 4);
    let c = Conversation::open(&store, "user-1", prompt(), Message::system("")).unwrap();
    let mut ids: Vec<&str> =
        c.history().messages().iter().filter_map(|m| m.tool_call_id()).collect();
    // The last two calls ran in parallel: each result is recorded as its tool returns.
    ids[2..].sort_unstable();
    assert_eq!(ids, ["call_0", "call_0~1", "call~1", "call~2"]);
}

#[test]
fn a_message_id_given_again_with_another_text_or_against_the_rule_is_refused() {
    let agent = Agent::new(Echo, Tools::new());
    let store = MemoryStore::new();
    agent.ask(&store, "user-1", "m1", "What is 2+2?").unwrap();
    let err = agent.ask(&store, "user-1", "m1", "DELETE my account").unwrap_err();
    assert!(matches!(err, Error::BadMessageId { .. }), "{err}");
    assert!(err.to_string().contains("recorded before with another text"), "{err}");
    for bad in ["", " ", "a\nb"] {
        assert!(
            matches!(agent.ask(&store, "user-1", bad, "x"), Err(Error::BadMessageId { .. })),
            "{bad:?}"
        );
    }
    assert!(matches!(
        agent.ask(&store, "user-1", &"k".repeat(300), "x"),
        Err(Error::BadMessageId { .. })
    ));
}

#[test]
fn a_system_prompt_is_redacted_too_when_the_agent_redacts_before_recording() {
    let store = MemoryStore::new();
    let agent = Agent::new(Echo, Tools::new())
        .system("Use sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3i for lookups.")
        .redact_before_recording(Redactor::new());
    agent.ask(&store, "user-1", "m1", "hi").unwrap();
    let snapshot = store.snapshot_json().unwrap();
    assert!(!snapshot.contains("Ab3dEf6hIj9k"), "{snapshot}");
}

#[test]
fn a_provider_error_says_its_cause() {
    let err =
        Agent::new(Failing, Tools::new()).ask(MemoryStore::new(), "u", "m", "hi").unwrap_err();
    // The error says what failed; its source, the provider's error, says why (once).
    let source = std::error::Error::source(&err).map(ToString::to_string).unwrap_or_default();
    assert!(source.contains("down") && !err.to_string().contains("down"), "{err}: {source}");
}

/// A tool that panics fails its call with its panic's message (the model and the record see
/// why), and the other calls of the batch are unaffected.
#[test]
fn a_panicking_tool_passes_its_message_on() {
    use curator_agent::{ToolError, Tools};
    use curator_session::ToolContext;
    let tools = Tools::new()
        .add("boom", "Panics.", json!({"type": "object"}), |_| panic!("disk full on /var"))
        .add("formatted", "Panics.", json!({"type": "object"}), |_| {
            let n = 3;
            panic!("{n} retries left")
        })
        .add("fine", "Works.", json!({"type": "object"}), |_| Ok("ok".to_owned()));
    let call = |name: &str| ToolContext::new(ToolCall::new(name, name, "{}"));
    let results = tools.run_all(&[call("boom"), call("formatted"), call("fine")]);
    assert_eq!(
        results,
        vec![
            Err(ToolError::Failed("the tool panicked: disk full on /var".to_owned())),
            Err(ToolError::Failed("the tool panicked: 3 retries left".to_owned())),
            Ok("ok".to_owned()),
        ]
    );
    assert_eq!(
        tools.run_one(&call("boom")),
        Err(ToolError::Failed("the tool panicked: disk full on /var".to_owned()))
    );
}

/// A call a tool stopped is answered through the agent, and the turn goes on to its answer;
/// an unknown call is refused by name.
#[test]
fn a_stopped_call_is_answered_through_the_agent() {
    let model = |messages: &[Message]| match messages.last() {
        Some(m) if m.role() == Role::Tool => Message::assistant(format!("done: {}", m.text())),
        _ => Message::assistant_with_calls(None, vec![ToolCall::new("c1", "approve", "{}")]),
    };
    let tools = Tools::new().add("approve", "Needs a person.", json!({"type": "object"}), |_| {
        Err(ToolError::stop("a person must decide"))
    });
    let agent = Agent::new(Script(model), tools);
    let store = MemoryStore::new();
    let outcome = agent.ask(&store, "user-1", "m1", "go").unwrap();
    let AgentEnd::Stopped { call_id, .. } = outcome.end else { panic!("{outcome:?}") };
    let err = agent.answer_call(&store, "user-1", "nope", Ok("yes".into())).unwrap_err();
    assert!(matches!(err, Error::UnknownToolCall { .. }), "{err}");
    let outcome = agent.answer_call(&store, "user-1", &call_id, Err("refused".into())).unwrap();
    assert_eq!(outcome.text(), "done: refused");
    assert_eq!(outcome.model_calls, 1);
    // The next message is answered as usual.
    let c = Conversation::open(&store, "user-1", prompt(), Message::system("")).unwrap();
    assert!(c.pending_tool_calls().is_empty());
}
