//! The lens: what each agent step of each iteration was sent, saved with the loop session
//! (`lens = true`), redacted, with whether the conversation was injected.

use std::sync::Arc;

use curator_loop::{
    FnStep, Hitl, Injection, LoopBuilder, LoopConfig, StepOutcome, erase_loops, saved_lens,
    saved_loops,
};
use curator_session::MemoryStore;

const KEY: &str = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3i";

fn config(lens: bool) -> LoopConfig {
    LoopConfig::from_toml(&format!(
        "conversation = true\nmax_iterations = 10\nai_turn_source = \"named_steps\"\nnamed_steps = [\"writer\"]\nlens = {lens}\n[steps.checker]\nuse_history = false"
    ))
    .unwrap()
}

fn build(store: &Arc<MemoryStore>, lens: bool) -> curator_loop::ConversationLoop {
    LoopBuilder::new("chat", config(lens))
        .step("human", Hitl::new("you?"))
        .step(
            "writer",
            FnStep::agent(Injection::Messages, |call| {
                if call.input.contains("fail") {
                    return Err("the model is down".into());
                }
                Ok(StepOutcome::text(format!("draft {}", call.iteration)))
            })
            .with_system("Write."),
        )
        .step("checker", FnStep::agent(Injection::Messages, |_| Ok(StepOutcome::text("checked"))))
        .store(Arc::clone(store), "alice")
        .build()
        .unwrap()
}

#[test]
fn each_steps_request_is_saved_per_iteration_redacted_with_its_injected_badge() {
    let store = Arc::new(MemoryStore::new());
    let mut l = build(&store, true);
    assert!(l.run("").unwrap().is_paused());
    assert!(l.resume(&format!("my key is {KEY}")).unwrap().is_paused());
    assert!(l.resume("thanks").unwrap().is_paused());
    let lens = saved_lens(&*store, "alice", "chat").unwrap();
    let seen: Vec<(u64, &str, bool)> =
        lens.iter().map(|s| (s.iteration, s.step.as_str(), s.injected)).collect();
    assert_eq!(
        seen,
        [(1, "writer", true), (1, "checker", false), (2, "writer", true), (2, "checker", false)]
    );
    // The writer of iteration 2 was sent the conversation, the secret redacted.
    let sent: Vec<String> = lens[2].messages.iter().map(|m| m.text().into_owned()).collect();
    assert_eq!(sent.first().map(String::as_str), Some("Write."));
    assert!(sent.iter().any(|t| t.contains("draft 1")), "{sent:?}");
    assert!(sent.iter().all(|t| !t.contains(KEY)), "{sent:?}");
    assert!(sent.iter().any(|t| t.contains("my key is")), "{sent:?}");
    // The loop session is still one saved loop, whose turns are unchanged by the lens.
    let saved = saved_loops(&*store).unwrap();
    assert_eq!(saved.len(), 1);
    assert_eq!(saved[0].state.iteration, 2);
}

#[test]
fn a_failed_iteration_leaves_no_lens_and_a_loop_without_lens_saves_none() {
    let store = Arc::new(MemoryStore::new());
    let mut l = build(&store, true);
    l.run("").unwrap();
    l.resume("first").unwrap();
    assert!(l.resume("please fail").is_err());
    let lens = saved_lens(&*store, "alice", "chat").unwrap();
    assert!(lens.iter().all(|s| s.iteration == 1), "{lens:?}");
    // It resumes, the same answer succeeds in a new process: its iteration's lens is saved.
    drop(l);
    let mut l = build(&store, true);
    assert!(l.resume("second").unwrap().is_paused());
    let lens = saved_lens(&*store, "alice", "chat").unwrap();
    assert_eq!(lens.iter().filter(|s| s.iteration == 2).count(), 2);

    let other = Arc::new(MemoryStore::new());
    let mut l = build(&other, false);
    l.run("").unwrap();
    l.resume("hello").unwrap();
    assert!(saved_lens(&*other, "alice", "chat").unwrap().is_empty());
}

#[test]
fn erasing_a_loop_session_erases_its_lens() {
    let store = Arc::new(MemoryStore::new());
    let mut l = build(&store, true);
    l.run("").unwrap();
    l.resume("hello").unwrap();
    drop(l);
    assert!(!saved_lens(&*store, "alice", "chat").unwrap().is_empty());
    let erased = erase_loops(&*store, "alice", false).unwrap();
    assert_eq!(erased.erased.len(), 1);
    assert!(saved_lens(&*store, "alice", "chat").unwrap().is_empty());
    assert!(
        curator_session::SessionStore::checkpoint_names(&*store, "")
            .unwrap()
            .iter()
            .all(|n| !n.contains("/lens/"))
    );
}

#[test]
fn an_iteration_paused_in_one_process_and_finished_in_another_keeps_its_whole_lens() {
    let store = Arc::new(MemoryStore::new());
    let build = || {
        LoopBuilder::new("chat", config(true))
            .step("writer", FnStep::agent(Injection::Messages, |_| Ok(StepOutcome::text("draft"))))
            .step("human", Hitl::new("you?"))
            .step(
                "checker",
                FnStep::agent(Injection::Messages, |_| Ok(StepOutcome::text("checked"))),
            )
            .store(Arc::clone(&store), "alice")
            .build()
            .unwrap()
    };
    let mut first = build();
    assert!(first.run("start").unwrap().is_paused());
    drop(first);
    let mut second = build();
    assert!(second.resume("go on").unwrap().is_paused());
    let lens = saved_lens(&*store, "alice", "chat").unwrap();
    let seen: Vec<(u64, &str)> = lens.iter().map(|s| (s.iteration, s.step.as_str())).collect();
    assert_eq!(seen, [(1, "writer"), (1, "checker"), (2, "writer")]);
}

#[test]
fn a_lens_without_a_store_is_refused_at_build() {
    let err = LoopBuilder::new("chat", config(true))
        .step("writer", FnStep::agent(Injection::Messages, |_| Ok(StepOutcome::text("draft"))))
        .build()
        .map(|_| ())
        .unwrap_err();
    assert!(
        matches!(&err, curator_loop::Error::InvalidConfig { key, .. } if key == "lens"),
        "{err}"
    );
}
