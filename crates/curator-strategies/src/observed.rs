//! `Observed`: reports each curate call of any manager as an event and a `tracing` event.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use chrono::Utc;

use crate::{
    CurationContext, Event, EventSink, HistoryCurated, HistoryManager, Result, TokenCounter, View,
};

/// Adds a [`HistoryCurated`] event (to the context's sink, or its own) and a `tracing` event
/// at debug level to any manager, without touching the manager.
///
/// # Examples
///
/// ```
/// use curator::model::Message;
/// use curator::strategies::{CharEstimate, CurationContext, Event, HistoryManagerExt, MemorySink, Observed, SlidingWindow};
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
