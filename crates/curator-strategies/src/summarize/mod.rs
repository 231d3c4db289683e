//! Summarization: fold old history into a summary, computed once and reused.
//!
//! - [`Summarizer`] turns a run of messages (and the previous summary) into summary text:
//!   [`Extractive`] (no model), [`FnSummarizer`] (a closure), and with the feature
//!   `openai-compatible`, [`OpenAiCompatible`] (any `/v1/chat/completions` endpoint).
//! - [`Summarize`] folds the oldest part of a long history into one summary message, then
//!   applies a final bound.
//! - [`SummaryStore`] memoises summaries ([`MemorySummaryStore`] in process), so each folded
//!   range is summarized once, also across restarts when the store persists.

#[cfg(feature = "openai-compatible")]
mod http;
mod store;
mod strategy;
mod summarizer;

#[cfg(feature = "openai-compatible")]
pub use http::OpenAiCompatible;
pub use store::{MemorySummaryStore, SummaryStore};
pub use strategy::{OnError, Summarize, Threshold};
pub use summarizer::{Extractive, FnSummarizer, Summarizer};
