//! `MemoryStore`: the in-process session store.

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};

use chrono::Utc;
use curator_model::{Entry, EvaluationId, MessageId};
use serde_json::Value;

use crate::{
    Appended, Checkpoint, Error, EvaluationSummary, Result, SessionKey, SessionStore, Snapshot,
};

/// A [`SessionStore`] in memory: fast, shared between threads, gone with the process (take
/// [`snapshot`](SessionStore::snapshot)s, or use the SQLite store, to keep it).
///
/// # Examples
///
/// ```
/// use curator::model::{Entry, EvaluationId, Message};
/// use curator::session::{Appended, MemoryStore, SessionKey, SessionStore};
///
/// let store = MemoryStore::new();
/// let key = SessionKey::default();
/// let entry = Entry::builder(EvaluationId::new(), Message::system("s")).build()?;
/// assert_eq!(store.append(&key, &entry)?, Appended::New);
/// assert_eq!(store.append(&key, &entry)?, Appended::Duplicate);
/// assert_eq!(store.entries(entry.evaluation_id)?.len(), 1);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: RwLock<Inner>,
    /// Live claims by key (see [`ClaimStore`](crate::ClaimStore)), shared with the claims'
    /// handles so that a claim outlives the borrow it was made through.
    claims: std::sync::Arc<std::sync::Mutex<Claims>>,
}

/// The claims of a [`MemoryStore`]: the holder and end of each key's lease.
#[derive(Debug, Default)]
struct Claims {
    held: HashMap<SessionKey, (u64, std::time::Instant)>,
    next_holder: u64,
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
    /// The session key it belongs to.
    key: SessionKey,
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

    /// The claims, locked, once `fence` is found to be the current claim on `key`: the
    /// caller writes while it holds them, so that no claim can be taken between the check
    /// and the write. [`Error::Fenced`] otherwise.
    fn fenced(
        &self,
        key: &SessionKey,
        fence: &crate::Fence,
    ) -> Result<std::sync::MutexGuard<'_, Claims>> {
        let claims = self.claims.lock().unwrap_or_else(PoisonError::into_inner);
        let current = claims.held.get(key).map(|(holder, _)| *holder);
        if current != Some(fence.token) || fence.key != *key {
            return Err(Error::Fenced { key: key.clone(), token: fence.token, current });
        }
        Ok(claims)
    }
}

impl Inner {
    /// What appending `entry` under `key` would do, without doing it.
    fn check(&self, key: &SessionKey, entry: &Entry) -> Result<Appended> {
        let evaluation = self.evaluations.get(&entry.evaluation_id);
        if let Some(evaluation) = evaluation
            && &evaluation.key != key
        {
            return Err(Error::KeyMismatch {
                evaluation: entry.evaluation_id,
                expected: key.clone(),
                found: evaluation.key.clone(),
            });
        }
        if self.ids.contains_key(&entry.id) {
            return Ok(Appended::Duplicate);
        }
        if let Some(existing) = evaluation.and_then(|e| e.get(entry.sequence)) {
            return Err(Error::SequenceTaken {
                evaluation: entry.evaluation_id,
                sequence: entry.sequence,
                existing: existing.id,
            });
        }
        Ok(Appended::New)
    }

    /// A store holding the snapshot's content, once it passed [`Snapshot::validate`].
    fn from_snapshot(snapshot: Snapshot) -> Result<Self> {
        snapshot.validate()?;
        let mut fresh = Inner::default();
        fresh.ids.reserve(snapshot.entries.len());
        let sessions = snapshot.sessions;
        for entry in snapshot.entries {
            let key = sessions.get(&entry.evaluation_id).cloned().unwrap_or_default();
            fresh.insert(key, entry);
        }
        for checkpoint in snapshot.checkpoints {
            fresh.checkpoints.insert(checkpoint.name.clone(), checkpoint);
        }
        Ok(fresh)
    }

    /// The evaluations whose key is not the default, as a snapshot lists them.
    fn sessions(&self) -> std::collections::BTreeMap<EvaluationId, SessionKey> {
        self.evaluations
            .iter()
            .filter(|(_, e)| !e.key.is_default())
            .map(|(id, e)| (*id, e.key.clone()))
            .collect()
    }

    fn insert(&mut self, key: SessionKey, entry: Entry) {
        self.bytes_hint += 256
            + entry.message.content().map_or(0, |c| match c {
                curator_model::Content::Text(t) => t.len() + t.len() / 8,
                curator_model::Content::Parts(_) => 1_024,
            });
        self.ids.insert(entry.id, (entry.evaluation_id, entry.sequence));
        let evaluation = self.evaluations.entry(entry.evaluation_id).or_insert_with(|| {
            self.order.push(entry.evaluation_id);
            Evaluation { key, entries: Vec::new() }
        });
        evaluation.insert(entry);
    }

    fn summaries(&self, key: Option<&SessionKey>) -> Vec<EvaluationSummary> {
        let mut out: Vec<(usize, EvaluationSummary)> = self
            .order
            .iter()
            .enumerate()
            .filter_map(|(rank, id)| {
                let evaluation = self.evaluations.get(id)?;
                if key.is_some_and(|k| k != &evaluation.key) {
                    return None;
                }
                let entries = &evaluation.entries;
                let first = entries.iter().map(|e| e.created_at).min()?;
                let last = entries.iter().map(|e| e.created_at).max()?;
                Some((
                    rank,
                    EvaluationSummary {
                        evaluation_id: *id,
                        key: evaluation.key.clone(),
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
    fn append(&self, key: &SessionKey, entry: &Entry) -> Result<Appended> {
        key.check()?;
        let mut inner = self.write();
        let outcome = inner.check(key, entry)?;
        if outcome == Appended::New {
            inner.insert(key.clone(), entry.clone());
        }
        Ok(outcome)
    }

    fn delete_evaluations(&self, key: &SessionKey, evaluations: &[EvaluationId]) -> Result<u64> {
        let mut inner = self.write();
        let mut messages = 0;
        for id in evaluations {
            if inner.evaluations.get(id).is_none_or(|e| &e.key != key) {
                continue;
            }
            if let Some(evaluation) = inner.evaluations.remove(id) {
                for entry in &evaluation.entries {
                    inner.ids.remove(&entry.id);
                }
                messages += evaluation.entries.len() as u64;
            }
            inner.order.retain(|kept| kept != id);
            for name in crate::evaluation_checkpoints(*id) {
                inner.checkpoints.remove(&name);
            }
        }
        Ok(messages)
    }

    fn delete_checkpoints(&self, names: &[&str]) -> Result<u64> {
        let mut inner = self.write();
        Ok(names.iter().filter(|name| inner.checkpoints.remove(**name).is_some()).count() as u64)
    }

    fn append_batch_fenced(
        &self,
        key: &SessionKey,
        entries: &[Entry],
        fence: &crate::Fence,
    ) -> Result<Vec<Appended>> {
        // The claims stay locked through the append: no claim can be taken in between.
        let claims = self.fenced(key, fence)?;
        let appended = self.append_batch(key, entries);
        drop(claims);
        appended
    }

    fn put_checkpoint_fenced(
        &self,
        name: &str,
        document: &Value,
        fence: &crate::Fence,
    ) -> Result<u64> {
        // As for a fenced append: the claims stay locked through the write.
        let claims = self.fenced(&fence.key, fence)?;
        let version = self.put_checkpoint(name, document);
        drop(claims);
        version
    }

    fn append_batch(&self, key: &SessionKey, entries: &[Entry]) -> Result<Vec<Appended>> {
        key.check()?;
        let mut inner = self.write();
        // Check the whole batch (against the store and itself) before changing anything.
        let mut staged: Ids<()> = Ids::default();
        let mut places: HashMap<(EvaluationId, u64), MessageId> = HashMap::new();
        let mut outcomes = Vec::with_capacity(entries.len());
        for entry in entries {
            let mut outcome = inner.check(key, entry)?;
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
                inner.insert(key.clone(), entry.clone());
            }
        }
        Ok(outcomes)
    }

    fn entries(&self, evaluation: EvaluationId) -> Result<Vec<Entry>> {
        Ok(self.read().evaluations.get(&evaluation).map(|e| e.entries.clone()).unwrap_or_default())
    }

    fn entries_from(&self, evaluation: EvaluationId, from: u64) -> Result<Vec<Entry>> {
        let inner = self.read();
        let Some(found) = inner.evaluations.get(&evaluation) else { return Ok(Vec::new()) };
        // Entries are kept ordered by sequence: the later ones are a suffix.
        let start = found.entries.partition_point(|e| e.sequence < from);
        Ok(found.entries[start..].to_vec())
    }

    fn evaluations(&self) -> Result<Vec<EvaluationSummary>> {
        Ok(self.read().summaries(None))
    }

    fn evaluations_of(&self, key: &SessionKey) -> Result<Vec<EvaluationSummary>> {
        Ok(self.read().summaries(Some(key)))
    }

    fn evaluation(&self, evaluation: EvaluationId) -> Result<Option<EvaluationSummary>> {
        let inner = self.read();
        let Some(found) = inner.evaluations.get(&evaluation) else { return Ok(None) };
        let entries = &found.entries;
        let (Some(first), Some(last)) = (
            entries.iter().map(|e| e.created_at).min(),
            entries.iter().map(|e| e.created_at).max(),
        ) else {
            return Ok(None);
        };
        let mut summary = EvaluationSummary::new(evaluation, found.key.clone(), first);
        summary.prompt = entries.iter().find_map(|e| e.prompt.clone());
        summary.messages = entries.len() as u64;
        summary.turns = entries.iter().map(|e| e.turn).max().unwrap_or(0);
        summary.last_at = last;
        Ok(Some(summary))
    }

    fn latest_evaluation_of(
        &self,
        key: &SessionKey,
        prompt: &curator_model::PromptRef,
    ) -> Result<Option<EvaluationId>> {
        let inner = self.read();
        // The latest first message (sequence 0) among the key's evaluations for the prompt;
        // ties go to the evaluation appended last.
        let mut best: Option<(chrono::DateTime<Utc>, usize, EvaluationId)> = None;
        for (rank, id) in inner.order.iter().enumerate() {
            let Some(evaluation) = inner.evaluations.get(id) else { continue };
            let Some(first) = evaluation.entries.first() else { continue };
            if &evaluation.key != key
                || first.sequence != 0
                || first.prompt.as_ref() != Some(prompt)
            {
                continue;
            }
            let at = first.created_at;
            if best.is_none_or(|(b, r, _)| (at, rank) >= (b, r)) {
                best = Some((at, rank, *id));
            }
        }
        Ok(best.map(|(_, _, id)| id))
    }

    fn put_checkpoint(&self, name: &str, document: &Value) -> Result<u64> {
        // The same rule as the stores that keep JSON text: what is saved reads back.
        CODEC.checkpoint_document_depth(name, document)?;
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

    fn put_checkpoints(&self, checkpoints: &[(&str, &Value)]) -> Result<Vec<u64>> {
        for (name, document) in checkpoints {
            CODEC.checkpoint_document_depth(name, document)?;
        }
        // One lock: readers see all of them or none.
        let mut inner = self.write();
        let now = Utc::now();
        Ok(checkpoints
            .iter()
            .map(|(name, document)| {
                let version = inner.checkpoints.get(*name).map_or(1, |c| c.version + 1);
                inner.checkpoints.insert(
                    (*name).to_owned(),
                    Checkpoint {
                        name: (*name).to_owned(),
                        version,
                        document: (*document).clone(),
                        saved_at: now,
                    },
                );
                version
            })
            .collect())
    }

    fn checkpoint(&self, name: &str) -> Result<Option<Checkpoint>> {
        Ok(self.read().checkpoints.get(name).cloned())
    }

    fn checkpoint_names(&self, prefix: &str) -> Result<Vec<String>> {
        let mut names: Vec<String> =
            self.read().checkpoints.keys().filter(|n| n.starts_with(prefix)).cloned().collect();
        names.sort();
        Ok(names)
    }

    fn snapshot(&self) -> Result<Snapshot> {
        let inner = self.read();
        let mut entries = Vec::with_capacity(inner.ids.len());
        for summary in inner.summaries(None) {
            if let Some(evaluation) = inner.evaluations.get(&summary.evaluation_id) {
                entries.extend(evaluation.entries.iter().cloned());
            }
        }
        let mut checkpoints: Vec<Checkpoint> = inner.checkpoints.values().cloned().collect();
        checkpoints.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Snapshot::new(entries, checkpoints).with_sessions(inner.sessions()))
    }

    fn restore(&self, snapshot: &Snapshot) -> Result<()> {
        *self.write() = Inner::from_snapshot(snapshot.clone())?;
        Ok(())
    }

    fn snapshot_json(&self) -> Result<String> {
        let inner = self.read();
        let order = inner.summaries(None);
        let entries = order
            .iter()
            .filter_map(|s| inner.evaluations.get(&s.evaluation_id))
            .flat_map(|e| e.entries.iter());
        let mut checkpoints: Vec<Checkpoint> = inner.checkpoints.values().cloned().collect();
        checkpoints.sort_by(|a, b| a.name.cmp(&b.name));
        crate::snapshot_json::write(entries, &inner.sessions(), &checkpoints, inner.bytes_hint)
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

/// One claim on a [`MemoryStore`].
#[derive(Debug)]
struct MemoryLease {
    claims: std::sync::Arc<std::sync::Mutex<Claims>>,
    key: SessionKey,
    holder: u64,
    lease: std::time::Duration,
}

impl MemoryLease {
    fn claims(&self) -> std::sync::MutexGuard<'_, Claims> {
        self.claims.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl crate::Lease for MemoryLease {
    fn renew(&self) -> Result<()> {
        match self.claims().held.get_mut(&self.key) {
            Some((holder, until)) if *holder == self.holder => {
                *until = std::time::Instant::now() + self.lease;
                Ok(())
            }
            _ => Err(Error::ClaimLost { key: self.key.clone() }),
        }
    }

    fn release(&self) -> Result<()> {
        let mut claims = self.claims();
        if claims.held.get(&self.key).is_some_and(|(holder, _)| *holder == self.holder) {
            claims.held.remove(&self.key);
        }
        Ok(())
    }
}

/// Claims within one process: a claim lasts until it is released, dropped, or its lease runs
/// out without a renewal (a worker thread that died).
/// The memory store's checks of what it is given, the ones the other stores make.
const CODEC: crate::rows::RowCodec = crate::rows::RowCodec::new("memory");

impl crate::ClaimStore for MemoryStore {
    fn claim(&self, key: &SessionKey, lease: std::time::Duration) -> Result<crate::Claim> {
        key.check()?;
        let mut claims = self.claims.lock().unwrap_or_else(PoisonError::into_inner);
        let now = std::time::Instant::now();
        if let Some((_, until)) = claims.held.get(key)
            && *until > now
        {
            return Err(Error::Claimed { key: key.clone(), expires_in: Some(*until - now) });
        }
        claims.next_holder += 1;
        let holder = claims.next_holder;
        claims.held.insert(key.clone(), (holder, now + lease));
        let handle = MemoryLease { claims: self.claims.clone(), key: key.clone(), holder, lease };
        // Holders are numbered from 1 in claim order: the number is the fencing token.
        Ok(crate::Claim::new(key.clone(), lease, Box::new(handle)).with_token(holder))
    }
}
