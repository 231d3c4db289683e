//! The bound on injected history: the strategies crate's `StrategyConfig` that the effective
//! history settings describe, built with the loop's summarizers and summary store.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use curator_model::{Message, Role};
use curator_strategies::{
    CurationContext, History, HistoryManager, HistoryManagerExt, OnError, Registry, StrategyConfig,
    Summarizer, SummarizerConfig, SummaryStore, TokenBudget, Tokenizer, View,
};

use crate::config::{
    DEFAULT_MAX_TOKENS, DEFAULT_MAX_TURNS, DEFAULT_SUMMARIZE_RATIO, HistoryConfig, HistoryStrategy,
};
use crate::error::{Error, Result};

/// Newest turns `summarize` never folds: the last exchange.
const SUMMARIZE_KEEP_RECENT: usize = 2;

/// The extractive summarizer's summaries, at most (its default).
const EXTRACTIVE_CHARS: usize = 2_000;

/// The least a summary is cut to under a small token budget, in characters.
const SUMMARY_FLOOR: usize = 80;

/// The header a summary starts with ("[Summary of the N earlier messages of this
/// conversation, …]"), in characters, at most.
const SUMMARY_HEADER_CHARS: usize = 128;

/// Any other summarizer's summaries are cut to this (the `Summarize` default).
const SUMMARY_CHARS: usize = 4_000;

/// The summarizers a loop can name: `extractive`, plus those registered by the program.
pub(crate) type Summarizers = BTreeMap<String, Arc<dyn Summarizer>>;

/// The manager that bounds the history, or `None` when the limit is 0 (no history is sent):
/// the [`StrategyConfig`] the history settings describe, built with the loop's summarizers
/// and summary store.
///
/// Every turn is its own unit (turns carry no tool calls), so windows count turns; nothing is
/// pinned: the bound keeps the newest turns. Under `summarize`, the summary is pinned: the
/// bound keeps it and the newest turns beside it (a token budget shortens it, with a note,
/// when it does not fit whole), so that no summary is computed and then left out; unless the
/// budget cannot hold it beside the newest turn whole, when the summary gives way.
pub(crate) fn build(
    config: &HistoryConfig,
    summarizers: &Summarizers,
    summaries: Arc<dyn SummaryStore>,
) -> Result<Option<Box<dyn HistoryManager>>> {
    let tokenizer = config.tokenizer.unwrap_or(Tokenizer::O200k);
    // Checked first, so that each failure names the setting it comes from.
    tokenizer
        .counter()
        .map_err(|e| Error::invalid("history_management.tokenizer", e.to_string()))?;
    let mut registry = Registry::new().with_summary_store(summaries);
    for (name, summarizer) in summarizers {
        registry = registry.with_summarizer(name.clone(), Arc::clone(summarizer));
    }
    let Some(mut strategy) = strategy(config, tokenizer, &registry)? else { return Ok(None) };
    let build = |strategy: StrategyConfig, key: &str| {
        strategy.build_with(&registry).map_err(|e| Error::invalid(key, e.to_string()))
    };
    let ratio = "history_management.summarize_ratio";
    if let StrategyConfig::Summarize { then, threshold_tokens, max_summary_chars, .. } =
        &mut strategy
        && let Some(bound) = then.take()
    {
        // Under a token budget, whether a summary could be kept beside the newest turn is
        // tried first with a stand-in as long as the longest summary.
        let stand_in = threshold_tokens.map(|_| stand_in(*max_summary_chars));
        let bound = build(*bound, "history_management.strategy")?;
        let summarize = build(strategy, ratio)?;
        return Ok(Some(Box::new(Summarized { summarize, bound, stand_in })));
    }
    let key = match strategy {
        StrategyConfig::Summarize { .. } => ratio,
        _ => "history_management.strategy",
    };
    build(strategy, key).map(Some)
}

/// Summaries, then the bound with the summary pinned.
///
/// The loop curates with nothing pinned, so a fold puts its summary first, as a user
/// message of its own (not a recorded turn): the bound then runs with the task pinned,
/// which is that message. Without a fold the bound keeps the newest turns, as always.
///
/// Under a token budget, a summary that could not be kept beside the newest turn whole is
/// not computed at all (a summarizer's call costs, and counts against a quota): the bound
/// is first tried on a stand-in summary, as long as the longest one and cut as a summary
/// would be, and the newest turn; when it cannot keep both, the history is bounded without
/// a summary.
struct Summarized {
    summarize: Box<dyn HistoryManager>,
    bound: Box<dyn HistoryManager>,
    /// The stand-in summary, under a token budget.
    stand_in: Option<Message>,
}

/// A stand-in for a summary of `chars` characters, at most, and its header: words of a few
/// letters, which the budget shortens as it would a summary.
fn stand_in(chars: usize) -> Message {
    let words = (chars.max(SUMMARY_FLOOR) + SUMMARY_HEADER_CHARS) / 5;
    Message::user("word ".repeat(words).trim_end().to_owned())
}

impl std::fmt::Debug for Summarized {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Summarized")
            .field("summarize", &self.summarize.name())
            .field("bound", &self.bound.name())
            .field("stand_in", &self.stand_in.is_some())
            .finish()
    }
}

impl HistoryManager for Summarized {
    fn curate<'h>(
        &self,
        view: View<'h>,
        ctx: &CurationContext<'_>,
    ) -> curator_strategies::Result<View<'h>> {
        if !ctx.preserve_task && !self.summary_fits(&view, ctx) {
            // No summary could go beside the newest turn: none is computed for nothing.
            return self.bound.curate(view, ctx);
        }
        let view = self.summarize.curate(view, ctx)?;
        let summary_first =
            !view.is_empty() && view.pos(0).is_none() && view.structure(0).role() == Role::User;
        if summary_first && !ctx.preserve_task {
            // The summary gives way when the bound cannot keep it beside the newest turn
            // whole: the newest turn (the current message, often) is never cut for it.
            let pinned = self.bound.curate(view.clone(), &ctx.with_preserve_task(true));
            if let Ok(bounded) = pinned
                && newest_whole(&view, &bounded)
            {
                return Ok(bounded);
            }
        }
        self.bound.curate(view, ctx)
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("summarize")
    }
}

impl Summarized {
    /// Whether the bound keeps a summary (the stand-in) beside the newest turn of `view`,
    /// whole; always, when there is no stand-in (the bound counts turns, and keeps both).
    fn summary_fits(&self, view: &View<'_>, ctx: &CurationContext<'_>) -> bool {
        let (Some(stand_in), Some(last)) = (&self.stand_in, view.len().checked_sub(1)) else {
            return true;
        };
        let newest = view.message(last);
        let mut probe = History::new();
        probe.push(stand_in.clone());
        probe.push(Message::clone(&newest));
        self.bound.curate_history(&probe, &ctx.with_preserve_task(true)).is_ok_and(|bounded| {
            bounded.len() == 2
                && bounded.pos(0) == Some(0)
                && bounded.message(1).text() == newest.text()
        })
    }
}

/// Whether `bounded` ends with the newest message of `view`, unchanged.
fn newest_whole(view: &View<'_>, bounded: &View<'_>) -> bool {
    match (view.len().checked_sub(1), bounded.len().checked_sub(1)) {
        (Some(last), Some(kept)) => {
            view.pos(last) == bounded.pos(kept)
                && view.message(last).text() == bounded.message(kept).text()
        }
        (None, None) => true,
        _ => false,
    }
}

/// The strategy the history settings describe; `None` when the limit is 0.
fn strategy(
    config: &HistoryConfig,
    tokenizer: Tokenizer,
    registry: &Registry,
) -> Result<Option<StrategyConfig>> {
    let tokens = |max_tokens: u64| StrategyConfig::TokenBudget {
        max_tokens,
        reserve: 0,
        tokenizer,
        head_share: TokenBudget::new(max_tokens).head_share(),
        shorten: true,
    };
    Ok(match config.strategy.unwrap_or_default() {
        HistoryStrategy::TruncateTokens => match config.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS) {
            0 => None,
            max => Some(tokens(max)),
        },
        HistoryStrategy::TruncateTurns => match config.max_turns.unwrap_or(DEFAULT_MAX_TURNS) {
            0 => None,
            max => Some(StrategyConfig::SlidingWindow { window_size: max }),
        },
        HistoryStrategy::Summarize => {
            let name = config.summarizer.as_deref().unwrap_or_default();
            let (summarizer, max_summary_chars) = if name == "extractive" {
                // The extractive summarizer's own default length.
                (SummarizerConfig::Extractive, EXTRACTIVE_CHARS)
            } else if registry.summarizer_names().contains(&name) {
                (SummarizerConfig::Named(name.to_owned()), SUMMARY_CHARS)
            } else {
                return Err(Error::invalid(
                    "history_management.summarizer",
                    format!(
                        "no summarizer named `{name}` (known: {})",
                        registry.summarizer_names().join(", ")
                    ),
                ));
            };
            let (threshold_messages, threshold_tokens, bound) =
                match (config.max_tokens, config.max_turns) {
                    (Some(0), _) | (None, Some(0)) => return Ok(None),
                    (Some(max), _) => (None, Some(max), tokens(max)),
                    (None, max) => {
                        let max = max.unwrap_or(DEFAULT_MAX_TURNS);
                        (Some(max), None, StrategyConfig::SlidingWindow { window_size: max })
                    }
                };
            // A summary the bound cannot keep would be paid for and dropped: under a token
            // budget it takes at most about a quarter of it (a character a token at most,
            // where text runs three to four characters a token).
            let max_summary_chars = threshold_tokens.map_or(max_summary_chars, |max| {
                max_summary_chars.min(usize::try_from(max).unwrap_or(usize::MAX).max(SUMMARY_FLOOR))
            });
            Some(StrategyConfig::Summarize {
                summarizer,
                threshold_messages,
                threshold_tokens,
                tokenizer,
                keep_recent: SUMMARIZE_KEEP_RECENT,
                summarize_ratio: config.summarize_ratio.unwrap_or(DEFAULT_SUMMARIZE_RATIO),
                max_summary_chars,
                on_error: OnError::default(),
                then: Some(Box::new(bound)),
            })
        }
    })
}
