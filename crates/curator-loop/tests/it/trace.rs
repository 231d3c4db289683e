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
