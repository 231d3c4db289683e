//! Issue 29's reproductions: what curation promises never to lose (every system message,
//! unchanged and in place; the task's opening; the newest unit with all its results) is
//! kept, or the budget says with `BudgetTooSmall` why it cannot be.

use curator_model::{Content, ImageSource, Message, Part, Role, ToolCall, formats::anthropic};
use curator_strategies::{
    Bpe, ClearOldToolResults, CurationContext, Encoding, Error, Extractive, History,
    HistoryManager, HistoryManagerExt, Redactor, RelevanceBudget, Summarize, TokenBudget,
    TokenCounter, ToolResultTruncator,
};
use serde_json::json;

fn o200k() -> Bpe {
    Bpe::new(Encoding::O200kBase).unwrap()
}

fn tokens(counter: &dyn TokenCounter, messages: &[Message]) -> u64 {
    messages.iter().map(|m| counter.count_message(m)).sum::<u64>() + counter.reply_priming()
}

/// Curates `input` and checks the promise: either a view that keeps every system message
/// unchanged and in order, the task, and the messages at `newest` (history positions,
/// shortened at most), within `max_tokens`; or `BudgetTooSmall` whose numbers exceed the
/// budget. Returns the view when there is one.
#[track_caller]
fn check(
    manager: &dyn HistoryManager,
    input: &[Message],
    newest: &[usize],
    max_tokens: u64,
) -> Option<Vec<Message>> {
    let counter = o200k();
    let history = History::from(input);
    let ctx = CurationContext::default();
    match manager.curate_history(&history, &ctx) {
        Ok(view) => {
            let kept: Vec<Option<usize>> = view.iter().map(|e| e.pos).collect();
            let messages = view.to_messages();
            for (pos, message) in input.iter().enumerate() {
                if message.role() == Role::System {
                    let at = kept.iter().position(|p| *p == Some(pos));
                    let at = at.unwrap_or_else(|| panic!("system message {pos} dropped"));
                    assert_eq!(&messages[at], message, "system message {pos} edited");
                }
            }
            for &pos in newest {
                assert!(kept.contains(&Some(pos)), "newest message {pos} dropped: {messages:#?}");
            }
            let total = tokens(&counter, &messages);
            assert!(total <= max_tokens, "{total} tokens over a budget of {max_tokens}");
            Some(messages)
        }
        Err(Error::BudgetTooSmall(shortfall)) => {
            assert!(shortfall.needed() > max_tokens, "{shortfall:?}");
            assert_eq!(shortfall.max_tokens, max_tokens);
            None
        }
        Err(other) => panic!("unexpected error: {other}"),
    }
}

fn budget(max: u64) -> TokenBudget {
    TokenBudget::new(max).with_counter(o200k())
}

fn four_parallel_reads() -> Vec<Message> {
    let calls = (0..4)
        .map(|i| {
            ToolCall::new(
                format!("c{i}"),
                "read",
                json!({"path": format!("src/file{i}.rs")}).to_string(),
            )
        })
        .collect();
    let mut input = vec![
        Message::system("Be brief."),
        Message::user("Read the four files."),
        Message::assistant_with_calls(None, calls),
    ];
    for i in 0..4 {
        input.push(Message::tool_result(format!("c{i}"), "fn main() {}\n".repeat(200)));
    }
    input
}

/// Reproduction 1: four parallel results of 800 tokens at 150 tokens used to send
/// `[system, task]`; now the newest unit goes out shortened, or the budget says it cannot.
#[test]
fn the_newest_unit_of_parallel_calls_is_shortened_or_refused_never_dropped() {
    let input = four_parallel_reads();
    let newest: Vec<usize> = (2..7).collect();
    for max in [150, 300, 600, 1_000] {
        check(&budget(max), &input, &newest, max);
        check(&RelevanceBudget::new(max).with_counter(o200k()), &input, &newest, max);
    }
    // At 150 tokens not even the calls and the results' notes fit: refused, with the sizes.
    let Err(Error::BudgetTooSmall(shortfall)) =
        budget(150).curate_messages(&input, &CurationContext::default())
    else {
        panic!("150 tokens cannot hold four calls and four results")
    };
    assert!(shortfall.newest > 0 && shortfall.system > 0 && shortfall.task > 0, "{shortfall:?}");
    // At 600 they are all there, shortened.
    let view = check(&budget(600), &input, &newest, 600).unwrap();
    assert_eq!(view.len(), 7);
    assert!(view[3].text().contains("tokens cut by curator"));
}

/// Reproduction 1, with tool schemas taking most of the budget: the reserve leaves too
/// little, and the budget says so rather than sending the head alone.
#[test]
fn tool_schemas_taking_the_budget_refuse_rather_than_drop() {
    let input = four_parallel_reads();
    let newest: Vec<usize> = (2..7).collect();
    let manager = budget(3_900).with_reserve(3_812);
    assert!(check(&manager, &input, &newest, 3_900).is_none());
}

/// Reproduction 1: a newest user message of text and an image (its size unknown, so priced
/// at the most a high-detail image costs) is kept, or refused.
#[test]
fn a_newest_message_with_an_image_is_kept_or_refused() {
    let image = Part::image(ImageSource::from_url("data:image/png;base64,iVBORw0KGgo="));
    let input = vec![
        Message::system("Be brief."),
        Message::user("Describe."),
        Message::assistant("ok ".repeat(300)),
        Message::user(Content::Parts(vec![Part::text("What is in this picture?"), image])),
    ];
    for max in [500, 1_000, 2_000, 4_000] {
        check(&budget(max), &input, &[3], max);
    }
    assert!(check(&budget(4_000), &input, &[3], 4_000).is_some());
}

/// Reproduction 1: an Anthropic turn with a long thinking block before its tool call.
#[test]
fn a_newest_turn_with_thinking_is_kept_or_refused() {
    let thinking = (0..60)
        .map(|i| format!("Sentence number {i} of my careful reasoning about the problem."))
        .collect::<Vec<_>>()
        .join(" ");
    let body = json!({"messages": [
        {"role": "user", "content": "Read the log."},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": thinking, "signature": "sig"},
            {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "log"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "line\n".repeat(50)}]}
    ]});
    let input = anthropic::to_messages(&body).unwrap();
    for max in [400, 800, 1_500] {
        check(&budget(max), &input, &[1, 2], max);
    }
}

/// Reproduction 2: a system message after the newest tool result used to be dropped when
/// the result was shortened.
#[test]
fn a_late_system_message_is_kept_in_place() {
    let log: String = (0..400)
        .map(|i| format!("log line {i}: something happened here"))
        .collect::<Vec<_>>()
        .join("\n");
    let input = vec![
        Message::system("Be brief."),
        Message::user("Fix the bug."),
        Message::assistant_with_calls(None, vec![ToolCall::new("c1", "run", "{}")]),
        Message::tool_result("c1", log),
        Message::system("New rule: answer in French."),
    ];
    for max in [300, 1_000, 2_000] {
        let view = check(&budget(max), &input, &[2, 3], max).unwrap();
        assert_eq!(view.last(), input.last());
        let view =
            check(&RelevanceBudget::new(max).with_counter(o200k()), &input, &[2, 3], max).unwrap();
        assert_eq!(view.last(), input.last());
    }
}

/// Reproduction 3: system messages are instructions and are not edited; a budget that
/// cannot hold them whole with a minimal task and newest unit is refused with the sizes.
#[test]
fn system_messages_are_not_edited_and_a_budget_too_small_for_them_is_refused() {
    let image = Part::image(ImageSource::from_url("data:image/png;base64,iVBORw0KGgo="));
    let system = "You are a careful assistant who checks every claim twice. ".repeat(7);
    let input = vec![
        Message::system(system),
        Message::user(Content::Parts(vec![
            Part::text("Tell me what this shows. ".repeat(20)),
            image,
        ])),
        Message::assistant("x ".repeat(3_000)),
        Message::user("and?"),
    ];
    assert!(o200k().count_message(&input[0]) > 70);
    for max in [2_000, 2_500] {
        let view = check(&budget(max), &input, &[3], max).unwrap();
        assert_eq!(view[0], input[0]);
    }
    // A 1,400-token system prompt with a 50-token budget: refused, naming the system size.
    let input = vec![Message::system("You are an agent. ".repeat(350)), Message::user("hi")];
    let Err(Error::BudgetTooSmall(shortfall)) =
        budget(50).curate_messages(&input, &CurationContext::default())
    else {
        panic!("a 50-token budget cannot hold a 1,400-token system prompt")
    };
    assert_eq!(shortfall.system, o200k().count_message(&input[0]));
    assert!(shortfall.to_string().contains("system"), "{shortfall}");
    // Shortening them is an explicit option.
    let ctx = CurationContext::default().with_shorten_system(true);
    let view = budget(50).curate_messages(&input, &ctx).unwrap();
    assert!(view[0].text().contains("tokens cut by curator"));
    assert!(tokens(&o200k(), &view) <= 50);
}

/// Reproduction 4: the newest user message refers to the tool result in the same
/// Anthropic turn; the result is part of the newest unit.
#[test]
fn the_result_the_newest_message_refers_to_is_kept() {
    let body = json!({"messages": [
        {"role": "user", "content": "Read the log."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {"p": "log"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "ERROR disk full at /var/data\n".repeat(400)},
            {"type": "text", "text": "What is the error?"}]}
    ]});
    let input = anthropic::to_messages(&body).unwrap();
    let newest: Vec<usize> = (1..input.len()).collect();
    for max in [300, 1_000] {
        let view = check(&budget(max), &input, &newest, max).unwrap();
        assert!(
            view.iter().any(|m| m.role() == Role::Tool && m.text().contains("ERROR disk full"))
        );
    }
    // The OpenAI form of the same conversation.
    let input = vec![
        Message::user("Read the log."),
        Message::assistant_with_calls(None, vec![ToolCall::new("t1", "read", r#"{"p":"log"}"#)]),
        Message::tool_result("t1", "ERROR disk full at /var/data\n".repeat(400)),
        Message::user("What is the error?"),
    ];
    check(&budget(1_000), &input, &[1, 2, 3], 1_000).unwrap();
}

/// Reproduction 5: a call left unanswered at the end is not sent by any strategy, the ones
/// that only transform messages included.
#[test]
fn an_unanswered_call_at_the_end_is_never_sent() {
    let input = vec![
        Message::user("go"),
        Message::assistant_with_calls(None, vec![ToolCall::new("c1", "ls", "{}")]),
    ];
    let managers: Vec<Box<dyn HistoryManager>> = vec![
        Box::new(ToolResultTruncator::new(100).unwrap()),
        Box::new(Redactor::new()),
        Box::new(ClearOldToolResults::new(1)),
        Box::new(Summarize::new(Extractive::default())),
    ];
    for manager in &managers {
        let view = manager.curate_messages(&input, &CurationContext::default()).unwrap();
        assert_eq!(view, input[..1], "{}", manager.name());
        curator_model::validate::openai(&view).unwrap();
    }
}

/// With no task pinned and two system messages of different sizes, the room the newest unit
/// takes from the head comes from what may give (nothing, here): the system messages stay
/// whole, and the budget either fits or refuses.
#[test]
fn several_system_messages_without_a_task_are_never_shortened() {
    let input = vec![
        Message::system("Follow the long house rules. ".repeat(40)),
        Message::system("Be brief."),
        Message::assistant_with_calls(None, vec![ToolCall::new("c1", "run", "{}")]),
        Message::tool_result("c1", "output line\n".repeat(300)),
    ];
    for max in [300, 500, 700, 1_000, 2_000] {
        check(&budget(max), &input, &[2, 3], max);
    }
}

/// A conversation with no user message has no task: nothing is reserved for one, so a budget
/// that holds what there is sends it (the fresh-eyes review found an empty conversation of 3
/// tokens refused at 22, "the task at least 20").
#[test]
fn a_conversation_without_a_task_reserves_nothing_for_one() {
    let counter = o200k();
    let inputs = [
        vec![],
        vec![Message::system("Be brief.")],
        vec![Message::system("Be brief."), Message::assistant("Hello! How can I help?")],
    ];
    for input in inputs {
        let needed = tokens(&counter, &input);
        let view = budget(needed).curate_messages(&input, &CurationContext::default()).unwrap();
        assert_eq!(view, input, "at {needed} tokens");
    }
}

/// What `Error::Lost` says reads as a sentence: the strategy, what it did, where.
#[test]
fn a_lost_message_is_named_in_a_sentence() {
    #[derive(Debug)]
    struct DropsTask;
    impl HistoryManager for DropsTask {
        fn curate<'h>(
            &self,
            view: curator_strategies::View<'h>,
            _ctx: &CurationContext<'_>,
        ) -> curator_strategies::Result<curator_strategies::View<'h>> {
            Ok(view.retain(|entry| entry.message.role() != Role::User))
        }
        fn name(&self) -> std::borrow::Cow<'_, str> {
            "drops_task".into()
        }
    }
    let input = vec![Message::system("s"), Message::user("task"), Message::assistant("a")];
    let err = DropsTask.curate_messages(&input, &CurationContext::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "strategy `drops_task` dropped the task (history position 1), which curation never loses"
    );
}

/// A map that rewrites a system message is caught as a replaced one is; redaction may
/// (a secret in a system prompt is redacted rather than sent).
#[test]
fn a_map_that_edits_a_system_message_is_refused_but_redaction_is_not() {
    use std::sync::Arc;

    use curator_strategies::{History, MessageMap, View};

    #[derive(Debug)]
    struct Shout;
    impl MessageMap for Shout {
        fn map(&self, m: &Message, _pos: Option<usize>, _h: &History<'_>) -> Option<Message> {
            Some(m.clone().with_content(Some(Content::Text(m.text().to_uppercase()))))
        }
    }
    #[derive(Debug)]
    struct Shouts;
    impl HistoryManager for Shouts {
        fn curate<'h>(
            &self,
            view: View<'h>,
            _ctx: &CurationContext<'_>,
        ) -> curator_strategies::Result<View<'h>> {
            Ok(view.with_map(Arc::new(Shout)))
        }
    }
    let input = vec![Message::system("Be brief."), Message::user("hi")];
    let err = Shouts.curate_messages(&input, &CurationContext::default()).unwrap_err();
    assert!(
        matches!(err, Error::Lost { what: "edited the system message", position: 0, .. }),
        "{err}"
    );
    let secret = vec![
        Message::system("Use key AKIAZ7VQ3X5KJ2MWB4TD for the bucket."),
        Message::user("List it."),
    ];
    let view = Redactor::new().curate_messages(&secret, &CurationContext::default()).unwrap();
    assert!(!view[0].text().contains("AKIAZ7VQ3X5KJ2MWB4TD"), "{}", view[0].text());
}

/// A tool result that answers no call (a duplicate, or one whose call an earlier trim left
/// out) after the newest results, before the user message that refers to them, or at the
/// end: the budgets kept the present as if the orphan parted the user message from the
/// results, dropped the results' unit, and the final check raised `Lost` at budgets the same
/// history without the orphan fits. The orphan is no unit of the present.
#[test]
fn an_orphan_result_after_the_newest_results_does_not_lose_them() {
    let calls = |ids: &[&str]| {
        Message::assistant_with_calls(
            None,
            ids.iter().map(|id| ToolCall::new(*id, "read", "{}")).collect(),
        )
    };
    let big = "fn main() {}\n".repeat(100);
    let before_user = vec![
        Message::system("Be brief."),
        Message::user("Read the files."),
        calls(&["x"]),
        Message::tool_result("x", big.clone()),
        calls(&["a", "b"]),
        Message::tool_result("a", big.clone()),
        Message::tool_result("b", big.clone()),
        Message::tool_result("nobody", "?"),
        Message::user("What do they hold?"),
    ];
    let at_end = vec![
        Message::system("Be brief."),
        Message::user("Read the file."),
        calls(&["a"]),
        Message::tool_result("a", "ok"),
        Message::tool_result("nobody", "?"),
    ];
    for max in [100, 400, 1_000, 5_000] {
        check(&budget(max), &before_user, &[4, 5, 6, 8], max);
        check(&RelevanceBudget::new(max).with_counter(o200k()), &before_user, &[4, 5, 6, 8], max);
    }
    for max in [30, 100] {
        check(&budget(max), &at_end, &[2, 3], max);
        check(&RelevanceBudget::new(max).with_counter(o200k()), &at_end, &[2, 3], max);
    }
}
