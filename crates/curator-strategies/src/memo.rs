//! The memo of what a chain of message maps made of each history message.
//!
//! Views read it once per message they show, in position order, so it is laid out for that:
//! pages of consecutive positions per chain key, each slot set once. Reading a slot of an
//! existing page takes the shared lock only; a page is added under the exclusive lock.

use std::collections::HashMap;
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
