//! What a strategy knows besides the messages.

use std::fmt;

use crate::EventSink;

/// The context of one curate call: what to preserve and where to report.
///
/// By default the system message and the task (the first user message, right after the
/// system messages) are preserved, no minimum number of recent messages is forced, and no
/// events are emitted.
///
/// # Examples
///
/// ```
/// use curator::strategies::CurationContext;
///
/// let ctx = CurationContext::default().with_prompt_name("triage").with_preserve_last_n(4);
/// assert!(ctx.preserve_system && ctx.preserve_task);
/// assert_eq!(ctx.preserve_last_n, 4);
/// ```
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct CurationContext<'a> {
    /// Keep the leading system messages.
    pub preserve_system: bool,
    /// Keep the task: the first user message when it comes right after the system messages.
    /// A window that drops it leaves the model without its mission.
    pub preserve_task: bool,
    /// Let a budget shorten system messages (keeping their beginning and end) when they do
    /// not fit. Off by default: system messages are instructions, sent whole and unchanged,
    /// and a budget that cannot hold them is [`BudgetTooSmall`](crate::Error::BudgetTooSmall).
    pub shorten_system: bool,
    /// Keep at least this many of the newest messages (rounded up to whole units) where the
    /// strategy's own bound would keep fewer; a token budget still wins over it.
    pub preserve_last_n: usize,
    /// The prompt being curated, for events.
    pub prompt_name: Option<&'a str>,
    /// Where [`Observed`](crate::Observed) and strategies report events.
    pub events: Option<&'a dyn EventSink>,
}

impl Default for CurationContext<'_> {
    fn default() -> Self {
        Self {
            preserve_system: true,
            preserve_task: true,
            shorten_system: false,
            preserve_last_n: 0,
            prompt_name: None,
            events: None,
        }
    }
}

impl<'a> CurationContext<'a> {
    /// Sets whether the leading system messages are kept.
    #[must_use]
    pub fn with_preserve_system(mut self, on: bool) -> Self {
        self.preserve_system = on;
        self
    }

    /// Sets whether the task message is kept.
    #[must_use]
    pub fn with_preserve_task(mut self, on: bool) -> Self {
        self.preserve_task = on;
        self
    }

    /// Sets whether a budget may shorten system messages that do not fit (off by default).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Message;
    /// use curator::strategies::{CurationContext, HistoryManagerExt, TokenBudget};
    ///
    /// let messages = vec![Message::system("Follow the house rules. ".repeat(100)), Message::user("hi")];
    /// // System messages are sent whole: 60 tokens cannot hold this one.
    /// assert!(TokenBudget::new(60).curate_messages(&messages, &CurationContext::default()).is_err());
    /// // Unless shortening them is allowed.
    /// let ctx = CurationContext::default().with_shorten_system(true);
    /// let view = TokenBudget::new(60).curate_messages(&messages, &ctx)?;
    /// assert!(view[0].text().contains("tokens cut by curator"));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_shorten_system(mut self, on: bool) -> Self {
        self.shorten_system = on;
        self
    }

    /// Sets the minimum number of newest messages kept.
    #[must_use]
    pub fn with_preserve_last_n(mut self, n: usize) -> Self {
        self.preserve_last_n = n;
        self
    }

    /// Names the prompt for events.
    #[must_use]
    pub fn with_prompt_name(mut self, name: &'a str) -> Self {
        self.prompt_name = Some(name);
        self
    }

    /// Reports events to `sink`.
    #[must_use]
    pub fn with_events(mut self, sink: &'a dyn EventSink) -> Self {
        self.events = Some(sink);
        self
    }
}

impl fmt::Debug for CurationContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CurationContext")
            .field("preserve_system", &self.preserve_system)
            .field("preserve_task", &self.preserve_task)
            .field("shorten_system", &self.shorten_system)
            .field("preserve_last_n", &self.preserve_last_n)
            .field("prompt_name", &self.prompt_name)
            .field("events", &self.events.is_some())
            .finish()
    }
}
