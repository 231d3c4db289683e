//! Observability: the `HistoryCurated` event, event sinks and the `Observed` wrapper.

use std::sync::{Mutex, PoisonError};

use chrono::{DateTime, Utc};

/// Emitted after each observed curate call.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct HistoryCurated {
    /// The prompt, when the context named one.
    pub prompt_name: Option<String>,
    /// The strategy's name (for a composition, the names joined by ` -> `).
    pub strategy: String,
    /// Messages before curation.
    pub original_count: usize,
    /// Messages after curation.
    pub curated_count: usize,
    /// Tokens before curation, when a counter was given.
    pub original_tokens: Option<u64>,
    /// Tokens after curation, when a counter was given.
    pub curated_tokens: Option<u64>,
    /// Time spent curating, in microseconds.
    pub elapsed_us: u64,
    /// When curation finished.
    pub timestamp: DateTime<Utc>,
}

/// Emitted by the session layer each time a message is recorded.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ConversationRecorded {
    /// The evaluation.
    pub evaluation_id: curator_model::EvaluationId,
    /// The recorded message's id.
    pub message_id: curator_model::MessageId,
    /// Its sequence number.
    pub sequence: u64,
    /// Its turn.
    pub turn: u32,
    /// Its role.
    pub role: curator_model::Role,
    /// The prompt of the evaluation, when known.
    pub prompt: Option<curator_model::PromptRef>,
    /// When it was recorded.
    pub timestamp: DateTime<Utc>,
}

impl ConversationRecorded {
    /// The event for a recorded entry.
    pub fn from_entry(entry: &curator_model::Entry) -> Self {
        Self {
            evaluation_id: entry.evaluation_id,
            message_id: entry.id,
            sequence: entry.sequence,
            turn: entry.turn,
            role: entry.message.role(),
            prompt: entry.prompt.clone(),
            timestamp: entry.created_at,
        }
    }
}

/// Emitted when a summarizer fails (the fold is skipped, or the error propagates).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct SummaryFailed {
    /// The summarizer's name.
    pub summarizer: String,
    /// What went wrong.
    pub message: String,
    /// When.
    pub timestamp: DateTime<Utc>,
}

/// Emitted when a summary was longer than allowed and was cut.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct SummaryTruncated {
    /// The summarizer's name.
    pub summarizer: String,
    /// Characters the summary had.
    pub original_chars: usize,
    /// Characters it was cut to.
    pub max_chars: usize,
}

/// The events curator reports.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// A curate call finished.
    HistoryCurated(HistoryCurated),
    /// A message was recorded.
    ConversationRecorded(ConversationRecorded),
    /// A summarizer failed.
    SummaryFailed(SummaryFailed),
    /// A summary was cut to its maximum length.
    SummaryTruncated(SummaryTruncated),
    /// [`RelevanceBudget`](crate::RelevanceBudget) kept older units for their relevance.
    RelevanceKept(RelevanceKept),
}

/// What [`RelevanceBudget`](crate::RelevanceBudget) kept of the older history for its
/// relevance to the present, and why: each unit's BM25 score.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct RelevanceKept {
    /// The units kept, best first.
    pub units: Vec<ScoredUnit>,
    /// When.
    pub timestamp: DateTime<Utc>,
}

impl RelevanceKept {
    /// The event for `units`, now.
    pub fn new(units: Vec<ScoredUnit>) -> Self {
        Self { units, timestamp: Utc::now() }
    }
}

/// One older unit kept for its relevance.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct ScoredUnit {
    /// History position of its first message (`None` for a message a strategy wrote).
    pub position: Option<usize>,
    /// Its number of messages.
    pub messages: usize,
    /// Its BM25 score against the task and the newest units.
    pub score: f64,
}

impl ScoredUnit {
    /// A unit starting at history position `position`, of `messages` messages, scored `score`.
    pub fn new(position: Option<usize>, messages: usize, score: f64) -> Self {
        Self { position, messages, score }
    }
}

/// Receives events. Implementations must be cheap and must not fail: observability never
/// breaks curation.
///
/// # Examples
///
/// ```
/// use curator::strategies::{Event, EventSink, MemorySink};
///
/// let sink = MemorySink::default();
/// assert!(sink.events().is_empty());
/// ```
pub trait EventSink: Send + Sync {
    /// Handles one event.
    fn emit(&self, event: &Event);
}

impl<F: Fn(&Event) + Send + Sync> EventSink for F {
    fn emit(&self, event: &Event) {
        self(event);
    }
}

/// A sink that keeps every event in memory, for tests and inspection.
#[derive(Debug, Default)]
pub struct MemorySink {
    events: Mutex<Vec<Event>>,
}

impl MemorySink {
    /// The events received so far.
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl EventSink for MemorySink {
    fn emit(&self, event: &Event) {
        self.events.lock().unwrap_or_else(PoisonError::into_inner).push(event.clone());
    }
}
