//! Summarization: fold old history into a summary, computed once and reused.
//!
//! - [`Summarizer`] turns a run of messages (and the previous summary) into summary text:
//!   [`Extractive`] (no model), [`FnSummarizer`] (a closure), and in `curator::client`,
//!   `ModelSummarizer` (any model client).
//! - [`Summarize`] folds the oldest part of a long history into one summary message, then
//!   applies a final bound.
//! - [`SummaryStore`] memoises summaries ([`MemorySummaryStore`] in process), so each folded
//!   range is summarized once, also across restarts when the store persists.

mod store;
mod strategy;
mod summarizer;

pub use store::{MemorySummaryStore, SummaryStore};
pub use strategy::{OnError, Summarize, Threshold};
pub use summarizer::{Extractive, FnSummarizer, Summarizer};
