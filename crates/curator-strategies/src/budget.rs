//! `TokenBudget`: the pinned head within its share, then the newest units that fit.

use std::borrow::Cow;
use std::sync::Arc;

use curator_model::{Message, Role};

use crate::shorten::{Marks, Memo, shorten_message, shorten_unit, unit_minimum};
use crate::tokens::share;
use crate::trim::OMITTED_NOTE;
use crate::trim::{Take, keep_fitting, keep_newest};
use crate::{
    CharEstimate, CurationContext, Error, Head, HistoryManager, Result, Shortfall, Tally,
    TokenCounter, Unit, View,
};

/// Tokens a shortened task keeps at least, whatever the head's share, so that it stays
/// recognisable (its beginning, its end and the note between).
pub const MIN_TASK_TOKENS: u64 = 64;

/// Keeps the pinned head (the system messages and the task) within its share of the budget,
/// then the newest units whose tokens fit what is left, under its counter.
///
/// # Rules
///
/// Let `available = max_tokens - reserve - reply priming`. `reserve` holds back what the
/// provider counts against the same window but is not in the messages: the tool schemas and
/// the reply.
///
/// 1. **The head takes at most its share** (`head_share`, ½ by default) of `available`.
///    A task over what the share leaves it is shortened, keeping its beginning and its end
///    with a note of how many tokens were cut, but never below [`MIN_TASK_TOKENS`]. System
///    messages are shortened the same way only when they alone pass the share.
/// 2. **The newest units get the rest.** Units (an assistant message with the results of its
///    calls, or any other message) are kept newest first while they fit; the kept units are
///    contiguous. When the newest unit does not fit, it is shortened rather than dropped:
///    its tool results, its text, and the string values inside its tool-call arguments
///    (which stay valid JSON) share the room.
/// 3. **Room the units leave goes back to the head**: the task, then the system messages,
///    regain what they were cut, up to their full size.
///
/// The budget is a hard bound ([`CurationContext::preserve_last_n`] does not override it),
/// and monotonic: a larger budget never keeps less of the newest history. Token counts come
/// from the [`History`](crate::History)'s cache, so over an already counted history a call
/// costs O(kept).
///
/// # Errors
///
/// [`Error::BudgetTooSmall`] when not even the head, shortened as far as it goes, fits, or
/// when nothing is pinned and not even the newest unit fits shortened, so that the view
/// would be empty.
///
/// # Examples
///
/// A 1,000-token task with a 300-token budget: the head may take 150 tokens, so the task is
/// cut to its beginning and end, and the newest messages still go out.
///
/// ```
/// use curator::model::Message;
/// use curator::strategies::{CharEstimate, CurationContext, HistoryManagerExt, TokenBudget, TokenCounter};
///
/// let counter = CharEstimate::default();
/// let messages = vec![
///     Message::system("You are terse."),
///     Message::user(format!("TASK START {} TASK END", "details ".repeat(500))),
///     Message::assistant("x".repeat(400)),
///     Message::user("and?"),
///     Message::assistant("done"),
/// ];
/// let budget = TokenBudget::new(300).with_counter(counter.clone());
/// let view = budget.curate_messages(&messages, &CurationContext::default())?;
/// assert!(view[1].text().starts_with("TASK START") && view[1].text().ends_with("TASK END"));
/// assert_eq!(view.last(), messages.last());
/// let tokens: u64 = view.iter().map(|m| counter.count_message(m)).sum::<u64>() + counter.reply_priming();
/// assert!(tokens <= 300);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct TokenBudget {
    max_tokens: u64,
    reserve: u64,
    head_share: f64,
    counter: Arc<dyn TokenCounter>,
    marks: Marks,
    /// Whether messages are kept whole or left out, never shortened.
    whole: bool,
}

impl TokenBudget {
    /// A budget of `max_tokens`, no reserve, half of it for the head at most, counted with
    /// [`CharEstimate`].
    pub fn new(max_tokens: u64) -> Self {
        Self {
            max_tokens,
            reserve: 0,
            head_share: 0.5,
            counter: Arc::new(CharEstimate::default()),
            marks: Marks::Count,
            whole: false,
        }
    }

    /// Keeps messages whole: no text is cut. The head takes what it needs whatever its
    /// share, older units that do not fit whole are left out, and when the head and the
    /// newest unit do not fit whole, the call fails with [`Error::BudgetTooSmall`] (they are
    /// never left out).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Message;
    /// use curator::strategies::{CurationContext, HistoryManagerExt, TokenBudget};
    ///
    /// let messages = vec![
    ///     Message::user(format!("Summarize: {}", "long text ".repeat(100))),
    ///     Message::assistant("Which part?"),
    ///     Message::user("All of it."),
    /// ];
    /// let whole = TokenBudget::new(300).keeping_messages_whole();
    /// let view = whole.curate_messages(&messages, &CurationContext::default())?;
    /// assert_eq!(view, messages);
    /// // A budget the task does not fit whole in is refused, not met by cutting the task.
    /// assert!(TokenBudget::new(100).keeping_messages_whole().curate_messages(&messages, &CurationContext::default()).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn keeping_messages_whole(mut self) -> Self {
        self.whole = true;
        self
    }

    /// Whether it keeps messages whole (see
    /// [`keeping_messages_whole`](Self::keeping_messages_whole)).
    pub fn keeps_messages_whole(&self) -> bool {
        self.whole
    }

    /// Holds back `reserve` tokens for tool schemas and the reply.
    #[must_use]
    pub fn with_reserve(mut self, reserve: u64) -> Self {
        self.reserve = reserve;
        self
    }

    /// Lets the head (system messages and task) take at most `share` of the budget.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidOption`] for a share outside 0 to 1.
    pub fn with_head_share(mut self, share: f64) -> Result<Self> {
        if !(0.0..=1.0).contains(&share) {
            return Err(Error::InvalidOption {
                strategy: "token_budget",
                option: "head_share",
                reason: format!("is {share}, not between 0 and 1"),
            });
        }
        self.head_share = share;
        Ok(self)
    }

    /// Texts it shortens name the terms of the part cut (see [`Marks::Terms`]), for
    /// [`RelevanceBudget`](crate::RelevanceBudget).
    pub(crate) fn with_named_cuts(mut self) -> Self {
        self.marks = Marks::Terms;
        self
    }

    /// `with_head_share` for a share this crate knows to be between 0 and 1.
    pub(crate) fn with_known_head_share(mut self, share: f64) -> Self {
        debug_assert!((0.0..=1.0).contains(&share), "head share {share}");
        self.head_share = share;
        self
    }

    /// Counts with `counter`.
    #[must_use]
    pub fn with_counter(mut self, counter: impl TokenCounter + 'static) -> Self {
        self.counter = Arc::new(counter);
        self
    }

    /// Counts with a shared counter.
    #[must_use]
    #[deprecated(note = "use `with_counter`: an `Arc<dyn TokenCounter>` is a `TokenCounter`")]
    pub fn with_shared_counter(mut self, counter: Arc<dyn TokenCounter>) -> Self {
        self.counter = counter;
        self
    }

    /// The same budget with `available` tokens for messages, and a head share that keeps
    /// the head's limit in tokens what it is now (at most the whole of `available`), so
    /// that a smaller room never shortens the head more.
    pub(crate) fn with_available(&self, available: u64) -> TokenBudget {
        let now = self.available();
        #[expect(clippy::cast_precision_loss, reason = "token counts are far below 2^52")]
        let share = if available == 0 {
            1.0
        } else {
            (self.head_share * now as f64 / available as f64).min(1.0)
        };
        TokenBudget {
            max_tokens: available.saturating_add(self.reserve),
            reserve: self.reserve,
            head_share: share,
            counter: Arc::clone(&self.counter),
            marks: self.marks,
            whole: self.whole,
        }
    }

    /// Tokens available to messages: `max_tokens - reserve`.
    pub fn available(&self) -> u64 {
        self.max_tokens.saturating_sub(self.reserve)
    }

    /// The head's share of the budget.
    pub fn head_share(&self) -> f64 {
        self.head_share
    }

    /// The counter.
    pub fn counter(&self) -> &dyn TokenCounter {
        &*self.counter
    }

    fn share_of(&self, tokens: u64) -> u64 {
        share(self.head_share, tokens)
    }

    /// The pinned system messages and task with their full sizes (their floors, the least
    /// each can be shortened to, are set by [`set_floors`](TokenBudget::set_floors) when
    /// the head must give room).
    fn pinned(
        view: &View<'_>,
        head: &Head,
        tally: &Tally<'_, '_>,
    ) -> (Vec<Pinned>, Option<Pinned>) {
        let mut systems = Vec::new();
        let mut task = None;
        for &index in head.pinned() {
            let full = tally.message(index);
            let pinned = Pinned { index, full, floor: full };
            if view.structure(index).role() == Role::System {
                systems.push(pinned);
            } else {
                task = Some(pinned);
            }
        }
        (systems, task)
    }

    /// Sets the least each pinned message can be shortened to: its notes and images, a task
    /// at least [`MIN_TASK_TOKENS`]; system messages only when `shorten_system`, else their
    /// full size. Floors count every string of a message, so they are computed only when
    /// the head must give room.
    fn set_floors(
        view: &View<'_>,
        counter: &dyn TokenCounter,
        systems: &mut [Pinned],
        task: Option<&mut Pinned>,
        shorten_system: bool,
    ) {
        let shortest = |index: usize, full: u64| {
            let message = view.message(index);
            unit_minimum(&[&message], counter).min(full)
        };
        if shorten_system {
            for pinned in systems.iter_mut() {
                pinned.floor = shortest(pinned.index, pinned.full);
            }
        }
        if let Some(task) = task {
            task.floor = shortest(task.index, task.full).max(task.full.min(MIN_TASK_TOKENS));
        }
    }

    /// The pinned messages that did not get their full size, shortened to their rooms, with
    /// their history positions. `None` when one of them cannot be (pieces whose counts do
    /// not add up under the counter).
    fn shorten_head(
        &self,
        view: &View<'_>,
        counter: &dyn TokenCounter,
        rooms: impl Iterator<Item = (Pinned, u64)>,
    ) -> Option<Vec<(Option<usize>, Message)>> {
        let mut shortened = Vec::new();
        for (pinned, room) in rooms.filter(|(p, room)| *room < p.full) {
            let message = shorten_message(&view.message(pinned.index), room, counter, self.marks)?;
            shortened.push((view.pos(pinned.index), message));
        }
        Some(shortened)
    }

    /// The present and the newest older units that fit `body_room` (rule 2): what
    /// [`keep_newest`] returns, the tokens kept, and whether the present's pieces do not add
    /// up under the counter (so that it cannot be shortened to fit).
    fn keep_units<'h>(
        &self,
        view: &View<'h>,
        counter: &dyn TokenCounter,
        units: &Units<'_>,
        tally: &Tally<'_, 'h>,
    ) -> (Option<View<'h>>, u64, bool) {
        let Units { head, present, members, present_full, body_room } = *units;
        // The whole history with its present fitting whole: the cut is bisected.
        if let Some(present) = present.filter(|_| present_full <= body_room)
            && let Some((kept, older)) =
                keep_fitting(view, head, present, body_room - present_full, tally)
        {
            return (kept, present_full + older, false);
        }
        let mut used = 0;
        let mut first = true;
        let mut unfit = false;
        let kept = keep_newest(view, head, present, false, |unit| {
            if std::mem::replace(&mut first, false) {
                // The present: whole if it fits, else shortened (its tool results, its text
                // and the string values of its arguments share the room).
                if present_full <= body_room {
                    used = present_full;
                    return Take::Keep;
                }
                let messages: Vec<_> = members.iter().map(|&i| view.message(i)).collect();
                let refs: Vec<&Message> = messages.iter().map(|m| &**m).collect();
                let Some(shortened) = shorten_unit(&refs, body_room, counter, self.marks) else {
                    unfit = true;
                    return Take::Stop;
                };
                let mut replacements = Vec::new();
                for (&index, (message, short)) in members.iter().zip(refs.iter().zip(shortened)) {
                    used += counter.count_message(short.as_ref().unwrap_or(message));
                    if let Some(short) = short {
                        replacements.push((index, short));
                    }
                }
                return Take::KeepAs(replacements);
            }
            let tokens = tally.range(unit.range());
            if used + tokens <= body_room {
                used += tokens;
                Take::Keep
            } else {
                Take::Stop
            }
        });
        (kept, used, unfit)
    }

    /// The error for a view that cannot hold what is never dropped.
    fn too_small(
        &self,
        systems: &[Pinned],
        task: Option<&Pinned>,
        note: u64,
        newest: u64,
    ) -> Error {
        Error::BudgetTooSmall(Box::new(Shortfall {
            max_tokens: self.max_tokens,
            reserve: self.reserve,
            tools: 0,
            system: systems.iter().map(|p| p.floor).sum(),
            task: task.map_or(0, |t| t.floor) + note,
            newest,
            priming: self.counter.reply_priming(),
        }))
    }
}

/// What the budget keeps its units by: the head, the present and its own (unpinned)
/// messages with their tokens, and the room the head leaves.
#[derive(Clone, Copy)]
struct Units<'a> {
    head: &'a Head,
    present: Option<Unit>,
    members: &'a [usize],
    present_full: u64,
    body_room: u64,
}

/// One pinned message, as the budget sees it: its view index, its full size and the least
/// it can be shortened to.
#[derive(Clone, Copy)]
struct Pinned {
    index: usize,
    full: u64,
    floor: u64,
}

/// The rooms the head gets before the units are chosen (rule 1): for each system message
/// and for the task, within `share` where their floors allow.
fn head_rooms(systems: &[Pinned], task: Option<&Pinned>, share: u64) -> (Vec<u64>, u64) {
    let system_full: u64 = systems.iter().map(|p| p.full).sum();
    let task_full = task.map_or(0, |t| t.full);
    if system_full + task_full <= share {
        return (systems.iter().map(|p| p.full).collect(), task_full);
    }
    let task_floor = task.map_or(0, |t| t.floor);
    let system_floors: u64 = systems.iter().map(|p| p.floor).sum();
    let system_room = system_full.min(share.saturating_sub(task_floor).max(system_floors));
    let task_room = task_full.min(share.saturating_sub(system_room).max(task_floor));
    (share_out(systems, system_room), task_room)
}

/// Shares `room` among pinned messages: each gets its floor, then the rest is shared fairly
/// (water filling) up to each one's full size.
fn share_out(pinned: &[Pinned], room: u64) -> Vec<u64> {
    let floors: u64 = pinned.iter().map(|p| p.floor).sum();
    let mut left = room.saturating_sub(floors);
    let mut order: Vec<usize> = (0..pinned.len()).collect();
    order.sort_by_key(|&k| pinned[k].full - pinned[k].floor);
    let mut rooms: Vec<u64> = pinned.iter().map(|p| p.floor).collect();
    for (n, &k) in order.iter().enumerate() {
        let share = left / (order.len() - n) as u64;
        let more = (pinned[k].full - pinned[k].floor).min(share);
        rooms[k] += more;
        left -= more;
    }
    rooms
}

impl HistoryManager for TokenBudget {
    fn curate<'h>(&self, view: View<'h>, ctx: &CurationContext<'_>) -> Result<View<'h>> {
        let counter = &*self.counter;
        // Shortening counts a long text whole several times (the message, its strings);
        // the memo reads it once.
        let memo = Memo::new(counter);
        let available = self.available().saturating_sub(counter.reply_priming());
        let head = view.head(ctx);
        let tally = view.tally(counter);
        let present = view.present(&head);
        // The present's own messages (pinned ones inside it count with the head).
        let members: Vec<usize> = present
            .map(|u| u.range().filter(|&i| !head.is_pinned(i)).collect())
            .unwrap_or_default();
        let present_full: u64 = members.iter().map(|&i| tally.message(i)).sum();
        let present_minimum = || {
            if self.whole {
                return present_full;
            }
            let messages: Vec<_> = members.iter().map(|&i| view.message(i)).collect();
            let refs: Vec<&Message> = messages.iter().map(|m| &**m).collect();
            unit_minimum(&refs, &memo).min(present_full)
        };
        let (mut systems, mut task) = Self::pinned(&view, &head, &tally);
        // A view that would start with an assistant message begins with a note, when no task
        // is pinned to start it: only when the input itself starts otherwise (one that
        // starts with an assistant message is kept so), and has something after its system
        // messages.
        let note = match view.leads_with() {
            Some(Role::Assistant) | None => 0,
            Some(_) if task.is_some() => 0,
            Some(_) => counter.count_message(&Message::user(OMITTED_NOTE)),
        };
        let share = self.share_of(available);
        let head_full: u64 = systems.iter().chain(&task).map(|p| p.full).sum();
        let (mut system_rooms, mut task_room) = if self.whole {
            // Floors stay the full sizes: the head takes what it needs.
            (systems.iter().map(|p| p.full).collect(), task.map_or(0, |t| t.full))
        } else {
            if head_full > share || head_full + note + present_full > available {
                Self::set_floors(&view, &memo, &mut systems, task.as_mut(), ctx.shorten_system);
            }
            head_rooms(&systems, task.as_ref(), share)
        };
        // The present goes out whatever else is dropped, shortened if it must be (rule 2):
        // when even shortened it does not fit beside the head's share, the head gives room
        // down to its floors (the task first; system messages only when they may be
        // shortened, their floor is their size otherwise).
        let head_room = system_rooms.iter().sum::<u64>() + task_room;
        let room_beside = available.saturating_sub(head_room + note);
        let present_min = if present_full > room_beside { present_minimum() } else { 0 };
        let mut want = (head_room + note + present_min).saturating_sub(available);
        let task_floor = task.map_or(0, |t| t.floor);
        let floors = std::iter::once(task_floor).chain(systems.iter().map(|p| p.floor));
        for (room, floor) in std::iter::once(&mut task_room).chain(&mut system_rooms).zip(floors) {
            let give = room.saturating_sub(floor).min(want);
            *room -= give;
            want -= give;
        }
        if want > 0 {
            let newest = if present_min > 0 { present_min } else { present_minimum() };
            return Err(self.too_small(&systems, task.as_ref(), note, newest));
        }
        let head_room = system_rooms.iter().sum::<u64>() + task_room;
        let body_room = available - head_room - note;
        let units = Units { head: &head, present, members: &members, present_full, body_room };
        let (kept, used, unfit) = self.keep_units(&view, &memo, &units, &tally);
        drop(tally);
        if unfit {
            // The pieces of the present do not add up under this counter: say so rather
            // than send less.
            let newest = present_min.max(body_room + 1);
            return Err(self.too_small(&systems, task.as_ref(), note, newest));
        }
        // Room the units left goes back to the head (rule 3): the task first, then the
        // system messages.
        let mut unused = body_room - used.min(body_room);
        let rooms =
            task.iter().copied().zip([task_room]).chain(systems.iter().copied().zip(system_rooms));
        let rooms = rooms.map(|(pinned, room)| {
            let more = (pinned.full - room).min(unused);
            unused -= more;
            (pinned, room + more)
        });
        let Some(shortened) = self.shorten_head(&view, &memo, rooms) else {
            return Err(self.too_small(&systems, task.as_ref(), note, present_min));
        };
        // When every unit fits, the view itself is kept (no copy of it is made).
        let kept = kept.unwrap_or_else(|| view.repaired());
        Ok(replace_head(kept, shortened))
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("token_budget")
    }
}

/// `kept` with the pinned messages at `shortened` (history positions) replaced.
fn replace_head(kept: View<'_>, shortened: Vec<(Option<usize>, Message)>) -> View<'_> {
    if shortened.is_empty() {
        return kept;
    }
    let mut left = shortened;
    kept.replace(|entry| {
        let at = left.iter().position(|(pos, _)| pos.is_some() && *pos == entry.pos)?;
        Some(left.swap_remove(at).1)
    })
}
