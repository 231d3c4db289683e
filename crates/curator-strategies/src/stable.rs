//! `StableBudget`: a token budget whose views keep the provider's prompt cache, compacting
//! in steps instead of rewriting the view on every call.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, PoisonError};

use crate::tokens::share;
use crate::view::Frozen;
use crate::{CurationContext, Error, HistoryManager, RelevanceBudget, Result, TokenCounter, View};

/// A token budget whose consecutive views share their whole prefix, so that the provider's
/// prompt cache serves them: between two compactions a view is the previous view plus the
/// messages recorded since, byte for byte.
///
/// Providers bill a request's input by how much of it repeats an earlier request's prefix
/// (OpenAI caches prefixes of 1,024 tokens or more automatically, Anthropic up to its
/// `cache_control` breakpoints; a cached token costs about a tenth of an uncached one). A
/// budget that re-curates the whole history on every call changes the head of the view
/// (its fold note, what it selects, where it cuts) and loses the cache; this one changes the
/// view only when it must.
///
/// # Rules
///
/// The room is the budget's (`max_tokens - reserve`, less the reply priming).
///
/// 1. **A call point** is every place in the history with no call still open before it
///    (where a provider call can be made: before a reply, and before a system or user
///    message added after the results), and the end of the history.
/// 2. Walking the call points in order, **the view at a call point is the last compaction's
///    view followed by every message after it**, unchanged, as long as that fits the room.
/// 3. **When it does not fit, a compaction.** A view is measured as it is sent: where calls
///    are still open at its end (a loop may ask for views while a reply's calls run), they
///    are not sent, nor their message when nothing else is left of it. The compaction is at
///    the call point before this one when a view sent after that point, with calls still
///    open, overflowed, no compaction came since, and the view at that point is over the
///    low-water mark below: the messages since then follow the compaction's view, so the
///    calls made while the reply's calls were open and the call after their results share
///    it. Otherwise, or when the view still does not fit, the compaction is at this call
///    point. A compaction curates everything up to its point with the compactor (a
///    [`RelevanceBudget`], which keeps the head, the newest units, the older units that
///    matter most and a note of what it left out) at a **low-water mark**: the head's
///    tokens (at most its share of the room) plus `low_water` (0.5 by default) of the rest
///    of the room, and at most the tokens of the view at its point less `min_free`. A
///    head (the system messages and the task) that the whole room's share for it holds is
///    kept whole, as the views before sent it, and a selection that goes just past the
///    mark is sent as it is, within the room, rather than with its task shortened. A head
///    over its share that cannot be shortened (system messages are not) leaves that mark no
///    room: the mark is then its whole tokens plus `low_water` of what it leaves. The first
///    compaction of a conversation gives its room first to the run of units from the task
///    on, in order, until a unit does not fit (a first unit too long for the room leaves
///    the run empty); then come the note of what it left out, the newest unit, and, in the
///    room left, the older units that matter most. Every view before it sent that run, so
///    the provider's cache serves it again
///    ([`with_first_opening_share`](Self::with_first_opening_share)). Its cuts, its note
///    and its selection then stay byte for byte until the next compaction. When the
///    compactor cannot keep what is never lost within the low-water mark, it compacts
///    within the whole room (freeing less); when not even that holds, the call fails with
///    [`Error::BudgetTooSmall`], as the compactor says.
///
/// Compaction points are therefore a function of the history alone: a resumed process, a
/// second worker, or a caller that curates a plain message list each time gets the very
/// views the live session got. A strategy value remembers its last walk (one history at a
/// time), so a session's call costs what was appended since the last call, not the
/// history; a new history is walked from its start once, compacting where the live session
/// did.
///
/// Every promise of a budget holds at every call: the view is within the room, keeps every
/// system message, the task and the newest unit (at a compaction its long tool results may
/// be cut to their beginning and end, as the relevance budget cuts them for the whole room),
/// and never splits a call from its result. The steps before this one must change each
/// message on its own ([`Redactor`](crate::Redactor), [`ToolResultTruncator`](crate::ToolResultTruncator),
/// [`ToolFilter`](crate::ToolFilter)), so that what they give for an earlier history is the
/// start of what they give now; when it is not (a window before it), the walk starts over
/// and the views are still correct, but stable no longer.
///
/// # Errors
///
/// As [`RelevanceBudget`]: [`Error::BudgetTooSmall`] when not even what is never lost fits.
///
/// # Examples
///
/// A growing conversation: each view is the previous one plus what was appended, until the
/// budget is reached, and then a compaction frees at least half the body's room.
///
/// ```
/// use curator::model::{Message, ToolCall};
/// use curator::strategies::{CurationContext, History, HistoryManagerExt, StableBudget};
///
/// let budget = StableBudget::new(2_000);
/// let ctx = CurationContext::default();
/// let mut history = History::new();
/// history.push(Message::system("You are a coding agent."));
/// history.push(Message::user("Fix the failing test."));
/// let mut previous: Vec<Message> = Vec::new();
/// let mut compactions = 0;
/// for i in 0..40 {
///     let view = budget.curate_history(&history, &ctx)?.to_messages();
///     if !view.starts_with(&previous) {
///         compactions += 1;
///     }
///     previous = view;
///     let id = format!("c{i}");
///     history.push(Message::assistant_with_calls(None, vec![ToolCall::new(&id, "run", "{}")]));
///     history.push(Message::tool_result(&id, format!("step {i}: ").repeat(30)));
/// }
/// assert!((1..=8).contains(&compactions), "{compactions}");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct StableBudget {
    compactor: RelevanceBudget,
    low_water: f64,
    min_free: u64,
    opening_share: f64,
    first_opening_share: f64,
    /// The last walk (a cache: views never depend on it).
    walk: Arc<Mutex<Option<Walk>>>,
}

impl StableBudget {
    /// The share of the body's room (what the head leaves) a compaction keeps by default.
    pub const DEFAULT_LOW_WATER: f64 = 0.5;

    /// The share of a compaction's body room kept for the opening by default: none.
    pub const DEFAULT_OPENING_SHARE: f64 = 0.0;

    /// The share of the first compaction's body room kept for the opening by default: all
    /// of it (the first compaction cuts the middle).
    pub const DEFAULT_FIRST_OPENING_SHARE: f64 = 1.0;

    /// A budget of `max_tokens` that compacts with a [`RelevanceBudget`] of its defaults,
    /// except that its note lists the calls it left out, not their terms (see
    /// [`RelevanceBudget::with_note_terms`]): a compaction's note is sent on every call until
    /// the next, and its room holds more of the conversation as it was.
    pub fn new(max_tokens: u64) -> Self {
        Self::over(RelevanceBudget::new(max_tokens).with_note_terms(false))
    }

    /// A budget that compacts with `compactor`, whose budget is the room.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::strategies::{RelevanceBudget, StableBudget};
    ///
    /// let budget = StableBudget::over(RelevanceBudget::new(8_000).with_reserve(1_000).with_fold_note(false));
    /// assert_eq!(budget.compactor().budget().available(), 7_000);
    /// ```
    pub fn over(compactor: RelevanceBudget) -> Self {
        Self {
            compactor,
            low_water: Self::DEFAULT_LOW_WATER,
            min_free: 0,
            opening_share: Self::DEFAULT_OPENING_SHARE,
            first_opening_share: Self::DEFAULT_FIRST_OPENING_SHARE,
            walk: Arc::default(),
        }
    }

    /// Holds back `reserve` tokens for tool schemas and the reply.
    #[must_use]
    pub fn with_reserve(mut self, reserve: u64) -> Self {
        self.compactor = self.compactor.with_reserve(reserve);
        self.walk = Arc::default();
        self
    }

    /// Counts with `counter`.
    #[must_use]
    pub fn with_counter(mut self, counter: impl TokenCounter + 'static) -> Self {
        self.compactor = self.compactor.with_counter(counter);
        self.walk = Arc::default();
        self
    }

    /// Keeps `share` of the body's room at a compaction (the rest is the room the next
    /// messages grow into before the next one).
    ///
    /// Lower is cheaper with a prompt cache (fewer compactions, smaller views) and keeps
    /// less right after a compaction.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOption`] for a share outside 0 to 1.
    pub fn with_low_water(mut self, share: f64) -> Result<Self> {
        self.low_water = a_share("low_water", share)?;
        self.walk = Arc::default();
        Ok(self)
    }

    /// Makes every compaction free at least `tokens` of the view at its call point, where
    /// what is never lost allows it (as Anthropic's `clear_at_least`): a compaction is paid
    /// for by writing the new view to the cache, so it should free enough to be worth it.
    #[must_use]
    pub fn with_min_free(mut self, tokens: u64) -> Self {
        self.min_free = tokens;
        self.walk = Arc::default();
        self
    }

    /// Keeps `share` of the body room of every compaction after the first for its
    /// **opening**: the oldest units after the task, in a run, before the note of what was
    /// left out. Every such compaction keeps the same opening (as far as its share holds
    /// it), so the provider's cache serves it and a compaction rewrites only what follows
    /// it: cheaper compactions, for less room for what relevance selects. Anthropic's
    /// requests carry a breakpoint where the opening ends. 0 (the default) selects by
    /// relevance alone. The first compaction's share is
    /// [`with_first_opening_share`](Self::with_first_opening_share)'s.
    ///
    /// On the corpus at 8,000 tokens, a share of 0.5 bills 0.651x of sending everything
    /// (OpenAI's rule) where 0 bills 0.664x, and keeps 98.1% of the evidence verbatim in
    /// the average call where 0 keeps 98.5% (81.0% against 85.2% in the worst tenth of
    /// calls; see `docs/cost.md`).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::strategies::StableBudget;
    ///
    /// let budget = StableBudget::new(8_000).with_opening_share(0.5)?;
    /// assert_eq!(budget.opening_share(), 0.5);
    /// assert!(StableBudget::new(8_000).with_opening_share(1.5).is_err());
    /// # Ok::<(), curator::strategies::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOption`] for a share outside 0 to 1.
    pub fn with_opening_share(mut self, share: f64) -> Result<Self> {
        self.opening_share = a_share("opening_share", share)?;
        self.walk = Arc::default();
        Ok(self)
    }

    /// The share of a compaction's body room kept for the opening, after the first.
    pub fn opening_share(&self) -> f64 {
        self.opening_share
    }

    /// Keeps `share` of the **first** compaction's body room for its opening (all of it by
    /// default): the first compaction of a conversation then cuts its middle, keeping the
    /// run of units from the task on, in order, until one does not fit (a first unit too
    /// long for the room leaves the run empty), then the note of what was left out, the
    /// newest unit and, in the room left, the older units that matter most.
    ///
    /// Until the first compaction every view sent the whole conversation, so the
    /// provider's cache holds that run and serves it again at a tenth of the price: the
    /// first compaction costs little where a selection by relevance rewrites the whole
    /// body. A conversation that ends a few calls after it passes the budget then costs no
    /// more than sending everything would have; one that goes on compacts again by
    /// relevance (and [`with_opening_share`](Self::with_opening_share)). On the corpus at
    /// 8,000 tokens, the τ-bench airline conversations, which pass the budget in their
    /// last calls, bill 0.998x of sending everything with it and 1.009x with 0, and the
    /// evidence kept verbatim stays at 98.5%.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::strategies::StableBudget;
    ///
    /// assert_eq!(StableBudget::new(8_000).first_opening_share(), 1.0);
    /// let budget = StableBudget::new(8_000).with_first_opening_share(0.0)?;
    /// assert_eq!(budget.first_opening_share(), 0.0);
    /// assert!(StableBudget::new(8_000).with_first_opening_share(-0.1).is_err());
    /// # Ok::<(), curator::strategies::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOption`] for a share outside 0 to 1.
    pub fn with_first_opening_share(mut self, share: f64) -> Result<Self> {
        self.first_opening_share = a_share("first_opening_share", share)?;
        self.walk = Arc::default();
        Ok(self)
    }

    /// The share of the first compaction's body room kept for the opening.
    pub fn first_opening_share(&self) -> f64 {
        self.first_opening_share
    }

    /// The strategy that compacts.
    pub fn compactor(&self) -> &RelevanceBudget {
        &self.compactor
    }

    /// The share of the body's room a compaction keeps.
    pub fn low_water(&self) -> f64 {
        self.low_water
    }

    /// The least a compaction frees.
    pub fn min_free(&self) -> u64 {
        self.min_free
    }

    /// The room for messages.
    fn room(&self) -> u64 {
        let counter = self.compactor.budget().counter();
        self.compactor.budget().available().saturating_sub(counter.reply_priming())
    }

    /// The low-water marks for a compaction of `view` (every message up to a call point),
    /// whose tokens `total` overflow the room: with the head counted within its share of
    /// the room, and with the head counted whole (the same when the share holds it; the
    /// mark for a head over its share that cannot be shortened, system messages say).
    fn targets(&self, view: &View<'_>, total: u64, ctx: &CurationContext<'_>) -> (u64, u64) {
        let budget = self.compactor.budget();
        let room = self.room();
        let tally = view.tally(budget.counter());
        let head = view.head(ctx);
        let whole: u64 = head.pinned().iter().map(|&i| tally.message(i)).sum();
        let mark = |head_tokens: u64| {
            let low = head_tokens + share(self.low_water, room.saturating_sub(head_tokens));
            low.min(total.saturating_sub(self.min_free))
        };
        (mark(whole.min(share(budget.head_share(), room))), mark(whole).min(room))
    }

    /// Brings the walk's view at call point `end` (or at the history's end) within the room.
    /// Nothing to do when it fits; at the history's end with calls still open, what is sent
    /// is the view without those calls ([`coherence`](crate::coherence) removes them), and
    /// that is what must fit. When the view sent at a place after the walk's last call
    /// point where calls were still open overflowed, the walk compacts at that point (where
    /// its view is over the low-water mark): every longer history overflows there too, so
    /// the walk keeps that compaction, and the calls made while the calls were open share it
    /// with the call after their results. When the view still does not fit, the compaction
    /// at `end` is returned, for the caller to apply.
    fn settle(
        &self,
        walk: &mut Walk,
        view: &View<'_>,
        end: usize,
        ctx: &CurationContext<'_>,
    ) -> Result<Option<Step>> {
        let room = self.room();
        let open_end = end == view.len() && open_before(view, end);
        // Whether the walk's view at `end` fits as it is sent: counted whole, or, with calls
        // open at the end, from the last call point (or the last compaction) on without them.
        let fits = |walk: &Walk| {
            walk.kept_tokens + walk.appended <= room
                || open_end && {
                    let (from, before) = walk.point.map_or((walk.base, 0), |p| (p.at, p.appended));
                    walk.kept_tokens + before + self.sent(view, from, end) <= room
                }
        };
        if fits(walk) {
            return Ok(None);
        }
        let overflowed_open = walk.point.is_some_and(|point| {
            point.open.is_some_and(|(at, open)| {
                // At this very end, `fits` measured it as sent from that point: it overflowed.
                (open_end && at == end)
                    || walk.kept_tokens + open > room
                        && walk.kept_tokens + point.appended + self.sent(view, point.at, at) > room
            })
        });
        if overflowed_open && let Some(point) = walk.point {
            let total = walk.kept_tokens + point.appended;
            let (target, _) = self.targets(&view.prefix(point.at), total, ctx);
            // Refused there, the compaction at `end` says what can be kept.
            let step = if target < total {
                self.compact(view, point.at, total, ctx, walk.base == 0).ok()
            } else {
                None
            };
            if let Some(step) = step {
                let since = walk.appended - point.appended;
                walk.apply(step);
                walk.appended = since;
                if fits(walk) {
                    return Ok(None);
                }
            }
        }
        let total = walk.kept_tokens + walk.appended;
        self.compact(view, end, total, ctx, walk.base == 0).map(Some)
    }

    /// The tokens the messages of `view` from index `from` (where no call is open) to `to`
    /// come to as sent: calls still open at `to`, and their messages when nothing else is
    /// left of them, removed.
    fn sent(&self, view: &View<'_>, from: usize, to: usize) -> u64 {
        let sent = view.prefix(to).repaired_after(from);
        sent.tally(self.compactor.budget().counter()).range(from..sent.len())
    }

    /// Compacts the messages of `view` up to call point `end`, whose tokens `total` (with
    /// the walk's kept view) overflow the room: the compactor's view at the low-water mark,
    /// or within the whole room when what is never lost does not fit the mark. `first`
    /// when no compaction came before it.
    fn compact(
        &self,
        view: &View<'_>,
        end: usize,
        total: u64,
        ctx: &CurationContext<'_>,
        first: bool,
    ) -> Result<Step> {
        let opening_share = if first { self.first_opening_share } else { self.opening_share };
        let prefix = view.prefix(end);
        let (target, whole_head) = self.targets(&prefix, total, ctx);
        let counter = self.compactor.budget().counter();
        let priming = counter.reply_priming();
        let maps = prefix.map_count();
        // The prefix overflows the room (its kept view and what followed it did), and so the
        // mark below it: the compactor need not count it whole to know.
        let at = |mark: u64| {
            self.compactor
                .with_available(mark + priming)
                .with_opening_share(opening_share)
                .curate_overflowing(prefix.clone(), ctx)
        };
        let compacted = match at(target) {
            // A head over its share that is kept whole (system messages are not shortened)
            // leaves no room at the first mark: the mark above the whole head, so that the
            // compaction still frees half the body rather than a unit.
            Err(Error::BudgetTooSmall(_)) if whole_head > target => at(whole_head),
            other => other,
        };
        let compacted = match compacted {
            // Within the whole room (which frees less), or the error naming the budget as
            // it was given, not the mark's.
            Err(Error::BudgetTooSmall(_)) => self.compactor.curate_overflowing(prefix, ctx)?,
            other => other?,
        };
        let tokens = compacted.tally(counter).range(0..compacted.len());
        Ok(Step { kept: compacted.freeze_under(maps), kept_tokens: tokens, base: end, appended: 0 })
    }
}

/// `share`, when it is between 0 and 1: the option `option` of `stable_budget` otherwise.
fn a_share(option: &'static str, share: f64) -> Result<f64> {
    if (0.0..=1.0).contains(&share) {
        Ok(share)
    } else {
        Err(Error::InvalidOption {
            strategy: "stable_budget",
            option,
            reason: format!("is {share}, not between 0 and 1"),
        })
    }
}

/// Where a compaction leaves a walk.
#[derive(Clone, Debug)]
struct Step {
    /// The view kept from now on, and its tokens.
    kept: Frozen,
    kept_tokens: u64,
    /// Where the messages sent after it start.
    base: usize,
    /// Tokens of the messages from `base` to the compaction's call point.
    appended: u64,
}

/// What a walk depends on besides the messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Key {
    history: u64,
    preserve_system: bool,
    preserve_task: bool,
    shorten_system: bool,
    preserve_last_n: usize,
}

impl Key {
    fn of(view: &View<'_>, ctx: &CurationContext<'_>) -> Self {
        Key {
            history: view.history().id(),
            preserve_system: ctx.preserve_system,
            preserve_task: ctx.preserve_task,
            shorten_system: ctx.shorten_system,
            preserve_last_n: ctx.preserve_last_n,
        }
    }
}

/// How far a walk over one history's views has come.
#[derive(Debug)]
struct Walk {
    key: Key,
    /// The view walked, as far as it was walked: a later call's view must start with it.
    input: Frozen,
    /// The last compaction's view, and its tokens.
    kept: Frozen,
    kept_tokens: u64,
    /// Where the messages sent after `kept` start (an index of the input view).
    base: usize,
    /// Tokens of the input's messages from `base` to the end of `input`.
    appended: u64,
    /// The last call point after `base`.
    point: Option<Point>,
    /// A compaction at the end of the last call's view, not yet at a call point: used when
    /// the next message makes it one.
    pending: Option<(usize, Step)>,
    /// The end of the last call's view, when that view fit without a compaction there, and
    /// that view as sent when calls were still open at its end.
    fits: Option<(usize, Option<Frozen>)>,
}

/// A call point a walk passed without compacting.
#[derive(Clone, Copy, Debug)]
struct Point {
    /// Its index in the input view.
    at: usize,
    /// The walk's `appended` there.
    appended: u64,
    /// The last place after it where a call was still open (an index of the input view),
    /// and the walk's `appended` there.
    open: Option<(usize, u64)>,
}

impl Walk {
    fn apply(&mut self, step: Step) {
        (self.kept, self.kept_tokens, self.base, self.appended) =
            (step.kept, step.kept_tokens, step.base, step.appended);
        self.point = None;
    }

    fn new(key: Key) -> Self {
        Walk {
            key,
            input: Frozen::default(),
            kept: Frozen::default(),
            kept_tokens: 0,
            base: 0,
            appended: 0,
            point: None,
            pending: None,
            fits: None,
        }
    }

    /// Notes index `at` of `view` (a message there, or the end) as a place where a call is
    /// still open, when it is one after the walk's last call point.
    fn note_open_end(&mut self, view: &View<'_>, at: usize) {
        if let Some(point) = &mut self.point
            && at > point.at
            && open_before(view, at)
        {
            point.open = Some((at, self.appended));
        }
    }
}

/// Whether a provider call can be made before the message at view index `at`: no call is
/// still open before it (the second message of parallel calls split over two assistant
/// messages is part of the same reply, and of the same unit). A view asked for there, then
/// followed by a system or user message rather than a reply, keeps its compaction.
fn call_point(view: &View<'_>, at: usize) -> bool {
    !open_before(view, at)
}

/// Whether a call is still open before view index `at` (a message there, or the end).
fn open_before(view: &View<'_>, at: usize) -> bool {
    at.checked_sub(1)
        .and_then(|before| view.pos(before))
        .is_some_and(|pos| view.history().open_after(pos))
}

impl HistoryManager for StableBudget {
    fn curate<'h>(&self, view: View<'h>, ctx: &CurationContext<'_>) -> Result<View<'h>> {
        let counter = self.compactor.budget().counter();
        let key = Key::of(&view, ctx);
        let mut slot = self.walk.lock().unwrap_or_else(PoisonError::into_inner);
        let mut walk = match slot.take() {
            Some(walk) if walk.key == key && view.starts_with(&walk.input) => walk,
            _ => Walk::new(key),
        };
        let end = view.len();
        // The same view as the last call's (asked again) has nothing to walk.
        if walk.input.len() < end {
            let tally = view.tally(counter);
            for j in walk.input.len()..view.len() {
                if j > walk.base && call_point(&view, j) {
                    let pending = walk.pending.take().filter(|(at, _)| *at == j);
                    let step = match pending {
                        Some((_, step)) => Some(step),
                        // A call point the budget could not serve was refused then; the walk
                        // goes on as that call left it.
                        None => self.settle(&mut walk, &view, j, ctx).ok().flatten(),
                    };
                    if let Some(step) = step {
                        walk.apply(step);
                    }
                    if j > walk.base {
                        walk.point = Some(Point { at: j, appended: walk.appended, open: None });
                    }
                } else {
                    walk.note_open_end(&view, j);
                }
                walk.appended += tally.message(j);
            }
            drop(tally);
            walk.note_open_end(&view, end);
            walk.input = view.freeze();
        }
        walk.pending = walk.pending.take().filter(|(at, _)| *at == end);
        let step = match walk.pending.take() {
            Some((_, step)) => Some(step),
            // The same view asked again, which fit as it was sent.
            None if walk.fits.as_ref().is_some_and(|(at, _)| *at == end) => None,
            None => match self.settle(&mut walk, &view, end, ctx) {
                Ok(step) => step,
                Err(error) => {
                    // The walk so far stays good for the next call.
                    *slot = Some(walk);
                    return Err(error);
                }
            },
        };
        let out = match step {
            Some(step) => {
                let out = view.kept_then(&step.kept, step.base);
                walk.pending = Some((end, step));
                out
            }
            None => match walk.fits.take() {
                Some((at, Some(sent))) if at == end => {
                    let out = view.kept_then(&sent, end);
                    walk.fits = Some((end, Some(sent)));
                    out
                }
                _ => {
                    let out = if walk.base == 0 && walk.kept.len() == 0 {
                        view
                    } else {
                        view.kept_then(&walk.kept, walk.base)
                    };
                    // Calls open at the end: the view as sent (without them) is kept for
                    // the same call again, so that it is not repaired anew each time.
                    if open_before(&out, out.len()) {
                        let out = out.repaired();
                        walk.fits = Some((end, Some(out.freeze())));
                        out
                    } else {
                        walk.fits = Some((end, None));
                        out
                    }
                }
            },
        };
        *slot = Some(walk);
        Ok(out)
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("stable_budget")
    }
}
