//! Observability: the `HistoryCurated` event, event sinks and the `Observed` wrapper.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Utc};

use crate::{CurationContext, HistoryManager, Result, TokenCounter, View};

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
}

/// Receives events. Implementations must be cheap and must not fail: observability never
/// breaks curation.
///
/// # Examples
///
/// ```
/// use curator_strategies::{Event, EventSink, MemorySink};
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

/// Adds a [`HistoryCurated`] event (to the context's sink, or its own) and a `tracing` event
/// at debug level to any manager, without touching the manager.
///
/// # Examples
///
/// ```
/// use curator_model::Message;
/// use curator_strategies::{CharEstimate, CurationContext, Event, HistoryManagerExt, MemorySink, Observed, SlidingWindow};
///
/// let sink = MemorySink::default();
/// let manager = Observed::new(SlidingWindow::new(1)).with_counter(CharEstimate::default());
/// let messages = vec![Message::system("s"), Message::user("u"), Message::assistant("a"), Message::user("v")];
/// let ctx = CurationContext::default().with_prompt_name("demo").with_events(&sink);
/// manager.curate_messages(&messages, &ctx)?;
/// let Event::HistoryCurated(event) = &sink.events()[0] else { unreachable!() };
/// assert_eq!((event.original_count, event.curated_count), (4, 3));
/// assert_eq!(event.strategy, "sliding_window");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Observed<M> {
    inner: M,
    counter: Option<Arc<dyn TokenCounter>>,
    sink: Option<Arc<dyn EventSink>>,
}

impl<M> Observed<M> {
    /// Observes `inner`, reporting to the context's event sink.
    pub fn new(inner: M) -> Self {
        Self { inner, counter: None, sink: None }
    }

    /// Also reports token counts under `counter`.
    #[must_use]
    pub fn with_counter(mut self, counter: impl TokenCounter + 'static) -> Self {
        self.counter = Some(Arc::new(counter));
        self
    }

    /// Reports to `sink` instead of the context's sink.
    #[must_use]
    pub fn with_sink(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.sink = Some(sink);
        self
    }

    /// The observed manager.
    pub fn inner(&self) -> &M {
        &self.inner
    }
}

impl<M: HistoryManager> HistoryManager for Observed<M> {
    fn curate<'h>(&self, view: View<'h>, ctx: &CurationContext<'_>) -> Result<View<'h>> {
        let started = std::time::Instant::now();
        let original_count = view.len();
        let original_tokens = self.counter.as_deref().map(|c| view.tokens(c));
        let curated = self.inner.curate(view, ctx)?;
        let elapsed_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        let event = HistoryCurated {
            prompt_name: ctx.prompt_name.map(str::to_owned),
            strategy: self.inner.name().into_owned(),
            original_count,
            curated_count: curated.len(),
            original_tokens,
            curated_tokens: self.counter.as_deref().map(|c| curated.tokens(c)),
            elapsed_us,
            timestamp: Utc::now(),
        };
        tracing::debug!(
            prompt = event.prompt_name.as_deref().unwrap_or(""),
            strategy = %event.strategy,
            original_count,
            curated_count = event.curated_count,
            original_tokens = ?event.original_tokens,
            curated_tokens = ?event.curated_tokens,
            elapsed_us,
            "history curated"
        );
        let event = Event::HistoryCurated(event);
        match (&self.sink, ctx.events) {
            (Some(sink), _) => sink.emit(&event),
            (None, Some(sink)) => sink.emit(&event),
            (None, None) => {}
        }
        Ok(curated)
    }

    fn name(&self) -> Cow<'_, str> {
        self.inner.name()
    }
}

impl<M: fmt::Debug> fmt::Debug for Observed<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observed")
            .field("inner", &self.inner)
            .field("counter", &self.counter)
            .finish_non_exhaustive()
    }
}
