//! The token counts of a memoised chain of maps, found once per tally.

use std::cell::RefCell;
use std::sync::Arc;

use crate::History;
use crate::memo::ChainCounts;

/// The token counts of one memoised chain (the view's whole chain, as a rule), found in the
/// history once per tally rather than once per message.
#[derive(Debug, Default)]
pub(super) struct ChainSlots {
    found: RefCell<Option<(u64, u64, Arc<ChainCounts>)>>,
}

impl ChainSlots {
    /// Calls `with` with the counts of `chain` under the counter `key`.
    pub(super) fn with<T>(
        &self,
        history: &History<'_>,
        chain: u64,
        key: u64,
        with: impl FnOnce(&ChainCounts) -> T,
    ) -> T {
        let mut found = self.found.borrow_mut();
        match &*found {
            Some((c, k, counts)) if *c == chain && *k == key => with(counts),
            _ => {
                let counts = history.chain_counts(chain, key);
                let out = with(&counts);
                *found = Some((chain, key, counts));
                out
            }
        }
    }
}
