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
