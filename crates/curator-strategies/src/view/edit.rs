//! Building the next view: keep ranges, replace messages, insert new ones.

use std::ops::Range;
use std::sync::Arc;

use curator_model::{Content, Message};

use super::entry::ViewEntry;
use super::items::{Item, Items};
use super::paired::same_structure;
use super::selection::View;
use crate::coherence;

/// Builds the next view from a view: the messages to keep, in order, some replaced, and new
/// messages inserted between them; see [`View::edit`].
///
/// Indices are the source view's. Kept indices must rise: an index at or before one already
/// kept is skipped, so an edit can drop and replace messages but never reorder or repeat
/// them. [`finish`](Edit::finish) restores coherence (see [`coherence`](crate::coherence)),
/// so a strategy built on edits cannot split a tool call from its result.
#[derive(Debug)]
pub struct Edit<'v, 'h> {
    view: &'v View<'h>,
    items: Items,
    /// One past the highest index kept so far.
    next: usize,
}

impl<'h> View<'h> {
    /// Starts building the next view from this one; nothing is kept until asked.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Message;
    /// use curator::strategies::{History, View};
    ///
    /// let history = History::from(vec![Message::system("s"), Message::user("task"), Message::assistant("old"), Message::assistant("new")]);
    /// let view = View::full(&history);
    /// let mut edit = view.edit();
    /// edit.keep(0..2).insert(Message::assistant("[summary of 1 message]")).keep(3..4);
    /// let next = edit.finish();
    /// let texts: Vec<String> = next.iter().map(|e| e.message.text().into_owned()).collect();
    /// assert_eq!(texts, ["s", "task", "[summary of 1 message]", "new"]);
    /// assert_eq!(next.pos(2), None);
    /// ```
    pub fn edit(&self) -> Edit<'_, 'h> {
        Edit { view: self, items: Items::with_capacity(4), next: 0 }
    }

    /// Keeps the messages for which `keep` returns true, then restores coherence (see
    /// [`coherence`](crate::coherence)). This is the simple way for a custom strategy to drop
    /// messages; it costs O(view).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, Role, ToolCall};
    /// use curator::strategies::{History, View};
    ///
    /// let messages = vec![
    ///     Message::user("go"),
    ///     Message::assistant_with_calls(None, vec![ToolCall::new("1", "ls", "{}")]),
    ///     Message::tool_result("1", "x"),
    /// ];
    /// let history = History::from(&messages);
    /// // Dropping the assistant message also drops the result that answers it.
    /// let view = View::full(&history).retain(|e| e.message.role() != Role::Assistant);
    /// assert_eq!(view.len(), 1);
    /// ```
    #[must_use]
    pub fn retain(self, mut keep: impl FnMut(&ViewEntry<'h>) -> bool) -> Self {
        let mut edit = self.edit();
        for (index, entry) in self.iter().enumerate() {
            if keep(&entry) {
                edit.keep(index..index + 1);
            }
        }
        edit.finish()
    }

    /// Replaces messages eagerly: `replace` returns a new message for those it changes. The
    /// replacement must keep the message's structure (role, tool-call ids, answered id).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Message;
    /// use curator::strategies::{History, View};
    ///
    /// let history = History::from(vec![Message::user("hi"), Message::assistant("hello")]);
    /// let view = View::full(&history).replace(|e| (e.pos == Some(1)).then(|| Message::assistant("hey")));
    /// assert_eq!(view.message(1).text(), "hey");
    /// ```
    #[must_use]
    pub fn replace(self, mut replace: impl FnMut(&ViewEntry<'h>) -> Option<Message>) -> Self {
        let mut edit = self.edit();
        // A coherent view stays coherent when every replacement keeps its structure.
        let mut same = self.coherent;
        for (index, entry) in self.iter().enumerate() {
            match replace(&entry) {
                Some(message) => {
                    same = same && same_structure(self.structure(index), &message);
                    edit.replace(index, message)
                }
                None => edit.keep(index..index + 1),
            };
        }
        let mut next = edit.build();
        next.coherent = same;
        next
    }

    /// Restores coherence: see [`coherence`](crate::coherence). Costs O(view); returns the
    /// view itself when nothing breaks the rules.
    #[must_use]
    pub fn repaired(self) -> Self {
        if self.coherent {
            return self;
        }
        // Only what follows the last point where the history's pairing shows the view
        // coherent and settled needs planning: an agent's newest calls, as a rule.
        let start = self.repair_from().unwrap_or(0);
        self.repaired_after(start)
    }

    /// Restores coherence in a view known to follow the rules before index `start`, with no
    /// call open there: only what follows is planned.
    pub(crate) fn repaired_after(mut self, start: usize) -> Self {
        if self.coherent {
            return self;
        }
        self.coherent = true;
        if start >= self.len() {
            return self;
        }
        let repairs = if start + 1 == self.len() {
            coherence::plan_alone(self.structure(start))
        } else {
            coherence::plan(self.structures_from(start), |i| self.structure(start + i))
        };
        if repairs.is_empty() {
            return self;
        }
        // The part before `start` stays as it is: only the tail is rebuilt, and the view's
        // own items are cut where it begins (no copy of what comes before, which matters
        // for a view of many items, such as one with many replaced messages).
        let mut edit = self.edit();
        edit.next = start;
        let mut from = start;
        for (index, calls) in repairs.iter() {
            let index = start + index;
            edit.keep(from..index);
            from = index + 1;
            if let Some(answered) = calls {
                let message = self.message(index);
                // Copied only when something of it stays: its text or an answered call.
                if answered.iter().any(|&a| a) || !message.content().is_none_or(Content::is_empty) {
                    let mut flags = answered.iter();
                    let kept =
                        message.copy_with_tool_calls(|_| flags.next().copied().unwrap_or(false));
                    edit.replace(index, kept);
                }
            }
        }
        edit.keep(from..self.len());
        let tail = edit.items;
        self.items.truncate(start);
        self.items.append(tail);
        self
    }
}

impl<'h> Edit<'_, 'h> {
    /// Keeps the messages at `range` (source view indices) as the source view shows them.
    pub fn keep(&mut self, range: Range<usize>) -> &mut Self {
        let start = range.start.max(self.next);
        let end = range.end.min(self.view.len());
        if start < end {
            self.items.extend_from(&self.view.items, start..end);
            self.next = end;
        }
        self
    }

    /// Keeps the message at `index` replaced by `message`, which the view's maps have
    /// already seen (build it from [`View::message`]). It should keep the structure (role,
    /// tool-call ids, answered id); calls it drops take their results with them when the
    /// edit finishes.
    pub fn replace(&mut self, index: usize, message: Message) -> &mut Self {
        if index >= self.next && index < self.view.len() {
            let pos = self.view.pos(index).map(|p| p as u32);
            let applied = self.view.maps.len();
            self.items.push(Item::Owned { pos, message: Arc::new(message), applied });
            self.next = index + 1;
        }
        self
    }

    /// Inserts a message that is not in the history (a summary, a note) after what was kept
    /// so far. The view's maps apply to it, as to every other message.
    pub fn insert(&mut self, message: Message) -> &mut Self {
        let applied = self.view.maps.len();
        self.items.push(Item::Owned { pos: None, message: Arc::new(message), applied });
        self
    }

    /// Number of messages kept or inserted so far.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether nothing was kept or inserted yet.
    pub fn is_empty(&self) -> bool {
        self.items.len() == 0
    }

    /// The next view, with coherence restored.
    pub fn finish(self) -> View<'h> {
        self.build().repaired()
    }

    /// The next view as built, for edits that keep coherence by construction.
    pub(crate) fn build(self) -> View<'h> {
        View {
            history: self.view.history,
            items: self.items,
            maps: self.view.maps.clone(),
            coherent: false,
        }
    }
}
