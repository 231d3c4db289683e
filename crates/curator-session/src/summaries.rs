//! Summaries kept in the session store, so they survive a restart.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use curator_strategies::SummaryStore;
use serde_json::Value;

use crate::{Result, SessionStore};

/// The checkpoint that holds the summaries.
pub const SUMMARIES_CHECKPOINT: &str = "curator.summaries";

/// A [`SummaryStore`] kept in a [`SessionStore`] checkpoint: a resumed conversation curated
/// with the same summarizer shows the identical view without calling it again.
///
/// The summaries are read once when the store is opened and kept in memory; each new summary
/// is written through to the checkpoint (a new version of it) right away. A failed write is
/// not fatal to curation: the summary stays memoised in memory and is written with the next
/// one.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use curator::session::{MemoryStore, SessionSummaries};
/// use curator::strategies::SummaryStore;
///
/// let store = Arc::new(MemoryStore::new());
/// let summaries = SessionSummaries::open(store.clone())?;
/// summaries.put(1, "the user wants a refund");
///
/// // After a restart, over the same session store:
/// let reopened = SessionSummaries::open(store)?;
/// assert_eq!(reopened.get(1).as_deref(), Some("the user wants a refund"));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct SessionSummaries<S> {
    store: S,
    cache: Mutex<HashMap<u64, String>>,
}

impl<S: SessionStore> SessionSummaries<S> {
    /// Reads the summaries saved in `store`.
    ///
    /// # Errors
    ///
    /// A store error, or [`Error::Incompatible`](crate::Error::Incompatible) when the
    /// checkpoint is not a map of summaries.
    pub fn open(store: S) -> Result<Self> {
        let mut cache = HashMap::new();
        if let Some(checkpoint) = store.checkpoint(SUMMARIES_CHECKPOINT)? {
            let Value::Object(map) = checkpoint.document else {
                return Err(crate::Error::Incompatible {
                    backend: "summaries",
                    source: format!(
                        "checkpoint `{SUMMARIES_CHECKPOINT}` is not a map of summaries"
                    )
                    .into(),
                });
            };
            for (key, summary) in map {
                if let (Ok(key), Value::String(summary)) = (key.parse::<u64>(), summary) {
                    cache.insert(key, summary);
                }
            }
        }
        Ok(Self { store, cache: Mutex::new(cache) })
    }

    /// Number of summaries held.
    pub fn len(&self) -> usize {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<S: SessionStore> SummaryStore for SessionSummaries<S> {
    fn get(&self, key: u64) -> Option<String> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner).get(&key).cloned()
    }

    fn put(&self, key: u64, summary: &str) {
        let document = {
            let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            cache.insert(key, summary.to_owned());
            Value::Object(
                cache.iter().map(|(k, v)| (k.to_string(), Value::String(v.clone()))).collect(),
            )
        };
        // Kept in memory either way; a failed write is retried with the next summary.
        let _ = self.store.put_checkpoint(SUMMARIES_CHECKPOINT, &document);
    }
}
