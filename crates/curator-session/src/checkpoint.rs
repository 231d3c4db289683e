//! Checkpoints: named, versioned JSON documents kept beside the record.

use chrono::{DateTime, Utc};
use serde_json::Value;

/// A named, versioned JSON document kept beside the record (loop state, task state,
/// summaries).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Checkpoint {
    /// The name.
    pub name: String,
    /// 1 for the first document saved under the name, then +1 for each save.
    pub version: u64,
    /// The document.
    pub document: Value,
    /// When this version was saved.
    pub saved_at: DateTime<Utc>,
}

impl Checkpoint {
    /// Version 1 of a checkpoint (stores set the version they hold).
    pub fn new(name: String, document: Value, saved_at: DateTime<Utc>) -> Self {
        Self { name, version: 1, document, saved_at }
    }
}
