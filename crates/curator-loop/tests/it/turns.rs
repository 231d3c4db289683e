//! Turn capture: sources, order, isolation of iterations, control flow, nested loops.

use curator_loop::{
    AiTurnSource, Error, FinishReason, FnStep, Hitl, Injection, LoopBuilder, LoopConfig,
    LoopOutcome, StepOutcome, UserTurnSource,
};

use crate::support::{agent, texts, turns};

fn conversational(source: AiTurnSource, named: &[&str]) -> LoopConfig {
    let mut config = LoopConfig::conversational();
    config.ai_turn_source = source;
    config.named_steps = named.iter().map(|s| (*s).to_owned()).collect();
    config.max_iterations = 1;
    config
}

fn plain(text: &'static str) -> impl curator_loop::Step {
    FnStep::plain(move |_| Ok(StepOutcome::text(text)))
}

#[track_caller]
fn check(config: LoopConfig, with_plain_last: bool, expected: &[&str]) {
    let (a1, _) = agent("a1", Injection::Messages);
    let (a2, _) = agent("a2", Injection::Messages);
    let mut builder = LoopBuilder::new("l", config).step("a1", a1).step("a2", a2);
    if with_plain_last {
        builder = builder.step("format", plain("formatted"));
    }
    let mut l = builder.build().unwrap();
    assert!(matches!(
        l.run("go").unwrap(),
        LoopOutcome::Finished { reason: FinishReason::MaxIterations, .. }
    ));
    assert_eq!(turns(&l), expected);
}

#[test]
fn last_takes_the_final_agent_step() {
    check(conversational(AiTurnSource::Last, &[]), false, &["user: go", "assistant: a2 1"]);
}

/// `last` with a final step that is not an agent would record no assistant turn: the loop
/// is refused when it is built, naming the key, rather than running without one.
#[test]
fn last_is_refused_when_the_final_step_is_not_an_agent() {
    let (a1, _) = agent("a1", Injection::Messages);
    let err = LoopBuilder::new("l", conversational(AiTurnSource::Last, &[]))
        .step("a1", a1)
        .step("format", plain("formatted"))
        .build()
        .unwrap_err();
    let Error::InvalidConfig { key, reason } = &err else { panic!("{err:?}") };
    assert_eq!(key, "ai_turn_source");
    assert!(reason.contains("no assistant turn") && reason.contains("all_agents"), "{reason}");
    // A body without an agent step records no assistant turn by design.
    let built = LoopBuilder::new("l", conversational(AiTurnSource::Last, &[]))
        .step("human", Hitl::new("?"))
        .build();
    assert!(built.is_ok());
}

#[test]
fn use_history_on_a_step_that_is_not_an_agent_is_refused() {
    let config = LoopConfig::from_toml(
        "conversation = true\nai_turn_source = \"all_agents\"\n[steps.human]\nuse_history = true",
    )
    .unwrap();
    let (a1, _) = agent("a1", Injection::Messages);
    let err = LoopBuilder::new("l", config)
        .step("a1", a1)
        .step("human", Hitl::new("?"))
        .build()
        .unwrap_err();
    let Error::InvalidConfig { key, reason } = &err else { panic!("{err:?}") };
    assert_eq!(key, "steps.human.use_history");
    assert!(reason.contains("not an agent step"), "{reason}");
}

#[test]
fn all_agents_takes_each_agent_in_order() {
    check(
        conversational(AiTurnSource::AllAgents, &[]),
        true,
        &["user: go", "assistant: a1 1", "assistant: a2 1"],
    );
}

#[test]
fn named_steps_take_exactly_the_listed_steps_agent_or_not() {
    check(
        conversational(AiTurnSource::NamedSteps, &["a1"]),
        true,
        &["user: go", "assistant: a1 1"],
    );
    check(
        conversational(AiTurnSource::NamedSteps, &["format"]),
        true,
        &["user: go", "assistant: formatted"],
    );
}

#[test]
fn named_user_turn_sources_make_user_turns() {
    let mut config = conversational(AiTurnSource::Last, &[]);
    config.user_turn_sources = vec![UserTurnSource::NamedSteps];
    config.user_named_steps = vec!["collect".into()];
    let (a, _) = agent("a", Injection::Messages);
    let mut l = LoopBuilder::new("l", config)
        .step("collect", plain("form data"))
        .step("human", Hitl::new("?")) // not a source here
        .step("a", a)
        .build()
        .unwrap();
    assert!(l.run("go").unwrap().is_paused());
    l.resume("ignored as a turn").unwrap();
    assert_eq!(turns(&l), ["user: go", "user: form data", "assistant: a 1"]);
}

#[test]
fn a_question_and_its_answer_are_recorded_in_the_order_they_happened() {
    let mut config = conversational(AiTurnSource::AllAgents, &[]);
    config.max_iterations = 3;
    let (clarify, calls) = agent("question", Injection::Messages);
    let (summarize, _) = agent("summary", Injection::Messages);
    let mut l = LoopBuilder::new("l", config)
        .step("clarify", clarify)
        .step("human", Hitl::new("?"))
        .step("summarize", summarize)
        .build()
        .unwrap();
    assert!(l.run("Need a flight").unwrap().is_paused());
    assert!(l.resume("Tuesday").unwrap().is_paused());
    assert_eq!(
        turns(&l),
        [
            "user: Need a flight",
            "assistant: question 1",
            "user: Tuesday",
            "assistant: summary 1",
            "assistant: question 2"
        ]
    );
    // The human's answer is a user turn, never an assistant one, in what the agent is sent.
    assert_eq!(texts(&calls.lock().unwrap()[1])[3], "user: Tuesday");
}

#[test]
fn a_failed_step_rolls_the_iteration_back_and_names_itself() {
    let mut config = conversational(AiTurnSource::AllAgents, &[]);
    config.max_iterations = 5;
    let (a, _) = agent("a", Injection::Messages);
    let mut n = 0;
    let mut l = LoopBuilder::new("l", config)
        .step("a", a)
        .step(
            "flaky",
            FnStep::plain(move |_| {
                n += 1;
                if n == 2 { Err("disk full".into()) } else { Ok(StepOutcome::text("ok")) }
            }),
        )
        .build()
        .unwrap();
    let err = l.run("go").unwrap_err();
    match &err {
        Error::Step { step, iteration, source } => {
            assert_eq!((step.as_str(), *iteration), ("flaky", 2));
            assert_eq!(source.to_string(), "disk full");
        }
        other => panic!("{other:?}"),
    }
    // Iteration 2's assistant turn ("a 2") is gone: the history is as iteration 1 left it.
    assert_eq!(turns(&l), ["user: go", "assistant: a 1"]);
    assert_eq!(l.iteration(), 1);
    // The loop goes on from there.
    assert!(l.run("again").is_ok());
    assert_eq!(turns(&l)[2], "assistant: a 3");
}

#[test]
fn a_reply_that_fails_midway_adds_no_partial_turn() {
    let config = conversational(AiTurnSource::AllAgents, &[]);
    let mut streamed = String::new();
    let mut l = LoopBuilder::new("l", config)
        .step(
            "stream",
            FnStep::agent(Injection::Messages, move |_| {
                for chunk in ["The answer", " is"] {
                    streamed.push_str(chunk); // what a streaming client shows as it arrives
                }
                Err(format!("stream broke after {streamed:?}").into())
            }),
        )
        .build()
        .unwrap();
    assert!(matches!(l.run("q").unwrap_err(), Error::Step { .. }));
    assert!(turns(&l).is_empty());
}

#[test]
fn a_failure_in_a_resumed_iteration_leaves_the_loop_paused_for_a_retry() {
    let mut config = conversational(AiTurnSource::AllAgents, &[]);
    config.max_iterations = 1;
    let mut fail = true;
    let mut l = LoopBuilder::new("l", config)
        .step("human", Hitl::new("?"))
        .step(
            "a",
            FnStep::agent(Injection::Messages, move |_| {
                if std::mem::take(&mut fail) {
                    Err("model down".into())
                } else {
                    Ok(StepOutcome::text("hi"))
                }
            }),
        )
        .build()
        .unwrap();
    assert!(l.run("").unwrap().is_paused());
    assert!(l.resume("hello").is_err());
    assert_eq!(l.paused().map(|p| p.step_name.as_str()), Some("human"));
    assert!(turns(&l).is_empty());
    assert!(matches!(l.resume("hello").unwrap(), LoopOutcome::Finished { .. }));
    assert_eq!(turns(&l), ["user: hello", "assistant: hi"]);
}

#[test]
fn pause_and_abort_are_outcomes_not_errors() {
    let config = conversational(AiTurnSource::AllAgents, &[]);
    let (a, _) = agent("a", Injection::Messages);
    let mut l = LoopBuilder::new("l", config)
        .step("a", a)
        .step("guard", FnStep::plain(|_| Ok(StepOutcome::Abort { reason: "policy".into() })))
        .build()
        .unwrap();
    assert_eq!(
        l.run("go").unwrap(),
        LoopOutcome::Aborted { step: "guard".into(), reason: "policy".into() }
    );
    assert!(turns(&l).is_empty(), "the aborted iteration is dropped");
    assert!(matches!(l.resume("x").unwrap_err(), Error::WrongState { .. }));

    let mut l = LoopBuilder::new("l", LoopConfig::conversational())
        .step("human", Hitl::new("Name?"))
        .build()
        .unwrap();
    assert_eq!(
        l.run("").unwrap(),
        LoopOutcome::Paused { step: "human".into(), prompt: Some("Name?".into()) }
    );
    assert!(matches!(l.run("").unwrap_err(), Error::WrongState { .. }));
}

#[test]
fn the_exit_condition_and_max_iterations_end_the_loop() {
    let mut config = conversational(AiTurnSource::Last, &[]);
    config.max_iterations = 10;
    let (a, _) = agent("a", Injection::Messages);
    let mut l =
        LoopBuilder::new("l", config).step("a", a).exit_when(|p| p.iteration == 3).build().unwrap();
    assert_eq!(
        l.run("go").unwrap(),
        LoopOutcome::Finished {
            iterations: 3,
            reason: FinishReason::ExitCondition,
            output: "a 3".into()
        }
    );
    let mut config = conversational(AiTurnSource::Last, &[]);
    config.max_iterations = 0;
    let (a, calls) = agent("a", Injection::Messages);
    let mut l = LoopBuilder::new("l", config).step("a", a).build().unwrap();
    assert!(matches!(l.run("go").unwrap(), LoopOutcome::Finished { iterations: 0, .. }));
    assert!(calls.lock().unwrap().is_empty());
}

#[test]
fn a_nested_loop_keeps_its_own_history() {
    let mut inner_config = conversational(AiTurnSource::AllAgents, &[]);
    inner_config.max_iterations = 2;
    let (inner_agent, inner_calls) = agent("inner", Injection::Messages);
    let inner = LoopBuilder::new("inner", inner_config).step("think", inner_agent).build().unwrap();

    let mut outer_config = conversational(AiTurnSource::AllAgents, &[]);
    outer_config.max_iterations = 2;
    let (outer_agent, outer_calls) = agent("outer", Injection::Messages);
    let mut outer = LoopBuilder::new("outer", outer_config)
        .step("research", inner)
        .step("answer", outer_agent)
        .build()
        .unwrap();
    outer.run("Question").unwrap();
    // The outer history holds its own turns only: the inner loop's are not there.
    assert_eq!(turns(&outer), ["user: Question", "assistant: outer 1", "assistant: outer 2"]);
    // Only the nested loop's final output reaches the outer loop, as the next step's input.
    for call in outer_calls.lock().unwrap().iter() {
        assert!(texts(call).iter().all(|t| !t.contains("inner 1")), "{call:?}");
    }
    assert_eq!(texts(&outer_calls.lock().unwrap()[0]).last().unwrap(), "user: inner 2");
    // The inner loop saw its own conversation, started afresh on each outer iteration.
    let inner_calls = inner_calls.lock().unwrap();
    assert_eq!(
        texts(&inner_calls[1]),
        // The agent's previous reply, which is its input, is sent once, as its own: never
        // again as a user message.
        ["system: You are the agent.", "user: Question", "assistant: inner 1"]
    );
    assert_eq!(texts(&inner_calls[2]), ["system: You are the agent.", "user: outer 1"]);
}

/// `max_iterations` bounds each run: a loop whose run ended at the limit runs again when the
/// next `run` starts, and a run continued in another process (read back from its
/// checkpoint) counts the iterations it made before.
#[test]
fn max_iterations_counts_per_run_across_a_restart() {
    use std::sync::Arc;

    use curator_session::MemoryStore;
    let store = Arc::new(MemoryStore::new());
    let build = |store: &Arc<MemoryStore>| {
        let mut config = conversational(AiTurnSource::Last, &[]);
        config.max_iterations = 3;
        let (a1, _) = agent("a1", Injection::Messages);
        LoopBuilder::new("l", config)
            .step("human", Hitl::new("?"))
            .step("a1", a1)
            .store(Arc::clone(store), "k")
            .build()
            .unwrap()
    };
    let mut l = build(&store);
    assert!(l.run("go").unwrap().is_paused());
    assert!(l.resume("one").unwrap().is_paused());
    assert_eq!((l.iteration(), l.run_iterations()), (1, 1));
    // Another process continues the run: two iterations are left of it.
    drop(l);
    let mut l = build(&store);
    assert_eq!(l.run_iterations(), 1);
    assert!(l.resume("two").unwrap().is_paused());
    let outcome = l.resume("three").unwrap();
    assert!(
        matches!(
            outcome,
            LoopOutcome::Finished { iterations: 3, reason: FinishReason::MaxIterations, .. }
        ),
        "{outcome:?}"
    );
    // The next run makes three more (it made none before: the limit was the loop's life).
    assert!(l.run("again").unwrap().is_paused());
    assert_eq!(l.run_iterations(), 0);
    for answer in ["four", "five"] {
        assert!(l.resume(answer).unwrap().is_paused());
    }
    let outcome = l.resume("six").unwrap();
    assert!(
        matches!(
            outcome,
            LoopOutcome::Finished { iterations: 6, reason: FinishReason::MaxIterations, .. }
        ),
        "{outcome:?}"
    );
    assert_eq!(l.state().run_start, 3);
}

/// Each run's input opens it as a user turn, not only the first run's: the agent of a later
/// run sees what it was asked, and so does the history after it.
#[test]
fn every_run_records_its_input_as_a_user_turn() {
    let (a, calls) = agent("a", Injection::Messages);
    let mut l = LoopBuilder::new("l", conversational(AiTurnSource::AllAgents, &[]))
        .step("a", a)
        .build()
        .unwrap();
    for input in ["first question", "second question", "third question"] {
        assert!(matches!(l.run(input).unwrap(), LoopOutcome::Finished { .. }));
    }
    let recorded: Vec<(String, String)> =
        l.turns().into_iter().map(|t| (t.role.to_string(), t.content)).collect();
    let users: Vec<&str> =
        recorded.iter().filter(|(r, _)| r == "user").map(|(_, c)| c.as_str()).collect();
    assert_eq!(users, ["first question", "second question", "third question"], "{recorded:?}");
    // The third run's agent was sent the earlier runs' turns and its own question once.
    let calls = calls.lock().unwrap();
    let last = texts(calls.last().unwrap());
    assert_eq!(last.iter().filter(|t| t.contains("third question")).count(), 1, "{last:?}");
    assert!(last.iter().any(|t| t.contains("second question")), "{last:?}");
}

/// A blank input (only white space, line separators included) seeds no user turn, as a
/// blank step output records none.
#[test]
fn a_blank_input_seeds_no_user_turn() {
    let (a, _calls) = agent("a", Injection::Messages);
    let mut l = LoopBuilder::new("l", conversational(AiTurnSource::AllAgents, &[]))
        .step("a", a)
        .build()
        .unwrap();
    for input in ["", "   ", "\u{2028}", "\n\t", "a question"] {
        l.run(input).unwrap();
    }
    let users: Vec<String> =
        l.turns().into_iter().filter(|t| t.role.to_string() == "user").map(|t| t.content).collect();
    assert_eq!(users, ["a question"]);
}
