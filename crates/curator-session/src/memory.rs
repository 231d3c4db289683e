//! `MemoryStore`: the in-process session store.

use std::collections::{BTreeMap, HashMap};
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

#[derive(Debug, Default, Clone)]
struct Inner {
    /// Where each message id is recorded, for O(1) duplicate checks.
    ids: HashMap<MessageId, (EvaluationId, u64)>,
    evaluations: HashMap<EvaluationId, Evaluation>,
    /// Evaluations in the order their first entry was appended, to break time ties.
    order: Vec<EvaluationId>,
    checkpoints: HashMap<String, Checkpoint>,
}

#[derive(Debug, Default, Clone)]
struct Evaluation {
    entries: BTreeMap<u64, Entry>,
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
            self.evaluations.get(&entry.evaluation_id).and_then(|e| e.entries.get(&entry.sequence))
        {
            return Err(Error::SequenceTaken {
                evaluation: entry.evaluation_id,
                sequence: entry.sequence,
                existing: existing.id,
            });
        }
        Ok(Appended::New)
    }

    fn insert(&mut self, entry: Entry) {
        self.ids.insert(entry.id, (entry.evaluation_id, entry.sequence));
        let evaluation = self.evaluations.entry(entry.evaluation_id).or_insert_with(|| {
            self.order.push(entry.evaluation_id);
            Evaluation::default()
        });
        evaluation.entries.insert(entry.sequence, entry);
    }

    fn summaries(&self) -> Vec<EvaluationSummary> {
        let mut out: Vec<(usize, EvaluationSummary)> = self
            .order
            .iter()
            .enumerate()
            .filter_map(|(rank, id)| {
                let entries = &self.evaluations.get(id)?.entries;
                let first = entries.values().map(|e| e.created_at).min()?;
                let last = entries.values().map(|e| e.created_at).max()?;
                Some((
                    rank,
                    EvaluationSummary {
                        evaluation_id: *id,
                        prompt: entries.values().find_map(|e| e.prompt.clone()),
                        messages: entries.len() as u64,
                        turns: entries.values().map(|e| e.turn).max().unwrap_or(0),
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
        let mut staged: HashMap<MessageId, ()> = HashMap::new();
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
        Ok(self
            .read()
            .evaluations
            .get(&evaluation)
            .map(|e| e.entries.values().cloned().collect())
            .unwrap_or_default())
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
                entries.extend(evaluation.entries.values().cloned());
            }
        }
        let mut checkpoints: Vec<Checkpoint> = inner.checkpoints.values().cloned().collect();
        checkpoints.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Snapshot::new(entries, checkpoints))
    }

    fn restore(&self, snapshot: &Snapshot) -> Result<()> {
        snapshot.validate()?;
        let mut fresh = Inner::default();
        for entry in &snapshot.entries {
            fresh.insert(entry.clone());
        }
        for checkpoint in &snapshot.checkpoints {
            fresh.checkpoints.insert(checkpoint.name.clone(), checkpoint.clone());
        }
        *self.write() = fresh;
        Ok(())
    }
}
