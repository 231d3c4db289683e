//! Curation strategies: build the view an agent loop sends to the provider from the
//! conversation's full history.
//!
//! This crate sits on [`curator_model`] and under the session layer. Everything here is pure
//! and deterministic: a strategy never changes the history it reads, and the same history
//! and options always give the same view.
//!
//! - [`HistoryManager`]: the trait every strategy implements; compose with
//!   [`HistoryManagerExt::then`], or a `Vec<Box<dyn HistoryManager>>` built at run time.
//! - [`History`] and [`View`]: the append-only messages with cached token counts, and the
//!   positions a strategy keeps (nothing is cloned until the end).
//! - Strategies: [`Passthrough`], [`SlidingWindow`], [`ToolResultTruncator`],
//!   [`TokenBudget`], [`TurnLimit`], [`ToolFilter`], [`ClearOldToolResults`], [`Redactor`].
//! - [`Summarize`]: fold old history into a summary ([`Summarizer`], [`Extractive`]),
//!   computed once per folded range ([`SummaryStore`]), then bound.
//! - [`coherence`]: the rules that keep tool calls with their results.
//! - [`TokenCounter`]: [`CharEstimate`], and exact BPE encodings with the `tiktoken` feature.
//! - [`Observed`], [`EventSink`], [`HistoryCurated`]: observability.
//! - [`StrategyConfig`]: pipelines from JSON or TOML.
//!
//! # Examples
//!
//! ```
//! use curator::model::{Message, ToolCall, validate};
//! use curator::strategies::{CurationContext, History, HistoryManager, HistoryManagerExt, TokenBudget, ToolResultTruncator, View};
//!
//! let pipeline = ToolResultTruncator::new(200)?.then(TokenBudget::new(2_000).with_reserve(500));
//!
//! let mut history = History::new();
//! history.push(Message::system("You are a coding agent."));
//! history.push(Message::user("Fix the failing test."));
//! for i in 0..50 {
//!     let id = format!("call_{i}");
//!     history.push(Message::assistant_with_calls(None, vec![ToolCall::new(&id, "run_tests", "{}")]));
//!     history.push(Message::tool_result(&id, "FAILED test_parse ... ".repeat(100)));
//! }
//! let view = pipeline.curate(View::full(&history), &CurationContext::default())?;
//! let messages = view.to_messages();
//! validate::openai(&messages)?;
//! assert!(messages.len() < history.len());
//! assert_eq!(messages[1].text(), "Fix the failing test.");
//! Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod bill;
mod budget;
mod clear;
pub mod coherence;
mod combinators;
mod config;
mod context;
mod cut_notes;
mod error;
mod events;
mod filter;
mod fx;
mod guard;
mod history;
mod manager;
mod map;
mod memo;
pub mod notes;
mod observed;
mod redact;
mod relevance;
mod shorten;
mod stable;
mod summarize;
mod term_index;
pub mod terms;
mod tokens;
mod trim;
mod truncate;
mod turns;
mod unsendable;
mod view;
mod window;

pub use budget::{MIN_TASK_TOKENS, TokenBudget};
pub use clear::ClearOldToolResults;
pub use combinators::HistoryManagerExt;
pub use config::{Registry, StrategyConfig, SummarizerConfig, Tokenizer};
pub use context::CurationContext;
pub use error::{Error, Result, Shortfall};
pub use events::{
    ConversationRecorded, Event, EventSink, HistoryCurated, MemorySink, RelevanceKept, ScoredUnit,
    SummaryFailed, SummaryTruncated,
};
pub use filter::ToolFilter;
pub use history::History;
pub use manager::{HistoryManager, Passthrough, Then};
pub use map::{MessageMap, stable_hash};
pub use observed::Observed;
pub use redact::Redactor;
pub use relevance::{
    MAX_NOTE_TOKENS, MAX_TOOL_RESULT_CHARS, MIN_TOOL_RESULT_CHARS, RelevanceBudget,
};
pub use shorten::cut_to_fit;
pub use stable::StableBudget;
pub use summarize::{
    Extractive, FnSummarizer, MemorySummaryStore, OnError, Summarize, Summarizer, SummaryStore,
    Threshold,
};
#[cfg(feature = "tiktoken")]
pub use tokens::{Bpe, Encoding};
pub use tokens::{CharEstimate, ContentRules, ImageRules, TokenCounter};
pub use truncate::ToolResultTruncator;
pub use turns::TurnLimit;
pub use view::{Edit, Head, MessageRef, Tally, Unit, UnitsRev, View, ViewEntry};
pub use window::SlidingWindow;
