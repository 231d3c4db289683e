//! `StableBudget`, the default pipeline's budget: consecutive views share the whole previous
//! view until a compaction, a compaction happens only when the view would pass the budget
//! and frees what it must, and a resumed process or a stateless caller gets the live views.

use std::fmt::Write as _;

use curator_model::{Message, Role, ToolCall};
use curator_strategies::{
    CharEstimate, CurationContext, History, HistoryManager, HistoryManagerExt, Redactor,
    RelevanceBudget, StableBudget, StrategyConfig, TokenCounter, Tokenizer, View,
};
use proptest::prelude::*;

/// The default pipeline at `max_tokens`, counted by the estimate (fast in a debug build),
/// with the least a compaction frees.
fn pipeline(max_tokens: u64, min_free: u64) -> Box<dyn HistoryManager> {
    pipeline_with(max_tokens, min_free, StableBudget::DEFAULT_OPENING_SHARE)
}

/// As [`pipeline`], keeping `opening_share` of a compaction's room for the opening (the
/// first compaction's as by default).
fn pipeline_with(max_tokens: u64, min_free: u64, opening_share: f64) -> Box<dyn HistoryManager> {
    pipeline_opening(max_tokens, min_free, opening_share, StableBudget::DEFAULT_FIRST_OPENING_SHARE)
}

/// As [`pipeline`], keeping `opening_share` of a compaction's room for the opening, and
/// `first` of the first compaction's.
fn pipeline_opening(
    max_tokens: u64,
    min_free: u64,
    opening_share: f64,
    first: f64,
) -> Box<dyn HistoryManager> {
    StrategyConfig::Compose {
        steps: vec![
            StrategyConfig::Redactor { builtin: true, patterns: std::collections::BTreeMap::new() },
            StrategyConfig::StableBudget {
                max_tokens,
                reserve: 0,
                tokenizer: Tokenizer::Estimate,
                head_share: RelevanceBudget::DEFAULT_HEAD_SHARE,
                recent_share: RelevanceBudget::DEFAULT_RECENT_SHARE,
                fold_note: true,
                note_terms: false,
                cut_tool_results: true,
                low_water: StableBudget::DEFAULT_LOW_WATER,
                min_free,
                opening_share,
                first_opening_share: first,
            },
        ],
    }
    .build()
    .unwrap()
}

fn tokens(messages: &[Message]) -> u64 {
    let counter = CharEstimate::default();
    counter.reply_priming() + messages.iter().map(|m| counter.count_message(m)).sum::<u64>()
}

/// The calls of a conversation: every prefix that an assistant message follows, and the
/// whole of it.
fn calls(messages: &[Message]) -> Vec<usize> {
    let mut out: Vec<usize> =
        (1..messages.len()).filter(|&i| messages[i].role() == Role::Assistant).collect();
    out.push(messages.len());
    out
}

/// A coding agent's conversation: outputs of 200 to 2,400 characters, a secret now and then.
fn agent(steps: usize) -> Vec<Message> {
    let mut messages = vec![
        Message::system("You are a coding agent. Use the tools."),
        Message::user("Fix the failing test in src/parser.rs."),
    ];
    for i in 0..steps {
        let id = format!("c{i}");
        let call = ToolCall::new(&id, "run", format!(r#"{{"step": {i}}}"#));
        messages.push(Message::assistant_with_calls(Some(format!("Step {i}.").into()), vec![call]));
        let secret =
            if i % 7 == 3 { " token ghp_abcdefghijklmnopqrstuvwxyz0123456789" } else { "" };
        let output = format!("output {i} line{secret}\n").repeat(10 + (i * 37) % 100);
        messages.push(Message::tool_result(&id, output));
    }
    messages.push(Message::assistant("Done."));
    messages
}

/// Replays `messages` as an agent loop does (one history, curated at every call) and
/// checks every view against the previous one; returns the views and the number of
/// compactions.
fn live(messages: &[Message], max_tokens: u64, min_free: u64) -> (Vec<Vec<Message>>, usize) {
    let pipeline = pipeline(max_tokens, min_free);
    let redactor = Redactor::new();
    let ctx = CurationContext::default();
    let mut history = History::new();
    let mut views: Vec<Vec<Message>> = Vec::new();
    let mut compactions = 0;
    let mut at = 0;
    for end in calls(messages) {
        for message in &messages[at..end] {
            history.push(message.clone());
        }
        let appended = redactor.curate_messages(&messages[at..end], &ctx).unwrap();
        at = end;
        let view = pipeline.curate_history(&history, &ctx).unwrap().to_messages();
        assert!(tokens(&view) <= max_tokens, "{} tokens over {max_tokens}", tokens(&view));
        if let Some(previous) = views.last() {
            let mut candidate = previous.clone();
            candidate.extend(appended);
            if tokens(&candidate) <= max_tokens {
                assert_eq!(
                    view, candidate,
                    "a view that fits is the previous one plus what was appended"
                );
            } else {
                compactions += 1;
                let freed = tokens(&candidate) - tokens(&view);
                assert!(freed >= min_free, "a compaction freed {freed} tokens, under {min_free}");
            }
        }
        views.push(view);
    }
    (views, compactions)
}

#[test]
fn views_grow_by_what_is_appended_and_compact_in_steps() {
    let messages = agent(60);
    let (views, compactions) = live(&messages, 4_000, 0);
    assert!(views.len() > 60);
    // Well under one compaction per call: the view grows back from half the body's room.
    assert!((2..=views.len() / 4).contains(&compactions), "{compactions} of {}", views.len());
}

#[test]
fn every_compaction_keeps_the_same_opening_and_notes_what_follows_it() {
    let messages = agent(80);
    let ctx = CurationContext::default();
    let live = pipeline_opening(4_000, 0, 0.5, 0.5);
    let mut history = History::new();
    let mut openings: Vec<Vec<Message>> = Vec::new();
    let mut previous: Vec<Message> = Vec::new();
    let mut at = 0;
    for end in calls(&messages) {
        for message in &messages[at..end] {
            history.push(message.clone());
        }
        at = end;
        let view = live.curate_history(&history, &ctx).unwrap().to_messages();
        if !view.starts_with(&previous)
            && let Some(note) = view.iter().position(RelevanceBudget::is_note)
        {
            // The opening: the system message, the task, then the oldest messages in order
            // (as the redactor before the budget gives them).
            let redacted = Redactor::new().curate_messages(&messages[..note], &ctx).unwrap();
            assert_eq!(view[..note], redacted, "at {end}");
            openings.push(view[..note].to_vec());
        }
        previous = view;
    }
    assert!(openings.len() >= 3, "{} compactions", openings.len());
    assert!(openings[0].len() > 2, "an opening past the task");
    assert!(openings.windows(2).all(|w| w[0] == w[1]), "the same opening each time");
}

#[test]
fn a_compaction_frees_at_least_the_minimum() {
    let messages = agent(60);
    let (_, compactions) = live(&messages, 4_000, 2_500);
    assert!(compactions >= 2);
}

#[test]
fn a_resumed_process_and_a_stateless_caller_get_the_live_views() {
    let messages = agent(50);
    let (views, compactions) = live(&messages, 3_000, 0);
    assert!(compactions >= 2);
    let ctx = CurationContext::default();
    for (end, view) in calls(&messages).into_iter().zip(&views) {
        // A stateless caller: a new list every call, the same pipeline value.
        let stateless = pipeline(3_000, 0).curate_messages(&messages[..end], &ctx).unwrap();
        assert_eq!(&stateless, view, "stateless at {end}");
    }
    // A process that resumes: a new pipeline and history, then goes on as the live one did.
    let resumed = pipeline(3_000, 0);
    let mut history = History::from(messages[..60].to_vec());
    let ends = calls(&messages);
    for (k, &end) in ends.iter().enumerate().filter(|(_, e)| **e >= 60) {
        for message in &messages[history.len()..end] {
            history.push(message.clone());
        }
        let view = resumed.curate_history(&history, &ctx).unwrap().to_messages();
        assert_eq!(view, views[k], "resumed at {end}");
    }
}

#[test]
fn the_same_call_twice_gives_the_same_view() {
    let messages = agent(30);
    let pipeline = pipeline(2_500, 0);
    let history = History::from(messages.clone());
    let ctx = CurationContext::default();
    let first = pipeline.curate_history(&history, &ctx).unwrap().to_messages();
    let again = pipeline.curate_history(&history, &ctx).unwrap().to_messages();
    assert_eq!(first, again);
    assert!(tokens(&first) <= 2_500);
}

#[test]
fn a_window_before_it_makes_it_start_over_and_stay_within_the_budget() {
    let messages = agent(40);
    let pipeline = curator_strategies::SlidingWindow::new(12)
        .then(StableBudget::new(1_500).with_counter(CharEstimate::default()));
    let ctx = CurationContext::default();
    let mut history = History::new();
    for (i, message) in messages.iter().enumerate() {
        history.push(message.clone());
        if i > 2 {
            let view = pipeline.curate_history(&history, &ctx).unwrap();
            assert!(view.tokens(&CharEstimate::default()) <= 1_500);
        }
    }
}

#[test]
fn a_budget_too_small_for_what_is_never_lost_is_refused() {
    // The system message alone takes more than the budget, and is never shortened.
    let mut messages = agent(5);
    messages[0] = Message::system("Rules. ".repeat(100));
    let budget = StableBudget::new(100).with_counter(CharEstimate::default());
    let err = budget.curate_messages(&messages, &CurationContext::default()).unwrap_err();
    assert!(matches!(err, curator_strategies::Error::BudgetTooSmall(_)), "{err}");
    // The error names the budget as it was given (and its reserve), whatever the room.
    for (max_tokens, reserve) in [(0, 0), (100, 0), (100, 523)] {
        let budget = StableBudget::new(max_tokens)
            .with_reserve(reserve)
            .with_counter(CharEstimate::default());
        let Err(curator_strategies::Error::BudgetTooSmall(shortfall)) =
            budget.curate_messages(&messages, &CurationContext::default())
        else {
            panic!("{max_tokens}: not refused");
        };
        assert_eq!(
            (shortfall.max_tokens, shortfall.reserve),
            (max_tokens, reserve),
            "{shortfall:?}"
        );
    }
}

#[test]
fn options_out_of_range_are_refused() {
    let err = StableBudget::new(1_000).with_low_water(1.5).unwrap_err();
    assert!(err.to_string().contains("low_water"), "{err}");
    let err = StableBudget::new(1_000).with_opening_share(-0.1).unwrap_err();
    assert!(err.to_string().contains("opening_share"), "{err}");
    let err = StableBudget::new(1_000).with_first_opening_share(2.0).unwrap_err();
    assert!(err.to_string().contains("first_opening_share"), "{err}");
    let view_of = |m: &[Message]| {
        let history = History::from(m);
        View::full(&history).len()
    };
    assert_eq!(view_of(&agent(1)), 5);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Over generated conversations (parallel calls, failed calls, images and documents,
    /// repeated call ids, long outputs), at budgets from tight to roomy.
    #[test]
    fn consecutive_views_share_the_previous_view_until_a_compaction(
        messages in curator_testkit::arb::history_with(40, false),
        max_tokens in 300u64..6_000,
        min_free in prop_oneof![3 => Just(0u64), 1 => 0u64..400],
        opening in prop_oneof![1 => Just(0.0), 1 => 0.0f64..=1.0],
        first in prop_oneof![2 => Just(StableBudget::DEFAULT_FIRST_OPENING_SHARE), 1 => 0.0f64..=1.0],
    ) {
        let pipeline = |max_tokens, min_free| pipeline_opening(max_tokens, min_free, opening, first);
        let live = pipeline(max_tokens, min_free);
        let redactor = Redactor::new();
        let ctx = CurationContext::default();
        let mut history = History::new();
        let mut previous: Option<Vec<Message>> = None;
        let mut at = 0;
        for end in calls(&messages) {
            for message in &messages[at..end] {
                history.push(message.clone());
            }
            let appended = redactor.curate_messages(&messages[at..end], &ctx).unwrap();
            at = end;
            let Ok(view) = live.curate_history(&history, &ctx) else {
                // Refused (BudgetTooSmall): the stateless caller is refused too.
                prop_assert!(pipeline(max_tokens, min_free).curate_messages(&messages[..end], &ctx).is_err());
                previous = None;
                continue;
            };
            let view = view.to_messages();
            prop_assert!(tokens(&view) <= max_tokens);
            if let Some(previous) = previous.take() {
                let mut candidate = previous;
                candidate.extend(appended);
                if tokens(&candidate) <= max_tokens {
                    prop_assert_eq!(&view, &candidate);
                }
            }
            let stateless = pipeline(max_tokens, min_free).curate_messages(&messages[..end], &ctx).unwrap();
            prop_assert_eq!(&stateless, &view);
            previous = Some(view);
        }
    }

    /// A loop that asks for a view after every message, its calls still open or not: every
    /// view within the budget, and the one a stateless caller gets.
    #[test]
    fn views_asked_after_every_message_are_the_stateless_views(
        messages in curator_testkit::arb::history_with(30, false),
        max_tokens in 300u64..4_000,
        min_free in prop_oneof![3 => Just(0u64), 1 => 0u64..400],
        opening in prop_oneof![1 => Just(0.0), 1 => 0.0f64..=1.0],
    ) {
        let pipeline = |max_tokens, min_free| {
            pipeline_opening(max_tokens, min_free, opening, StableBudget::DEFAULT_FIRST_OPENING_SHARE)
        };
        let live = pipeline(max_tokens, min_free);
        let ctx = CurationContext::default();
        let mut history = History::new();
        for (end, message) in messages.iter().enumerate().map(|(i, m)| (i + 1, m)) {
            history.push(message.clone());
            let stateless = pipeline(max_tokens, min_free).curate_messages(&messages[..end], &ctx);
            match live.curate_history(&history, &ctx) {
                Ok(view) => {
                    let view = view.to_messages();
                    prop_assert!(tokens(&view) <= max_tokens);
                    prop_assert_eq!(&stateless.unwrap(), &view);
                }
                Err(_) => prop_assert!(stateless.is_err()),
            }
        }
    }
}

/// A coding agent's replies of three parallel calls (of 60 to 300 characters of arguments),
/// each result of 300 to 1,000 characters.
fn parallel_agent(steps: usize) -> Vec<Message> {
    let mut messages = vec![
        Message::system("You are a coding agent. Use the tools."),
        Message::user("Fix the failing test in src/parser.rs."),
    ];
    for i in 0..steps {
        let ids: Vec<String> = (0..3).map(|k| format!("c{i}_{k}")).collect();
        let path = "src/module/".repeat(5 + (i * 3) % 20);
        let calls = ids
            .iter()
            .map(|id| ToolCall::new(id, "run", format!(r#"{{"path":"{path}"}}"#)))
            .collect();
        messages.push(Message::assistant_with_calls(None, calls));
        for (k, id) in ids.iter().enumerate() {
            messages.push(Message::tool_result(
                id,
                format!("line {i} {k}\n").repeat(30 + (i * 7 + k) % 60),
            ));
        }
    }
    messages
}

/// A loop that asks for a view after every message, its calls still open or not, as some
/// agents do: the view right after a reply of calls alone is the view before it (the
/// calls are not sent yet), even where counting them would pass the budget; a view that
/// overflows while a reply's calls are open compacts at the call before that reply, and
/// the views after its other results, and after the last, keep that compaction (what
/// precedes the reply stays the same while it fits). A stateless caller gets every one of
/// those views.
#[test]
fn calls_made_while_a_replys_calls_are_open_share_its_compaction() {
    let messages = parallel_agent(40);
    let pipeline = pipeline(3_000, 0);
    let redacted = Redactor::new().curate_messages(&messages, &CurationContext::default()).unwrap();
    let ctx = CurationContext::default();
    let mut history = History::new();
    // The view before the reply being answered, as the last call saw it.
    let mut before: Option<Vec<Message>> = None;
    let (mut shared, mut tipped) = (0, 0);
    let mut last: Vec<Message> = Vec::new();
    for (end, message) in messages.iter().enumerate().map(|(i, m)| (i + 1, m)) {
        history.push(message.clone());
        let view = pipeline.curate_history(&history, &ctx).unwrap().to_messages();
        assert!(tokens(&view) <= 3_000);
        let stateless = self::pipeline(3_000, 0).curate_messages(&messages[..end], &ctx).unwrap();
        assert_eq!(stateless, view, "stateless at {end}");
        let previous = std::mem::replace(&mut last, view.clone());
        if message.role() == Role::Assistant && end > 2 {
            assert_eq!(view, previous, "a reply of calls alone changed the view at {end}");
            if tokens(&previous) + tokens(&redacted[end - 1..end]) > 3_000 {
                tipped += 1;
            }
        }
        if message.role() != Role::Tool {
            before = None;
            continue;
        }
        // The reply's assistant message, in the history and in the view.
        let reply = messages[..end].iter().rposition(|m| m.role() == Role::Assistant).unwrap();
        let at = view.iter().rposition(|m| m.role() == Role::Assistant).unwrap();
        let now = view[..at].to_vec();
        if let Some(previous) = before.take() {
            let mut candidate = previous.clone();
            candidate.extend_from_slice(&redacted[reply..end]);
            if tokens(&candidate) <= 3_000 {
                assert_eq!(now, previous, "what precedes the reply changed at {end}, and fit");
                shared += 1;
            }
        }
        before = Some(now);
    }
    assert!(shared >= 60, "{shared}");
    assert!(tipped >= 1, "no reply of calls alone would have passed the budget");
}

/// A view asked for while a reply's parallel calls are open, after a compaction at the
/// call before that reply made by an earlier such view: measured as it is sent from that
/// compaction on, it is the view a stateless caller gets (a low-water mark of 0.3, a
/// least free of 100 tokens and an opening share of 0.5, where a live walk once compacted
/// again at the end and a stateless one did not).
#[test]
fn a_view_with_calls_open_after_a_compaction_at_its_reply_is_the_stateless_one() {
    let make = || {
        StableBudget::new(600)
            .with_counter(CharEstimate::default())
            .with_low_water(0.3)
            .unwrap()
            .with_min_free(100)
            .with_opening_share(0.5)
            .unwrap()
    };
    let call = |id: &str| ToolCall::new(id, "run", format!(r#"{{"cmd":"step {id}"}}"#));
    let mut messages = vec![
        Message::system("You are a coding agent. Be careful."),
        Message::user("Fix the failing test in parser.rs, then run the suite."),
    ];
    for i in 0..4 {
        let ids: Vec<String> = (0..3).map(|j| format!("p{i}_{j}")).collect();
        let calls = ids.iter().map(|id| call(id)).collect();
        let text = (i % 2 == 1).then(|| "Let me look at several things.".into());
        messages.push(Message::assistant_with_calls(text, calls));
        for (j, id) in ids.iter().enumerate() {
            messages
                .push(Message::tool_result(id, format!("output of {id}: ").repeat(40 * (1 + j))));
        }
        if i % 3 == 2 {
            messages.push(Message::assistant("Progress noted."));
            messages.push(Message::user("continue"));
        }
    }
    let ctx = CurationContext::default();
    let live = make();
    let mut history = History::new();
    for (end, message) in messages.iter().enumerate().map(|(i, m)| (i + 1, m)) {
        history.push(message.clone());
        let view = live.curate_history(&history, &ctx).unwrap().to_messages();
        let stateless = make().curate_messages(&messages[..end], &ctx).unwrap();
        assert_eq!(view, stateless, "at {end}");
        assert!(tokens(&view) <= 600, "at {end}");
    }
}

/// Parallel calls split over two assistant messages (as Anthropic's are read) are one
/// reply: no compaction happens between them, which would leave the first call's result
/// without its call.
#[test]
fn a_compaction_never_falls_between_split_parallel_calls() {
    let mut messages = vec![Message::system("You are an agent."), Message::user("Check both.")];
    for i in 0..30 {
        let (a, b) = (format!("a{i}"), format!("b{i}"));
        messages.push(Message::assistant_with_calls(None, vec![ToolCall::new(&a, "ls", "{}")]));
        messages.push(Message::assistant_with_calls(None, vec![ToolCall::new(&b, "cat", "{}")]));
        messages.push(Message::tool_result(&a, format!("listing {i} ").repeat(30)));
        messages.push(Message::tool_result(&b, format!("content {i} ").repeat(30)));
    }
    let ctx = CurationContext::default();
    for budget in [600, 900, 1_500] {
        let live = pipeline(budget, 0);
        let mut history = History::new();
        for (i, message) in messages.iter().enumerate() {
            history.push(message.clone());
            if i > 1 {
                let view = live.curate_history(&history, &ctx).unwrap().to_messages();
                // Split parallel calls are Anthropic's shape; once both results are in, the
                // view keeps Anthropic's rules.
                if i % 4 == 1 {
                    curator_model::validate::anthropic(&view).unwrap();
                }
                let stateless = pipeline(budget, 0).curate_messages(&messages[..=i], &ctx).unwrap();
                assert_eq!(view, stateless, "at {i} within {budget}");
            }
        }
    }
}

/// Words that differ from message to message (so that relevance tells them apart), `chars`
/// characters of them.
fn words(seed: usize, chars: usize) -> String {
    let mut out = String::new();
    let mut n = seed;
    while out.len() < chars {
        n = n.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        write!(out, "w{:x} ", n >> 44).unwrap();
    }
    out.truncate(chars);
    out
}

/// The shape of a real run (a CTF agent's: a system prompt of about 2,000 tokens, a task of
/// about 775, outputs of 200 to 1,800 tokens) at 8,000 tokens: the first compaction keeps
/// the task whole, as the views before it sent it, rather than shortening it to fit a
/// selection that went past the low-water mark.
#[test]
fn a_compaction_keeps_the_task_whole_when_the_room_holds_it() {
    // (assistant text, call arguments, result), in characters of the estimate.
    let steps = [
        (144, 50, 4_000),
        (2_650, 90, 950),
        (250, 55, 1_400),
        (980, 135, 2_300),
        (1_900, 510, 550),
        (500, 510, 550),
        (500, 510, 550),
        (1_900, 1_650, 7_000),
        (520, 150, 900),
    ];
    let task = words(1, 3_100);
    let mut messages = vec![Message::system(words(0, 7_860)), Message::user(task.clone())];
    let budget = StableBudget::new(8_000).with_counter(CharEstimate::default());
    let ctx = CurationContext::default();
    let mut compactions = 0;
    let mut previous: Vec<Message> = Vec::new();
    for (i, &(text, args, result)) in steps.iter().enumerate() {
        let id = format!("c{i}");
        let call = ToolCall::new(&id, "run", format!("{{\"cmd\": \"{}\"}}", words(100 + i, args)));
        messages.push(Message::assistant_with_calls(Some(words(200 + i, text).into()), vec![call]));
        messages.push(Message::tool_result(&id, words(300 + i, result)));
        let view = budget.curate_messages(&messages, &ctx).unwrap();
        if !view.starts_with(&previous) {
            compactions += 1;
        }
        assert!(tokens(&view) <= 8_000, "{}", tokens(&view));
        assert_eq!(view[1].text(), task, "call {i}: the task was changed");
        previous = view;
    }
    assert!(compactions >= 1, "{compactions}");
}

/// A compaction that keeps the first units after the task in a run sends its fold note after
/// them: the compacted view then starts with the previous view's head and that run, byte for
/// byte, and the provider's cache serves them at the compaction too.
#[test]
fn a_compaction_sends_its_note_after_the_run_it_keeps_from_the_start() {
    let mut messages = vec![
        Message::system("You are a coding agent."),
        Message::user("Why does the zebra_parser reject quoted keys? Fix zebra_parser."),
        Message::assistant_with_calls(None, vec![ToolCall::new("c0", "read", "{}")]),
        Message::tool_result("c0", "zebra_parser quoted keys: zebra_parser rejects them here."),
    ];
    // Every compaction by relevance, the first too.
    let budget = StableBudget::new(1_200)
        .with_counter(CharEstimate::default())
        .with_first_opening_share(0.0)
        .unwrap();
    let ctx = CurationContext::default();
    let mut previous: Vec<Message> = budget.curate_messages(&messages, &ctx).unwrap();
    for i in 1..40 {
        let id = format!("c{i}");
        messages.push(Message::assistant_with_calls(None, vec![ToolCall::new(&id, "run", "{}")]));
        messages.push(Message::tool_result(&id, words(i, 600)));
        let view = budget.curate_messages(&messages, &ctx).unwrap();
        if !view.starts_with(&previous) {
            // The compaction: the run kept from the start, then the note.
            assert_eq!(view[..4], messages[..4], "call {i}: the first unit was not kept first");
            assert!(view[4].text().starts_with("[curator left out"), "call {i}: {:?}", view[4]);
            assert_eq!(view[..4], previous[..4], "call {i}");
            return;
        }
        previous = view;
    }
    panic!("no compaction");
}

/// The notes of the compacted views of a 60-step conversation (each output its own words)
/// curated at every call by `budget`.
fn compaction_notes(budget: &dyn HistoryManager) -> Vec<String> {
    let mut messages = vec![Message::system("You are a coding agent."), Message::user("Fix it.")];
    for i in 0..60 {
        let id = format!("c{i}");
        let call = ToolCall::new(&id, "run", format!(r#"{{"step": {i}}}"#));
        messages.push(Message::assistant_with_calls(None, vec![call]));
        messages.push(Message::tool_result(&id, words(i, 800)));
    }
    let ctx = CurationContext::default();
    let mut history = History::new();
    let mut notes: Vec<String> = Vec::new();
    let mut at = 0;
    for end in calls(&messages) {
        for message in &messages[at..end] {
            history.push(message.clone());
        }
        at = end;
        let view = budget.curate_history(&history, &ctx).unwrap().to_messages();
        for note in view.iter().filter(|m| RelevanceBudget::is_note(m)) {
            let text = note.text().into_owned();
            if notes.last() != Some(&text) {
                notes.push(text);
            }
        }
    }
    notes
}

/// A compaction's note names the calls it left out, with their arguments, and lists no
/// terms (their room holds messages instead); a configuration can ask for the terms.
#[test]
fn a_compaction_notes_the_calls_it_left_out_and_lists_terms_only_when_asked() {
    let config = |extra: &str| {
        StrategyConfig::from_json(&format!(
            r#"{{"strategy": "stable_budget", "max_tokens": 3000, "tokenizer": "estimate"{extra}}}"#
        ))
        .unwrap()
        .build()
        .unwrap()
    };
    let notes = compaction_notes(config("").as_ref());
    assert!(notes.len() >= 2, "{notes:?}");
    for note in &notes {
        assert!(note.contains(r#"run({"step":"#), "{note}");
        assert!(!note.contains("They mentioned"), "{note}");
    }
    let with_terms = compaction_notes(config(r#", "note_terms": true"#).as_ref());
    assert!(with_terms.iter().any(|note| note.contains("They mentioned")), "{with_terms:?}");
    assert!(
        serde_json::to_string(&StrategyConfig::default_pipeline(8_000))
            .unwrap()
            .contains(r#""note_terms":false"#)
    );
}

/// The first compaction cuts the middle: it keeps the run from the task on (which every
/// view before it sent, so the provider's cache serves it) and the newest unit, with the
/// note between them; the compactions after it select by relevance.
#[test]
fn the_first_compaction_keeps_the_run_from_the_task_and_the_newest_unit() {
    let first_compaction = |budget: StableBudget| {
        let mut messages =
            vec![Message::system("You are a coding agent."), Message::user("Fix the parser.")];
        let ctx = CurationContext::default();
        let mut previous: Vec<Message> = Vec::new();
        for i in 0..60 {
            let id = format!("c{i}");
            let call = ToolCall::new(&id, "run", format!(r#"{{"step": {i}}}"#));
            messages.push(Message::assistant_with_calls(None, vec![call]));
            messages.push(Message::tool_result(&id, words(i, 700)));
            let view = budget.curate_messages(&messages, &ctx).unwrap();
            if !view.starts_with(&previous) {
                return (previous, view, messages);
            }
            previous = view;
        }
        panic!("no compaction");
    };
    let budget = StableBudget::new(3_000).with_counter(CharEstimate::default());
    let (previous, view, messages) = first_compaction(budget);
    let note = view.iter().position(RelevanceBudget::is_note).unwrap();
    // The system message, the task and at least two units, as the view before sent them.
    assert!(note >= 6, "an opening of {note} messages");
    assert_eq!(view[..note], previous[..note]);
    assert_eq!(view[view.len() - 2..], messages[messages.len() - 2..], "the newest unit");
    assert!(tokens(&view) <= 3_000);
    // Without it, the first compaction selects by relevance and keeps no such run.
    let by_relevance = StableBudget::new(3_000)
        .with_counter(CharEstimate::default())
        .with_first_opening_share(0.0)
        .unwrap();
    let (_, view, _) = first_compaction(by_relevance);
    let note = view.iter().position(RelevanceBudget::is_note).unwrap();
    assert!(note < 6, "an opening of {note} messages");
}

/// A system prompt longer than the head's share of the room is kept whole (system messages
/// are not shortened): a compaction then aims at a mark above it, and frees half of what
/// the body has, rather than the one unit the whole room frees, which would make nearly
/// every call a compaction.
#[test]
fn a_system_prompt_over_its_share_does_not_make_every_call_a_compaction() {
    let mut messages = vec![
        Message::system(format!("Policy: {}", "rule ".repeat(1_300))),
        Message::user("Book a flight."),
    ];
    for i in 0..40 {
        let id = format!("c{i}");
        let call = ToolCall::new(&id, "lookup", format!(r#"{{"i":{i}}}"#));
        messages.push(Message::assistant_with_calls(None, vec![call]));
        messages.push(Message::tool_result(&id, format!("result {i} {}", "data ".repeat(60))));
    }
    messages.push(Message::assistant("Done."));
    let budget = StableBudget::new(2_000).with_counter(CharEstimate::default());
    let ctx = CurationContext::default();
    let (mut previous, mut at, mut compactions) = (Vec::new(), 0, 0);
    for end in calls(&messages) {
        let view = budget.curate_messages(&messages[..end], &ctx).unwrap();
        assert!(tokens(&view) <= 2_000);
        assert_eq!(view[0], messages[0], "the system prompt whole");
        let mut grown: Vec<Message> = previous.clone();
        grown.extend_from_slice(&messages[at..end]);
        if !previous.is_empty() && view != grown {
            compactions += 1;
        }
        (previous, at) = (view, end);
    }
    assert!(compactions <= 15, "{compactions} compactions in {} calls", calls(&messages).len());
}

/// A task that cannot be shortened (an image) and is longer than the room: every mark
/// stays within the room, so the call is refused rather than sent over the budget.
#[test]
fn a_task_over_the_room_that_cannot_be_shortened_is_refused_not_sent_over_the_budget() {
    let image = curator_model::ImageSource::Base64 {
        media_type: "image/png".into(),
        data: "iVBORw0KGgo=".into(),
    };
    let task = Message::user(curator_model::Content::Parts(vec![
        curator_model::Part::text(","),
        curator_model::Part::image(image),
    ]));
    let budget = StableBudget::new(300).with_counter(CharEstimate::default());
    let ctx = CurationContext::default();
    match budget.curate_messages(std::slice::from_ref(&task), &ctx) {
        Ok(view) => assert!(tokens(&view) <= 300, "{} tokens", tokens(&view)),
        Err(e) => assert!(matches!(e, curator_strategies::Error::BudgetTooSmall(_)), "{e}"),
    }
}

/// A compaction at the end of a history (a long tool result that the first view had to
/// cut) is kept when the next messages are system or user messages, not a reply: each view
/// is the previous one plus what was appended, live and stateless alike.
#[test]
fn system_and_user_messages_after_a_compaction_keep_its_view() {
    let mut log = String::new();
    for i in 0..1_500 {
        let _ =
            writeln!(log, "line {i}: chunk offset=0x{:x} len={} ok", i * 7_919 % 65_536, i * 31);
    }
    let mut history = History::new();
    history.push(Message::system("You are a coding agent."));
    history.push(Message::user("Fix `parse_binary_header` in src/lib.rs."));
    let call = ToolCall::new("c1", "read_file", r#"{"path":"log.txt"}"#);
    history.push(Message::assistant_with_calls(None, vec![call]));
    history.push(Message::tool_result("c1", log));
    let ctx = CurationContext::default();
    let live = pipeline(16_000, 0);
    let first = live.curate_history(&history, &ctx).map(|v| v.to_messages());
    let mut previous = first.unwrap_or_default();
    assert!(
        previous.last().is_some_and(|m| m.text().len() < 60_000),
        "the first view cuts the result"
    );
    for i in 0..6 {
        let next = if i % 2 == 0 {
            Message::system(format!("New rule #{i}: answer in French."))
        } else {
            Message::user("Go on.")
        };
        history.push(next.clone());
        let view = live.curate_history(&history, &ctx).map(|v| v.to_messages()).unwrap_or_default();
        assert_eq!(view.len(), previous.len() + 1, "after message {i}");
        assert_eq!(view[..previous.len()], previous[..], "after message {i}");
        assert_eq!(view.last(), Some(&next));
        let fresh = pipeline(16_000, 0).curate_history(&history, &ctx).map(|v| v.to_messages());
        assert_eq!(fresh.ok().as_ref(), Some(&view), "stateless, after message {i}");
        previous = view;
    }
}
