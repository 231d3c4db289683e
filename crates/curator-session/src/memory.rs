//! `MemoryStore`: the in-process session store.

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};

use chrono::Utc;
use curator_model::{Entry, EvaluationId, MessageId};
use serde_json::Value;

use crate::{Appended, Checkpoint, Error, EvaluationSummary, Result, SessionStore, Snapshot};

/// A [`SessionStore`] in memory: fast, shared between threads, gone with the process (take
/// [`snapshot`](SessionStore::snapshot)s, or use the SQLite store, to keep it).
///
/// # Examples
///
/// ```
/// use curator_model::{Entry, EvaluationId, Message};
/// use curator_session::{Appended, MemoryStore, SessionStore};
///
/// let store = MemoryStore::new();
/// let entry = Entry::builder(EvaluationId::new(), Message::system("s")).build()?;
/// assert_eq!(store.append(&entry)?, Appended::New);
/// assert_eq!(store.append(&entry)?, Appended::Duplicate);
/// assert_eq!(store.entries(entry.evaluation_id)?.len(), 1);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: RwLock<Inner>,
}

/// Hashes UUID keys by folding their two halves: the second half of a version 4 or 7 id is
/// random already, so mixing it again (as `SipHash` does) only costs time.
#[derive(Default, Clone, Copy)]
struct UuidHasher(u64);

impl std::hash::Hasher for UuidHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = self.0.rotate_left(17) ^ u64::from_le_bytes(word);
        }
    }

    fn write_usize(&mut self, _length: usize) {}
}

type Ids<V> = HashMap<MessageId, V, std::hash::BuildHasherDefault<UuidHasher>>;
type Evaluations = HashMap<EvaluationId, Evaluation, std::hash::BuildHasherDefault<UuidHasher>>;

#[derive(Debug, Default, Clone)]
struct Inner {
    /// Where each message id is recorded, for O(1) duplicate checks.
    ids: Ids<(EvaluationId, u64)>,
    evaluations: Evaluations,
    /// Evaluations in the order their first entry was appended, to break time ties.
    order: Vec<EvaluationId>,
    checkpoints: HashMap<String, Checkpoint>,
    /// A guess at the size of the snapshot JSON, to allocate it at once.
    bytes_hint: usize,
}

#[derive(Debug, Default, Clone)]
struct Evaluation {
    /// Ordered by sequence. Entries nearly always arrive in order, so this is a push; an
    /// out-of-order append is an insertion found by binary search.
    entries: Vec<Entry>,
}

impl Evaluation {
    fn get(&self, sequence: u64) -> Option<&Entry> {
        self.entries.binary_search_by_key(&sequence, |e| e.sequence).ok().map(|i| &self.entries[i])
    }

    fn insert(&mut self, entry: Entry) {
        match self.entries.last() {
            Some(last) if last.sequence > entry.sequence => {
                let at = self.entries.partition_point(|e| e.sequence < entry.sequence);
                self.entries.insert(at, entry);
            }
            _ => self.entries.push(entry),
        }
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Inner {
    /// What appending `entry` would do, without doing it.
    fn check(&self, entry: &Entry) -> Result<Appended> {
        if self.ids.contains_key(&entry.id) {
            return Ok(Appended::Duplicate);
        }
        if let Some(existing) =
            self.evaluations.get(&entry.evaluation_id).and_then(|e| e.get(entry.sequence))
        {
            return Err(Error::SequenceTaken {
                evaluation: entry.evaluation_id,
                sequence: entry.sequence,
                existing: existing.id,
            });
        }
        Ok(Appended::New)
    }

    /// A store holding the snapshot's content, checking its consistency on the way (the
    /// same rules as [`Snapshot::validate`], in one pass).
    fn from_snapshot(snapshot: Snapshot) -> Result<Self> {
        if snapshot.version() != crate::SNAPSHOT_VERSION {
            return snapshot.validate().map(|()| Inner::default());
        }
        let mut fresh = Inner::default();
        fresh.ids.reserve(snapshot.entries.len());
        for (i, entry) in snapshot.entries.into_iter().enumerate() {
            match fresh.check(&entry) {
                Ok(Appended::New) => fresh.insert(entry),
                Ok(Appended::Duplicate) => {
                    return Err(Error::SnapshotRestore {
                        reason: format!("entry {i}: message id {} appears twice", entry.id),
                        source: None,
                    });
                }
                Err(_) => {
                    return Err(Error::SnapshotRestore {
                        reason: format!(
                            "entry {i}: evaluation {} has two entries at sequence {}",
                            entry.evaluation_id, entry.sequence
                        ),
                        source: None,
                    });
                }
            }
        }
        for checkpoint in snapshot.checkpoints {
            let name = checkpoint.name.clone();
            if fresh.checkpoints.insert(name.clone(), checkpoint).is_some() {
                return Err(Error::SnapshotRestore {
                    reason: format!("checkpoint `{name}` appears twice"),
                    source: None,
                });
            }
        }
        Ok(fresh)
    }

    fn insert(&mut self, entry: Entry) {
        self.bytes_hint += 256
            + entry.message.content().map_or(0, |c| match c {
                curator_model::Content::Text(t) => t.len() + t.len() / 8,
                curator_model::Content::Parts(_) => 1_024,
            });
        self.ids.insert(entry.id, (entry.evaluation_id, entry.sequence));
        let evaluation = self.evaluations.entry(entry.evaluation_id).or_insert_with(|| {
            self.order.push(entry.evaluation_id);
            Evaluation::default()
        });
        evaluation.insert(entry);
    }

    fn summaries(&self) -> Vec<EvaluationSummary> {
        let mut out: Vec<(usize, EvaluationSummary)> = self
            .order
            .iter()
            .enumerate()
            .filter_map(|(rank, id)| {
                let entries = &self.evaluations.get(id)?.entries;
                let first = entries.iter().map(|e| e.created_at).min()?;
                let last = entries.iter().map(|e| e.created_at).max()?;
                Some((
                    rank,
                    EvaluationSummary {
                        evaluation_id: *id,
                        prompt: entries.iter().find_map(|e| e.prompt.clone()),
                        messages: entries.len() as u64,
                        turns: entries.iter().map(|e| e.turn).max().unwrap_or(0),
                        first_at: first,
                        last_at: last,
                    },
                ))
            })
            .collect();
        out.sort_by(|(ra, a), (rb, b)| a.first_at.cmp(&b.first_at).then(ra.cmp(rb)));
        out.into_iter().map(|(_, s)| s).collect()
    }
}

impl SessionStore for MemoryStore {
    fn append(&self, entry: &Entry) -> Result<Appended> {
        let mut inner = self.write();
        let outcome = inner.check(entry)?;
        if outcome == Appended::New {
            inner.insert(entry.clone());
        }
        Ok(outcome)
    }

    fn append_batch(&self, entries: &[Entry]) -> Result<Vec<Appended>> {
        let mut inner = self.write();
        // Check the whole batch (against the store and itself) before changing anything.
        let mut staged: Ids<()> = Ids::default();
        let mut places: HashMap<(EvaluationId, u64), MessageId> = HashMap::new();
        let mut outcomes = Vec::with_capacity(entries.len());
        for entry in entries {
            let mut outcome = inner.check(entry)?;
            if outcome == Appended::New && staged.insert(entry.id, ()).is_some() {
                outcome = Appended::Duplicate;
            }
            if outcome == Appended::New
                && let Some(existing) =
                    places.insert((entry.evaluation_id, entry.sequence), entry.id)
            {
                return Err(Error::SequenceTaken {
                    evaluation: entry.evaluation_id,
                    sequence: entry.sequence,
                    existing,
                });
            }
            outcomes.push(outcome);
        }
        for (entry, outcome) in entries.iter().zip(&outcomes) {
            if *outcome == Appended::New {
                inner.insert(entry.clone());
            }
        }
        Ok(outcomes)
    }

    fn entries(&self, evaluation: EvaluationId) -> Result<Vec<Entry>> {
        Ok(self.read().evaluations.get(&evaluation).map(|e| e.entries.clone()).unwrap_or_default())
    }

    fn evaluations(&self) -> Result<Vec<EvaluationSummary>> {
        Ok(self.read().summaries())
    }

    fn put_checkpoint(&self, name: &str, document: &Value) -> Result<u64> {
        let mut inner = self.write();
        let version = inner.checkpoints.get(name).map_or(1, |c| c.version + 1);
        inner.checkpoints.insert(
            name.to_owned(),
            Checkpoint {
                name: name.to_owned(),
                version,
                document: document.clone(),
                saved_at: Utc::now(),
            },
        );
        Ok(version)
    }

    fn checkpoint(&self, name: &str) -> Result<Option<Checkpoint>> {
        Ok(self.read().checkpoints.get(name).cloned())
    }

    fn snapshot(&self) -> Result<Snapshot> {
        let inner = self.read();
        let mut entries = Vec::with_capacity(inner.ids.len());
        for summary in inner.summaries() {
            if let Some(evaluation) = inner.evaluations.get(&summary.evaluation_id) {
                entries.extend(evaluation.entries.iter().cloned());
            }
        }
        let mut checkpoints: Vec<Checkpoint> = inner.checkpoints.values().cloned().collect();
        checkpoints.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Snapshot::new(entries, checkpoints))
    }

    fn restore(&self, snapshot: &Snapshot) -> Result<()> {
        *self.write() = Inner::from_snapshot(snapshot.clone())?;
        Ok(())
    }

    fn snapshot_json(&self) -> Result<String> {
        let inner = self.read();
        let order = inner.summaries();
        let entries = order
            .iter()
            .filter_map(|s| inner.evaluations.get(&s.evaluation_id))
            .flat_map(|e| e.entries.iter());
        let mut checkpoints: Vec<Checkpoint> = inner.checkpoints.values().cloned().collect();
        checkpoints.sort_by(|a, b| a.name.cmp(&b.name));
        crate::snapshot_json::write(entries, &checkpoints, inner.bytes_hint)
    }

    fn restore_json(&self, json: &str) -> Result<()> {
        // Parse and check before taking the lock; then move the entries in without copying.
        let snapshot = Snapshot::from_json_unchecked(json)?;
        let mut fresh = Inner::from_snapshot(snapshot)?;
        fresh.bytes_hint = json.len() + json.len() / 8;
        *self.write() = fresh;
        Ok(())
    }
}
