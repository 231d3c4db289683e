//! `Summarize`: fold the oldest part of a long history into one summary message.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

use chrono::Utc;
use curator_model::{Message, Role};

use crate::events::{SummaryFailed, SummaryTruncated};
use crate::map::{chain_key, stable_hash};
use crate::{
    CharEstimate, CurationContext, Error, Event, HistoryManager, MemorySummaryStore, Result,
    Summarizer, SummaryStore, Tally, TokenCounter, Unit, View,
};

/// A folded range as shown: history id, first and last position, and the identity of the
/// transformations at both ends.
type RangeKey = (u64, usize, usize, u64, u64);

/// When a history is long enough to fold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Threshold {
    /// More than this many messages after the pinned head.
    Messages(usize),
    /// More than this many tokens after the pinned head, under the strategy's counter.
    Tokens(u64),
}

/// What a summarizer error does; in configuration, `"fallback"` or `"propagate"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum OnError {
    /// Skip folding, so that the view goes on as it was (the default); the error is reported
    /// as a [`SummaryFailed`] event.
    #[default]
    Fallback,
    /// Fail the curate call with the error.
    Propagate,
}

/// Folds the oldest part of a long history into one summary message placed right after the
/// pinned system message and task. Follow it with a bound, `summarize.then(budget)`, for the
/// two-phase pass of the specification: fold, then bound what is left.
///
/// When the history outside the newest `keep_recent` messages passes the [`Threshold`], it is
/// folded in chunks of `ratio × threshold` (messages or tokens), each cut on a unit boundary.
/// Chunk boundaries depend only on the messages before them, so a folded range stays the
/// same as the history grows: each chunk is summarized once, as a *rolling* summary (the
/// previous chunks' summary plus the next chunk), and memoised in a [`SummaryStore`] under
/// the identity of the summarizer and the recorded messages folded. Over a whole
/// conversation the summarizer is called once per chunk, not once per iteration; with a
/// persistent store, a resumed conversation shows the identical view without calling it.
///
/// The summary message says it is a summary written by curator; the [`Extractive`]
/// summarizer quotes the user as the user. It is an assistant message after a pinned user
/// message (the task), a user message otherwise, so the view stays valid for both providers.
/// A summary longer than `max_summary_chars` is cut, and a [`SummaryTruncated`] event says so.
/// The record is never touched.
///
/// [`Extractive`]: crate::Extractive
///
/// # Errors
///
/// [`Error::Summarizer`] with [`OnError::Propagate`].
///
/// # Examples
///
/// ```
/// use curator::model::{Message, ToolCall};
/// use curator::strategies::{CurationContext, Extractive, HistoryManagerExt, Summarize, Threshold, TokenBudget};
///
/// let mut messages = vec![Message::system("You fix bugs."), Message::user("Fix the parser.")];
/// for i in 0..30 {
///     let id = format!("c{i}");
///     messages.push(Message::assistant_with_calls(None, vec![ToolCall::new(&id, "bash", r#"{"command":"cargo test"}"#)]));
///     messages.push(Message::tool_result(&id, format!("run {i}: 1 failed")));
/// }
/// let summarize = Summarize::new(Extractive::default())
///     .with_threshold(Threshold::Messages(20))
///     .with_keep_recent(6)
///     .then(TokenBudget::new(8_000));
/// let view = summarize.curate_messages(&messages, &CurationContext::default())?;
/// assert_eq!(view[1].text(), "Fix the parser.");
/// // 54 messages outside the newest 6, folded in chunks of 10: 50 folded, 10 left as they are.
/// assert!(view[2].text().starts_with("[Summary of the 50 earlier messages"));
/// assert!(view[2].text().contains("Tool calls: bash({\"command\":\"cargo test\"})"));
/// assert_eq!(view.len(), 2 + 1 + 10);
/// assert_eq!(&view[3..], &messages[52..]);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Summarize {
    summarizer: Arc<dyn Summarizer>,
    store: Arc<dyn SummaryStore>,
    threshold: Threshold,
    counter: Arc<dyn TokenCounter>,
    keep_recent: usize,
    ratio: f64,
    max_summary_chars: usize,
    on_error: OnError,
    /// Content hashes of folded ranges as shown: (history id, first position, last
    /// position, and the identity of the transformations at both ends).
    hashes: Mutex<HashMap<RangeKey, u64>>,
}

impl Summarize {
    /// Folds with `summarizer`; by default past 32,000 estimated tokens, keeping the newest
    /// 10 messages, in chunks of half the threshold, summaries of at most 4,000 characters,
    /// memoised in memory, leaving the view unfolded on errors.
    /// A shared summarizer (`Arc<dyn Summarizer>`) is a summarizer too.
    pub fn new(summarizer: impl Summarizer + 'static) -> Self {
        Self {
            summarizer: Arc::new(summarizer),
            store: Arc::new(MemorySummaryStore::default()),
            threshold: Threshold::Tokens(32_000),
            counter: Arc::new(CharEstimate::default()),
            keep_recent: 10,
            ratio: 0.5,
            max_summary_chars: 4_000,
            on_error: OnError::Fallback,
            hashes: Mutex::default(),
        }
    }

    /// As [`new`](Summarize::new), with a shared summarizer.
    #[deprecated(note = "use `Summarize::new`: an `Arc<dyn Summarizer>` is a `Summarizer`")]
    pub fn with_shared(summarizer: Arc<dyn Summarizer>) -> Self {
        Self::new(summarizer)
    }

    /// Sets when to fold.
    #[must_use]
    pub fn with_threshold(mut self, threshold: Threshold) -> Self {
        self.threshold = threshold;
        self
    }

    /// Counts tokens (for a token threshold) with `counter`.
    #[must_use]
    pub fn with_counter(mut self, counter: impl TokenCounter + 'static) -> Self {
        self.counter = Arc::new(counter);
        self
    }

    /// Never folds the newest `n` messages (rounded up to whole units).
    #[must_use]
    pub fn with_keep_recent(mut self, n: usize) -> Self {
        self.keep_recent = n;
        self
    }

    /// Folds chunks of `ratio × threshold`; 0 never folds.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOption`] for a ratio outside 0 to 1.
    pub fn with_ratio(mut self, ratio: f64) -> Result<Self> {
        if !(0.0..=1.0).contains(&ratio) {
            return Err(Error::InvalidOption {
                strategy: "summarize",
                option: "summarize_ratio",
                reason: format!("is {ratio}, not between 0 and 1"),
            });
        }
        self.ratio = ratio;
        Ok(self)
    }

    /// Cuts summaries longer than `chars` characters.
    #[must_use]
    pub fn with_max_summary_chars(mut self, chars: usize) -> Self {
        self.max_summary_chars = chars;
        self
    }

    /// Sets what a summarizer error does.
    #[must_use]
    pub fn with_on_error(mut self, on_error: OnError) -> Self {
        self.on_error = on_error;
        self
    }

    /// Memoises summaries in `store`.
    #[must_use]
    pub fn with_store(mut self, store: Arc<dyn SummaryStore>) -> Self {
        self.store = store;
        self
    }

    fn limit(&self) -> u64 {
        match self.threshold {
            Threshold::Messages(n) => n as u64,
            Threshold::Tokens(n) => n,
        }
    }

    fn size(&self, unit: Unit, tally: Option<&Tally<'_, '_>>) -> u64 {
        match (self.threshold, tally) {
            (Threshold::Tokens(_), Some(tally)) => tally.range(unit.range()),
            _ => unit.len() as u64,
        }
    }

    /// The content hash of the recorded messages of a folded range.
    fn hash(&self, view: &View<'_>, range: Range<usize>) -> u64 {
        // The messages as this view shows them, so that every transformation before the
        // summarizer (redaction above all) is part of the summary's identity: a pipeline
        // that redacts never reuses a summary made without redaction.
        let compute = || {
            let mut h = 0u64;
            for index in range.clone() {
                let m = view.message(index);
                let mut parts: Vec<&[u8]> = vec![m.role().as_str().as_bytes()];
                let text = m.text();
                parts.push(text.as_bytes());
                for call in m.tool_calls() {
                    parts.extend([
                        call.id().as_bytes(),
                        call.name().as_bytes(),
                        call.arguments().as_bytes(),
                    ]);
                }
                if let Some(id) = m.tool_call_id() {
                    parts.push(id.as_bytes());
                }
                h = chain_key(Some(h), Some(stable_hash(&parts))).unwrap_or(h);
            }
            h
        };
        let ends = (range.start, range.end - 1);
        let key = match (view.pos(ends.0), view.pos(ends.1)) {
            (Some(a), Some(b)) => view
                .shown_identity(ends.0)
                .zip(view.shown_identity(ends.1))
                .map(|(x, y)| (view.history().id(), a, b, x, y)),
            _ => None,
        };
        let Some(key) = key else { return compute() };
        if let Some(h) = self.hashes.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
            return *h;
        }
        let h = compute();
        self.hashes.lock().unwrap_or_else(PoisonError::into_inner).insert(key, h);
        h
    }

    /// The rolling summary of the chunks, from the store or the summarizer.
    fn summary(
        &self,
        view: &View<'_>,
        chunks: &[Range<usize>],
        ctx: &CurationContext<'_>,
    ) -> Result<Option<String>> {
        let mut key = self.summarizer.key();
        let mut previous: Option<String> = None;
        for chunk in chunks {
            key = chain_key(Some(key), Some(self.hash(view, chunk.clone()))).unwrap_or(key);
            if let Some(stored) = self.store.get(key) {
                previous = Some(stored);
                continue;
            }
            let messages: Vec<_> = chunk.clone().map(|i| view.message(i)).collect();
            let refs: Vec<&Message> = messages.iter().map(|m| &**m).collect();
            let mut summary = match self.summarizer.summarize(previous.as_deref(), &refs) {
                Ok(summary) => summary,
                Err(error) => {
                    if let Some(sink) = ctx.events {
                        sink.emit(&Event::SummaryFailed(SummaryFailed {
                            summarizer: self.summarizer.name().into_owned(),
                            message: crate::error::with_causes(&error),
                            timestamp: Utc::now(),
                        }));
                    }
                    return match self.on_error {
                        OnError::Propagate => Err(error),
                        OnError::Fallback => Ok(None),
                    };
                }
            };
            let chars = summary.chars().count();
            if chars > self.max_summary_chars {
                summary = summary.chars().take(self.max_summary_chars).collect();
                if let Some(sink) = ctx.events {
                    sink.emit(&Event::SummaryTruncated(SummaryTruncated {
                        summarizer: self.summarizer.name().into_owned(),
                        original_chars: chars,
                        max_chars: self.max_summary_chars,
                    }));
                }
            }
            self.store.put(key, &summary);
            previous = Some(summary);
        }
        Ok(previous)
    }

    /// Folds the view; `None` when there is nothing to fold.
    fn fold<'h>(&self, view: &View<'h>, ctx: &CurationContext<'_>) -> Result<Option<View<'h>>> {
        if self.ratio <= 0.0 {
            return Ok(None);
        }
        let tally =
            matches!(self.threshold, Threshold::Tokens(_)).then(|| view.tally(&*self.counter));
        let head = view.head(ctx);
        let mut units: Vec<Unit> = view.units_rev(head.len()).collect();
        units.reverse();
        let sizes: Vec<u64> = units.iter().map(|u| self.size(*u, tally.as_ref())).collect();
        if sizes.iter().sum::<u64>() <= self.limit() {
            return Ok(None);
        }
        // The newest `keep_recent` messages, in whole units, are never folded.
        let mut recent_start = units.len();
        let mut recent = 0;
        while recent_start > 0 && recent < self.keep_recent {
            recent_start -= 1;
            recent += units[recent_start].len();
        }
        // Nor is the present (the newest unit, with the results its message refers to).
        if let Some(present) = view.present(&head) {
            while recent_start > 0 && units[recent_start - 1].range().end > present.start() {
                recent_start -= 1;
            }
        }
        // Chunks of `ratio × threshold`, closed on unit boundaries, counted from the start
        // so that they do not move as the history grows.
        #[expect(
            clippy::cast_precision_loss,
            clippy::cast_sign_loss,
            reason = "a ratio of a count"
        )]
        let chunk = ((self.ratio * self.limit() as f64).ceil() as u64).max(1);
        let mut chunks = Vec::new();
        let (mut start, mut size) = (0, 0);
        for (i, unit_size) in sizes.iter().enumerate().take(recent_start) {
            size += unit_size;
            if size >= chunk {
                chunks.push(units[start].start()..units[i].range().end);
                start = i + 1;
                size = 0;
            }
        }
        if chunks.is_empty() {
            return Ok(None);
        }
        let Some(summary) = self.summary(view, &chunks, ctx)? else { return Ok(None) };
        let folded: usize = chunks.iter().map(ExactSizeIterator::len).sum();
        let resume = units.get(start).map_or(view.len(), Unit::start);
        // The pinned messages before the kept part, the summary, then the kept part.
        let mut edit = view.edit();
        let mut after_user = false;
        for &index in head.pinned().iter().filter(|&&i| i < resume) {
            edit.keep(index..index + 1);
            after_user = view.structure(index).role() == Role::User;
        }
        let text = format!(
            "[Summary of the {folded} earlier messages of this conversation, written by curator; the messages themselves are left out]\n{summary}"
        );
        edit.insert(if after_user { Message::assistant(text) } else { Message::user(text) });
        edit.keep(resume..view.len());
        Ok(Some(edit.finish()))
    }
}

impl HistoryManager for Summarize {
    fn curate<'h>(&self, view: View<'h>, ctx: &CurationContext<'_>) -> Result<View<'h>> {
        Ok(self.fold(&view, ctx)?.unwrap_or(view))
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("summarize")
    }
}

impl fmt::Debug for Summarize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Summarize")
            .field("summarizer", &self.summarizer.name())
            .field("threshold", &self.threshold)
            .field("keep_recent", &self.keep_recent)
            .field("ratio", &self.ratio)
            .field("max_summary_chars", &self.max_summary_chars)
            .field("on_error", &self.on_error)
            .finish_non_exhaustive()
    }
}
