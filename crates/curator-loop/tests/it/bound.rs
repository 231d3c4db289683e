//! Bounding the injected history: by turns, by exact tokens (a hard cap), by summaries.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use curator_loop::{AiTurnSource, Error, Hitl, Injection, LoopBuilder, LoopConfig, Step};
use curator_model::Message;
use curator_strategies::{FnSummarizer, Tokenizer};

use curator_session::MemoryStore;

use crate::support::{Calls, agent, texts};

/// `[agent, human]` run for `iterations` iterations, the human answering "answer {i}";
/// returns what the agent was sent.
fn converse(config: &str, iterations: usize, step: (impl Step + 'static, Calls)) -> Calls {
    let mut config = LoopConfig::from_toml(config).unwrap();
    config.ai_turn_source = AiTurnSource::AllAgents;
    let (step, calls) = step;
    let mut l = LoopBuilder::new("b", config)
        .step("agent", step)
        .step("human", Hitl::new("?"))
        .summarizer("count", counting_summarizer(Arc::new(AtomicUsize::new(0))))
        .build()
        .unwrap();
    l.run("start").unwrap();
    for i in 1..iterations {
        l.resume(&format!("answer {i}")).unwrap();
    }
    calls
}

/// A summarizer closure's type.
type SummaryFn =
    dyn Fn(Option<&str>, &[&Message]) -> Result<String, curator_model::BoxError> + Send + Sync;

fn counting_summarizer(count: Arc<AtomicUsize>) -> FnSummarizer<Box<SummaryFn>> {
    FnSummarizer::new(
        "count",
        7,
        Box::new(move |previous: Option<&str>, messages: &[&Message]| {
            count.fetch_add(1, Ordering::SeqCst);
            Ok(format!("{}+{}", previous.unwrap_or("0"), messages.len()))
        }),
    )
}

/// The history part of a request: what comes after the system prompt.
fn history(call: &[Message]) -> &[Message] {
    &call[1..]
}

#[test]
fn truncate_turns_keeps_the_newest_turns() {
    let calls = converse(
        "conversation = true\n[history_management]\nstrategy = \"truncate_turns\"\nmax_turns = 3",
        6,
        agent("agent", Injection::Messages),
    );
    let calls = calls.lock().unwrap();
    let last = calls.last().unwrap();
    assert_eq!(texts(history(last)), ["user: answer 4", "assistant: agent 5", "user: answer 5"]);
}

#[test]
fn truncate_tokens_is_a_hard_cap_with_exact_counts() {
    let counter = Tokenizer::O200k.counter().unwrap();
    for max in [64_u64, 120, 400] {
        let calls = converse(
            &format!("conversation = true\n[history_management]\nmax_tokens = {max}"),
            30,
            agent("agent", Injection::Messages),
        );
        for call in calls.lock().unwrap().iter() {
            let sent: u64 = history(call).iter().map(|m| counter.count_message(m)).sum::<u64>()
                + counter.reply_priming();
            assert!(sent <= max, "{sent} tokens sent under a budget of {max}");
            // The newest turn is always among those kept.
            let newest = history(call).last().unwrap().text();
            assert!(newest == "start" || newest.starts_with("answer "), "{newest}");
        }
    }
}

#[test]
fn an_oversize_current_message_is_refused_not_cut() {
    let mut config =
        LoopConfig::from_toml("conversation = true\n[history_management]\nmax_tokens = 100")
            .unwrap();
    config.ai_turn_source = AiTurnSource::AllAgents;
    let (step, calls) = agent("agent", Injection::Messages);
    let mut l = LoopBuilder::new("b", config)
        .step("agent", step)
        .step("human", Hitl::new("?"))
        .build()
        .unwrap();
    let long = "word ".repeat(5_000);
    let err = l.run(&long).unwrap_err();
    match &err {
        Error::MessageTooLong { step, tokens, max_tokens } => {
            assert_eq!((step.as_str(), *max_tokens), ("agent", 100));
            assert!(*tokens >= 5_000, "{tokens}");
        }
        other => panic!("expected MessageTooLong, got {other:?}"),
    }
    let text = err.to_string();
    assert!(text.contains("100") && text.contains("cut_current_message"), "{text}");
    // Nothing was sent or recorded, and the run has not started: the next `run` starts
    // with the (shorter) input it is given.
    assert!(calls.lock().unwrap().is_empty());
    assert_eq!(l.turn_count(), 0);
    assert!(!l.is_running());
    assert!(l.run("a shorter question").unwrap().is_paused());
    assert_eq!(l.turns()[0].content, "a shorter question");
}

/// A later run whose input is too long is refused the same way: the earlier turns stay as
/// they were, and the next `run` takes its own input, not the refused one.
#[test]
fn a_later_run_with_an_oversize_input_is_refused_and_the_next_run_takes_its_input() {
    let mut config = LoopConfig::from_toml(
        "conversation = true\nmax_iterations = 1\n[history_management]\nmax_tokens = 64",
    )
    .unwrap();
    config.ai_turn_source = AiTurnSource::AllAgents;
    let (step, calls) = agent("agent", Injection::Messages);
    let mut l = LoopBuilder::new("b", config).step("agent", step).build().unwrap();
    l.run("hi").unwrap();
    let long = "word ".repeat(100);
    assert!(matches!(l.run(&long), Err(Error::MessageTooLong { tokens: 101, .. })));
    assert_eq!(l.turn_count(), 2);
    assert!(!l.is_running());
    l.run("short").unwrap();
    let calls = calls.lock().unwrap();
    assert_eq!(calls.len(), 2);
    assert!(texts(calls.last().unwrap()).last().is_some_and(|t| t == "user: short"));
}

#[test]
fn an_oversize_current_message_is_shortened_and_marked_when_the_configuration_allows_it() {
    let mut config = LoopConfig::from_toml(
        "conversation = true\n[history_management]\nmax_tokens = 100\ncut_current_message = true",
    )
    .unwrap();
    config.ai_turn_source = AiTurnSource::AllAgents;
    let (step, calls) = agent("agent", Injection::Messages);
    let mut l = LoopBuilder::new("b", config)
        .step("agent", step)
        .step("human", Hitl::new("?"))
        .build()
        .unwrap();
    let long = "word ".repeat(5_000);
    l.run(&long).unwrap();
    let calls = calls.lock().unwrap();
    let sent = history(&calls[0]);
    assert_eq!(sent.len(), 1);
    let text = sent[0].text();
    assert!(text.len() < 1_000, "shortened: {} bytes", text.len());
    assert!(text.contains("cut by curator"), "marked: {text}");
    // The record keeps the turn whole.
    assert_eq!(l.turns()[0].content, long);
}

#[test]
fn a_long_current_message_that_fits_is_sent_whole_and_older_turns_are_cut() {
    let config =
        LoopConfig::from_toml("conversation = true\n[history_management]\nmax_tokens = 400")
            .unwrap();
    let (step, calls) = agent("agent", Injection::Messages);
    let mut l = LoopBuilder::new("b", config)
        .step("human", Hitl::new("?"))
        .step("agent", step)
        .build()
        .unwrap();
    assert!(l.run("").unwrap().is_paused());
    assert!(l.resume(&"old ".repeat(300)).unwrap().is_paused());
    let current = "now ".repeat(250);
    assert!(l.resume(&current).unwrap().is_paused());
    let calls = calls.lock().unwrap();
    let last = calls.last().unwrap();
    // The current message goes whole, once, last; the older turns gave way.
    assert_eq!(last.last().unwrap().text(), current);
    assert_eq!(last.iter().filter(|m| m.text().contains("now now")).count(), 1);
    assert!(last.iter().all(|m| m.text() != "old ".repeat(300)), "{last:?}");
}

#[test]
fn summarize_folds_old_turns_once_and_bounds_the_rest() {
    let count = Arc::new(AtomicUsize::new(0));
    let mut config = LoopConfig::from_toml(
        "conversation = true\n[history_management]\nstrategy = \"summarize\"\nsummarizer = \"count\"\nmax_turns = 6\nsummarize_ratio = 0.5",
    )
    .unwrap();
    config.ai_turn_source = AiTurnSource::AllAgents;
    let (step, calls) = agent("agent", Injection::Messages);
    let mut l = LoopBuilder::new("s", config)
        .step("agent", step)
        .step("human", Hitl::new("?"))
        .summarizer("count", counting_summarizer(Arc::clone(&count)))
        .build()
        .unwrap();
    l.run("start").unwrap();
    let iterations = 40;
    for i in 1..iterations {
        l.resume(&format!("answer {i}")).unwrap();
    }
    let calls = calls.lock().unwrap();
    let last = history(calls.last().unwrap());
    // A summary, then at most `max_turns` turns.
    assert!(last.len() <= 7, "{} messages", last.len());
    assert!(last[0].text().starts_with("[Summary of"), "{}", last[0].text());
    assert_eq!(last.last().unwrap().text(), "answer 39");
    // Each folded chunk (3 turns) is summarized once, not once per call: about 80 turns
    // make about 25 chunks, over 40 calls.
    let folds = count.load(Ordering::SeqCst);
    assert!((20..=27).contains(&folds), "{folds} summarizer calls");
}

#[test]
fn the_extractive_summary_keeps_the_users_words_as_the_users() {
    let mut config = LoopConfig::from_toml(
        "conversation = true\n[history_management]\nstrategy = \"summarize\"\nsummarizer = \"extractive\"\nmax_turns = 4",
    )
    .unwrap();
    config.ai_turn_source = AiTurnSource::AllAgents;
    let (step, calls) = agent("agent", Injection::Messages);
    let mut l = LoopBuilder::new("s", config)
        .step("agent", step)
        .step("human", Hitl::new("?"))
        .build()
        .unwrap();
    l.run("I need a visa for Japan").unwrap();
    for i in 1..8 {
        l.resume(&format!("my passport is number {i}")).unwrap();
    }
    let calls = calls.lock().unwrap();
    let summary = history(calls.last().unwrap())[0].text().into_owned();
    assert!(summary.contains("User asked: I need a visa for Japan"), "{summary}");
    assert!(summary.contains("User said: my passport is number 1"), "{summary}");
    assert!(!summary.contains("Last assistant note: my passport"), "{summary}");
}

#[test]
fn a_limit_of_zero_sends_no_history() {
    let calls = converse(
        "conversation = true\n[history_management]\nstrategy = \"truncate_turns\"\nmax_turns = 0",
        3,
        agent("agent", Injection::Messages),
    );
    assert_eq!(
        texts(calls.lock().unwrap().last().unwrap()),
        ["system: You are the agent.", "user: answer 2"]
    );
}

/// A summary the token budget cannot hold is never computed for nothing: with the
/// extractive summarizer (up to 2,000 characters of its own) and a budget of 300 tokens,
/// the summary is written to fit the room, so the requests after the first fold carry it.
#[test]
fn a_summary_fits_the_token_budget_and_reaches_the_agent() {
    let mut config = LoopConfig::from_toml(
        "conversation = true\n[history_management]\nstrategy = \"summarize\"\nsummarizer = \"extractive\"\nmax_tokens = 300\ntokenizer = \"o200k\"",
    )
    .unwrap();
    config.ai_turn_source = AiTurnSource::AllAgents;
    let (step, calls) = agent("agent", Injection::Messages);
    let mut l = LoopBuilder::new("s", config)
        .step("agent", step)
        .step("human", Hitl::new("?"))
        .build()
        .unwrap();
    l.run("I need a visa for Japan: which papers, which fees, which office?").unwrap();
    for i in 1..60 {
        l.resume(&format!("my passport number is X{i:04}, issued in Lisbon, valid until 2031"))
            .unwrap();
    }
    let calls = calls.lock().unwrap();
    let carrying =
        |request: &[Message]| request.iter().any(|m| m.text().contains("[Summary of the"));
    let first = calls.iter().position(|c| carrying(c)).expect("no request carried a summary");
    let after = &calls[first..];
    let carried = after.iter().filter(|c| carrying(c)).count();
    assert_eq!(carried, after.len(), "{carried} of {} requests carried the summary", after.len());
}

/// Under a window of a few turns, every request after the first fold carries the summary
/// (pinned by the bound) and the newest turns beside it.
#[test]
fn a_summary_survives_a_window_of_few_turns() {
    for max_turns in 1..=4 {
        let mut config = LoopConfig::from_toml(&format!(
            "conversation = true\n[history_management]\nstrategy = \"summarize\"\nsummarizer = \"extractive\"\nmax_turns = {max_turns}"
        ))
        .unwrap();
        config.ai_turn_source = AiTurnSource::AllAgents;
        let (step, calls) = agent("agent", Injection::Messages);
        let mut l = LoopBuilder::new("s", config)
            .step("agent", step)
            .step("human", Hitl::new("?"))
            .build()
            .unwrap();
        l.run("Plan a trip to Kyoto.").unwrap();
        for i in 1..20 {
            l.resume(&format!("answer {i}")).unwrap();
        }
        let calls = calls.lock().unwrap();
        let carrying =
            |request: &[Message]| request.iter().any(|m| m.text().contains("[Summary of the"));
        let first = calls.iter().position(|c| carrying(c));
        let first = first.unwrap_or_else(|| panic!("max_turns {max_turns}: no summary sent"));
        let carried = calls[first..].iter().filter(|c| carrying(c)).count();
        assert_eq!(carried, calls.len() - first, "max_turns {max_turns}");
        // The newest answer is sent too.
        let last = calls.last().unwrap();
        assert!(last.iter().any(|m| m.text().contains("answer 19")), "max_turns {max_turns}");
    }
}

/// Under a budget too small for the summary beside the newest turn, the summary gives way:
/// the loop goes on, and an answer that fits the budget is never refused or cut for it.
#[test]
fn a_summary_gives_way_to_the_newest_turn_under_a_small_budget() {
    for (max_tokens, answer) in [
        (64, "alpha beta gamma delta epsilon zeta eta theta alpha beta gamma delta"),
        (100, &*"alpha beta gamma delta epsilon zeta eta theta ".repeat(5)),
    ] {
        let mut config = LoopConfig::from_toml(&format!(
            "conversation = true\n[history_management]\nstrategy = \"summarize\"\nsummarizer = \"extractive\"\nmax_tokens = {max_tokens}"
        ))
        .unwrap();
        config.ai_turn_source = AiTurnSource::AllAgents;
        let (step, calls) = agent("agent", Injection::Messages);
        let mut l = LoopBuilder::new("s", config)
            .step("agent", step)
            .step("human", Hitl::new("?"))
            .build()
            .unwrap();
        l.run("hi").unwrap();
        for i in 0..12 {
            let outcome = l.resume(&format!("{answer} {i}"));
            assert!(outcome.is_ok(), "budget {max_tokens}, answer {i}: {outcome:?}");
        }
        // Each answer reached the agent whole.
        let calls = calls.lock().unwrap();
        for (i, call) in calls.iter().skip(1).enumerate() {
            let newest = call.last().unwrap().text();
            assert_eq!(newest, format!("{answer} {i}"), "budget {max_tokens}");
        }
    }
}

/// A human answer too long for the agent step it goes to is refused with the resume: the
/// loop stays paused, nothing of the answer is kept (in memory or in the store), and a
/// shorter answer goes on.
#[test]
fn an_oversize_human_answer_is_refused_and_the_loop_stays_paused() {
    let store = Arc::new(MemoryStore::new());
    let build = || {
        let (step, calls) = agent("agent", Injection::Messages);
        let mut config =
            LoopConfig::from_toml("conversation = true\n[history_management]\nmax_tokens = 100")
                .unwrap();
        config.ai_turn_source = AiTurnSource::AllAgents;
        let l = LoopBuilder::new("b", config)
            .step("agent", step)
            .step("human", Hitl::new("?"))
            .store(Arc::clone(&store), "k")
            .build()
            .unwrap();
        (l, calls)
    };
    let (mut l, calls) = build();
    l.run("hi").unwrap();
    let long = "word ".repeat(5_000);
    for _ in 0..2 {
        let err = l.resume(&long).unwrap_err();
        assert!(matches!(err, Error::MessageTooLong { .. }), "{err:?}");
        assert_eq!(l.paused().map(|p| p.step_name.as_str()), Some("human"));
        assert_eq!(l.turn_count(), 2, "{:?}", l.turns());
        assert_eq!(l.run_iterations(), 0);
    }
    assert_eq!(calls.lock().unwrap().len(), 1);
    drop(l);
    // Another process sees the loop paused as before.
    let (mut l, calls) = build();
    assert_eq!(l.paused().map(|p| p.step_name.as_str()), Some("human"));
    assert_eq!(l.turn_count(), 2);
    assert!(l.turns().iter().all(|t| !t.content.contains("word word")));
    // A shorter answer goes on, and the agent is sent it.
    assert!(l.resume("a short answer").unwrap().is_paused());
    assert_eq!(calls.lock().unwrap().len(), 1);
    let sent = calls.lock().unwrap().last().unwrap().clone();
    assert!(sent.iter().any(|m| m.text().contains("a short answer")));
    assert!(sent.iter().all(|m| !m.text().contains("word word")));
}

/// Under a budget whose newest turns leave no room for a summary beside them, no summary is
/// computed (a summarizer's call costs, and counts against a quota): every summary the
/// summarizer writes reaches the agent in the request of the iteration it was written for.
#[test]
fn no_summary_is_computed_that_the_budget_cannot_send() {
    for (answer_words, max_tokens) in [(240, 300), (30, 64), (20, 300)] {
        let mut config = LoopConfig::from_toml(&format!(
            "conversation = true\n[history_management]\nstrategy = \"summarize\"\nsummarizer = \"count\"\nmax_tokens = {max_tokens}\ntokenizer = \"o200k\""
        ))
        .unwrap();
        config.ai_turn_source = AiTurnSource::AllAgents;
        let (step, calls) = agent("agent", Injection::Messages);
        let count = Arc::new(AtomicUsize::new(0));
        let mut l = LoopBuilder::new("s", config)
            .step("agent", step)
            .step("human", Hitl::new("?"))
            .summarizer("count", counting_summarizer(Arc::clone(&count)))
            .build()
            .unwrap();
        l.run("start").unwrap();
        let mut computed = 0;
        for i in 0..16 {
            let before = count.load(Ordering::SeqCst);
            l.resume(&format!("{} {i}", "blah ".repeat(answer_words))).unwrap();
            if count.load(Ordering::SeqCst) > before {
                computed += 1;
                let calls = calls.lock().unwrap();
                let request = calls.last().unwrap();
                assert!(
                    request.iter().any(|m| m.text().contains("[Summary of the")),
                    "{answer_words} words, budget {max_tokens}, answer {i}: a summary was computed and not sent"
                );
            }
        }
        // Short answers leave room: summaries are written and sent.
        if answer_words == 20 {
            assert!(computed > 0, "no summary computed under budget {max_tokens}");
        }
    }
}
