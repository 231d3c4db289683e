//! The defects of a budget that starved the agent, each reproduced.

use curator_model::{Content, ImageSource, Message, Part, ToolCall, validate};
use curator_strategies::{
    CharEstimate, CurationContext, Error, HistoryManager, HistoryManagerExt, SlidingWindow,
    TokenBudget, TokenCounter, TurnLimit,
};

fn tokens(counter: &dyn TokenCounter, messages: &[Message]) -> u64 {
    messages.iter().map(|m| counter.count_message(m)).sum::<u64>() + counter.reply_priming()
}

/// A task of about 1,010 tokens with a 1,000-token budget: the task used to fill the budget
/// and every later call sent only `[system, cut task]`.
#[cfg(feature = "tiktoken")]
#[test]
fn a_large_task_leaves_room_for_the_newest_messages() {
    use std::fmt::Write as _;

    use curator_strategies::{Bpe, Encoding};

    let bpe = Bpe::new(Encoding::O200kBase).unwrap();
    let mut body = String::new();
    for i in 0..120 {
        let _ = write!(body, "case {i}: the parser drops trailing commas in nested arrays. ");
    }
    let task = format!("Issue: {body}");
    let input = vec![
        Message::system("You are a coding agent."),
        Message::user(task),
        Message::assistant("I will look at parser.rs."),
        Message::user("Go ahead."),
        Message::assistant("Found it: line 42."),
    ];
    assert!(bpe.count_message(&input[1]) > 1_000);
    let budget = TokenBudget::new(1_000).with_counter(bpe.clone());
    let view = budget.curate_messages(&input, &CurationContext::default()).unwrap();
    assert_eq!(&view[2..], &input[2..], "the newest messages are all there");
    assert!(view[1].text().starts_with("Issue: case 0:") && view[1].text().contains("tokens cut"));
    assert!(tokens(&bpe, &view) <= 1_000);
    // And a smaller budget never keeps more of the newest history than a larger one.
    let mut kept = 0;
    for b in (200..=1_000).step_by(50) {
        let view = TokenBudget::new(b)
            .with_counter(bpe.clone())
            .curate_messages(&input, &CurationContext::default())
            .unwrap();
        let newest = view.len() - 2;
        assert!(newest >= kept, "{b} tokens kept {newest} newest messages, fewer than before");
        kept = newest;
    }
}

/// The newest unit's arguments alone exceed the budget: it is shortened, arguments still
/// JSON, rather than the tail being dropped.
#[test]
fn large_tool_call_arguments_are_shortened_not_dropped() {
    let content = "fn main() { println!(\"hello\"); }\n".repeat(400);
    let call = ToolCall::new(
        "w1",
        "write_file",
        serde_json::json!({"path": "src/main.rs", "content": content}).to_string(),
    );
    let input = vec![
        Message::system("You write code."),
        Message::user("Write the program."),
        Message::assistant_with_calls(None, vec![call]),
        Message::tool_result("w1", "wrote 13600 bytes"),
    ];
    let counter = CharEstimate::default();
    let view =
        TokenBudget::new(2_000).curate_messages(&input, &CurationContext::default()).unwrap();
    assert_eq!(view.len(), 4, "{view:#?}");
    let args: serde_json::Value =
        serde_json::from_str(view[2].tool_calls()[0].arguments()).unwrap();
    assert_eq!(args["path"], "src/main.rs");
    assert!(args["content"].as_str().unwrap().ends_with("…[shortened]"));
    assert!(tokens(&counter, &view) <= 2_000);
    validate::openai(&view).unwrap();
    validate::anthropic(&view).unwrap();
}

/// Ten high-detail images used to count as 0 tokens: the budget was not a bound.
#[test]
fn images_count_against_the_budget() {
    let image = |i: usize| {
        Part::image(ImageSource::from_url(&format!("https://example.com/screenshot-{i}.png")))
    };
    let mut input = vec![Message::system("s"), Message::user("task")];
    for i in 0..10 {
        input.push(Message::assistant(format!("step {i}")));
        input.push(Message::user(Content::Parts(vec![Part::text("look"), image(i)])));
    }
    let counter = CharEstimate::default();
    // Each image of unknown size costs the most an image can (1,445 tokens).
    assert!(tokens(&counter, &input) > 10 * 1_445);
    let view =
        TokenBudget::new(5_000).curate_messages(&input, &CurationContext::default()).unwrap();
    assert!(tokens(&counter, &view) <= 5_000);
    assert!(view.len() < input.len());
}

/// A system message that is not first (even the only one) used to be dropped by windows,
/// turn limits and budgets.
#[test]
fn a_system_message_anywhere_is_kept() {
    let mut input = vec![Message::user("task")];
    for i in 0..10 {
        input.push(Message::assistant(format!("step {i}")));
        input.push(Message::user(format!("more {i}")));
        if i == 2 {
            input.push(Message::system("New rule: answer in French."));
        }
    }
    let ctx = CurationContext::default();
    for manager in
        [&SlidingWindow::new(3) as &dyn HistoryManager, &TurnLimit::new(1), &TokenBudget::new(60)]
    {
        let view = manager.curate_messages(&input, &ctx).unwrap();
        assert!(
            view.iter().any(|m| m.text() == "New rule: answer in French."),
            "{}: {view:#?}",
            manager.name()
        );
        assert_eq!(view[0], input[0], "{}", manager.name());
    }
}

/// Edge budgets used to produce `[system, assistant]` or a request with no message.
#[test]
fn edge_budgets_give_views_both_providers_accept_or_a_typed_error() {
    let input = vec![
        Message::system("s"),
        Message::user("first question"),
        Message::assistant("first answer ".repeat(20)),
        Message::user("second question"),
        Message::assistant("second answer"),
    ];
    let ctx = CurationContext::default().with_preserve_task(false);
    for budget in 0..120 {
        match TokenBudget::new(budget).curate_messages(&input, &ctx) {
            Ok(view) => {
                validate::openai(&view).unwrap_or_else(|v| panic!("{budget}: {v}"));
                validate::anthropic(&view).unwrap_or_else(|v| panic!("{budget}: {v}"));
            }
            Err(Error::BudgetTooSmall(s)) => assert!(s.needed() > s.max_tokens, "{s:?}"),
            Err(other) => panic!("{budget}: {other}"),
        }
    }
}

/// A call still pending at the end is not sent (coherence removes it), so it must not take
/// the place of the newest unit that is: found by the budget's property test.
#[test]
fn a_trailing_pending_call_does_not_take_the_newest_units_place() {
    let calls = ["a", "b", "c"].map(|id| ToolCall::new(id, "read", "{}")).to_vec();
    let input = vec![
        Message::user("Read the three files and compare them."),
        Message::assistant_with_calls(None, calls),
        Message::tool_result("a", "alpha ".repeat(100)),
        Message::tool_result("b", "beta ".repeat(100)),
        Message::tool_result("c", "gamma ".repeat(100)),
        Message::assistant_with_calls(None, vec![ToolCall::new("d", "read", "{}")]),
    ];
    let view = TokenBudget::new(300).curate_messages(&input, &CurationContext::default()).unwrap();
    assert_eq!(view.len(), 5, "{view:#?}");
    assert_eq!(view[4].tool_call_id(), Some("c"));
    assert!(view[2].text().contains("tokens cut"));
    validate::openai(&view).unwrap();
    validate::anthropic(&view).unwrap();
}
