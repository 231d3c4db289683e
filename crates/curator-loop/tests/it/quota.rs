//! Quotas (reserve before an iteration, reconcile after with what the model reported, the
//! summarizer's calls charged too) and parallel bodies (branches at once over the same
//! history, each with its share, joined in branch order).

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use curator_client::Usage;
use curator_loop::{
    AiTurnSource, Error, FnStep, Hitl, Injection, LoopBuilder, LoopConfig, LoopOutcome, Output,
    Parallel, Quota, StepOutcome,
};
use curator_model::Message;
use curator_session::MemoryStore;
use curator_strategies::Summarizer;

fn conversational(max_iterations: u64) -> LoopConfig {
    let mut config = LoopConfig::conversational();
    config.max_iterations = max_iterations;
    config
}

/// An agent step reporting `tokens` a call, that writes the quota it was told to `told`.
fn reporting(
    tokens: u64,
    told: Arc<Mutex<Vec<Option<u64>>>>,
) -> FnStep<
    impl FnMut(curator_loop::StepCall<'_>) -> Result<StepOutcome, curator_model::BoxError> + Send,
> {
    FnStep::agent(Injection::Messages, move |call| {
        told.lock().unwrap().push(call.quota);
        Ok(StepOutcome::Output(
            Output::text(format!("reply {}", call.iteration))
                .with_usage(Usage::new(tokens - 10, 10)),
        ))
    })
}

#[test]
fn a_quota_without_reservation_still_ends_when_it_is_spent_and_one_over_its_limit_is_refused() {
    for limit in [0, 1_000] {
        let mut l = LoopBuilder::new("q", conversational(5))
            .step("agent", reporting(3_000, Arc::default()))
            .quota(Quota::new(limit, 0))
            .build()
            .unwrap();
        let err = l.run("go").unwrap_err();
        let ran = u64::from(limit != 0);
        assert!(matches!(err, Error::QuotaExhausted { reserve: 0, .. }), "{err}");
        assert_eq!(l.iteration(), ran, "{limit}: only what the quota left room for ran");
    }
    let err = LoopBuilder::new("q", conversational(5))
        .step("agent", reporting(3_000, Arc::default()))
        .quota(Quota::new(100, 1_000))
        .build()
        .map(|_| ())
        .unwrap_err();
    assert!(matches!(&err, Error::InvalidConfig { key, .. } if key == "quota"), "{err}");
}

#[test]
fn an_iteration_that_cannot_reserve_does_not_start_and_records_nothing() {
    let told = Arc::default();
    let mut l = LoopBuilder::new("q", conversational(10))
        .step("agent", reporting(3_000, Arc::clone(&told)))
        .quota(Quota::new(10_000, 4_000))
        .build()
        .unwrap();
    let err = l.run("go").unwrap_err();
    // 3,000 a call: after two iterations 4,000 are left, after three 1,000.
    assert!(
        matches!(err, Error::QuotaExhausted { limit: 10_000, used: 9_000, reserve: 4_000 }),
        "{err}"
    );
    assert_eq!(l.iteration(), 3);
    assert_eq!(l.turn_count(), 4, "the seed and three replies: nothing of a fourth");
    assert!(err.to_string().contains("9000 of 10000 tokens used"), "{err}");
    // A new run starts with the whole quota.
    let err = l.run("again").unwrap_err();
    assert!(matches!(err, Error::QuotaExhausted { used: 9_000, .. }));
    assert_eq!(l.iteration(), 6);
}

#[test]
fn each_step_is_told_what_it_may_still_take_and_a_step_that_reports_nothing_spends_its_reservation()
{
    let told = Arc::new(Mutex::new(Vec::new()));
    let silent_told = Arc::new(Mutex::new(Vec::new()));
    let silent = {
        let told = Arc::clone(&silent_told);
        FnStep::agent(Injection::Messages, move |call| {
            told.lock().unwrap().push(call.quota);
            Ok(StepOutcome::text("checked"))
        })
    };
    let mut config = conversational(2);
    config.ai_turn_source = AiTurnSource::AllAgents;
    let mut l = LoopBuilder::new("q", config)
        .step("draft", reporting(1_500, Arc::clone(&told)))
        .step("check", silent)
        .quota(Quota::new(100_000, 5_000))
        .build()
        .unwrap();
    l.run("go").unwrap();
    // The first step may take the reservation; the second what the first left.
    assert_eq!(*told.lock().unwrap(), [Some(5_000), Some(5_000)]);
    assert_eq!(*silent_told.lock().unwrap(), [Some(3_500), Some(3_500)]);
    // Charged what was reported: 1,500 an iteration.
    assert_eq!(l.state().quota_used, 3_000);

    // A body whose steps report nothing is charged its reservation.
    let mut l = LoopBuilder::new("q", conversational(3))
        .step("agent", FnStep::agent(Injection::Messages, |_| Ok(StepOutcome::text("ok"))))
        .quota(Quota::new(100_000, 5_000))
        .build()
        .unwrap();
    l.run("go").unwrap();
    assert_eq!(l.state().quota_used, 15_000);
}

/// A summarizer that says each summary took 700 tokens.
struct Costly(AtomicU64, AtomicUsize);

impl Summarizer for Costly {
    fn summarize(
        &self,
        _previous: Option<&str>,
        messages: &[&Message],
    ) -> curator_strategies::Result<String> {
        self.0.fetch_add(700, Ordering::SeqCst);
        self.1.fetch_add(1, Ordering::SeqCst);
        Ok(format!("{} turns", messages.len()))
    }
    fn key(&self) -> u64 {
        11
    }
    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("costly")
    }
    fn tokens_used(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

#[test]
fn the_summarizers_calls_are_charged_to_the_same_quota() {
    let summarizer = Arc::new(Costly(AtomicU64::new(0), AtomicUsize::new(0)));
    let mut config = LoopConfig::from_toml(
        "conversation = true\nmax_iterations = 12\n[history_management]\nstrategy = \"summarize\"\nsummarizer = \"costly\"\nmax_turns = 4\nsummarize_ratio = 0.5",
    )
    .unwrap();
    config.ai_turn_source = AiTurnSource::AllAgents;
    let mut l = LoopBuilder::new("q", config)
        .step("agent", reporting(100, Arc::default()))
        .summarizer("costly", Arc::clone(&summarizer) as Arc<dyn Summarizer>)
        .quota(Quota::new(1_000_000, 1_000))
        .build()
        .unwrap();
    l.run("go").unwrap();
    let summaries = summarizer.1.load(Ordering::SeqCst) as u64;
    assert!(summaries > 0, "the history was summarized");
    assert_eq!(l.state().quota_used, 12 * 100 + summaries * 700);
}

#[test]
fn what_a_run_used_is_saved_and_a_resumed_run_goes_on_with_it() {
    let store = Arc::new(MemoryStore::new());
    let mut config = conversational(10);
    config.ai_turn_source = AiTurnSource::AllAgents;
    let build = || {
        LoopBuilder::new("q", config.clone())
            .step("agent", reporting(2_000, Arc::default()))
            .step("human", Hitl::new("more?"))
            .quota(Quota::new(7_000, 2_000))
            .store(Arc::clone(&store), "k")
            .build()
            .unwrap()
    };
    let mut l = build();
    assert!(l.run("go").unwrap().is_paused());
    assert!(l.resume("yes").unwrap().is_paused());
    drop(l);
    // Another process: the first iteration was charged the 2,000 its agent reported, the
    // second the 2,000 of its agent when it paused; its human step reports nothing, so it is
    // charged nothing more when it completes. The third pauses charged its agent's 2,000.
    let mut l = build();
    assert!(l.resume("yes").unwrap().is_paused());
    assert_eq!(l.state().quota_used, 6_000);
    // The third iteration completes (6,000 used); 1,000 left: the fourth cannot reserve
    // 2,000, and the run ends saved.
    let err = l.resume("yes").unwrap_err();
    assert!(matches!(err, Error::QuotaExhausted { used: 6_000, .. }), "{err}");
    assert_eq!(l.iteration(), 3);
    assert!(!l.state().running);
    drop(l);
    assert_eq!(build().state().quota_used, 6_000);
}

#[test]
fn parallel_branches_run_at_once_over_the_same_history_with_equal_shares() {
    // Each branch waits for the other: they finish only when they run at once.
    let barrier = Arc::new(Barrier::new(2));
    let sent = Arc::new(Mutex::new(Vec::new()));
    let told = Arc::new(Mutex::new(Vec::new()));
    let branch = |name: &'static str, tokens: u64, delay: u64| {
        let (barrier, sent, told) = (Arc::clone(&barrier), Arc::clone(&sent), Arc::clone(&told));
        FnStep::agent(Injection::Messages, move |call| {
            barrier.wait();
            std::thread::sleep(Duration::from_millis(delay));
            sent.lock().unwrap().push((name, call.messages.to_vec()));
            told.lock().unwrap().push((name, call.quota));
            Ok(StepOutcome::Output(
                Output::text(format!("{name} says {}", call.iteration))
                    .with_artifact(format!("{{\"by\":\"{name}\"}}"))
                    .with_usage(Usage::new(tokens, 0)),
            ))
        })
    };
    // The slow branch comes first: the join follows branch order, not finishing order.
    let panel = Parallel::new(Injection::Messages)
        .with_system("Give your view.")
        .branch("slow", branch("slow", 700, 50))
        .branch("fast", branch("fast", 300, 0));
    let mut l = LoopBuilder::new("p", conversational(1))
        .step("panel", panel)
        .quota(Quota::new(10_000, 4_000))
        .build()
        .unwrap();
    let outcome = l.run("What do you think?").unwrap();
    assert_eq!(outcome.output(), Some("slow says 1\n\nfast says 1"));
    // One assistant turn of the joined text.
    let turns = l.turns();
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[1].content, "slow says 1\n\nfast says 1");
    // The same request to both.
    let sent = sent.lock().unwrap();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].1, sent[1].1);
    assert_eq!(sent[0].1[0], Message::system("Give your view."));
    // Each branch had half of the step's share; the iteration was charged their sum.
    assert!(told.lock().unwrap().iter().all(|(_, q)| *q == Some(2_000)));
    assert_eq!(l.state().quota_used, 1_000);
}

#[test]
fn a_failing_or_pausing_branch_fails_the_step_and_nothing_is_recorded() {
    let ok = || FnStep::agent(Injection::Messages, |_| Ok(StepOutcome::text("fine")));
    let mut l = LoopBuilder::new("p", conversational(1))
        .step(
            "panel",
            Parallel::new(Injection::Messages).branch("good", ok()).branch(
                "bad",
                FnStep::agent(Injection::Messages, |_| Err("the provider is down".into())),
            ),
        )
        .build()
        .unwrap();
    let err = l.run("go").unwrap_err();
    assert!(matches!(&err, Error::Step { step, .. } if step == "panel"), "{err}");
    let source = std::error::Error::source(&err).unwrap().to_string();
    assert_eq!(source, "branch `bad`: the provider is down");
    assert_eq!(l.turn_count(), 0, "nothing of the iteration, its seed neither");

    // A branch that waits for a person is refused when the loop is built; one that pauses
    // all the same fails the step.
    let err = LoopBuilder::new("p", conversational(1))
        .step(
            "panel",
            Parallel::new(Injection::Messages).branch("human", Hitl::new("?")).branch("good", ok()),
        )
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("branch `human` waits for a person"), "{err}");
    let pausing = FnStep::agent(Injection::Messages, |_| Ok(StepOutcome::Pause { prompt: None }));
    let mut l = LoopBuilder::new("p", conversational(1))
        .step(
            "panel",
            Parallel::new(Injection::Messages).branch("pausing", pausing).branch("good", ok()),
        )
        .build()
        .unwrap();
    let err = l.run("go").unwrap_err();
    let source = std::error::Error::source(&err).unwrap().to_string();
    assert!(source.contains("branch `pausing`: paused"), "{source}");

    let mut l = LoopBuilder::new("p", conversational(1))
        .step(
            "panel",
            Parallel::new(Injection::Messages).branch("good", ok()).branch(
                "stop",
                FnStep::agent(Injection::Messages, |_| {
                    Ok(StepOutcome::Abort { reason: "off topic".into() })
                }),
            ),
        )
        .build()
        .unwrap();
    let outcome = l.run("go").unwrap();
    assert_eq!(
        outcome,
        LoopOutcome::Aborted { step: "panel".into(), reason: "branch `stop`: off topic".into() }
    );
}

#[test]
fn a_parallel_step_without_branches_is_refused_when_built() {
    let err = LoopBuilder::new("p", conversational(1))
        .step("panel", Parallel::new(Injection::Messages))
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::InvalidConfig { .. }), "{err:?}");
    assert!(
        err.to_string().contains("step `panel`: a parallel step needs at least one branch"),
        "{err}"
    );
    // Nested, too.
    let nested =
        Parallel::new(Injection::Messages).branch("inner", Parallel::new(Injection::Messages));
    let err = LoopBuilder::new("p", conversational(1)).step("panel", nested).build().unwrap_err();
    assert!(
        err.to_string().contains("branch `inner`: a parallel step needs at least one branch"),
        "{err}"
    );
}

#[test]
fn the_branches_shares_add_up_to_the_steps() {
    let told = Arc::new(Mutex::new(Vec::new()));
    let branch = |name: &'static str| {
        let told = Arc::clone(&told);
        FnStep::agent(Injection::Messages, move |call| {
            told.lock().unwrap().push((name, call.quota));
            Ok(StepOutcome::text(name))
        })
    };
    let panel = Parallel::new(Injection::Messages)
        .branch("a", branch("a"))
        .branch("b", branch("b"))
        .branch("c", branch("c"));
    let mut l = LoopBuilder::new("p", conversational(1))
        .step("panel", panel)
        .quota(Quota::new(10_000, 1_000))
        .build()
        .unwrap();
    l.run("go").unwrap();
    let mut told = told.lock().unwrap().clone();
    told.sort_unstable();
    assert_eq!(told, [("a", Some(334)), ("b", Some(333)), ("c", Some(333))]);
}

/// A loop of body `[a (500 tokens), human, b (300 tokens)]` on `store`, one iteration a run.
fn paused_between_steps(store: &Arc<MemoryStore>) -> curator_loop::ConversationLoop {
    let mut config = conversational(1);
    config.ai_turn_source = AiTurnSource::AllAgents;
    LoopBuilder::new("q", config)
        .step("a", reporting(500, Arc::default()))
        .step("human", Hitl::new("more?"))
        .step("b", reporting(300, Arc::default()))
        .quota(Quota::new(100_000, 2_000))
        .store(Arc::clone(store), "k")
        .build()
        .unwrap()
}

#[test]
fn an_iteration_finished_by_another_process_is_charged_what_its_steps_took() {
    // One process: 500 + 300.
    let mut l = paused_between_steps(&Arc::new(MemoryStore::new()));
    assert!(l.run("go").unwrap().is_paused());
    l.resume("yes").unwrap();
    assert_eq!(l.state().quota_used, 800);
    // The same iteration paused in one process and finished in another: the same 800.
    let store = Arc::new(MemoryStore::new());
    let mut first = paused_between_steps(&store);
    assert!(first.run("go").unwrap().is_paused());
    drop(first);
    let mut second = paused_between_steps(&store);
    second.resume("yes").unwrap();
    assert_eq!(second.state().quota_used, 800);
}

/// What each branch was sent: its name and its messages' texts.
type Seen = Arc<Mutex<Vec<(String, Vec<String>)>>>;

#[test]
fn a_branch_with_its_own_system_prompt_is_sent_it_in_place_of_the_steps() {
    let seen: Seen = Arc::default();
    let branch = |name: &'static str, seen: Seen| {
        FnStep::agent(Injection::Messages, move |call| {
            let texts = call.messages.iter().map(|m| m.text().into_owned()).collect();
            seen.lock().unwrap().push((name.to_owned(), texts));
            Ok(StepOutcome::text(name))
        })
    };
    let panel = Parallel::new(Injection::Messages)
        .with_system("Review.")
        .branch("plain", branch("plain", Arc::clone(&seen)))
        .branch("security", branch("security", Arc::clone(&seen)).with_system("Look for secrets."));
    let mut l = LoopBuilder::new("p", conversational(1)).step("panel", panel).build().unwrap();
    l.run("my patch").unwrap();
    let mut seen = seen.lock().unwrap().clone();
    seen.sort();
    assert_eq!(seen[0].0, "plain");
    assert_eq!(seen[0].1.first().map(String::as_str), Some("Review."));
    assert_eq!(seen[1].0, "security");
    assert_eq!(seen[1].1.first().map(String::as_str), Some("Look for secrets."));
    assert!(!seen[1].1.iter().any(|t| t == "Review."), "{:?}", seen[1].1);
    assert_eq!(seen[0].1[1..], seen[1].1[1..], "the same history and input");
}

/// A step after a pause is told the iteration's reservation less what the steps before the
/// pause reported, as it is without the pause, in this process or in another.
#[test]
fn a_step_after_a_pause_is_told_what_is_left_of_the_reservation() {
    let store = Arc::new(MemoryStore::new());
    let told = Arc::new(Mutex::new(Vec::new()));
    let build = |paused: bool| {
        let told = Arc::clone(&told);
        let mut config = conversational(1);
        config.ai_turn_source = AiTurnSource::AllAgents;
        let first = FnStep::agent(Injection::Messages, |_| {
            Ok(StepOutcome::Output(Output::text("a").with_usage(Usage::new(10, 5))))
        });
        let second = FnStep::agent(Injection::Messages, move |call| {
            told.lock().unwrap().push(call.quota);
            Ok(StepOutcome::text("b"))
        });
        let mut builder = LoopBuilder::new("q", config).step("a1", first);
        if paused {
            builder = builder.step("human", Hitl::new("?"));
        }
        builder
            .step("a2", second)
            .quota(Quota::new(1_000, 100))
            .store(Arc::clone(&store), if paused { "p" } else { "n" })
            .build()
            .unwrap()
    };
    build(false).run("go").unwrap();
    let mut l = build(true);
    assert!(l.run("go").unwrap().is_paused());
    drop(l);
    // Resumed by another loop on the same store.
    build(true).resume("fine").unwrap();
    assert_eq!(*told.lock().unwrap(), [Some(85), Some(85)]);
}
