//! `RelevanceBudget`: its promises for all inputs, and what it keeps and folds.

use curator_model::{Message, Role, ToolCall, validate};
use curator_strategies::{
    CharEstimate, CurationContext, Error, Event, History, HistoryManager, HistoryManagerExt,
    MemorySink, RelevanceBudget, StrategyConfig, TokenBudget, TokenCounter, View,
};
use curator_testkit::arb;
use proptest::prelude::*;

/// The view's history positions (`None` for a message the strategy wrote) and messages.
fn curate(input: &[Message], budget: u64) -> Result<(Vec<Option<usize>>, Vec<Message>), Error> {
    let history = History::from(input);
    let view =
        RelevanceBudget::new(budget).curate(View::full(&history), &CurationContext::default())?;
    Ok((view.iter().map(|e| e.pos).collect(), view.to_messages()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn every_view_is_valid_bounded_ordered_deterministic_and_keeps_the_newest(
        input in arb::history(),
        budget in 0u64..3_000,
    ) {
        let counter = CharEstimate::default();
        let first = curate(&input, budget);
        let again = curate(&input, budget);
        prop_assert_eq!(
            first.as_ref().map_err(ToString::to_string),
            again.as_ref().map_err(ToString::to_string),
            "not deterministic"
        );
        match first {
            Err(Error::BudgetTooSmall(shortfall)) => {
                prop_assert!(shortfall.needed() > shortfall.max_tokens, "{shortfall:?}");
            }
            Err(other) => prop_assert!(false, "unexpected error {other}"),
            Ok((positions, view)) => {
                prop_assert_eq!(validate::openai(&view), Ok(()), "{:#?}", view);
                prop_assert_eq!(validate::anthropic(&view), Ok(()), "{:#?}", view);
                let tokens: u64 = view.iter().map(|m| counter.count_message(m)).sum::<u64>()
                    + counter.reply_priming();
                prop_assert!(tokens <= budget, "{tokens} > {budget}");
                // An order-preserving subsequence of the history, apart from one note.
                let known: Vec<usize> = positions.iter().flatten().copied().collect();
                prop_assert!(known.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
                let written: Vec<&Message> =
                    positions.iter().zip(&view).filter(|(p, _)| p.is_none()).map(|(_, m)| m).collect();
                prop_assert!(written.len() <= 1, "{written:#?}");
                prop_assert!(written.iter().all(|m| m.role() == Role::User));
                // The newest message that can be sent is the view's last when the budget
                // leaves the body room for it.
                let sendable = {
                    let history = History::from(input.as_slice());
                    View::full(&history).repaired().to_messages()
                };
                let newest: u64 = input.iter().rev().take(4).map(|m| 60 + 30 * m.tool_calls().len() as u64).sum();
                let head: u64 = input.iter().take(2).map(|m| counter.count_message(m)).sum();
                if budget / 2 > newest + 3 && budget > 2 * head.min(budget) && sendable.len() > 2 {
                    let (Some(got), Some(want)) = (view.last(), sendable.last()) else { return Ok(()) };
                    prop_assert_eq!((got.role(), got.tool_call_id()), (want.role(), want.tool_call_id()));
                }
            }
        }
    }
}

/// A run whose first tool result names the file the last message asks about, then forty
/// steps of unrelated output.
fn long_run() -> Vec<Message> {
    let mut messages = vec![
        Message::system("You are a coding agent."),
        Message::user("Fix the failing parser test."),
        Message::assistant_with_calls(
            None,
            vec![ToolCall::new("c0", "find", r#"{"name": "parser"}"#)],
        ),
        Message::tool_result("c0", "src/grammar/parser_core.rs"),
    ];
    for i in 1..40 {
        let args = format!(r#"{{"command": "step_{i}"}}"#);
        messages.push(Message::assistant_with_calls(
            None,
            vec![ToolCall::new(format!("c{i}"), "run", args)],
        ));
        messages
            .push(Message::tool_result(format!("c{i}"), format!("output of step_{i} ").repeat(12)));
    }
    messages.push(Message::user("Now open parser_core.rs again."));
    messages
}

#[test]
fn an_old_result_the_present_refers_to_is_kept_where_recency_drops_it() {
    let messages = long_run();
    let ctx = CurationContext::default();
    let recency = TokenBudget::new(1_000).curate_messages(&messages, &ctx).unwrap();
    let relevance = RelevanceBudget::new(1_000).curate_messages(&messages, &ctx).unwrap();
    let holds = |view: &[Message]| view.iter().any(|m| m.text() == "src/grammar/parser_core.rs");
    assert!(!holds(&recency));
    assert!(holds(&relevance));
    // Kept whole with its call, in its place: right after the head, and (the first unit
    // after the task, kept) before the note of what was left out after it.
    let at = relevance.iter().position(|m| m.text() == "src/grammar/parser_core.rs").unwrap();
    assert_eq!((at, relevance[at - 1].tool_calls()[0].id()), (3, "c0"));
    assert!(RelevanceBudget::is_note(&relevance[4]), "{:#?}", relevance[4]);
}

/// The view of `messages` under a relevance budget of `budget`, and its note's text.
fn view_and_note(messages: &[Message], budget: u64) -> (Vec<Message>, String) {
    let view = RelevanceBudget::new(budget)
        .curate_messages(messages, &CurationContext::default())
        .unwrap();
    let note = view.iter().find(|m| RelevanceBudget::is_note(m)).unwrap().text().into_owned();
    (view, note)
}

/// A note that lists calls only takes a sixth of the body's room, not a third: the rest
/// holds more of the conversation as it was.
#[test]
fn a_note_of_calls_alone_leaves_its_room_to_messages() {
    let messages = long_run();
    let ctx = CurationContext::default();
    for budget in [600, 1_000, 1_500] {
        let kept = |terms: bool| {
            let view = RelevanceBudget::new(budget)
                .with_note_terms(terms)
                .curate_messages(&messages, &ctx)
                .unwrap();
            let note = view.iter().find(|m| RelevanceBudget::is_note(m)).unwrap();
            assert_eq!(note.text().contains("They mentioned"), terms, "{}", note.text());
            assert!(note.text().contains(r#"run({"command":"step_"#), "{}", note.text());
            view.iter().filter(|m| !RelevanceBudget::is_note(m)).count()
        };
        let (with_terms, calls_only) = (kept(true), kept(false));
        assert!(
            calls_only > with_terms,
            "{budget}: {calls_only} messages, {with_terms} with terms"
        );
    }
}

#[test]
fn the_note_lists_the_calls_and_terms_left_out_and_nothing_the_view_shows() {
    let messages = long_run();
    let (view, note) = view_and_note(&messages, 1_000);
    assert!(note.starts_with("[curator left out "), "{note}");
    assert!(note.contains(r#"run({"command":"step_"#), "{note}");
    // A step left out is named; a step the view still shows is not.
    let shown: Vec<String> = (1..40)
        .map(|i| format!("step_{i}"))
        .filter(|s| {
            view.iter().any(|m| !RelevanceBudget::is_note(m) && m.text().contains(&format!("{s} ")))
        })
        .collect();
    assert!(!shown.is_empty());
    let dropped = (1..40).map(|i| format!("step_{i}")).find(|s| !shown.contains(s)).unwrap();
    assert!(note.contains(&dropped), "{dropped} not in {note}");
    for s in &shown {
        assert!(
            !note.contains(&format!(" {s} ")) && !note.contains(&format!(" {s}.")),
            "{s} in {note}"
        );
    }
    let counter = CharEstimate::default();
    let tokens: u64 =
        view.iter().map(|m| counter.count_message(m)).sum::<u64>() + counter.reply_priming();
    assert!(tokens <= 1_000);
}

#[test]
fn without_the_note_nothing_is_written() {
    let view = RelevanceBudget::new(1_000)
        .with_fold_note(false)
        .curate_messages(&long_run(), &CurationContext::default())
        .unwrap();
    assert!(!view.iter().any(RelevanceBudget::is_note));
}

#[test]
fn events_say_which_older_units_were_kept_and_their_scores() {
    let messages = long_run();
    let history = History::from(messages.as_slice());
    let sink = MemorySink::default();
    let ctx = CurationContext::default().with_events(&sink);
    RelevanceBudget::new(1_000).curate(View::full(&history), &ctx).unwrap();
    let kept: Vec<_> = sink
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::RelevanceKept(kept) => Some(kept),
            _ => None,
        })
        .collect();
    assert_eq!(kept.len(), 1);
    let first = &kept[0].units[0];
    assert_eq!((first.position, first.messages), (Some(2), 2));
    assert!(first.score > 0.0);
}

#[test]
fn bad_shares_are_refused_naming_the_option() {
    let error = RelevanceBudget::new(100).with_recent_share(1.5).unwrap_err();
    assert_eq!(
        error.to_string(),
        "relevance_budget: option `recent_share` is 1.5, not between 0 and 1"
    );
}

/// Thirty old steps that all print the same 200 identifiers, then one step whose output
/// names two identifiers once, then recent steps that fill the newest units' room.
fn run_with_a_fresh_step() -> Vec<Message> {
    let shared: Vec<String> = (0..200).map(|i| format!("shared_id_{i}")).collect();
    let mut messages =
        vec![Message::system("You are a coding agent."), Message::user("Fix the build.")];
    let step = |messages: &mut Vec<Message>, i: usize, output: String| {
        messages.push(Message::assistant_with_calls(
            None,
            vec![ToolCall::new(format!("c{i}"), "run", r#"{"command": "make"}"#)],
        ));
        messages.push(Message::tool_result(format!("c{i}"), output));
    };
    for i in 0..30 {
        step(&mut messages, i, shared.join(" "));
    }
    step(&mut messages, 30, "error in fresh_module_a near fresh_symbol_b".to_owned());
    for i in 31..36 {
        step(&mut messages, i, "plain words without anything distinctive ".repeat(30));
    }
    messages.push(Message::user("Go on."));
    messages
}

#[test]
fn the_note_names_what_the_newest_units_left_out_held_before_what_recurs() {
    let messages = run_with_a_fresh_step();
    let (view, note) = view_and_note(&messages, 1_500);
    let shows = |m: &Message| !RelevanceBudget::is_note(m) && m.text().contains("fresh_module_a");
    assert!(!view.iter().any(shows), "the fresh step is left out");
    // The identifiers the newest left-out step printed once are named...
    assert!(note.contains("fresh_module_a") && note.contains("fresh_symbol_b"), "{note}");
    // ...and the rest of the note still goes to the identifiers the run came back to most.
    assert!(note.contains("shared_id_0"), "{note}");
    // The note is full: not every recurring identifier fits.
    assert!(!(0..200).all(|i| note.contains(&format!("shared_id_{i} "))), "{note}");
}

/// The newest tool result is too long for the budget: both budgets keep its beginning and
/// end; relevance also names what the cut middle held (its failure line), the token budget
/// alone does not.
#[test]
fn a_shortened_newest_result_names_what_its_cut_middle_held() {
    let output = format!(
        "{}\nerror: missing field `retry_budget` in config/settings.toml\n{}",
        "ok line\n".repeat(400),
        "done line\n".repeat(400)
    );
    let messages = vec![
        Message::system("You are a coding agent."),
        Message::user("Fix the config loader."),
        Message::assistant_with_calls(
            None,
            vec![ToolCall::new("c1", "run", r#"{"cmd": "cargo run"}"#)],
        ),
        Message::tool_result("c1", output),
    ];
    let ctx = CurationContext::default();
    let relevance = RelevanceBudget::new(800).curate_messages(&messages, &ctx).unwrap();
    let recency = TokenBudget::new(800).curate_messages(&messages, &ctx).unwrap();
    let last = |view: &[Message]| view.last().unwrap().text().into_owned();
    let (named, plain) = (last(&relevance), last(&recency));
    assert!(named.starts_with("ok line") && named.ends_with("done line\n"), "{named}");
    // The budget's cut of long tool results quotes the failure line of the cut middle.
    assert!(
        named.contains(
            "the cut part held: error: missing field `retry_budget` in config/settings.toml"
        ),
        "{named}"
    );
    assert!(!plain.contains("retry_budget") && !plain.contains("part cut named"), "{plain}");
    // Without its own cut, the budget's shortening names the middle's terms.
    let uncut = RelevanceBudget::new(800).with_tool_result_cut(false);
    let uncut = uncut.curate_messages(&messages, &ctx).unwrap();
    let uncut = last(&uncut);
    assert!(uncut.contains("[the part cut named: retry_budget, config/settings.toml"), "{uncut}");
    let counter = CharEstimate::default();
    let tokens: u64 =
        relevance.iter().map(|m| counter.count_message(m)).sum::<u64>() + counter.reply_priming();
    assert!(tokens <= 800, "{tokens}");
}

/// An agent's output with its answer at the end (as in a corpus transcript: `flag{...}` at
/// character 24,482 of 24,653).
fn run_with_the_answer_at_the_end() -> Vec<Message> {
    let mut output: String = (0..)
        .map(|i| format!("scanning block {i}: nothing here\n"))
        .scan(0, |len, line| {
            *len += line.len();
            (*len <= 24_400).then_some(line)
        })
        .collect();
    output.push_str("found: flag{curator_keeps_the_end}\n");
    vec![
        Message::system("You are a security agent."),
        Message::user("Find the flag in the binary."),
        Message::assistant_with_calls(
            None,
            vec![ToolCall::new("c1", "scan", r#"{"path": "a.out"}"#)],
        ),
        Message::tool_result("c1", output),
        Message::assistant("Let me read it back."),
        Message::user("What is the flag?"),
    ]
}

#[test]
fn a_conversation_that_fits_is_never_cut_by_the_default_pipeline() {
    let messages = run_with_the_answer_at_the_end();
    let pipeline = StrategyConfig::default_pipeline(32_000).build().unwrap();
    let view = pipeline.curate_messages(&messages, &CurationContext::default()).unwrap();
    assert_eq!(view, messages);
}

#[test]
fn a_long_output_keeps_its_end_when_the_budget_cuts_it() {
    let messages = run_with_the_answer_at_the_end();
    let ctx = CurationContext::default();
    for budget in [1_500, 3_000, 6_000] {
        let pipeline = StrategyConfig::default_pipeline(budget).build().unwrap();
        let view = pipeline.curate_messages(&messages, &ctx).unwrap();
        let result = view.iter().find(|m| m.role() == Role::Tool).unwrap();
        let text = result.text();
        assert!(text.contains("flag{curator_keeps_the_end}"), "{budget}: {text}");
        assert!(text.starts_with("scanning block 0"), "{budget}");
        assert!(text.contains("characters cut by curator"), "{budget}");
        assert_eq!(view.last(), messages.last());
    }
}

/// A long newest result with little else in the view is not cut to a fixed length: it keeps
/// a large part of the room (it was cut to about 1,300 characters, 1% of a 32,000-token
/// budget), and the view stays within the budget.
#[test]
fn a_long_newest_result_takes_the_room_nothing_else_needs() {
    let mut output = String::new();
    for i in 0..7_000 {
        let value = (i * 7919 % 100_003).to_string();
        for piece in ["line ", &i.to_string(), ": value_", &i.to_string(), " = ", &value, " ok\n"] {
            output.push_str(piece);
        }
    }
    let messages = vec![
        Message::system("You are an agent."),
        Message::user("Read the log."),
        Message::assistant_with_calls(None, vec![ToolCall::new("c1", "read", "{}")]),
        Message::tool_result("c1", output),
    ];
    let counter = CharEstimate::default();
    for budget in [8_000_u64, 32_000] {
        let pipeline = StrategyConfig::default_pipeline(budget).build().unwrap();
        let view = pipeline.curate_messages(&messages, &CurationContext::default()).unwrap();
        let kept = view.last().unwrap().text().len() as u64;
        let sent: u64 =
            view.iter().map(|m| counter.count_message(m)).sum::<u64>() + counter.reply_priming();
        assert!(sent <= budget, "{budget}: {sent}");
        assert!(view.last().unwrap().text().contains("characters cut by curator"));
        assert!(kept >= budget * 3 / 4, "{budget}: the result kept {kept} characters");
    }
}

#[test]
fn the_note_lists_a_term_once_with_its_parts_and_numbers_last() {
    let mut messages =
        vec![Message::system("You are a coding agent."), Message::user("Fix the build.")];
    let step = |messages: &mut Vec<Message>, i: usize, output: String| {
        messages.push(Message::assistant_with_calls(
            None,
            vec![ToolCall::new(format!("c{i}"), "run", r#"{"command": "make"}"#)],
        ));
        messages.push(Message::tool_result(format!("c{i}"), output));
    };
    for i in 0..10 {
        let filler = "plain words without anything distinctive ".repeat(30);
        step(
            &mut messages,
            i,
            format!("{} in src/grammar/parser_core_{i}.rs\n{filler}", 4_000 + i),
        );
    }
    for i in 10..16 {
        step(&mut messages, i, "plain words without anything distinctive ".repeat(30));
    }
    messages.push(Message::user("Go on."));
    let (_, note) = view_and_note(&messages, 1_500);
    let listed: Vec<&str> = note
        .split_once("They mentioned: ")
        .expect(&note)
        .1
        .trim_end_matches(".]")
        .split(' ')
        .collect();
    // A path is listed, and its file name, which reads back from it, is not listed again.
    assert!(listed.contains(&"src/grammar/parser_core_9.rs"), "{note}");
    assert!(!listed.contains(&"parser_core_9.rs"), "{note}");
    // The line numbers come last.
    let numeric = |t: &&str| t.bytes().all(|b| b.is_ascii_digit());
    let first = listed.iter().position(numeric).expect(&note);
    assert!(listed[first..].iter().all(numeric), "{note}");
}

/// A secret that a redactor before the budget takes out of a left-out unit's output and call
/// arguments must not come back through the folded-history note, whole or in pieces.
#[test]
fn a_redacted_secret_never_reaches_the_note() {
    let secret = "ghp_R4nd0mT0k3nV4lu3ThatIsThirtySix12345";
    let mut messages = vec![
        Message::system("You are a coding agent."),
        Message::user("Fix the failing parser test."),
        Message::assistant_with_calls(
            None,
            vec![ToolCall::new(
                "c0",
                "find",
                format!(r#"{{"name": "parser", "token": "{secret}"}}"#),
            )],
        ),
        Message::tool_result("c0", format!("GITHUB_TOKEN={secret} in src/grammar/parser_core.rs")),
    ];
    for i in 1..6 {
        messages.push(Message::assistant_with_calls(
            None,
            vec![ToolCall::new(format!("c{i}"), "run", "{}")],
        ));
        messages.push(Message::tool_result(format!("c{i}"), "plain output line\n".repeat(40)));
    }
    messages.push(Message::user("Go on."));
    let pipeline = curator_strategies::Redactor::new().then(RelevanceBudget::new(700));
    let view = pipeline.curate_messages(&messages, &CurationContext::default()).unwrap();
    let note = view.iter().find(|m| RelevanceBudget::is_note(m)).expect("a note").text();
    // The unit is left out and listed: its call and its file.
    assert!(note.contains("find("), "{note}");
    assert!(note.contains("parser_core.rs"), "{note}");
    for message in &view {
        let text = format!("{} {:?}", message.text(), message.tool_calls());
        for piece in ["ghp_R4nd0m", "R4nd0mT0k3nV4lu3ThatIsThirtySix12345", "ThatIsThirtySix"] {
            assert!(!text.contains(piece), "{piece} in {text}");
        }
    }
}

/// Rewrites every tool call's arguments (an earlier strategy's map, as a redactor is).
#[derive(Debug)]
struct RenameArguments;

impl curator_strategies::MessageMap for RenameArguments {
    fn map(&self, message: &Message, pos: Option<usize>, _: &History<'_>) -> Option<Message> {
        (!message.tool_calls().is_empty()).then(|| {
            message
                .clone()
                .map_tool_call_arguments(|_| Some(format!(r#"{{"path": "renamed_{pos:?}.rs"}}"#)))
        })
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    /// One strategy used over several histories and views (its caches filled by each) gives
    /// what a fresh one gives: the caches never change a result, even when the same position
    /// shows other calls.
    #[test]
    fn a_strategy_reused_across_views_gives_what_a_fresh_one_gives(
        first in arb::history(),
        second in arb::history(),
        budget in 200u64..2_000,
    ) {
        let ctx = CurationContext::default();
        let shared = RelevanceBudget::new(budget);
        let run = |strategy: &RelevanceBudget, messages: &[Message], rename: bool| {
            let history = History::from(messages);
            let mut view = View::full(&history);
            if rename {
                view = view.with_map(std::sync::Arc::new(RenameArguments));
            }
            strategy.curate(view, &ctx).map(|v| v.to_messages()).map_err(|e| e.to_string())
        };
        for (messages, rename) in [(&first, false), (&first, true), (&second, false), (&first, false)] {
            let fresh = RelevanceBudget::new(budget);
            prop_assert_eq!(run(&shared, messages, rename), run(&fresh, messages, rename));
        }
    }
}

/// The note's call labels are kept across calls by position: the same strategy, given the
/// same history through a map that changes the calls, lists the changed calls, not the
/// labels it kept.
#[test]
fn a_kept_label_is_not_listed_for_other_calls_at_its_position() {
    let messages = long_run();
    let history = History::from(messages.as_slice());
    let ctx = CurationContext::default();
    let strategy = RelevanceBudget::new(1_000);
    let note = |view: View<'_>| {
        let view = strategy.curate(view, &ctx).unwrap().to_messages();
        view.iter().find(|m| RelevanceBudget::is_note(m)).unwrap().text().into_owned()
    };
    let plain = note(View::full(&history));
    assert!(plain.contains(r#"run({"command":"step_"#), "{plain}");
    let renamed = note(View::full(&history).with_map(std::sync::Arc::new(RenameArguments)));
    assert!(renamed.contains(r#"run({"path":"renamed_Some("#), "{renamed}");
    assert!(!renamed.contains(r#"run({"command":"#), "{renamed}");
}

/// A quoted value a left-out unit held (an airport code) is listed between its quotes, so
/// that the note reads back as the same term; a term by itself is listed bare.
#[test]
fn the_note_lists_a_quoted_value_between_its_quotes() {
    let mut messages = long_run();
    messages[3] =
        Message::tool_result("c0", r#"{"origin": "PHL", "file": "src/grammar/parser_core.rs"}"#);
    *messages.last_mut().unwrap() = Message::user("Now run step_39 again.");
    let (_, note) = view_and_note(&messages, 1_000);
    assert!(note.contains(r#" "PHL""#), "{note}");
    assert!(note.contains(" src/grammar/parser_core.rs"), "{note}");
    assert!(curator_strategies::terms::terms(&note).contains(&"PHL"), "{note}");
}

/// The note counts every message left out, not only the ones it reads for its lists (at
/// most 400).
#[test]
fn the_note_counts_every_message_left_out() {
    let mut messages =
        vec![Message::system("You are a coding agent."), Message::user("Fix the build.")];
    for i in 0..300 {
        messages.push(Message::assistant_with_calls(
            None,
            vec![ToolCall::new(format!("c{i}"), "run", format!(r#"{{"step": {i}}}"#))],
        ));
        messages
            .push(Message::tool_result(format!("c{i}"), format!("output of step_{i} ").repeat(8)));
    }
    messages.push(Message::user("Go on."));
    for budget in [2_000, 4_000] {
        let (view, note) = view_and_note(&messages, budget);
        let left = messages.len() - (view.len() - 1);
        assert!(left > 400, "{left}");
        assert!(note.starts_with(&format!("[curator left out {left} earlier messages")), "{note}");
    }
}

/// What a text's cut notes say was cut, in characters (a token taken as four): every
/// `N characters` and `N tokens` they hold.
fn said_cut(text: &str) -> usize {
    let mut chars = 0;
    for note in text.split("[… ").skip(1) {
        let note = note.split(" …]").next().unwrap_or_default();
        let words: Vec<&str> = note.split([' ', ',']).filter(|w| !w.is_empty()).collect();
        for pair in words.windows(2) {
            let Ok(n) = pair[0].parse::<usize>() else { continue };
            chars += match pair[1] {
                "characters" => n,
                "tokens" => 4 * n,
                _ => 0,
            };
        }
    }
    chars
}

/// The terms a text's `[the part cut named: …]` lists.
fn named_terms(text: &str) -> Vec<&str> {
    text.split("[the part cut named: ")
        .skip(1)
        .flat_map(|rest| rest.split(']').next().unwrap_or_default().split(", "))
        .collect()
}

/// A tool result cut by the strategy's own cut and then shortened again by the budget keeps
/// the first note whole or leaves it out whole, and says what both cuts took; what it names
/// as the cut part's terms are terms of the output, never the first note's count.
#[test]
fn a_result_cut_twice_says_what_both_cuts_took_and_names_only_its_own_terms() {
    let output = (0..200).map(|i| format!("row {i}: status ok\n")).collect::<Vec<_>>().concat();
    let messages = vec![
        Message::system("s"),
        Message::user("Run the job."),
        Message::assistant_with_calls(None, vec![ToolCall::new("c0", "run", "{}")]),
        Message::tool_result("c0", output.clone()),
    ];
    let mut checked = 0;
    for budget in (60..200).step_by(5) {
        let Ok(view) =
            RelevanceBudget::new(budget).curate_messages(&messages, &CurationContext::default())
        else {
            continue;
        };
        let sent = view[3].text();
        let cut = output.chars().count() - sent.chars().count();
        assert!(said_cut(&sent) * 2 >= cut, "{budget}: about {cut} characters cut:\n{sent}");
        assert_eq!(sent.matches("[… ").count(), sent.matches(" …]").count(), "{sent}");
        // The kept beginning and end are the output's own, not a piece of the first note.
        let head = sent.split("\n[… ").next().unwrap_or_default();
        let tail = sent.rsplit(" …]\n").next().unwrap_or_default();
        let tail = match tail.strip_prefix("[the part cut named: ") {
            Some(named) => named.split_once("]\n").map_or("", |(_, tail)| tail),
            None => tail,
        };
        assert!(output.starts_with(head), "{budget}: beginning {head:?}");
        assert!(!sent.contains(" …]\n") || output.ends_with(tail), "{budget}: end {tail:?}");
        for term in named_terms(&sent) {
            assert!(output.contains(term), "{budget}: {term:?} named:\n{sent}");
        }
        checked += 1;
    }
    assert!(checked > 10, "{checked}");
}

/// Two 1,200-character results of parallel calls as the newest unit fit a budget of 100
/// tokens, cut twice (by the strategy's own cut, then by the budget), their notes saying
/// what both cuts took.
#[test]
fn a_tight_budget_holds_the_newest_parallel_results_cut_twice() {
    let call = |ids: &[&str]| {
        Message::assistant_with_calls(
            None,
            ids.iter().map(|id| ToolCall::new(*id, "read", "{}")).collect(),
        )
    };
    let messages = vec![
        Message::system("Be brief."),
        Message::user("Read the files."),
        call(&["x"]),
        Message::tool_result("x", "out ".repeat(300)),
        call(&["a", "b"]),
        Message::tool_result("a", "out ".repeat(300)),
        Message::tool_result("b", "out ".repeat(300)),
        Message::user("What do they hold?"),
    ];
    let view =
        RelevanceBudget::new(100).curate_messages(&messages, &CurationContext::default()).unwrap();
    let results: Vec<&Message> = view.iter().filter(|m| m.role() == Role::Tool).collect();
    assert_eq!(
        results.iter().map(|m| m.tool_call_id()).collect::<Vec<_>>(),
        [Some("a"), Some("b")]
    );
    for result in results {
        assert!(
            said_cut(&result.text()) * 2 >= 1_200 - result.text().chars().count(),
            "{}",
            result.text()
        );
    }
}

/// The shape property tests found (seed in `shapes.txt`): the task not pinned, a budget whose
/// body holds the newest assistant turn but not the note or the user turn before it. The
/// view opened on the assistant turn, which Anthropic refuses; the budget alone decides now.
#[cfg(feature = "tiktoken")]
#[test]
fn a_view_never_opens_on_an_assistant_turn_when_the_history_did_not() {
    let messages = vec![
        Message::system(
            "You are an agent. \u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467} fix src/lib.rs fix fix fix fix",
        ),
        Message::user("Fix the bug."),
        Message::assistant(
            "\u{e9} \u{1f1eb}\u{1f1f7} a\u{301} \u{65e5}\u{672c}\u{8a9e} ERROR: src/lib.rs 42 42 line src/lib.rs line a\u{301} the \u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467}",
        ),
    ];
    let ctx = CurationContext::default().with_preserve_task(false);
    let counter = curator_strategies::Tokenizer::O200k.counter().unwrap();
    let mut checked = 0;
    for max_tokens in 780..900 {
        let relevance = RelevanceBudget::new(max_tokens)
            .with_reserve(762)
            .with_counter(std::sync::Arc::clone(&counter));
        let budget = TokenBudget::new(max_tokens)
            .with_reserve(762)
            .with_counter(std::sync::Arc::clone(&counter));
        match relevance.curate_messages(&messages, &ctx) {
            Ok(view) => {
                assert_eq!(validate::anthropic(&view), Ok(()), "{max_tokens}: {view:#?}");
                assert_eq!(view.first().map(Message::role), Some(Role::System));
                checked += 1;
            }
            // Refused only where the budget alone refuses too.
            Err(e) => {
                assert!(budget.curate_messages(&messages, &ctx).is_err(), "{max_tokens}: {e}");
            }
        }
    }
    assert!(checked > 50, "{checked} budgets gave a view");
}
