//! Versioned JSON snapshots of a whole store.

use std::collections::HashSet;

use curator_model::Entry;

use crate::snapshot_json::{SNAPSHOT_FORMAT, SNAPSHOT_VERSION};
use crate::{Checkpoint, Error, Result};

/// Everything a store holds: every entry of every evaluation and every checkpoint, in a
/// versioned JSON format shared by all stores, so a snapshot moves between them.
///
/// Entries are ordered by evaluation (first message first) and sequence.
///
/// # Examples
///
/// ```
/// use curator_model::{Entry, EvaluationId, Message};
/// use curator_session::{MemoryStore, SessionStore, Snapshot};
///
/// let store = MemoryStore::new();
/// store.append(&Entry::builder(EvaluationId::new(), Message::system("s")).build()?)?;
/// let json = store.snapshot()?.to_json()?;
///
/// let copy = MemoryStore::new();
/// copy.restore(&Snapshot::from_json(&json)?)?;
/// assert_eq!(copy.snapshot()?, store.snapshot()?);
/// assert!(Snapshot::from_json(r#"{"format": "curator.session.snapshot", "version": 99}"#).is_err());
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Snapshot {
    format: String,
    version: u32,
    /// The recorded entries.
    pub entries: Vec<Entry>,
    /// The checkpoints, latest version of each.
    pub checkpoints: Vec<Checkpoint>,
}

#[derive(serde::Deserialize)]
struct Header {
    format: Option<String>,
    version: Option<u32>,
}

impl Snapshot {
    /// A snapshot of these entries and checkpoints.
    pub fn new(entries: Vec<Entry>, checkpoints: Vec<Checkpoint>) -> Self {
        Self { format: SNAPSHOT_FORMAT.to_owned(), version: SNAPSHOT_VERSION, entries, checkpoints }
    }

    /// The snapshot as JSON text.
    ///
    /// # Errors
    ///
    /// [`Error::Store`] if serialisation fails (it does not for snapshots built by stores).
    pub fn to_json(&self) -> Result<String> {
        let estimate = self.entries.iter().map(|e| 256 + e.message.text().len() * 9 / 8).sum();
        crate::snapshot_json::write(self.entries.iter(), &self.checkpoints, estimate)
    }

    /// Reads a snapshot, checking its format, version and consistency.
    ///
    /// # Errors
    ///
    /// [`Error::SnapshotRestore`] saying why: not JSON, not a curator snapshot, a version this
    /// build does not know, or inconsistent content.
    pub fn from_json(json: &str) -> Result<Self> {
        let snapshot = Self::from_json_unchecked(json)?;
        snapshot.validate()?;
        Ok(snapshot)
    }

    /// Reads a snapshot, checking its format and version but not its consistency, for a
    /// store that checks consistency while loading.
    pub(crate) fn from_json_unchecked(json: &str) -> Result<Self> {
        if let Some((entries, checkpoints)) = crate::snapshot_json::read(json) {
            return Ok(Snapshot::new(entries, checkpoints));
        }
        let snapshot: Snapshot = match serde_json::from_str(json) {
            Ok(snapshot) => snapshot,
            Err(e) => {
                // Say the most useful thing: a foreign document or an unknown version before
                // a shape error deep inside.
                let header = serde_json::from_str::<Header>(json).ok();
                return Err(match header {
                    Some(Header { format: Some(f), .. }) if f != SNAPSHOT_FORMAT => {
                        restore_error(format!("format is `{f}`, not `{SNAPSHOT_FORMAT}`"))
                    }
                    Some(Header { version: Some(v), .. }) if v != SNAPSHOT_VERSION => {
                        unknown_version(v)
                    }
                    _ => Error::SnapshotRestore {
                        reason: "not a valid snapshot".into(),
                        source: Some(Box::new(e)),
                    },
                });
            }
        };
        if snapshot.format != SNAPSHOT_FORMAT {
            return Err(restore_error(format!(
                "format is `{}`, not `{SNAPSHOT_FORMAT}`",
                snapshot.format
            )));
        }
        if snapshot.version != SNAPSHOT_VERSION {
            return Err(unknown_version(snapshot.version));
        }
        Ok(snapshot)
    }

    /// The format version.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Checks that no two entries share a message id or an `(evaluation, sequence)`, and no
    /// two checkpoints a name.
    ///
    /// # Errors
    ///
    /// [`Error::SnapshotRestore`] naming the first conflict.
    pub fn validate(&self) -> Result<()> {
        if self.version != SNAPSHOT_VERSION {
            return Err(unknown_version(self.version));
        }
        let mut ids = HashSet::with_capacity(self.entries.len());
        let mut places = HashSet::with_capacity(self.entries.len());
        for (i, entry) in self.entries.iter().enumerate() {
            if !ids.insert(entry.id) {
                return Err(restore_error(format!(
                    "entry {i}: message id {} appears twice",
                    entry.id
                )));
            }
            if !places.insert((entry.evaluation_id, entry.sequence)) {
                return Err(restore_error(format!(
                    "entry {i}: evaluation {} has two entries at sequence {}",
                    entry.evaluation_id, entry.sequence
                )));
            }
        }
        let mut names = HashSet::new();
        for checkpoint in &self.checkpoints {
            if !names.insert(checkpoint.name.as_str()) {
                return Err(restore_error(format!(
                    "checkpoint `{}` appears twice",
                    checkpoint.name
                )));
            }
        }
        Ok(())
    }
}

fn restore_error(reason: String) -> Error {
    Error::SnapshotRestore { reason, source: None }
}

fn unknown_version(version: u32) -> Error {
    restore_error(format!(
        "snapshot version {version} is not supported (this build reads version {SNAPSHOT_VERSION})"
    ))
}
