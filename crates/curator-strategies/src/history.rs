//! The append-only message list that strategies curate, with cached per-message facts.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard};

use curator_model::pairing::{Link, Pairer, Step};
use curator_model::{Message, Role, ToolCall};

use crate::TokenCounter;
use crate::fx::FxBuild;
use crate::memo::{ChainCounts, MemoTable};
use crate::term_index::TermIndex;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Marks a tool message that answers no call: it heads no unit and belongs to none.
const ORPHAN: u32 = u32::MAX;

/// Set in a mark when calls are open at that position.
const OPEN: u32 = 1 << 31;

/// The mark after a message, from the mark before it and its pairing step.
fn mark(before: u32, step: &Step, pairer: &Pairer) -> u32 {
    let bad = before & !OPEN;
    let bad = if step.link == Link::Orphan || step.closed_calls() { bad + 1 } else { bad };
    if pairer.open().is_empty() { bad } else { bad | OPEN }
}

/// The index of the call a message answers among its unit head's calls, from its pairing
/// step; `ORPHAN` when it answers none.
fn call(step: &Step) -> u32 {
    match step.link {
        Link::Answers(call) => call.call as u32,
        _ => ORPHAN,
    }
}

/// The unit head of the message at `pos`, from its pairing step: the position of the
/// assistant message whose call a tool message answers, the message itself otherwise.
fn head(pos: usize, step: &Step) -> u32 {
    match step.link {
        Link::Answers(call) => call.message as u32,
        Link::Orphan => ORPHAN,
        _ => pos as u32,
    }
}

/// The messages of one conversation in append-only order, with stable positions.
///
/// A `History` caches what curation asks again on every iteration: the coherence unit each
/// message belongs to, each message's token count per [`TokenCounter`] (as prefix sums, so
/// the tokens of any run of messages cost O(1)), and the memoised results of per-message
/// transformations. Because positions never move, a history that grows by a message per
/// iteration is never recounted: only the new messages are.
///
/// Build one from a borrowed slice (nothing is cloned) or an owned `Vec`, and [`push`]
/// messages as the conversation goes on.
///
/// [`push`]: History::push
///
/// # Examples
///
/// ```
/// use curator::model::Message;
/// use curator::strategies::{CharEstimate, History};
///
/// let messages = vec![Message::system("Be brief."), Message::user("Hi")];
/// let mut history = History::from(messages.as_slice());
/// history.push(Message::assistant("Hello."));
/// assert_eq!(history.len(), 3);
/// assert!(history.tokens(&CharEstimate::default(), 0..3) > 0);
/// ```
pub struct History<'m> {
    id: u64,
    messages: Cow<'m, [Message]>,
    /// For each position, the position of its unit's head: the assistant message whose call
    /// a tool message answers, or the message itself; `ORPHAN` for a tool message that
    /// answers no call.
    heads: Vec<u32>,
    /// For each position: the index, in its unit head's calls, of the call a tool message
    /// answers; `ORPHAN` for every other message.
    calls: Vec<u32>,
    /// The pairing rule's state after the last message (which calls are open).
    pairer: Pairer,
    /// Positions of the system messages, ascending.
    systems: Vec<u32>,
    /// For each position `i` (and one past the end): the number of messages before `i` that
    /// coherence would change (orphans, and messages that close calls unanswered), with
    /// [`OPEN`] set when calls are open before `i`. See [`History::coherent`].
    marks: Vec<u32>,
    /// Prefix sums of token counts per counter key, shared with the [`Counts`] handed out
    /// (copied on write only while one is alive).
    tokens: RwLock<HashMap<u64, Arc<Vec<u64>>, FxBuild>>,
    /// What chains of message maps made of each message.
    memo: MemoTable,
    /// Per `(chain key, counter key)`: the tokens of what the chain made of each message.
    chain_counts: RwLock<HashMap<(u64, u64), Arc<ChainCounts>, FxBuild>>,
    /// The last few counts of messages no memo keeps (see [`History::count_unmemoised`]).
    unmemoised: Mutex<Vec<Unmemoised>>,
    /// Term statistics, built the first time a strategy asks (see [`TermIndex`]).
    terms: RwLock<TermIndex>,
    /// Per [`MessageMap::unchanged_key`](crate::MessageMap::unchanged_key): the positions
    /// that map may change.
    changed: RwLock<HashMap<u64, Arc<Changed>, FxBuild>>,
}

/// How many counts [`History::count_unmemoised`] keeps.
const UNMEMOISED: usize = 16;

/// A count of a message no memo keeps: the counter's key, the position it shows, the
/// message and its tokens.
#[derive(Debug)]
struct Unmemoised {
    key: u64,
    pos: u32,
    message: Arc<Message>,
    tokens: u64,
}

/// The positions of a history that a map may change (those its
/// [`leaves_unchanged`](crate::MessageMap::leaves_unchanged) does not vouch for), as a bit
/// set over the first `scanned` messages.
#[derive(Debug, Clone, Default)]
pub(crate) struct Changed {
    scanned: usize,
    bits: Vec<u64>,
}

impl Changed {
    fn insert(&mut self, pos: usize) {
        let word = pos / 64;
        if self.bits.len() <= word {
            self.bits.resize(word + 1, 0);
        }
        self.bits[word] |= 1 << (pos % 64);
    }

    /// The positions any of `changed` may change.
    pub(crate) fn union(changed: &[Arc<Changed>]) -> Changed {
        let words = changed.iter().map(|c| c.bits.len()).max().unwrap_or(0);
        let bits = (0..words)
            .map(|w| changed.iter().fold(0, |acc, c| acc | c.bits.get(w).copied().unwrap_or(0)))
            .collect();
        let scanned = changed.iter().map(|c| c.scanned).min().unwrap_or(0);
        Changed { scanned, bits }
    }

    /// Calls `each` with every position in `range` that may change, ascending: a word of
    /// the set per 64 positions, so a short range costs a few instructions.
    pub(crate) fn each_in(&self, range: std::ops::Range<usize>, mut each: impl FnMut(usize)) {
        if range.is_empty() {
            return;
        }
        let (first, last) = (range.start / 64, (range.end - 1) / 64);
        for (w, &word) in self.bits.iter().enumerate().take(last + 1).skip(first) {
            let mut word = word;
            if w == first {
                word &= u64::MAX << (range.start % 64);
            }
            if w == last {
                word &= u64::MAX >> (63 - (range.end - 1) % 64);
            }
            while word != 0 {
                each(w * 64 + word.trailing_zeros() as usize);
                word &= word - 1;
            }
        }
    }
}

impl<'m> History<'m> {
    fn with_messages(messages: Cow<'m, [Message]>) -> Self {
        let mut heads = Vec::with_capacity(messages.len());
        let mut calls = Vec::with_capacity(messages.len());
        let mut pairer = Pairer::new();
        let mut systems = Vec::new();
        let mut marks = Vec::with_capacity(messages.len() + 1);
        marks.push(0);
        for (pos, message) in messages.iter().enumerate() {
            let step = pairer.step(pos, message, |i| &messages[i]);
            heads.push(head(pos, &step));
            calls.push(call(&step));
            marks.push(mark(marks[pos], &step, &pairer));
            if message.role() == Role::System {
                systems.push(pos as u32);
            }
        }
        Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            messages,
            heads,
            calls,
            pairer,
            systems,
            marks,
            tokens: RwLock::default(),
            memo: MemoTable::default(),
            chain_counts: RwLock::default(),
            unmemoised: Mutex::default(),
            terms: RwLock::default(),
            changed: RwLock::default(),
        }
    }

    /// An empty history.
    pub fn new() -> History<'static> {
        History::with_messages(Cow::Owned(Vec::new()))
    }

    /// Appends a message; positions of earlier messages never change.
    pub fn push(&mut self, message: Message) {
        let pos = self.messages.len();
        let messages = &self.messages;
        let step = self.pairer.step(pos, &message, |i| &messages[i]);
        self.heads.push(head(pos, &step));
        self.calls.push(call(&step));
        let before = self.marks.last().copied().unwrap_or(0);
        self.marks.push(mark(before, &step, &self.pairer));
        if message.role() == Role::System {
            self.systems.push(pos as u32);
        }
        self.messages.to_mut().push(message);
    }

    /// Whether the history's messages at `range`, shown on their own, pair as they do in the
    /// history: no call is open where the range starts, nor, unless `open_end`, where it
    /// ends. O(1).
    pub(crate) fn pairs_alone(&self, range: std::ops::Range<usize>, open_end: bool) -> bool {
        match (self.marks.get(range.start), self.marks.get(range.end)) {
            (Some(&start), Some(&end)) => start & OPEN == 0 && (open_end || end & OPEN == 0),
            _ => false,
        }
    }

    /// The call the tool message at `pos` answers, by the pairing rule over the whole history.
    pub(crate) fn answered_call(&self, pos: usize) -> Option<&ToolCall> {
        let (&head, &call) = (self.heads.get(pos)?, self.calls.get(pos)?);
        if call == ORPHAN {
            return None;
        }
        self.messages.get(head as usize)?.tool_calls().get(call as usize)
    }

    /// Whether the history's messages at `range`, shown on their own, already follow the
    /// coherence rules: no call is open where the range starts or ends, and no message in
    /// it is an orphan or closes calls unanswered. Such ranges, and any sequence of them
    /// with messages that neither call tools nor answer calls between them, need no repair;
    /// the pairing inside them is the history's. O(1).
    pub(crate) fn coherent(&self, range: std::ops::Range<usize>) -> bool {
        match (self.marks.get(range.start), self.marks.get(range.end)) {
            (Some(&start), Some(&end)) => start & OPEN == 0 && end & OPEN == 0 && start == end,
            _ => false,
        }
    }

    /// The last position of `range` (its end included) where no call is open, so that
    /// pairing can start afresh there; `None` when there is none. O(positions scanned from
    /// the end).
    pub(crate) fn last_settled(&self, range: std::ops::Range<usize>) -> Option<usize> {
        (range.start..=range.end)
            .rev()
            .find(|&pos| self.marks.get(pos).is_some_and(|&mark| mark & OPEN == 0))
    }

    /// Whether calls are still open right after the message at `pos`: only then can a later
    /// tool message answer a call made at or before `pos` (a user, system or new assistant
    /// message closes every open call), so that a unit reaches past it.
    pub(crate) fn open_after(&self, pos: usize) -> bool {
        self.marks.get(pos + 1).is_some_and(|&mark| mark & OPEN != 0)
    }

    /// Positions of the system messages, ascending.
    pub(crate) fn system_positions(&self) -> &[u32] {
        &self.systems
    }

    /// A number that identifies this history among all others alive in the process, so
    /// that caches keyed by position never mix two histories.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether there is no message.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// All messages, in order.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The message at `pos`.
    pub fn get(&self, pos: usize) -> Option<&Message> {
        self.messages.get(pos)
    }

    /// The unit head of the message at `pos`: for a tool message, the position of the
    /// assistant message whose call it answers (`None` when it answers no call); for any
    /// other message, `pos` itself.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, ToolCall};
    /// use curator::strategies::History;
    ///
    /// let history = History::from(vec![
    ///     Message::user("go"),
    ///     Message::assistant_with_calls(None, vec![ToolCall::new("1", "ls", "{}")]),
    ///     Message::tool_result("1", "x"),
    ///     Message::tool_result("9", "orphan"),
    /// ]);
    /// assert_eq!(history.unit_head(2), Some(1));
    /// assert_eq!(history.unit_head(3), None);
    /// ```
    pub fn unit_head(&self, pos: usize) -> Option<usize> {
        match self.heads.get(pos) {
            Some(&ORPHAN) | None => None,
            Some(&head) => Some(head as usize),
        }
    }

    /// Tokens of the messages at `positions` under `counter`, counting each message at most
    /// once per counter over the life of the history.
    pub fn tokens(&self, counter: &dyn TokenCounter, positions: std::ops::Range<usize>) -> u64 {
        let counts = self.counts(counter);
        counts.range(positions)
    }

    /// The cached prefix sums for `counter`, counting messages not yet counted.
    pub(crate) fn counts(&self, counter: &dyn TokenCounter) -> Counts {
        let key = counter.cache_key();
        let n = self.messages.len();
        {
            let cache = self.tokens.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(sums) = cache.get(&key)
                && sums.len() > n
            {
                return Counts { sums: Arc::clone(sums), key };
            }
        }
        let mut cache = self.tokens.write().unwrap_or_else(PoisonError::into_inner);
        let entry = cache.entry(key).or_insert_with(|| Arc::new(vec![0]));
        let sums = Arc::make_mut(entry);
        // Another thread may have counted meanwhile; count from where the cache stands.
        for message in &self.messages[sums.len() - 1..] {
            let last = *sums.last().unwrap_or(&0);
            sums.push(last + counter.count_message(message));
        }
        Counts { sums: Arc::clone(entry), key }
    }

    /// The term index, brought up to date with every message first (each message is read
    /// once over the life of the history).
    pub(crate) fn term_index(&self) -> RwLockReadGuard<'_, TermIndex> {
        let n = self.messages.len();
        {
            let index = self.terms.read().unwrap_or_else(PoisonError::into_inner);
            if index.indexed() >= n {
                return index;
            }
        }
        let mut index = self.terms.write().unwrap_or_else(PoisonError::into_inner);
        while index.indexed() < n {
            let pos = index.indexed();
            index.push(&self.messages[pos]);
        }
        drop(index);
        self.terms.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The positions a map may change, asking its `leaves_unchanged` once per message over
    /// the life of the history; `key` is the map's
    /// [`unchanged_key`](crate::MessageMap::unchanged_key).
    pub(crate) fn changed_by(
        &self,
        key: u64,
        leaves_unchanged: impl Fn(&Message) -> bool,
    ) -> Arc<Changed> {
        let n = self.messages.len();
        {
            let cache = self.changed.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(changed) = cache.get(&key)
                && changed.scanned >= n
            {
                return Arc::clone(changed);
            }
        }
        let mut cache = self.changed.write().unwrap_or_else(PoisonError::into_inner);
        let entry = cache.entry(key).or_default();
        let changed = Arc::make_mut(entry);
        // Another thread may have asked meanwhile; go on from where the cache stands.
        for (pos, message) in self.messages.iter().enumerate().skip(changed.scanned) {
            if !leaves_unchanged(message) {
                changed.insert(pos);
            }
        }
        changed.scanned = n;
        Arc::clone(entry)
    }

    /// The memoised result of the transformation chain `chain` at `pos`: the transformed
    /// message, or `None` when the chain leaves it unchanged. `compute` runs on a miss.
    pub(crate) fn memo(
        &self,
        chain: u64,
        pos: u32,
        compute: impl FnOnce() -> Option<Arc<Message>>,
    ) -> Option<Arc<Message>> {
        self.memo.with(chain, pos, compute, |memo| memo.map(|m| Arc::clone(&m.message)))
    }

    /// The tokens of `message` under the counter `key`, counted by `count` unless it is
    /// one of the last few counted for position `pos`: what maps made of a message that
    /// no memo keeps (a cut of the present's results, which depends on the call) is asked
    /// for several times in one compaction, and again by the calls after it.
    pub(crate) fn count_unmemoised(
        &self,
        key: u64,
        pos: u32,
        message: &Message,
        count: impl FnOnce(&Message) -> u64,
    ) -> u64 {
        {
            let recent = self.unmemoised.lock().unwrap_or_else(PoisonError::into_inner);
            let hit =
                recent.iter().find(|r| r.key == key && r.pos == pos && *r.message == *message);
            if let Some(hit) = hit {
                return hit.tokens;
            }
        }
        let tokens = count(message);
        let mut recent = self.unmemoised.lock().unwrap_or_else(PoisonError::into_inner);
        if recent.len() >= UNMEMOISED {
            recent.remove(0);
        }
        recent.push(Unmemoised { key, pos, message: Arc::new(message.clone()), tokens });
        tokens
    }

    /// The tokens of what the memoised chain `chain` makes of each message under the counter
    /// `key`, as far as they were counted.
    pub(crate) fn chain_counts(&self, chain: u64, key: u64) -> Arc<ChainCounts> {
        {
            let cache = self.chain_counts.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(counts) = cache.get(&(chain, key)) {
                return Arc::clone(counts);
            }
        }
        let mut cache = self.chain_counts.write().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(cache.entry((chain, key)).or_default())
    }

    /// The tokens of the memoised result of `chain` at `pos` under the counter `key`, counted
    /// by `count` the first time; `None` when the chain leaves the message unchanged.
    pub(crate) fn memo_tokens(
        &self,
        chain: u64,
        pos: u32,
        compute: impl FnOnce() -> Option<Arc<Message>>,
        key: u64,
        count: impl FnOnce(&Message) -> u64,
    ) -> Option<u64> {
        self.memo.with(chain, pos, compute, |memo| memo.map(|m| m.tokens(key, count)))
    }
}

/// One counter's prefix sums, as counted when they were asked for.
#[derive(Debug)]
pub(crate) struct Counts {
    sums: Arc<Vec<u64>>,
    /// The counter's [`cache_key`](TokenCounter::cache_key), asked once.
    pub(crate) key: u64,
}

impl Counts {
    /// Tokens of the messages in `range`.
    pub(crate) fn range(&self, range: std::ops::Range<usize>) -> u64 {
        let end = range.end.min(self.sums.len().saturating_sub(1));
        let start = range.start.min(end);
        self.sums[end] - self.sums[start]
    }

    /// The first position `s` in `range.start..=range.end` from which the messages up to
    /// `range.end` take at most `room` tokens (`range.end` itself when none fits): a
    /// bisection of the prefix sums.
    pub(crate) fn first_within(&self, range: std::ops::Range<usize>, room: u64) -> usize {
        let end = range.end.min(self.sums.len().saturating_sub(1));
        let start = range.start.min(end);
        let Some(&total) = self.sums.get(end) else { return end };
        let least = total.saturating_sub(room);
        let sums = self.sums.get(start..=end).unwrap_or_default();
        start + sums.partition_point(|&sum| sum < least)
    }

    /// Tokens of the message at `pos`.
    pub(crate) fn at(&self, pos: usize) -> u64 {
        self.range(pos..pos + 1)
    }
}

impl Default for History<'static> {
    fn default() -> Self {
        History::new()
    }
}

impl<'m> From<&'m [Message]> for History<'m> {
    fn from(messages: &'m [Message]) -> Self {
        History::with_messages(Cow::Borrowed(messages))
    }
}

impl<'m> From<&'m Vec<Message>> for History<'m> {
    fn from(messages: &'m Vec<Message>) -> Self {
        History::with_messages(Cow::Borrowed(messages.as_slice()))
    }
}

impl From<Vec<Message>> for History<'static> {
    fn from(messages: Vec<Message>) -> Self {
        History::with_messages(Cow::Owned(messages))
    }
}

impl fmt::Debug for History<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("History")
            .field("id", &self.id)
            .field("len", &self.messages.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    #[test]
    fn an_unmemoised_message_is_counted_again_only_when_it_changed() {
        let history = History::from(vec![Message::user("a"), Message::tool_result("1", "b")]);
        let counted = Cell::new(0);
        let count = |message: &Message| {
            counted.set(counted.get() + 1);
            message.text().len() as u64
        };
        let cut = Message::tool_result("1", "a cut");
        assert_eq!(history.count_unmemoised(7, 1, &cut, count), 5);
        assert_eq!(history.count_unmemoised(7, 1, &cut.clone(), count), 5);
        assert_eq!(counted.get(), 1, "the same message at the same position is not recounted");
        let other = Message::tool_result("1", "another cut");
        assert_eq!(history.count_unmemoised(7, 1, &other, count), 11);
        assert_eq!(history.count_unmemoised(8, 1, &cut, count), 5);
        assert_eq!(history.count_unmemoised(7, 0, &cut, count), 5);
        assert_eq!(counted.get(), 4, "another message, counter or position is counted");
        for pos in 2..40 {
            history.count_unmemoised(7, pos, &cut, count);
        }
        assert_eq!(history.count_unmemoised(7, 1, &cut, count), 5);
        assert_eq!(counted.get(), 4 + 38 + 1, "only the last few are kept");
    }
}
