//! The `View` type and what a strategy reads from it.

use std::fmt;
use std::sync::Arc;

use curator_model::{Message, Role};

use super::chains::ChainSlots;
use super::entry::{MessageRef, ViewEntry};
use super::items::{Item, Items, Slot};
use crate::history::Counts;
use crate::map::chain_key;
use crate::{History, MessageMap, TokenCounter};

/// What a [`HistoryManager`](crate::HistoryManager) builds and hands to the next one: an
/// ordered selection of a [`History`]'s messages, some of them replaced by transformed
/// copies, plus a chain of lazy [`MessageMap`]s.
///
/// Unchanged messages are never cloned: the view holds runs of positions and borrows the
/// history. Nothing is copied until [`to_messages`](View::to_messages) (or a read of a
/// transformed message) at the end of the pipeline.
///
/// A strategy reads a view by index (`0..len()`): [`structure`](View::structure) (role, tool
/// calls, answered id: what coherence needs, without running any map),
/// [`message`](View::message) (as shown), [`pos`](View::pos), [`head`](View::head),
/// [`units_rev`](View::units_rev) and token counts through [`tally`](View::tally). It builds
/// the next view with [`edit`](View::edit) (keep ranges, replace, insert), with
/// [`retain`](View::retain) and [`replace`](View::replace), or by adding a lazy map with
/// [`with_map`](View::with_map). How a view is held is private to this module.
///
/// # Examples
///
/// ```
/// use curator::model::Message;
/// use curator::strategies::{History, View};
///
/// let messages = vec![Message::system("s"), Message::user("u"), Message::assistant("a")];
/// let history = History::from(&messages);
/// let view = View::full(&history);
/// assert_eq!(view.len(), 3);
/// let positions: Vec<_> = view.iter().map(|e| e.pos).collect();
/// assert_eq!(positions, [Some(0), Some(1), Some(2)]);
/// assert_eq!(view.to_messages(), messages);
/// ```
#[derive(Clone)]
pub struct View<'h> {
    pub(super) history: &'h History<'h>,
    pub(super) items: Items,
    pub(super) maps: Vec<Arc<dyn MessageMap>>,
    /// Whether [`repaired`](View::repaired) made this view (maps never change structure), so
    /// that repairing it again, as the guard of every pipeline does, costs nothing.
    pub(super) coherent: bool,
}

impl<'h> View<'h> {
    /// Every message of `history`, unchanged.
    pub fn full(history: &'h History<'h>) -> Self {
        let mut items = Items::with_capacity(1);
        items.push(Item::Run { start: 0, end: history.len() as u32 });
        Self { history, items, maps: Vec::new(), coherent: false }
    }

    /// The history the view selects from.
    pub fn history(&self) -> &'h History<'h> {
        self.history
    }

    /// Number of messages in the view.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the view holds no message.
    pub fn is_empty(&self) -> bool {
        self.items.len() == 0
    }

    /// Adds a lazy transformation of every message, applied after the ones already added.
    #[must_use]
    pub fn with_map(mut self, map: Arc<dyn MessageMap>) -> Self {
        self.maps.push(map);
        self
    }

    /// The history position of the message at view index `index`, or `None` for a message
    /// that is not in the history (a summary) or an index past the end.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Message;
    /// use curator::strategies::{History, View};
    ///
    /// let history = History::from(vec![Message::user("a"), Message::user("b"), Message::user("c")]);
    /// let full = View::full(&history);
    /// let mut edit = full.edit();
    /// edit.keep(2..3);
    /// let view = edit.finish();
    /// assert_eq!(view.pos(0), Some(2));
    /// assert_eq!(view.pos(1), None);
    /// ```
    pub fn pos(&self, index: usize) -> Option<usize> {
        self.slot_pos(self.items.locate(index)?)
    }

    /// The view index of the message at history position `pos`, if the view shows it.
    /// O(items).
    /// Whether the view is the whole history, unedited and under no map: a view index is
    /// then a history position.
    pub(crate) fn is_whole_history(&self) -> bool {
        self.maps.is_empty() && self.items.is_run_of(0, self.history.len())
    }

    pub(crate) fn index_of(&self, pos: usize) -> Option<usize> {
        self.items.index_of_pos(u32::try_from(pos).ok()?)
    }

    /// Whether a map of the view that may not edit system messages changes the system
    /// message at view index `index` (see [`MessageMap::edits_system`]). Each such map is
    /// asked about the history's message on its own.
    pub(crate) fn map_edits_system(&self, index: usize) -> bool {
        let Some(pos) = self.pos(index) else { return false };
        let Some(original) = self.history.get(pos) else { return false };
        self.maps
            .iter()
            .filter(|map| !map.edits_system())
            .any(|map| map.map(original, Some(pos), self.history).is_some_and(|m| m != *original))
    }

    /// Whether a strategy replaced the message at view index `index` (a shortened or
    /// rebuilt copy) rather than showing the history's message through the view's maps.
    pub(crate) fn is_replaced(&self, index: usize) -> bool {
        self.items
            .locate(index)
            .is_some_and(|slot| matches!(self.items.get(slot.item), Item::Owned { .. }))
    }

    /// The message at view index `index` as far as structure goes (role, tool calls, the
    /// answered call's id), which maps never change: reading it runs no transformation.
    ///
    /// # Panics
    ///
    /// When `index` is not below [`len`](View::len), as slice indexing does.
    pub fn structure(&self, index: usize) -> &'_ Message {
        self.slot_structure(self.slot(index))
    }

    /// The message at view index `index` as the view shows it, every map applied.
    ///
    /// # Panics
    ///
    /// When `index` is not below [`len`](View::len), as slice indexing does.
    pub fn message(&self, index: usize) -> MessageRef<'h> {
        self.slot_message(self.slot(index))
    }

    /// The messages as far as structure goes (see [`structure`](View::structure)), in order.
    pub fn structures(&self) -> impl Iterator<Item = &'_ Message> + '_ {
        self.items.slots().map(|slot| self.slot_structure(slot))
    }

    /// The role of the first message that is not a system message (`None` when there is none).
    pub(crate) fn leads_with(&self) -> Option<Role> {
        self.structures().map(Message::role).find(|role| *role != Role::System)
    }

    /// [`structures`](View::structures) from view index `index` on, found in O(log items).
    pub(crate) fn structures_from(&self, index: usize) -> impl Iterator<Item = &'_ Message> + '_ {
        self.items.slots_from(index).map(|slot| self.slot_structure(slot))
    }

    /// The messages, borrowed from the history where unchanged: the request, ready for
    /// [`formats`](curator_model::formats) and [`validate`](curator_model::validate), which
    /// take them as they are. Nothing is deep-copied.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, formats::openai};
    /// use curator::strategies::{History, View};
    ///
    /// let messages = vec![Message::user("hi")];
    /// let history = History::from(&messages);
    /// let view = View::full(&history);
    /// let body = openai::from_messages(&view.messages())?;
    /// assert_eq!(body[0]["content"], "hi");
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn messages(&self) -> Vec<MessageRef<'h>> {
        let mut out = Vec::with_capacity(self.len());
        out.extend(self.items.slots().map(|slot| self.slot_message(slot)));
        out
    }

    /// The messages, each cloned once, for a caller that needs owned messages.
    pub fn to_messages(&self) -> Vec<Message> {
        let mut out = Vec::with_capacity(self.len());
        out.extend(self.items.slots().map(|slot| Message::clone(&self.slot_message(slot))));
        out
    }

    /// Tokens of the whole view under `counter`, reply priming included.
    pub fn tokens(&self, counter: &dyn TokenCounter) -> u64 {
        let tally = self.tally(counter);
        counter.reply_priming() + tally.range(0..self.len())
    }

    /// The identity of what the view does to the message at `index`: when it is a history
    /// message and every map can be memoised there, the key of the map chain at its
    /// position (equal keys mean equal shown messages); `None` for a replaced or inserted
    /// message, or when a map cannot be memoised.
    pub(crate) fn shown_identity(&self, index: usize) -> Option<u64> {
        let slot = self.items.locate(index)?;
        let Item::Run { start, .. } = self.items.get(slot.item) else { return None };
        let (len, key) = self.memo_chain((start + slot.offset) as usize);
        (len == self.maps.len()).then_some(key)
    }

    // ---- internals of `view/`: slots, maps, memoisation ----

    pub(super) fn slot(&self, index: usize) -> Slot {
        match self.items.locate(index) {
            Some(slot) => slot,
            #[expect(clippy::panic, reason = "documented: an index past the end, as slices do")]
            None => panic!("view index {index} out of range for a view of {}", self.len()),
        }
    }

    pub(super) fn slot_pos(&self, slot: Slot) -> Option<usize> {
        match self.items.get(slot.item) {
            Item::Run { start, .. } => Some((start + slot.offset) as usize),
            Item::Owned { pos, .. } => pos.map(|p| p as usize),
        }
    }

    pub(super) fn slot_structure(&self, slot: Slot) -> &'_ Message {
        match self.items.get(slot.item) {
            Item::Run { start, .. } => &self.history.messages()[(start + slot.offset) as usize],
            Item::Owned { message, .. } => message,
        }
    }

    /// The entry at `slot`: a history message under no map is handed out as it is, with no
    /// other check.
    #[inline]
    pub(super) fn slot_entry(&self, slot: Slot) -> ViewEntry<'h> {
        match self.items.get(slot.item) {
            Item::Run { start, .. } if self.maps.is_empty() => {
                let pos = (start + slot.offset) as usize;
                ViewEntry {
                    pos: Some(pos),
                    message: MessageRef::Borrowed(&self.history.messages()[pos]),
                }
            }
            _ => ViewEntry { pos: self.slot_pos(slot), message: self.slot_message(slot) },
        }
    }

    pub(super) fn slot_message(&self, slot: Slot) -> MessageRef<'h> {
        match self.items.get(slot.item) {
            Item::Run { start, .. } => {
                let pos = start + slot.offset;
                let raw = &self.history.messages()[pos as usize];
                if self.maps.iter().all(|map| map.leaves_unchanged(raw)) {
                    return MessageRef::Borrowed(raw);
                }
                let chain = self.memo_chain(pos as usize);
                let base = self.memoised(pos, raw, chain);
                match self.apply(chain.0, &base, Some(pos as usize)) {
                    Some(m) => MessageRef::Shared(Arc::new(m)),
                    None => base,
                }
            }
            Item::Owned { pos, message, applied } => {
                match self.apply(*applied, message, pos.map(|p| p as usize)) {
                    Some(m) => MessageRef::Shared(Arc::new(m)),
                    None => MessageRef::Shared(Arc::clone(message)),
                }
            }
        }
    }

    /// How many leading maps can be memoised at `pos`, and the key of that chain: the
    /// longest run of memoisable maps from the first; maps after one that cannot be memoised
    /// run on each read.
    fn memo_chain(&self, pos: usize) -> (usize, u64) {
        let mut chain = (0, 0);
        for map in &self.maps {
            match chain_key(Some(chain.1), map.memo_key(pos)) {
                Some(key) => chain = (chain.0 + 1, key),
                None => break,
            }
        }
        chain
    }

    /// The history message at `pos` after the memoisable maps, from the history's memo.
    fn memoised(&self, pos: u32, raw: &'h Message, (len, key): (usize, u64)) -> MessageRef<'h> {
        if len == 0 {
            return MessageRef::Borrowed(raw);
        }
        match self.history.memo(key, pos, || self.chained(pos, raw, len)) {
            Some(message) => MessageRef::Shared(message),
            None => MessageRef::Borrowed(raw),
        }
    }

    /// The history message at `pos` after the first `len` maps (all memoisable), `None` when
    /// they leave it unchanged: the last map run on what the maps before it made, read from
    /// the memo under that shorter chain's key. So a chain one map longer than a memoised
    /// one runs only its last map (a compaction's cut of a message already redacted does
    /// not redact it again).
    fn chained(&self, pos: u32, raw: &Message, len: usize) -> Option<Arc<Message>> {
        let before = len.checked_sub(1)?;
        let last = &self.maps[before];
        let earlier = if before == 0 {
            None
        } else {
            let key = self.maps[..before]
                .iter()
                .try_fold(0, |key, map| chain_key(Some(key), map.memo_key(pos as usize)));
            match key {
                Some(key) => self.history.memo(key, pos, || self.chained(pos, raw, before)),
                // Not memoisable (callers pass memoisable chains only): run the maps.
                None => self.apply_range(0..before, raw, Some(pos as usize)).map(Arc::new),
            }
        };
        let input = earlier.as_deref().unwrap_or(raw);
        last.map(input, Some(pos as usize), self.history).map(Arc::new).or(earlier)
    }

    /// Runs the maps from `from` on, returning the result when one of them changed it.
    fn apply(&self, from: usize, message: &Message, pos: Option<usize>) -> Option<Message> {
        self.apply_range(from.min(self.maps.len())..self.maps.len(), message, pos)
    }

    fn apply_range(
        &self,
        range: std::ops::Range<usize>,
        message: &Message,
        pos: Option<usize>,
    ) -> Option<Message> {
        let mut current: Option<Message> = None;
        for map in &self.maps[range] {
            let input = current.as_ref().unwrap_or(message);
            if let Some(out) = map.map(input, pos, self.history) {
                current = Some(out);
            }
        }
        current
    }

    /// Tokens of one slot's message, from the history's caches when they know it.
    pub(super) fn slot_tokens(
        &self,
        slot: Slot,
        counter: &dyn TokenCounter,
        counts: &Counts,
        chains: &ChainSlots,
    ) -> u64 {
        let Item::Run { start, .. } = self.items.get(slot.item) else {
            return counter.count_message(&self.slot_message(slot));
        };
        let pos = start + slot.offset;
        if self.maps.is_empty() {
            return counts.at(pos as usize);
        }
        let raw = &self.history.messages()[pos as usize];
        if self.maps.iter().all(|map| map.leaves_unchanged(raw)) {
            return counts.at(pos as usize);
        }
        let chain = self.memo_chain(pos as usize);
        if chain.0 < self.maps.len() {
            let message = self.slot_message(slot);
            let count = |message: &Message| counter.count_message(message);
            return self.history.count_unmemoised(counts.key, pos, &message, count);
        }
        let at = pos as usize;
        chains.with(self.history, chain.1, counts.key, |dense| {
            dense.get(at).unwrap_or_else(|| {
                let compute = || self.chained(pos, raw, chain.0);
                let count = |message: &Message| counter.count_message(message);
                let tokens = self
                    .history
                    .memo_tokens(chain.1, pos, compute, counts.key, count)
                    .unwrap_or_else(|| counts.at(at));
                dense.set(at, tokens);
                tokens
            })
        })
    }
}

impl fmt::Debug for View<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("View")
            .field("items", &self.items)
            .field("maps", &self.maps)
            .finish_non_exhaustive()
    }
}
