//! Every strategy, at every point an agent loop would curate, on real transcripts.

use curator_model::{Message, Role, formats::openai, validate};
use curator_strategies::{
    ClearOldToolResults, CurationContext, Extractive, History, HistoryManager, HistoryManagerExt,
    Passthrough, Redactor, SlidingWindow, Summarize, Threshold, TokenBudget, ToolFilter,
    ToolResultTruncator, TurnLimit, View,
};
use curator_testkit::corpus;

#[test]
fn every_view_of_every_prefix_is_valid_for_both_providers() {
    let Some(conversations) = corpus::load() else { return };
    let strategies: Vec<Box<dyn HistoryManager>> = vec![
        Box::new(Passthrough),
        Box::new(SlidingWindow::new(20)),
        Box::new(ToolResultTruncator::new(2_000).unwrap()),
        Box::new(TokenBudget::new(16_000)),
        Box::new(TurnLimit::new(5)),
        Box::new(ToolFilter::names(["think"])),
        Box::new(ClearOldToolResults::new(3)),
        Box::new(Redactor::new()),
        Box::new(
            ToolResultTruncator::new(2_000)
                .unwrap()
                .then(SlidingWindow::new(10))
                .then(TokenBudget::new(8_000)),
        ),
        Box::new(
            Summarize::new(Extractive::default())
                .with_threshold(Threshold::Tokens(4_000))
                .with_keep_recent(6)
                .then(TokenBudget::new(16_000)),
        ),
    ];
    let ctx = CurationContext::default();
    let mut views = 0;
    for c in &conversations {
        let messages: Vec<Message> = openai::to_messages(&c.messages).unwrap();
        let mut history = History::new();
        for (i, message) in messages.iter().enumerate() {
            // An agent loop curates right before each assistant message.
            if message.role() == Role::Assistant {
                for strategy in &strategies {
                    let view = strategy.curate(View::full(&history), &ctx).unwrap().to_messages();
                    let here = || format!("{} at message {i}, {}", c.id, strategy.name());
                    validate::openai(&view).unwrap_or_else(|v| panic!("{}: {v}", here()));
                    validate::anthropic(&view).unwrap_or_else(|v| panic!("{}: {v}", here()));
                    views += 1;
                }
            }
            history.push(message.clone());
        }
    }
    eprintln!("validated {views} views of {} corpus conversations", conversations.len());
    assert!(views > 0);
}

/// At 2,000, 4,000 and 8,000 exact o200k tokens, before every call of every corpus
/// conversation: the view is valid for both providers, within budget, and never just the
/// system message and the task while newer history exists (the head keeps to its share and
/// the newest unit is shortened rather than dropped).
#[cfg(feature = "tiktoken")]
#[test]
fn tight_budgets_never_starve_the_agent_on_real_transcripts() {
    use curator_strategies::{Bpe, Encoding, Error, TokenCounter};

    let Some(conversations) = corpus::load() else { return };
    let bpe = Bpe::new(Encoding::O200kBase).unwrap();
    let budgets: Vec<TokenBudget> =
        [2_000, 4_000, 8_000].map(|b| TokenBudget::new(b).with_counter(bpe.clone())).into();
    let ctx = CurationContext::default();
    let (mut views, mut head_only, mut refused) = (0, 0, Vec::new());
    for c in &conversations {
        let messages: Vec<Message> = openai::to_messages(&c.messages).unwrap();
        let mut history = History::new();
        for (i, message) in messages.iter().enumerate() {
            if message.role() == Role::Assistant {
                let pinned = View::full(&history).head(&ctx).pinned().len();
                let system: u64 = history
                    .messages()
                    .iter()
                    .filter(|m| m.role() == Role::System)
                    .map(|m| bpe.count_message(m))
                    .sum();
                for budget in &budgets {
                    let here = || format!("{} at message {i}, {} tokens", c.id, budget.available());
                    let view = match budget.curate_history(&history, &ctx) {
                        Ok(view) => view.to_messages(),
                        // Refused only when what is never dropped cannot fit, which the
                        // numbers prove; the system messages are counted whole.
                        Err(Error::BudgetTooSmall(s)) => {
                            assert!(s.needed() > budget.available(), "{}: {s}", here());
                            assert_eq!(s.system, system, "{}", here());
                            refused.push(here());
                            continue;
                        }
                        Err(e) => panic!("{}: {e}", here()),
                    };
                    validate::openai(&view).unwrap_or_else(|v| panic!("{}: {v}", here()));
                    validate::anthropic(&view).unwrap_or_else(|v| panic!("{}: {v}", here()));
                    for m in history.messages().iter().filter(|m| m.role() == Role::System) {
                        assert!(view.contains(m), "{}: a system message was edited", here());
                    }
                    let tokens: u64 = view.iter().map(|m| bpe.count_message(m)).sum::<u64>()
                        + bpe.reply_priming();
                    assert!(tokens <= budget.available(), "{}: {tokens} tokens", here());
                    if history.len() > pinned && view.len() <= pinned {
                        head_only += 1;
                    }
                    views += 1;
                }
            }
            history.push(message.clone());
        }
    }
    eprintln!(
        "{views} views at 2k/4k/8k o200k tokens, {head_only} with only the head, {} refused: {:?}",
        refused.len(),
        refused.iter().take(5).collect::<Vec<_>>()
    );
    assert_eq!(head_only, 0, "calls that sent only the system message and the task");
}
