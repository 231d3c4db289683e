//! Loops resume like conversations do: the next input and a nested loop's state are part of
//! the checkpoint, a loop killed at any step resumes in another process as the uninterrupted
//! run goes on, and one process at a time drives a loop session.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use curator_loop::{
    AiTurnSource, ConversationLoop, Error, FnStep, Hitl, Injection, LoopBuilder, LoopConfig,
    LoopOutcome, Parallel, Step, StepOutcome,
};
use curator_model::Message;
use curator_session::{ClaimStore, MemoryStore, SessionStore};
use curator_sqlite::SqliteStore;
use curator_testkit::processes::{Lines, kill, say};

use crate::support::{Calls, texts};

/// The loops under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// One agent whose input is its previous reply.
    ModelOnly,
    /// An agent, then a human.
    Human,
    /// A human, then an agent (a chat: a completed iteration is saved with the next pause).
    Chat,
    /// A nested loop (an agent, then a human, two iterations) then an agent.
    Nested,
    /// A parallel body of two agents, then an agent that reads what they said.
    Parallel,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::ModelOnly => "model-only",
            Kind::Human => "human",
            Kind::Chat => "chat",
            Kind::Nested => "nested",
            Kind::Parallel => "parallel",
        }
    }

    fn parse(name: &str) -> Self {
        match name {
            "model-only" => Kind::ModelOnly,
            "human" => Kind::Human,
            "chat" => Kind::Chat,
            "parallel" => Kind::Parallel,
            _ => Kind::Nested,
        }
    }
}

/// Step boundaries passed in this process (before and after each agent's reply).
static POINTS: AtomicUsize = AtomicUsize::new(0);

/// In a child told to stop at point `k` (`CURATOR_LOOP_KILL_AT`), says so and waits to be
/// killed when point `k` comes.
fn point() {
    let n = POINTS.fetch_add(1, Ordering::SeqCst) + 1;
    if std::env::var("CURATOR_LOOP_KILL_AT").ok().and_then(|k| k.parse().ok()) == Some(n) {
        say(&mut std::io::stdout(), &format!("\n[child] at {n}"));
        std::thread::sleep(Duration::from_mins(10));
    }
}

/// A deterministic agent whose reply depends on everything it is sent, recording it.
fn agent(name: &'static str, calls: &Calls) -> impl Step + 'static {
    let calls = calls.clone();
    FnStep::agent(Injection::Messages, move |call| {
        point();
        calls.lock().unwrap().push(call.messages.to_vec());
        let words: usize = call.messages.iter().map(|m| m.text().split_whitespace().count()).sum();
        let reply =
            format!("{name} {}: {} messages, {words} words", call.iteration, call.messages.len());
        point();
        Ok(StepOutcome::text(reply))
    })
    .with_system(format!("You are {name}."))
}

/// A branch of a parallel body: a deterministic agent with two kill points, which records
/// nothing (its calls run at once with its sibling's, in no fixed order).
fn branch(name: &'static str) -> impl Step + 'static {
    FnStep::agent(Injection::Messages, move |call| {
        point();
        let words: usize = call.messages.iter().map(|m| m.text().split_whitespace().count()).sum();
        let reply = format!("{name} {}: {words} words", call.iteration);
        point();
        Ok(StepOutcome::text(reply))
    })
}

fn conversational(max_iterations: u64) -> LoopConfig {
    let mut config = LoopConfig::conversational();
    config.max_iterations = max_iterations;
    config.ai_turn_source = AiTurnSource::AllAgents;
    config
}

fn build(
    kind: Kind,
    store: impl SessionStore + ClaimStore + 'static,
    calls: &Calls,
) -> ConversationLoop {
    let builder = match kind {
        Kind::ModelOnly => {
            LoopBuilder::new("l", conversational(5)).step("agent", agent("writer", calls))
        }
        Kind::Human => LoopBuilder::new("l", conversational(4))
            .step("agent", agent("interviewer", calls))
            .step("human", Hitl::new("Your answer?")),
        Kind::Chat => LoopBuilder::new("l", conversational(4))
            .step("human", Hitl::new("You?"))
            .step("agent", agent("assistant", calls)),
        Kind::Nested => {
            let inner = LoopBuilder::new("inner", conversational(2))
                .step("agent", agent("researcher", calls))
                .step("human", Hitl::new("Anything to add?"))
                .build()
                .unwrap();
            LoopBuilder::new("l", conversational(3))
                .step("research", inner)
                .step("answer", agent("answerer", calls))
        }
        Kind::Parallel => LoopBuilder::new("l", conversational(3))
            .step(
                "panel",
                Parallel::new(Injection::Messages)
                    .branch("optimist", branch("optimist"))
                    .branch("pessimist", branch("pessimist")),
            )
            .step("judge", agent("judge", calls)),
    };
    builder.store(store, "job-7").build().unwrap()
}

/// Drives a loop to its end the one way every process does: start (or continue) the run,
/// answer every pause.
fn script(l: &mut ConversationLoop) -> LoopOutcome {
    let answer = |l: &ConversationLoop| {
        format!("answer {} after {} turns", l.iteration() + 1, l.turn_count())
    };
    let mut outcome = if l.paused().is_some() {
        let a = answer(l);
        l.resume(&a).unwrap()
    } else {
        l.run("Tell me about the bridge").unwrap()
    };
    while outcome.is_paused() {
        let a = answer(l);
        outcome = l.resume(&a).unwrap();
    }
    outcome
}

/// Runs in the child process only: drives the loop on the SQLite file until killed.
#[test]
fn child_drives_a_loop() {
    let Ok(spec) = std::env::var("CURATOR_LOOP_CHILD") else { return };
    let (kind, db) = spec.split_once(':').unwrap();
    let calls = Calls::default();
    let mut l = build(Kind::parse(kind), SqliteStore::open(db).unwrap(), &calls);
    script(&mut l);
    say(&mut std::io::stdout(), "\n[child] done");
}

/// Starts a child driving `kind` on `db` that stops at point `k`; `true` when it got there
/// (and was killed), `false` when it finished first.
fn run_child_until(kind: Kind, db: &Path, k: usize) -> bool {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "resume::child_drives_a_loop", "--test-threads=1", "--nocapture"])
        .env("CURATOR_LOOP_CHILD", format!("{}:{}", kind.name(), db.display()))
        .env("CURATOR_LOOP_KILL_AT", k.to_string())
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

/// Kills a child at every step boundary of every iteration in turn; each time, this process
/// resumes the loop from the file and must send the requests the uninterrupted run sends
/// from where the checkpoint left it, and end with its turns and outcome.
fn killed_at_every_step(kind: Kind) {
    let reference_calls = Calls::default();
    let mut reference = build(kind, MemoryStore::new(), &reference_calls);
    let expected = script(&mut reference);
    let expected_turns = reference.turns();
    let expected_calls = reference_calls.lock().unwrap().clone();
    drop(reference);

    let mut k = 1;
    loop {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("loop.db");
        if !run_child_until(kind, &db, k) {
            break;
        }
        let calls = Calls::default();
        let mut l = build(kind, SqliteStore::open(&db).unwrap(), &calls);
        let outcome = script(&mut l);
        assert_eq!(outcome, expected, "{kind:?} killed at point {k}");
        assert_eq!(l.turns(), expected_turns, "{kind:?} killed at point {k}");
        let calls = calls.lock().unwrap();
        assert!(
            expected_calls.ends_with(&calls),
            "{kind:?} killed at point {k}: the resumed run sent requests the uninterrupted one did not:\n{:#?}",
            calls.iter().map(|c| texts(c)).collect::<Vec<_>>()
        );
        k += 1;
    }
    // Every boundary of every agent call was a kill point (each branch's too).
    let iterations = match expected {
        LoopOutcome::Finished { iterations, .. } => usize::try_from(iterations).unwrap(),
        _ => 0,
    };
    let branch_calls = if kind == Kind::Parallel { 2 * iterations } else { 0 };
    assert_eq!(k - 1, 2 * (expected_calls.len() + branch_calls), "{kind:?}");
}

#[test]
fn a_model_only_loop_killed_at_any_step_resumes_in_another_process() {
    killed_at_every_step(Kind::ModelOnly);
}

#[test]
fn a_loop_with_a_human_step_killed_at_any_step_resumes_in_another_process() {
    killed_at_every_step(Kind::Human);
}

#[test]
fn a_chat_loop_killed_at_any_step_resumes_in_another_process() {
    killed_at_every_step(Kind::Chat);
}

#[test]
fn a_nested_loop_with_a_human_step_killed_at_any_step_resumes_in_another_process() {
    killed_at_every_step(Kind::Nested);
}

#[test]
fn a_loop_killed_while_the_branches_of_a_parallel_body_run_resumes_in_another_process() {
    killed_at_every_step(Kind::Parallel);
}

#[test]
fn a_failed_iteration_is_continued_with_its_own_input_not_the_new_one() {
    let store = std::sync::Arc::new(MemoryStore::new());
    let fail_at = std::sync::Arc::new(AtomicUsize::new(4));
    let make = |fail_at: std::sync::Arc<AtomicUsize>| {
        LoopBuilder::new("l", conversational(6))
            .step(
                "agent",
                FnStep::agent(Injection::Messages, move |call| {
                    if call.iteration as usize == fail_at.load(Ordering::SeqCst) {
                        return Err("the provider is down".into());
                    }
                    Ok(StepOutcome::text(format!("draft {}", call.iteration)))
                }),
            )
            .store(std::sync::Arc::clone(&store), "k")
            .build()
            .unwrap()
    };
    let mut l = make(std::sync::Arc::clone(&fail_at));
    assert!(matches!(l.run("seed").unwrap_err(), Error::Step { iteration: 4, .. }));
    assert_eq!(l.next_input(), "draft 3");
    assert!(l.is_running() && l.state().running);
    assert_eq!(l.state().input, "draft 3");
    drop(l);
    // A new process, the same call: iteration 4 is sent iteration 3's output, not "seed".
    fail_at.store(0, Ordering::SeqCst);
    let mut l = make(fail_at);
    assert_eq!(l.next_input(), "draft 3");
    let outcome = l.run("seed").unwrap();
    assert_eq!(outcome.output(), Some("draft 6"));
    assert!(!l.is_running());
    // The run ended: the next `run` starts a new one with its own input.
    assert_eq!(l.state().input, "draft 6");
}

#[test]
fn a_model_only_loop_never_sends_the_models_reply_back_as_a_user_message() {
    let calls = Calls::default();
    let mut l = LoopBuilder::new("l", conversational(3))
        .step("agent", agent("writer", &calls))
        .build()
        .unwrap();
    l.run("Write a haiku").unwrap();
    let calls = calls.lock().unwrap();
    assert_eq!(texts(&calls[0]), ["system: You are writer.", "user: Write a haiku"]);
    for call in &calls[1..] {
        let users: Vec<&Message> =
            call.iter().filter(|m| m.role() == curator_model::Role::User).collect();
        assert_eq!(users.len(), 1, "only the seed is a user message: {:?}", texts(call));
        assert_eq!(
            call.last().unwrap().role(),
            curator_model::Role::Assistant,
            "{:?}",
            texts(call)
        );
    }
}

#[test]
fn a_nested_loop_paused_for_a_human_resumes_in_a_new_loop_without_asking_again() {
    let store = std::sync::Arc::new(MemoryStore::new());
    let calls = Calls::default();
    {
        let mut l = build(Kind::Nested, std::sync::Arc::clone(&store), &calls);
        assert_eq!(
            l.run("Tell me about the bridge").unwrap(),
            LoopOutcome::Paused {
                step: "research".into(),
                prompt: Some("Anything to add?".into())
            }
        );
    }
    let before = calls.lock().unwrap().len();
    let mut l = build(Kind::Nested, std::sync::Arc::clone(&store), &calls);
    // The answer goes to the waiting inner loop, which goes on to its second iteration and
    // asks there; it does not start afresh and ask its first question again.
    let outcome = l.resume("the north span").unwrap();
    assert!(outcome.is_paused());
    let calls = calls.lock().unwrap();
    assert_eq!(calls.len(), before + 1);
    let sent = texts(calls.last().unwrap());
    assert!(sent.iter().any(|t| t == "user: the north span"), "{sent:?}");
}

#[test]
fn a_second_loop_on_a_claimed_session_is_refused_not_overwritten() {
    let store = std::sync::Arc::new(MemoryStore::new());
    let calls = Calls::default();
    let first = build(Kind::Human, std::sync::Arc::clone(&store), &calls);
    let err = LoopBuilder::new("l", conversational(4))
        .step("agent", agent("interviewer", &calls))
        .step("human", Hitl::new("Your answer?"))
        .store(std::sync::Arc::clone(&store), "job-7")
        .build()
        .unwrap_err();
    match &err {
        Error::Claim { session, source: curator_session::Error::Claimed { .. } } => {
            assert!(session.contains("job-7") && session.ends_with("/l"), "{session}");
        }
        other => panic!("expected a claim error, got {other:?}"),
    }
    assert!(err.to_string().contains("job-7"), "{err}");
    drop(first);
    // Once the first is gone, the session can be driven again.
    build(Kind::Human, store, &calls);
}

/// Runs in the child only: holds a loop session until killed.
#[test]
fn child_holds_a_loop_session() {
    let Ok(db) = std::env::var("CURATOR_LOOP_HOLDER") else { return };
    let calls = Calls::default();
    let mut l = build(Kind::Human, SqliteStore::open(&db).unwrap(), &calls);
    assert!(l.run("Tell me about the bridge").unwrap().is_paused());
    say(&mut std::io::stdout(), "\n[child] holding");
    std::thread::sleep(Duration::from_mins(10));
}

#[test]
fn two_processes_on_one_loop_session_the_second_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("loop.db");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "resume::child_holds_a_loop_session", "--test-threads=1", "--nocapture"])
        .env("CURATOR_LOOP_HOLDER", &db)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = Lines::of(child.stdout.take().unwrap());
    loop {
        match lines.next() {
            Some(line) if line.starts_with("[child] holding") => break,
            Some(_) => {}
            None => {
                kill(&mut child);
                panic!("the holder said nothing");
            }
        }
    }
    let calls = Calls::default();
    let err = LoopBuilder::new("l", conversational(4))
        .step("agent", agent("interviewer", &calls))
        .step("human", Hitl::new("Your answer?"))
        .store(SqliteStore::open(&db).unwrap(), "job-7")
        .build()
        .unwrap_err();
    assert!(
        matches!(err, Error::Claim { source: curator_session::Error::Claimed { .. }, .. }),
        "{err:?}"
    );
    kill(&mut child);
    // The killed holder's claim ended with it; its pause is there to resume.
    let l = build(Kind::Human, SqliteStore::open(&db).unwrap(), &calls);
    assert!(l.paused().is_some());
}

#[test]
fn a_chat_iteration_is_one_save_of_its_turns_and_the_next_pause() {
    let store = std::sync::Arc::new(MemoryStore::new());
    let calls = Calls::default();
    let mut l = build(Kind::Chat, std::sync::Arc::clone(&store), &calls);
    assert!(l.run("").unwrap().is_paused());
    for answer in ["one", "two", "three"] {
        assert!(l.resume(answer).unwrap().is_paused());
    }
    // The first pause, then one save per answered iteration (the head's version counts
    // saves; every save writes the head).
    let head = store.checkpoint("curator.loop/job-7/l").unwrap().unwrap();
    assert_eq!(head.version, 4);
    assert_eq!(head.document["iteration"], 3);
    assert_eq!(head.document["turns"], 6);
}

#[test]
fn a_step_failing_after_an_iteration_whose_save_then_fails_says_both() {
    use curator_loop::{Error, StepKind};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("loop.db");
    let breaker = db.clone();
    let runs = AtomicUsize::new(0);
    // A human step that answers itself once, then fails after the file lost its
    // checkpoints table: the completed iteration, whose save waited for this pause, cannot
    // be saved.
    let human = FnStep::new(StepKind::Human, move |_call| {
        if runs.fetch_add(1, Ordering::SeqCst) == 0 {
            return Ok(StepOutcome::text("go"));
        }
        let connection = rusqlite::Connection::open(&breaker)?;
        connection.execute_batch("DROP TABLE checkpoints")?;
        Err("the person left".into())
    });
    let mut l = LoopBuilder::new("l", conversational(4))
        .step("human", human)
        .step("agent", FnStep::agent(Injection::Messages, |_| Ok(StepOutcome::text("done"))))
        .store(SqliteStore::open(&db).unwrap(), "job-8")
        .build()
        .unwrap();
    match l.run("") {
        Err(Error::NotSaved { failed, source }) => {
            assert!(failed.to_string().contains("step `human` failed in iteration 2"), "{failed}");
            let cause = std::error::Error::source(&*failed).map(ToString::to_string);
            assert_eq!(cause.as_deref(), Some("the person left"));
            assert!(matches!(*source, Error::Store { .. }), "{source}");
        }
        other => panic!("expected NotSaved, got {other:?}"),
    }
}
