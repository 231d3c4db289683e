//! Where summaries are memoised.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// Memoises summaries by the identity of what they summarize (a key computed from the
/// summarizer and the folded messages' content), so a folded range is summarized once.
///
/// Implement it over a persistent store (a session checkpoint, a file) to keep summaries
/// across restarts: a resumed conversation then shows the identical view without calling the
/// summarizer again.
///
/// # Examples
///
/// ```
/// use curator::strategies::{MemorySummaryStore, SummaryStore};
///
/// let store = MemorySummaryStore::default();
/// store.put(7, "the user asked for a refund");
/// assert_eq!(store.get(7).as_deref(), Some("the user asked for a refund"));
/// assert_eq!(store.len(), 1);
/// ```
pub trait SummaryStore: Send + Sync {
    /// The summary stored under `key`.
    fn get(&self, key: u64) -> Option<String>;

    /// Stores a summary.
    fn put(&self, key: u64, summary: &str);
}

/// A [`SummaryStore`] in memory.
#[derive(Debug, Default)]
pub struct MemorySummaryStore {
    summaries: Mutex<HashMap<u64, String>>,
}

impl MemorySummaryStore {
    /// Number of summaries held.
    pub fn len(&self) -> usize {
        self.summaries.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every summary, by key (to persist them).
    pub fn entries(&self) -> Vec<(u64, String)> {
        let mut all: Vec<_> = self
            .summaries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(k, v)| (*k, v.clone()))
            .collect();
        all.sort_unstable();
        all
    }
}

impl SummaryStore for MemorySummaryStore {
    fn get(&self, key: u64) -> Option<String> {
        self.summaries.lock().unwrap_or_else(PoisonError::into_inner).get(&key).cloned()
    }

    fn put(&self, key: u64, summary: &str) {
        self.summaries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, summary.to_owned());
    }
}
