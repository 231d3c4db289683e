//! The bound on injected history, built on the strategies crate from the effective history
//! settings.

use std::collections::BTreeMap;
use std::sync::Arc;

use curator_strategies::{
    Extractive, HistoryManager, HistoryManagerExt, SlidingWindow, Summarize, Summarizer,
    SummaryStore, Threshold, TokenBudget, Tokenizer,
};

use crate::config::{
    DEFAULT_MAX_TOKENS, DEFAULT_MAX_TURNS, DEFAULT_SUMMARIZE_RATIO, HistoryConfig, HistoryStrategy,
};
use crate::error::{Error, Result};

/// Newest turns `summarize` never folds: the last exchange.
const SUMMARIZE_KEEP_RECENT: usize = 2;

/// The summarizers a loop can name: `extractive`, plus those registered by the program.
pub(crate) type Summarizers = BTreeMap<String, Arc<dyn Summarizer>>;

/// The manager that bounds the history, or `None` when the limit is 0 (no history is sent).
///
/// Every turn is its own unit (turns carry no tool calls), so windows count turns; nothing is
/// pinned: the bound keeps the newest turns.
pub(crate) fn build(
    config: &HistoryConfig,
    summarizers: &Summarizers,
    summaries: Arc<dyn SummaryStore>,
) -> Result<Option<Box<dyn HistoryManager>>> {
    let counter = config
        .tokenizer
        .unwrap_or(Tokenizer::O200k)
        .counter()
        .map_err(|e| Error::invalid("history_management.tokenizer", e.to_string()))?;
    let tokens = |max: u64| -> Box<dyn HistoryManager> {
        Box::new(TokenBudget::new(max).with_counter(Arc::clone(&counter)))
    };
    Ok(match config.strategy.unwrap_or_default() {
        HistoryStrategy::TruncateTokens => match config.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS) {
            0 => None,
            max => Some(tokens(max)),
        },
        HistoryStrategy::TruncateTurns => match config.max_turns.unwrap_or(DEFAULT_MAX_TURNS) {
            0 => None,
            max => Some(Box::new(SlidingWindow::new(max))),
        },
        HistoryStrategy::Summarize => {
            let name = config.summarizer.as_deref().unwrap_or_default();
            let summarizer: Arc<dyn Summarizer> = match summarizers.get(name) {
                Some(s) => Arc::clone(s),
                None if name == "extractive" => Arc::new(Extractive::default()),
                None => {
                    let known: Vec<&str> = std::iter::once("extractive")
                        .chain(summarizers.keys().map(String::as_str))
                        .collect();
                    return Err(Error::invalid(
                        "history_management.summarizer",
                        format!("no summarizer named `{name}` (known: {})", known.join(", ")),
                    ));
                }
            };
            let (threshold, bound): (Threshold, Box<dyn HistoryManager>) =
                match (config.max_tokens, config.max_turns) {
                    (Some(0), _) | (None, Some(0)) => return Ok(None),
                    (Some(max), _) => (Threshold::Tokens(max), tokens(max)),
                    (None, max) => {
                        let max = max.unwrap_or(DEFAULT_MAX_TURNS);
                        (Threshold::Messages(max), Box::new(SlidingWindow::new(max)))
                    }
                };
            let summarize = Summarize::new(summarizer)
                .with_threshold(threshold)
                .with_keep_recent(SUMMARIZE_KEEP_RECENT)
                .with_counter(Arc::clone(&counter))
                .with_ratio(config.summarize_ratio.unwrap_or(DEFAULT_SUMMARIZE_RATIO))
                .map_err(|e| Error::invalid("history_management.summarize_ratio", e.to_string()))?
                .with_store(summaries);
            Some(Box::new(summarize.then(bound)))
        }
    })
}
