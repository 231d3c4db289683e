//! The memo of what a chain of message maps made of each history message.
//!
//! Views read it once per message they show, in position order, so it is laid out for that:
//! pages of consecutive positions per chain key, each slot set once. Reading a slot of an
//! existing page takes the shared lock only; a page is added under the exclusive lock.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use curator_model::Message;

use crate::fx::FxBuild;

/// Positions per page.
const PAGE: u32 = 64;

/// One page: the slots of `PAGE` consecutive positions of one chain.
type Page = [OnceLock<Option<Memo>>; PAGE as usize];

/// A transformation that changed a message, with its token count once asked.
#[derive(Debug)]
pub(crate) struct Memo {
    pub(crate) message: Arc<Message>,
    /// `(counter key, tokens)` of the transformed message, for the first counter that asked.
    tokens: OnceLock<(u64, u64)>,
}

impl Memo {
    /// The tokens of the message under the counter `key`, counted by `count` the first time
    /// (only the first counter's count is kept).
    pub(crate) fn tokens(&self, key: u64, count: impl FnOnce(&Message) -> u64) -> u64 {
        match self.tokens.get() {
            Some(&(k, n)) if k == key => n,
            Some(_) => count(&self.message),
            None => {
                let n = count(&self.message);
                let _ = self.tokens.set((key, n));
                n
            }
        }
    }
}

/// Per `(chain key, position)`: the transformed message, or `None` when the chain left it
/// unchanged.
#[derive(Debug, Default)]
pub(crate) struct MemoTable {
    pages: RwLock<HashMap<(u64, u32), Box<Page>, FxBuild>>,
}

impl MemoTable {
    /// Reads the memo of `chain` at `pos` with `read` (`None` when the chain leaves the
    /// message unchanged), running `compute` first on a miss (without holding the lock).
    pub(crate) fn with<T>(
        &self,
        chain: u64,
        pos: u32,
        compute: impl FnOnce() -> Option<Arc<Message>>,
        read: impl FnOnce(Option<&Memo>) -> T,
    ) -> T {
        let page = (chain, pos / PAGE);
        let slot = (pos % PAGE) as usize;
        {
            let pages = self.pages.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(hit) = pages.get(&page).and_then(|p| p[slot].get()) {
                return read(hit.as_ref());
            }
        }
        let mut memo = Some(compute().map(|message| Memo { message, tokens: OnceLock::new() }));
        {
            let pages = self.pages.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(p) = pages.get(&page) {
                return read(p[slot].get_or_init(|| memo.take().flatten()).as_ref());
            }
        }
        // A new page is added under the exclusive lock, and read (tokens counted) under the
        // shared one, so that other readers do not wait for `read`.
        {
            let mut pages = self.pages.write().unwrap_or_else(PoisonError::into_inner);
            let p = pages
                .entry(page)
                .or_insert_with(|| Box::new(std::array::from_fn(|_| OnceLock::new())));
            p[slot].get_or_init(|| memo.take().flatten());
        }
        // Pages are never removed while the table lives, so the slot is set.
        let pages = self.pages.read().unwrap_or_else(PoisonError::into_inner);
        read(pages.get(&page).and_then(|p| p[slot].get()).and_then(Option::as_ref))
    }
}

/// The token counts of one chain's results under one counter, one slot per position: what
/// the memo knows, laid out densely. A compaction asks for the tokens of thousands of units
/// spread over the whole history; reading them from an array of four bytes per position
/// touches a cache line per sixteen positions where the memo's pages touch one or two per
/// message.
#[derive(Debug, Default)]
pub(crate) struct ChainCounts {
    /// Per position: `0` when not known yet, else the tokens plus one.
    slots: RwLock<Vec<AtomicU32>>,
}

impl ChainCounts {
    /// The tokens at `pos`, when set.
    pub(crate) fn get(&self, pos: usize) -> Option<u64> {
        let slots = self.slots.read().unwrap_or_else(PoisonError::into_inner);
        let stored = slots.get(pos)?.load(Ordering::Relaxed);
        stored.checked_sub(1).map(u64::from)
    }

    /// Sets the tokens at `pos` (a count too large for a slot is not kept: it is asked
    /// again from the memo).
    pub(crate) fn set(&self, pos: usize, tokens: u64) {
        let Some(stored) = u32::try_from(tokens).ok().and_then(|t| t.checked_add(1)) else {
            return;
        };
        {
            let slots = self.slots.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(slot) = slots.get(pos) {
                slot.store(stored, Ordering::Relaxed);
                return;
            }
        }
        let mut slots = self.slots.write().unwrap_or_else(PoisonError::into_inner);
        if slots.len() <= pos {
            // Grown by half again at least, so that a growing history reallocates rarely.
            let len = (pos + 1).max(slots.len() + slots.len() / 2);
            slots.resize_with(len, AtomicU32::default);
        }
        slots[pos].store(stored, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    #[test]
    fn each_slot_is_computed_once_per_chain_and_keeps_unchanged_apart() {
        let table = MemoTable::default();
        let runs = Cell::new(0);
        let compute = |pos: u32| {
            runs.set(runs.get() + 1);
            pos.is_multiple_of(2).then(|| Arc::new(Message::user(format!("changed {pos}"))))
        };
        let text = |m: Option<&Memo>| m.map(|m| m.message.text().into_owned());
        for round in 0..2 {
            for pos in [0_u32, 1, 63, 64, 65, 1_000] {
                let expected = pos.is_multiple_of(2).then(|| format!("changed {pos}"));
                assert_eq!(table.with(7, pos, || compute(pos), text), expected, "round {round}");
            }
        }
        assert_eq!(runs.get(), 6, "the second round reads the memo");
        // Another chain key has slots of its own.
        assert_eq!(table.with(8, 0, || None, text), None);
        assert_eq!(runs.get(), 6);
    }

    #[test]
    fn chain_counts_keep_what_was_set_and_nothing_else() {
        let counts = ChainCounts::default();
        assert_eq!(counts.get(0), None);
        counts.set(5, 0);
        counts.set(1_000, 42);
        assert_eq!(counts.get(5), Some(0), "a count of zero is told from an unknown one");
        assert_eq!(counts.get(1_000), Some(42));
        assert_eq!(counts.get(4), None);
        assert_eq!(counts.get(999), None);
        assert_eq!(counts.get(5_000), None);
        counts.set(7, u64::from(u32::MAX));
        assert_eq!(counts.get(7), None, "a count too large for a slot is not kept");
        counts.set(7, u64::from(u32::MAX) - 1);
        assert_eq!(counts.get(7), Some(u64::from(u32::MAX) - 1));
    }

    #[test]
    fn tokens_are_counted_once_for_the_first_counter() {
        let table = MemoTable::default();
        let counted = Cell::new(0);
        let counted = &counted;
        let count = |n| {
            move |_: &Message| {
                counted.set(counted.get() + 1);
                n
            }
        };
        let make = || Some(Arc::new(Message::user("x")));
        assert_eq!(table.with(1, 3, make, |m| m.map(|m| m.tokens(10, count(5)))), Some(5));
        assert_eq!(table.with(1, 3, make, |m| m.map(|m| m.tokens(10, count(99)))), Some(5));
        assert_eq!(counted.get(), 1);
        // Another counter counts each time rather than replacing the first.
        assert_eq!(table.with(1, 3, make, |m| m.map(|m| m.tokens(11, count(7)))), Some(7));
        assert_eq!(table.with(1, 3, make, |m| m.map(|m| m.tokens(10, count(99)))), Some(5));
    }
}
