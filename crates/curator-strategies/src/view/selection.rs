//! The curated view: positions into a [`History`] plus the few messages a strategy changed.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use curator_model::{Message, Role};

use crate::map::chain_key;
use crate::{History, MessageMap, TokenCounter};

/// What a [`HistoryManager`](crate::HistoryManager) builds and hands to the next one: an
/// ordered selection of a [`History`]'s messages, some of them replaced by transformed
/// copies, plus a chain of lazy [`MessageMap`]s.
///
/// Unchanged messages are never cloned: the view holds runs of positions and borrows the
/// history. Nothing is copied until [`to_messages`](View::to_messages) (or an iteration that
/// needs a transformed message) at the end of the pipeline.
///
/// # Examples
///
/// ```
/// use curator_model::Message;
/// use curator_strategies::{History, View};
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
    history: &'h History<'h>,
    items: Vec<Item>,
    maps: Vec<Arc<dyn MessageMap>>,
}

/// A stretch of the view.
#[derive(Clone, Debug)]
pub(crate) enum Item {
    /// History messages `start..end`, unchanged but for the view's maps.
    Run { start: u32, end: u32 },
    /// A message a strategy built: a changed copy of the message at `pos`, or a new
    /// message (`pos` is `None`). The first `applied` maps of the chain are already in it.
    Owned { pos: Option<u32>, message: Arc<Message>, applied: usize },
}

impl Item {
    fn len(&self) -> usize {
        match self {
            Item::Run { start, end } => (end - start) as usize,
            Item::Owned { .. } => 1,
        }
    }
}

/// A place in a view: an item and an offset inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Slot {
    pub(crate) item: usize,
    pub(crate) offset: u32,
}

/// A message of a view, borrowed from the history or shared when transformed.
#[derive(Clone, Debug)]
pub enum MessageRef<'h> {
    /// The history's own message.
    Borrowed(&'h Message),
    /// A transformed copy.
    Shared(Arc<Message>),
}

impl Deref for MessageRef<'_> {
    type Target = Message;

    fn deref(&self) -> &Message {
        match self {
            MessageRef::Borrowed(m) => m,
            MessageRef::Shared(m) => m,
        }
    }
}

impl std::borrow::Borrow<Message> for MessageRef<'_> {
    fn borrow(&self) -> &Message {
        self
    }
}

impl AsRef<Message> for MessageRef<'_> {
    fn as_ref(&self) -> &Message {
        self
    }
}

impl PartialEq<Message> for MessageRef<'_> {
    fn eq(&self, other: &Message) -> bool {
        **self == *other
    }
}

impl MessageRef<'_> {
    /// Whether this is the history's own message, unchanged.
    pub fn is_borrowed(&self) -> bool {
        matches!(self, MessageRef::Borrowed(_))
    }
}

/// One message of a view with its history position.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ViewEntry<'h> {
    /// Position in the history, or `None` for a message that is not in it (a summary).
    pub pos: Option<usize>,
    /// The message as the view shows it.
    pub message: MessageRef<'h>,
}

impl<'h> View<'h> {
    /// Every message of `history`, unchanged.
    pub fn full(history: &'h History<'h>) -> Self {
        let items = if history.is_empty() {
            Vec::new()
        } else {
            vec![Item::Run { start: 0, end: history.len() as u32 }]
        };
        Self { history, items, maps: Vec::new() }
    }

    /// The history the view selects from.
    pub fn history(&self) -> &'h History<'h> {
        self.history
    }

    /// Number of messages in the view.
    pub fn len(&self) -> usize {
        self.items.iter().map(Item::len).sum()
    }

    /// Whether the view holds no message.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Adds a lazy transformation of every message, applied after the ones already added.
    #[must_use]
    pub fn with_map(mut self, map: Arc<dyn MessageMap>) -> Self {
        self.maps.push(map);
        self
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

    /// The messages with their positions, in order.
    pub fn iter(&self) -> impl Iterator<Item = ViewEntry<'h>> + '_ {
        self.slots().map(|slot| ViewEntry { pos: self.pos(slot), message: self.message(slot) })
    }

    /// The messages, borrowed from the history where unchanged: the request, ready for
    /// [`formats`](curator_model::formats) and [`validate`](curator_model::validate), which
    /// take them as they are. Nothing is deep-copied.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator_model::{Message, formats::openai};
    /// use curator_strategies::{History, View};
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
        out.extend(self.slots().map(|slot| self.message(slot)));
        out
    }

    /// The messages, each cloned once, for a caller that needs owned messages.
    pub fn to_messages(&self) -> Vec<Message> {
        let mut out = Vec::with_capacity(self.len());
        out.extend(self.slots().map(|slot| Message::clone(&self.message(slot))));
        out
    }

    /// Tokens of the whole view under `counter`, reply priming included.
    pub fn tokens(&self, counter: &dyn TokenCounter) -> u64 {
        let counts = self.history.counts(counter);
        let mut total = counter.reply_priming() as u64;
        for (i, item) in self.items.iter().enumerate() {
            match item {
                Item::Run { start, end } if self.maps.is_empty() => {
                    total += counts.range(*start as usize..*end as usize);
                }
                _ => {
                    for offset in 0..item.len() as u32 {
                        total += self.slot_tokens(Slot { item: i, offset }, counter, &counts);
                    }
                }
            }
        }
        total
    }

    /// Keeps the messages for which `keep` returns true, then restores coherence (see
    /// [`coherence`](crate::coherence)). This is the simple way for a custom strategy to drop
    /// messages; it costs O(view).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator_model::{Message, Role, ToolCall};
    /// use curator_strategies::{History, View};
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
        let mut items = Vec::new();
        for slot in self.slots().collect::<Vec<_>>() {
            let entry = ViewEntry { pos: self.pos(slot), message: self.message(slot) };
            if keep(&entry) {
                push_slot(&mut items, &self.items, slot);
            }
        }
        self.with_items(items).repaired()
    }

    /// Replaces messages eagerly: `replace` returns a new message for those it changes. The
    /// replacement must keep the message's structure (role, tool-call ids, answered id).
    #[must_use]
    pub fn replace(self, mut replace: impl FnMut(&ViewEntry<'h>) -> Option<Message>) -> Self {
        let mut items = Vec::new();
        let applied = self.maps.len();
        for slot in self.slots().collect::<Vec<_>>() {
            let entry = ViewEntry { pos: self.pos(slot), message: self.message(slot) };
            match replace(&entry) {
                Some(message) => items.push(Item::Owned {
                    pos: entry.pos.map(|p| p as u32),
                    message: Arc::new(message),
                    applied,
                }),
                None => push_slot(&mut items, &self.items, slot),
            }
        }
        self.with_items(items)
    }

    // ---- crate internals: slots, structure, assembly ----

    pub(crate) fn with_items(mut self, items: Vec<Item>) -> Self {
        self.items = items;
        self
    }

    pub(crate) fn items(&self) -> &[Item] {
        &self.items
    }

    /// Every slot, front to back.
    pub(crate) fn slots(&self) -> impl DoubleEndedIterator<Item = Slot> + '_ {
        self.items
            .iter()
            .enumerate()
            .flat_map(|(item, it)| (0..it.len() as u32).map(move |offset| Slot { item, offset }))
    }

    /// The history position of a slot.
    pub(crate) fn pos(&self, slot: Slot) -> Option<usize> {
        match &self.items[slot.item] {
            Item::Run { start, .. } => Some((start + slot.offset) as usize),
            Item::Owned { pos, .. } => pos.map(|p| p as usize),
        }
    }

    /// The message of a slot as far as structure goes (role, calls, answered id): the raw
    /// history message for a run, since maps keep structure.
    pub(crate) fn structure(&self, slot: Slot) -> &Message {
        match &self.items[slot.item] {
            Item::Run { start, .. } => &self.history.messages()[(start + slot.offset) as usize],
            Item::Owned { message, .. } => message,
        }
    }

    /// The message of a slot as the view shows it, maps applied.
    pub(crate) fn message(&self, slot: Slot) -> MessageRef<'h> {
        match &self.items[slot.item] {
            Item::Run { start, .. } => {
                let pos = start + slot.offset;
                let raw = &self.history.messages()[pos as usize];
                let chain = self.memo_chain(pos as usize);
                let (base, _) = self.memoised(pos, raw, chain);
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

    /// The history message at `pos` after the memoisable maps, from the history's memo, with
    /// the memo entry when there is one.
    fn memoised(
        &self,
        pos: u32,
        raw: &'h Message,
        (len, key): (usize, u64),
    ) -> (MessageRef<'h>, Option<Arc<crate::history::Memo>>) {
        if len == 0 {
            return (MessageRef::Borrowed(raw), None);
        }
        let memo =
            self.history.memo(key, pos, || self.apply_range(0..len, raw, Some(pos as usize)));
        let message = match &memo.message {
            Some(m) => MessageRef::Shared(Arc::clone(m)),
            None => MessageRef::Borrowed(raw),
        };
        (message, Some(memo))
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
    pub(crate) fn slot_tokens(
        &self,
        slot: Slot,
        counter: &dyn TokenCounter,
        counts: &crate::history::Counts<'_>,
    ) -> u64 {
        let Item::Run { start, .. } = &self.items[slot.item] else {
            return counter.count_message(&self.message(slot)) as u64;
        };
        let pos = start + slot.offset;
        if self.maps.is_empty() {
            return counts.at(pos as usize);
        }
        let chain = self.memo_chain(pos as usize);
        if chain.0 < self.maps.len() {
            return counter.count_message(&self.message(slot)) as u64;
        }
        let raw = &self.history.messages()[pos as usize];
        let (message, memo) = self.memoised(pos, raw, chain);
        let Some(memo) = memo.filter(|_| !message.is_borrowed()) else {
            return counts.at(pos as usize);
        };
        let key = counter.cache_key();
        if let Some((k, n)) = memo.tokens.get()
            && *k == key
        {
            return *n;
        }
        let n = counter.count_message(&message) as u64;
        let _ = memo.tokens.set((key, n));
        n
    }

    /// The pinned slots (leading system messages and the task, as asked) and how many
    /// leading slots they cover without a gap (see [`Pinned`]).
    pub(crate) fn pinned(&self, preserve_system: bool, preserve_task: bool) -> Pinned {
        let mut slots = self.slots().peekable();
        let mut pinned = Vec::new();
        let mut head_len = 0;
        let mut contiguous = true;
        while let Some(&slot) = slots.peek() {
            if self.structure(slot).role() != Role::System {
                break;
            }
            if preserve_system {
                pinned.push(slot);
                head_len += usize::from(contiguous);
            } else {
                contiguous = false;
            }
            slots.next();
        }
        if let Some(&slot) = slots.peek()
            && self.structure(slot).role() == Role::User
            && preserve_task
        {
            pinned.push(slot);
            head_len += usize::from(contiguous);
        }
        Pinned { slots: pinned, head_len }
    }

    /// The units of the body (after the first `head_len` slots), newest first. Walks back
    /// from the tail, so taking k units costs O(k), not O(view).
    pub(crate) fn units_rev(&self, head_len: usize) -> UnitsRev<'_, 'h> {
        let floor = self.slots().nth(head_len);
        let next = floor.and_then(|_| self.last_slot());
        UnitsRev { view: self, floor, next }
    }

    fn last_slot(&self) -> Option<Slot> {
        let item = self.items.len().checked_sub(1)?;
        Some(Slot { item, offset: self.items[item].len() as u32 - 1 })
    }

    /// The slot before `slot`.
    pub(crate) fn prev(&self, slot: Slot) -> Option<Slot> {
        if slot.offset > 0 {
            return Some(Slot { item: slot.item, offset: slot.offset - 1 });
        }
        let item = slot.item.checked_sub(1)?;
        Some(Slot { item, offset: self.items[item].len() as u32 - 1 })
    }

    /// The slots from `first` to `last`, both included.
    pub(crate) fn between(&self, first: Slot, last: Slot) -> impl Iterator<Item = Slot> + '_ {
        self.items[first.item..=last.item].iter().enumerate().flat_map(move |(k, it)| {
            let item = first.item + k;
            let from = if item == first.item { first.offset } else { 0 };
            let to = if item == last.item { last.offset + 1 } else { it.len() as u32 };
            (from..to).map(move |offset| Slot { item, offset })
        })
    }

    /// A view of the `pinned` slots followed by every slot from `from` on.
    pub(crate) fn assemble(&self, pinned: &[Slot], from: Option<Slot>) -> Vec<Item> {
        let mut items = Vec::new();
        for &slot in pinned {
            if from.is_some_and(|f| slot >= f) {
                break;
            }
            push_slot(&mut items, &self.items, slot);
        }
        if let Some(from) = from
            && let Some(first) = self.items.get(from.item)
        {
            match first {
                Item::Run { start, end } => {
                    push_item(&mut items, Item::Run { start: start + from.offset, end: *end });
                }
                owned @ Item::Owned { .. } => push_item(&mut items, owned.clone()),
            }
            for item in &self.items[from.item + 1..] {
                push_item(&mut items, item.clone());
            }
        }
        items
    }

    /// Restores coherence: see [`crate::coherence`].
    pub(crate) fn repaired(self) -> Self {
        crate::coherence::repair(self)
    }

    /// The item that stands for `slot` alone, borrowing as the view does.
    pub(crate) fn slot_item(&self, slot: Slot) -> Item {
        match &self.items[slot.item] {
            Item::Run { start, .. } => {
                Item::Run { start: start + slot.offset, end: start + slot.offset + 1 }
            }
            owned @ Item::Owned { .. } => owned.clone(),
        }
    }

    /// The view with the message at `slot` replaced by `message` (maps already applied).
    pub(crate) fn replace_slot(self, slot: Slot, message: Message) -> Self {
        let replacement = self.owned_item(slot, message);
        let mut items = Vec::with_capacity(self.items.len() + 2);
        for (i, item) in self.items.iter().enumerate() {
            match item {
                Item::Run { start, end } if i == slot.item => {
                    let at = start + slot.offset;
                    if at > *start {
                        items.push(Item::Run { start: *start, end: at });
                    }
                    items.push(replacement.clone());
                    if at + 1 < *end {
                        items.push(Item::Run { start: at + 1, end: *end });
                    }
                }
                _ if i == slot.item => items.push(replacement.clone()),
                other => items.push(other.clone()),
            }
        }
        self.with_items(items)
    }

    /// A message that is not in the history (a summary), as an item that later maps apply to.
    pub(crate) fn new_item(&self, message: Message) -> Item {
        Item::Owned { pos: None, message: Arc::new(message), applied: self.maps.len() }
    }

    /// An owned copy of the message at `slot`, with every map applied, as an item.
    pub(crate) fn owned_item(&self, slot: Slot, message: Message) -> Item {
        Item::Owned {
            pos: self.pos(slot).map(|p| p as u32),
            message: Arc::new(message),
            applied: self.maps.len(),
        }
    }
}

/// What trimming strategies keep whatever happens: the leading system messages and the task
/// (the first user message, when it comes right after them), as the context asks.
#[derive(Debug)]
pub(crate) struct Pinned {
    /// The pinned slots, in order.
    pub(crate) slots: Vec<Slot>,
    /// How many leading slots are pinned without a gap: the units start after them. A
    /// pinned slot after a gap (the task, when the system message is not pinned) is also
    /// walked as a unit; assembly keeps it once.
    pub(crate) head_len: usize,
}

/// One coherence unit of a view: the slots from `first` to `last`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Unit {
    pub(crate) first: Slot,
    pub(crate) last: Slot,
}

/// Units of a view's body, newest first.
pub(crate) struct UnitsRev<'v, 'h> {
    view: &'v View<'h>,
    /// The first body slot: units never reach before it.
    floor: Option<Slot>,
    /// The newest slot not yet yielded.
    next: Option<Slot>,
}

impl Iterator for UnitsRev<'_, '_> {
    type Item = Unit;

    fn next(&mut self) -> Option<Unit> {
        let floor = self.floor?;
        let last = self.next.filter(|s| *s >= floor)?;
        let view = self.view;
        let mut first = last;
        if let Some(pos) = view.pos(last) {
            // A tool message's unit reaches back to the assistant message that called it.
            let head_of = |slot: Slot, p: usize| {
                if view.structure(slot).role() == Role::Tool {
                    view.history().unit_head(p).unwrap_or(p)
                } else {
                    p
                }
            };
            let mut head = head_of(last, pos);
            while let Some(prev) = view.prev(first).filter(|s| *s >= floor) {
                match view.pos(prev) {
                    Some(p) if p >= head && p < pos => {
                        head = head.min(head_of(prev, p));
                        first = prev;
                    }
                    _ => break,
                }
            }
        }
        self.next = view.prev(first);
        Some(Unit { first, last })
    }
}

/// Appends one slot of `items` to `out`, merging adjacent runs.
fn push_slot(out: &mut Vec<Item>, items: &[Item], slot: Slot) {
    match &items[slot.item] {
        Item::Run { start, .. } => {
            let p = start + slot.offset;
            push_item(out, Item::Run { start: p, end: p + 1 });
        }
        owned @ Item::Owned { .. } => out.push(owned.clone()),
    }
}

/// Appends an item, merging it into the last one when both are adjacent runs.
pub(crate) fn push_item(out: &mut Vec<Item>, item: Item) {
    if let (Some(Item::Run { end, .. }), Item::Run { start, end: new_end }) =
        (out.last_mut(), &item)
        && *end == *start
    {
        *end = *new_end;
        return;
    }
    out.push(item);
}

impl fmt::Debug for View<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("View")
            .field("items", &self.items)
            .field("maps", &self.maps)
            .finish_non_exhaustive()
    }
}
