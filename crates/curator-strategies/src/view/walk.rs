//! The walks trimming strategies make over a view: its pinned head and its units.

use curator_model::{Message, Role};

use super::items::Slot;
use super::selection::View;
use super::shape::{Head, Unit, pending_only};
use crate::CurationContext;

impl View<'_> {
    /// The pinned head of the view: every system message (when
    /// [`preserve_system`](CurationContext::preserve_system)), wherever it stands, and the
    /// task, the first user message before any assistant message (when
    /// [`preserve_task`](CurationContext::preserve_task)).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Message;
    /// use curator::strategies::{CurationContext, History, View};
    ///
    /// let history = History::from(vec![Message::system("s"), Message::user("task"), Message::assistant("a")]);
    /// let view = View::full(&history);
    /// let head = view.head(&CurationContext::default());
    /// assert_eq!((head.pinned(), head.len()), (&[0, 1][..], 2));
    /// let head = view.head(&CurationContext::default().with_preserve_system(false));
    /// assert_eq!((head.pinned(), head.len()), (&[1][..], 0));
    /// // A system message later in the conversation is pinned too.
    /// let history = History::from(vec![Message::user("task"), Message::assistant("a"), Message::system("new rule")]);
    /// assert_eq!(View::full(&history).head(&CurationContext::default()).pinned(), [0, 2]);
    /// ```
    pub fn head(&self, ctx: &CurationContext<'_>) -> Head {
        let whole = self.is_whole_history();
        let systems = self.history.system_positions();
        let mut pinned = Vec::with_capacity(systems.len() + 1);
        if ctx.preserve_system {
            // From the history's index of system messages: O(systems × items), not O(view).
            if whole {
                pinned.extend(systems.iter().map(|&p| p as usize));
            } else {
                pinned.extend(systems.iter().filter_map(|&p| self.items.index_of_pos(p)));
            }
        }
        if ctx.preserve_task {
            let structures: &mut dyn Iterator<Item = &Message> =
                if whole { &mut self.history.messages().iter() } else { &mut self.structures() };
            for (index, message) in structures.enumerate() {
                match message.role() {
                    Role::User => {
                        pinned.push(index);
                        break;
                    }
                    Role::Assistant => break,
                    _ => {}
                }
            }
        }
        pinned.sort_unstable();
        pinned.dedup();
        let contiguous = pinned.iter().enumerate().take_while(|(k, i)| k == *i).count();
        Head { pinned, contiguous }
    }

    /// The coherence units of the view from index `from` on, newest first. A unit is an
    /// assistant message with the tool results that answer its calls (and any assistant
    /// messages joined with it, see [`pairing`](curator_model::pairing)), or any other single
    /// message. Walks back from the tail, so taking k units costs O(k), not O(view).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, ToolCall};
    /// use curator::strategies::{History, View};
    ///
    /// let history = History::from(vec![
    ///     Message::user("go"),
    ///     Message::assistant_with_calls(None, vec![ToolCall::new("1", "ls", "{}")]),
    ///     Message::tool_result("1", "x"),
    /// ]);
    /// let view = View::full(&history);
    /// let units: Vec<_> = view.units_rev(0).map(|u| u.range()).collect();
    /// assert_eq!(units, [1..3, 0..1]);
    /// ```
    pub fn units_rev(&self, from: usize) -> UnitsRev<'_, '_> {
        UnitsRev { view: self, floor: from, next: self.len(), slot: None }
    }

    /// The unit that holds view index `at`: the one [`units_rev`](Self::units_rev)`(0)`
    /// yields that contains it, from the same walk, so the two never disagree. `None` past
    /// the end of the view. Costs the messages between `at` and the end of its unit's
    /// calls, not O(view): a unit can only reach past a message after which calls are
    /// still open.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, ToolCall};
    /// use curator::strategies::{History, View};
    ///
    /// // Two consecutive assistant messages join: their parallel calls form one unit.
    /// let history = History::from(vec![
    ///     Message::user("go"),
    ///     Message::assistant_with_calls(None, vec![ToolCall::new("a", "ls", "{}")]),
    ///     Message::assistant_with_calls(None, vec![ToolCall::new("b", "cat", "{}")]),
    ///     Message::tool_result("a", "x"),
    ///     Message::tool_result("b", "y"),
    /// ]);
    /// let view = View::full(&history);
    /// assert_eq!(view.unit_at(4).map(|u| u.range()), Some(1..5));
    /// assert_eq!(view.unit_at(2).map(|u| u.range()), Some(1..5));
    /// assert_eq!(view.unit_at(0).map(|u| u.range()), Some(0..1));
    /// assert_eq!(view.unit_at(5), None);
    /// ```
    pub fn unit_at(&self, at: usize) -> Option<Unit> {
        if at >= self.len() {
            return None;
        }
        // The walk from the tail ends a unit after `end` when no later message can reach
        // back over it: when it or the next message stands outside the history (the walk
        // never joins across those), or when no call is open after it (a later tool message
        // answers a later call, or none). The walk from there is the walk from the tail.
        let mut end = at;
        while end + 1 < self.len() {
            match (self.pos(end), self.pos(end + 1)) {
                (Some(pos), Some(_)) if self.history.open_after(pos) => end += 1,
                _ => break,
            }
        }
        self.units_rev_to(0, end + 1).find(|unit| unit.start <= at)
    }

    /// The units from index `from` up to (not including) index `to`, newest first.
    pub(crate) fn units_rev_to(&self, from: usize, to: usize) -> UnitsRev<'_, '_> {
        UnitsRev { view: self, floor: from, next: to.min(self.len()), slot: None }
    }

    /// The present: what curation never drops, shortening it if it must. It is the newest
    /// unit after the pinned `head` (an assistant message with all its results, or any
    /// other message), not counting an assistant message of nothing but calls still pending
    /// at the end (coherence removes it: a provider refuses unanswered calls). When that unit
    /// is a user message that directly follows tool results (as when an Anthropic user turn
    /// holds results and then text), the unit of those results belongs to the present too:
    /// the message refers to them. Pinned messages inside the range (a system message
    /// between the results and the user message) stay pinned: a strategy counts them with
    /// the head. A tool result that answers no call is no unit of the present and does not
    /// part a user message from the results before it: coherence removes it, so the present
    /// is the one the history without it has. `None` when the view holds nothing after the
    /// head.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, ToolCall};
    /// use curator::strategies::{CurationContext, History, View};
    ///
    /// let history = History::from(vec![
    ///     Message::user("Read the log."),
    ///     Message::assistant_with_calls(None, vec![ToolCall::new("1", "read", "{}")]),
    ///     Message::tool_result("1", "ERROR disk full"),
    ///     Message::user("What is the error?"),
    /// ]);
    /// let view = View::full(&history);
    /// let head = view.head(&CurationContext::default());
    /// assert_eq!(view.present(&head).map(|u| u.range()), Some(1..4));
    /// ```
    pub fn present(&self, head: &Head) -> Option<Unit> {
        let pinned_alone = |u: &Unit| u.len() == 1 && head.is_pinned(u.start);
        let orphan = |index: usize| {
            self.structure(index).role() == Role::Tool
                && self.pos(index).is_some_and(|pos| self.history().unit_head(pos).is_none())
        };
        let orphan_alone = |u: &Unit| u.len() == 1 && orphan(u.start);
        let mut units = self.units_rev(head.len()).filter(|u| !pinned_alone(u) && !orphan_alone(u));
        let mut newest = units.next()?;
        if newest.len() == 1
            && newest.start + 1 == self.len()
            && pending_only(self.structure(newest.start))
        {
            newest = units.next()?;
        }
        if newest.len() == 1 && self.structure(newest.start).role() == Role::User {
            // The results it follows, with only pinned messages (or results answering no
            // call) between.
            let mut before = newest.start;
            while before > head.len() && (head.is_pinned(before - 1) || orphan(before - 1)) {
                before -= 1;
            }
            if before > head.len()
                && self.structure(before - 1).role() == Role::Tool
                && let Some(results) = units.next().filter(|u| u.end == before)
            {
                return Some(Unit { start: results.start, end: newest.end });
            }
        }
        Some(newest)
    }
}

/// The iterator of [`View::units_rev`].
#[derive(Debug)]
pub struct UnitsRev<'v, 'h> {
    view: &'v View<'h>,
    /// The first index units may reach.
    floor: usize,
    /// One past the newest index not yet yielded.
    next: usize,
    /// Where index `next - 1` is held, once the walk has found it: the walk steps back
    /// slot by slot instead of locating every index.
    slot: Option<Slot>,
}

impl Iterator for UnitsRev<'_, '_> {
    type Item = Unit;

    fn next(&mut self) -> Option<Unit> {
        if self.next <= self.floor {
            return None;
        }
        let view = self.view;
        let items = &view.items;
        let last = self.next - 1;
        let mut slot = match self.slot {
            Some(slot) => slot,
            None => items.locate(last)?,
        };
        let mut first = last;
        if let Some(pos) = view.slot_pos(slot) {
            // A tool message's unit reaches back to the assistant message that called it.
            // The history knows it by position (every other message, and a tool message
            // that answers nothing, heads its own), and a message a view shows at a
            // position keeps that message's structure, so no message is read.
            let history = view.history();
            let head_of = |p: usize| history.unit_head(p).unwrap_or(p);
            let mut head = head_of(pos);
            // The position of index `first`.
            let mut at = pos;
            while first > self.floor {
                // Inside a run of history the message before is at the position before:
                // no slot to read.
                if slot.offset > 0 && items.is_run(slot.item) {
                    if at - 1 < head {
                        break;
                    }
                    at -= 1;
                    head = head.min(head_of(at));
                    first -= 1;
                    slot.offset -= 1;
                    continue;
                }
                let Some(before) = items.prev(slot) else { break };
                match view.slot_pos(before) {
                    Some(p) if p >= head && p < pos => {
                        head = head.min(head_of(p));
                        first -= 1;
                        slot = before;
                        at = p;
                    }
                    _ => break,
                }
            }
        }
        self.next = first;
        self.slot = items.prev(slot);
        Some(Unit { start: first, end: last + 1 })
    }
}
