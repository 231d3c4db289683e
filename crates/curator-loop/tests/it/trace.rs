//! Traces: every message set sent is traced after injection, with secrets redacted; a
//! failing sink never fails the loop; redaction of what is sent and kept by option.

use std::sync::Arc;

use curator_loop::{
    AiTurnSource, Hitl, Injection, LoopBuilder, LoopConfig, MemoryTraces, PromptTrace, TraceSink,
};
use curator_model::BoxError;

use crate::support::{agent, texts};

const KEY: &str = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3i";

fn config(toml: &str) -> LoopConfig {
    let mut config = LoopConfig::from_toml(toml).unwrap();
    config.ai_turn_source = AiTurnSource::AllAgents;
    config
}

#[test]
fn traces_hold_what_was_sent_after_injection_with_secrets_redacted() {
    let traces = Arc::new(MemoryTraces::default());
    let (step, calls) = agent("agent", Injection::Messages);
    let mut l = LoopBuilder::new("t", config("conversation = true"))
        .step("agent", step)
        .step("human", Hitl::new("?"))
        .trace(Arc::clone(&traces))
        .build()
        .unwrap();
    l.run(&format!("My key is {KEY}, deploy please")).unwrap();
    l.resume("and use region eu-west-1").unwrap();
    let traces = traces.traces();
    assert_eq!(traces.len(), 2);
    let second = &traces[1];
    assert_eq!(
        (second.loop_name.as_str(), second.iteration, second.step.as_str(), second.injected),
        ("t", 2, "agent", true)
    );
    let redacted = texts(&second.messages);
    let sent = texts(&calls.lock().unwrap()[1]);
    assert_eq!(redacted.len(), sent.len(), "the trace is the injected message set");
    assert!(sent[1].contains(KEY), "the agent is sent the original by default");
    assert!(!redacted.iter().any(|t| t.contains(KEY)), "{redacted:?}");
    assert!(redacted[1].contains("[REDACTED:"), "{redacted:?}");
    assert_eq!(redacted[3], "user: and use region eu-west-1");
}

#[derive(Debug)]
struct Broken;

impl TraceSink for Broken {
    fn emit(&self, _: &PromptTrace) -> Result<(), BoxError> {
        Err("the trace collector is down".into())
    }
}

#[test]
fn a_failing_trace_never_fails_the_loop() {
    let (step, _) = agent("agent", Injection::Messages);
    let mut l = LoopBuilder::new("t", config("conversation = true"))
        .step("agent", step)
        .step("human", Hitl::new("?"))
        .trace(Broken)
        .build()
        .unwrap();
    assert!(l.run("go").unwrap().is_paused());
    assert!(l.resume("on").unwrap().is_paused());
    assert_eq!(l.trace_failures(), 2);
    assert_eq!(l.turn_count(), 4);
}

#[test]
fn redacting_what_is_sent_and_what_is_kept_is_an_option() {
    let (step, calls) = agent("agent", Injection::Prompt);
    let mut l = LoopBuilder::new("t", config("conversation = true\n[redact]\nsent = true"))
        .step("agent", step)
        .step("human", Hitl::new("?"))
        .build()
        .unwrap();
    l.run(&format!("key {KEY}")).unwrap();
    l.resume("next").unwrap();
    for call in calls.lock().unwrap().iter() {
        assert!(!texts(call).iter().any(|t| t.contains(KEY)), "{call:?}");
    }
    assert!(l.turns()[0].content.contains(KEY), "kept as it was");

    let (step, _) = agent("agent", Injection::Messages);
    let mut l = LoopBuilder::new("t", config("conversation = true\n[redact]\npersisted = true"))
        .step("agent", step)
        .step("human", Hitl::new("?"))
        .build()
        .unwrap();
    l.run(&format!("key {KEY}")).unwrap();
    l.resume(&format!("again {KEY}")).unwrap();
    assert!(l.turns().iter().all(|t| !t.content.contains(KEY)), "{:?}", l.turns());
}

/// Every file of a SQLite store (the database, its WAL and shared memory, the claim locks),
/// read raw: whether any holds `secret`.
fn files_holding(dir: &std::path::Path, secret: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else {
            let bytes = std::fs::read(&path).unwrap();
            if bytes.windows(secret.len()).any(|w| w == secret.as_bytes()) {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

#[test]
fn persisted_redaction_keeps_no_secret_in_any_table_or_checkpoint_and_sends_the_message_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("loop.db");
    let (step, _) = crate::support::Recording::new(Injection::Messages, |n, _| {
        // The agent's output holds the key too.
        Ok(curator_loop::StepOutcome::text(format!("reply {n}: noted {KEY}")))
    });
    let (check, calls) = agent("check", Injection::Messages);
    let mut l = LoopBuilder::new("t", config("conversation = true\n[redact]\npersisted = true"))
        .step("agent", step)
        .step("human", Hitl::new("?"))
        .step("check", check)
        .store(curator_sqlite::SqliteStore::open(&db).unwrap(), "k")
        .build()
        .unwrap();
    // The seed, a human answer, and the agents' outputs (the paused iteration's outputs are
    // in the checkpoint) all hold the key.
    assert!(l.run(&format!("key {KEY}")).unwrap().is_paused());
    assert!(l.resume(&format!("again {KEY}")).unwrap().is_paused());
    assert!(l.state().paused.unwrap().outputs[0].1.contains(KEY), "in memory, as it was");
    assert_eq!(files_holding(dir.path(), KEY), Vec::<String>::new());
    // The human's message went once, whole, to the agent after it (the history holds its
    // redacted copy, which is not sent beside it).
    let calls = calls.lock().unwrap();
    let last = texts(calls.last().unwrap());
    assert_eq!(last.iter().filter(|t| t.contains("again")).count(), 1, "{last:?}");
    assert_eq!(last.last().unwrap(), &format!("user: again {KEY}"));
    drop(calls);
    drop(l);
    // Read back in a new loop: what was kept is the redacted form.
    let (step, _) = agent("agent", Injection::Messages);
    let l = LoopBuilder::new("t", config("conversation = true\n[redact]\npersisted = true"))
        .step("agent", step)
        .step("human", Hitl::new("?"))
        .step("check", agent("check", Injection::Messages).0)
        .store(curator_sqlite::SqliteStore::open(&db).unwrap(), "k")
        .build()
        .unwrap();
    let state = l.state();
    assert!(!state.paused.unwrap().outputs[0].1.contains(KEY));
    assert!(state.turns.iter().all(|t| !t.content.contains(KEY)));
}
