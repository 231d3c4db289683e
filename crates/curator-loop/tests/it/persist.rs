//! Checkpoints: after every iteration and at pauses, read back by a new loop on the same
//! store and key; pages; keys; damaged checkpoints.

use std::sync::Arc;

use curator_loop::{
    AiTurnSource, ConversationLoop, Error, FnStep, Hitl, Injection, LOOP_CHECKPOINT_FORMAT,
    LoopBuilder, LoopConfig, LoopOutcome, StepOutcome,
};
use curator_session::{ClaimStore, MemoryStore, SessionStore};
use curator_sqlite::SqliteStore;

/// A deterministic agent whose reply depends on everything it is sent.
pub(crate) fn echo_agent() -> impl curator_loop::Step {
    FnStep::agent(Injection::Messages, |call| {
        let words: usize = call.messages.iter().map(|m| m.text().split_whitespace().count()).sum();
        Ok(StepOutcome::text(format!(
            "iteration {}: {} messages, {words} words",
            call.iteration,
            call.messages.len()
        )))
    })
    .with_system("You count.")
}

pub(crate) fn build(
    store: impl SessionStore + ClaimStore + 'static,
    key: &str,
) -> ConversationLoop {
    let mut config = LoopConfig::from_toml(
        "conversation = true\nmax_iterations = 6\n[history_management]\nmax_tokens = 80",
    )
    .unwrap();
    config.ai_turn_source = AiTurnSource::AllAgents;
    LoopBuilder::new("interview", config)
        .step("agent", echo_agent())
        .step("human", Hitl::new("Your answer?"))
        .store(store, key)
        .build()
        .unwrap()
}

/// Runs a loop to its end, answering `answer {i}` at each pause.
pub(crate) fn finish(l: &mut ConversationLoop, mut outcome: LoopOutcome) -> LoopOutcome {
    while outcome.is_paused() {
        let i = l.iteration() + 1;
        outcome = l.resume(&format!("answer {i}")).unwrap();
    }
    outcome
}

fn uninterrupted() -> (Vec<curator_loop::ConversationTurn>, LoopOutcome) {
    let mut l = build(MemoryStore::new(), "k");
    let first = l.run("Tell me about your last project").unwrap();
    let outcome = finish(&mut l, first);
    (l.turns(), outcome)
}

#[test]
fn a_new_loop_on_the_same_store_resumes_where_the_pause_left_it() {
    let store = Arc::new(MemoryStore::new());
    {
        let mut l = build(Arc::clone(&store), "candidate-1");
        assert!(l.run("Tell me about your last project").unwrap().is_paused());
        assert!(l.resume("answer 1").unwrap().is_paused());
    } // the process ends here
    let mut l = build(Arc::clone(&store), "candidate-1");
    assert_eq!(l.iteration(), 1);
    assert_eq!(l.paused().map(|p| p.step_name.as_str()), Some("human"));
    assert!(matches!(l.run("x").unwrap_err(), Error::WrongState { .. }));
    let outcome = finish(&mut l, LoopOutcome::Paused { step: "human".into(), prompt: None });
    let (turns, expected) = uninterrupted();
    assert_eq!(l.turns(), turns);
    assert_eq!(outcome, expected);
    // Another key starts its own conversation.
    assert_eq!(build(Arc::clone(&store), "candidate-2").turn_count(), 0);
}

#[test]
fn a_crash_mid_iteration_loses_only_that_iteration() {
    let store = Arc::new(MemoryStore::new());
    let mut n = 0;
    let config = LoopConfig::from_toml(
        "conversation = true\nai_turn_source = \"all_agents\"\nmax_iterations = 50",
    )
    .unwrap();
    let mut l = LoopBuilder::new("work", config.clone())
        .step("agent", echo_agent())
        .step(
            "crash",
            FnStep::plain(move |_| {
                n += 1;
                if n == 40 { Err("killed".into()) } else { Ok(StepOutcome::text("ok")) }
            }),
        )
        .store(Arc::clone(&store), "job")
        .build()
        .unwrap();
    let _ = l.run("go").unwrap_err();
    let before = l.state();
    assert_eq!(before.iteration, 39);
    drop(l);
    // 40 turns span three pages of 16: read back whole.
    let again = LoopBuilder::new("work", config)
        .step("agent", echo_agent())
        .step("crash", FnStep::plain(|_| Ok(StepOutcome::text("ok"))))
        .store(Arc::clone(&store), "job")
        .build()
        .unwrap();
    assert_eq!(again.state(), before);
    assert_eq!(again.turn_count(), 40);
}

#[test]
fn a_damaged_checkpoint_is_a_typed_error() {
    let store = Arc::new(MemoryStore::new());
    store
        .put_checkpoint(
            &format!("{LOOP_CHECKPOINT_FORMAT}/k/interview"),
            &serde_json::json!({"format": "other"}),
        )
        .unwrap();
    let err = LoopBuilder::new("interview", LoopConfig::conversational())
        .step("human", Hitl::default())
        .store(Arc::clone(&store), "k")
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::BadCheckpoint { .. }), "{err:?}");

    let store = Arc::new(MemoryStore::new());
    let mut l = build(Arc::clone(&store), "k");
    l.run("a").unwrap();
    drop(l);
    store
        .put_checkpoint(
            &format!("{LOOP_CHECKPOINT_FORMAT}/k/interview/turns/0"),
            &serde_json::json!({"turns": []}),
        )
        .unwrap();
    let err = LoopBuilder::new("interview", LoopConfig::conversational())
        .step("human", Hitl::default())
        .store(Arc::clone(&store), "k")
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::BadCheckpoint { .. }), "{err:?}");
}

#[test]
fn sqlite_keeps_the_state_across_opens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("loops.db");
    {
        let mut l = build(SqliteStore::open(&path).unwrap(), "k");
        assert!(l.run("Tell me about your last project").unwrap().is_paused());
    }
    let mut l = build(SqliteStore::open(&path).unwrap(), "k");
    let outcome = finish(&mut l, LoopOutcome::Paused { step: "human".into(), prompt: None });
    let (turns, expected) = uninterrupted();
    assert_eq!((l.turns(), outcome), (turns, expected));
}

/// Erasing a key deletes its loop sessions' heads and pages of turns, never a loop that is
/// running (it holds its session's claim), and never another key's.
#[test]
fn erasing_a_key_deletes_its_loops_but_not_a_running_one() {
    let store = Arc::new(MemoryStore::new());
    let mut running = build(Arc::clone(&store), "ann");
    let first = running.run("Tell me about your last project").unwrap();
    finish(&mut running, first);
    assert!(store.checkpoint_names(&format!("{LOOP_CHECKPOINT_FORMAT}/ann/")).unwrap().len() > 1);
    {
        let mut other = build(Arc::clone(&store), "bob");
        assert!(other.run("Hello").unwrap().is_paused());
    }
    let report = curator_loop::erase_loops(&*store, "ann", false).unwrap();
    assert_eq!((report.erased.len(), report.held.len(), report.checkpoints), (0, 1, 0));
    drop(running); // the process ends: its claim is released
    let dry = curator_loop::erase_loops(&*store, "ann", true).unwrap();
    assert_eq!((dry.erased.len(), dry.checkpoints), (1, 0));
    let report = curator_loop::erase_loops(&*store, "ann", false).unwrap();
    assert_eq!((report.erased.len(), report.held.len()), (1, 0));
    assert!(report.checkpoints > 1, "the head and its pages");
    assert_eq!(store.checkpoint_names(&format!("{LOOP_CHECKPOINT_FORMAT}/ann/")).unwrap().len(), 0);
    let left = curator_loop::saved_loops(&*store).unwrap();
    assert_eq!(left.iter().map(|l| l.key.as_str()).collect::<Vec<_>>(), ["bob"]);
}
