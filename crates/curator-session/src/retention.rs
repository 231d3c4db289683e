//! Retention: deleting what is no longer needed, never under a worker that drives it.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use curator_model::EvaluationId;

use crate::{ClaimStore, Error, EvaluationSummary, Result, SessionKey, SessionStore};

/// The name of an evaluation's start marks' checkpoint.
pub(crate) fn started_checkpoint(evaluation: EvaluationId) -> String {
    format!("curator.started/{evaluation}")
}

/// The checkpoints kept per evaluation (its start marks and its calls' usage), which a
/// store deletes with the evaluation in
/// [`delete_evaluations`](SessionStore::delete_evaluations).
///
/// # Examples
///
/// ```
/// use curator::model::EvaluationId;
///
/// let evaluation = EvaluationId::new();
/// let names = curator::session::evaluation_checkpoints(evaluation);
/// assert_eq!(names[1], format!("curator.usage/{evaluation}"));
/// ```
pub fn evaluation_checkpoints(evaluation: EvaluationId) -> [String; 2] {
    [started_checkpoint(evaluation), crate::conversation::usage_checkpoint(evaluation)]
}

/// The prefix of the checkpoints that record a key's item log heads: the Python package's
/// sessions name theirs `curator.items/<format>/<key>` (what was popped, which evaluation is
/// live). [`prune`] with [`Prune::Session`] deletes them with the key's evaluations.
pub const ITEM_HEADS: &str = "curator.items/";

/// The names of `key`'s item log heads (see [`ITEM_HEADS`]).
fn item_heads<S: SessionStore>(store: &S, key: &SessionKey) -> Result<Vec<String>> {
    Ok(store
        .checkpoint_names(ITEM_HEADS)?
        .into_iter()
        .filter(|name| {
            name.strip_prefix(ITEM_HEADS)
                .and_then(|rest| rest.split_once('/'))
                .is_some_and(|(_, of)| of == key.as_str())
        })
        .collect())
}

/// What [`prune`] deletes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Prune {
    /// Every evaluation of one session key (a user's right to erasure).
    Session(SessionKey),
    /// All but the newest `keep` evaluations of each session key (by when they started).
    KeepLast(usize),
    /// The evaluations whose newest message is older than this.
    OlderThan(DateTime<Utc>),
}

/// What [`prune`] deleted, or would delete in a dry run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pruned {
    /// The evaluations deleted (would be, in a dry run), oldest first.
    pub evaluations: Vec<EvaluationSummary>,
    /// Their messages.
    pub messages: u64,
    /// Sessions left alone because a worker held a live claim on them (nothing of them was
    /// deleted; prune again later).
    pub claimed: Vec<SessionKey>,
    /// The key's item log heads deleted with its evaluations ([`Prune::Session`] only; see
    /// [`ITEM_HEADS`]), or that would be, in a dry run.
    pub heads: Vec<String>,
    /// Whether nothing was deleted: a dry run.
    pub dry_run: bool,
}

/// How long a prune holds each session's claim while it deletes.
const PRUNE_LEASE: Duration = Duration::from_mins(1);

/// Deletes what `rule` names from `store`: the evaluations (their messages, their start
/// marks) of each session concerned, one session at a time, each under a claim on it, so
/// that a session a worker drives (a live claim) is never touched: it is listed in
/// [`Pruned::claimed`] and left whole. What goes is decided again under the claim, so an
/// evaluation a worker wrote to after the listing is judged by what it holds then. With
/// `dry_run`, nothing is claimed or deleted and the report says what would go (a session
/// held now is listed among what would go: a dry run does not look at claims). Reclaiming the space is the store's (`SqliteStore::vacuum`;
/// PostgreSQL's autovacuum, or `PgStore::vacuum`).
///
/// A worker that writes without claiming the session can still append to a session while
/// it is pruned; claim sessions in workers that share a store with a pruner.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use curator::model::{Message, PromptRef};
/// use curator::session::{ClaimStore, Conversation, MemoryStore, Prune, SessionKey, SessionStore, prune};
///
/// let store = MemoryStore::new();
/// for key in ["ann", "bob"] {
///     let mut c = Conversation::open(&store, key, PromptRef::new("d", "a"), Message::system("s"))?;
///     c.add_user("hello")?;
/// }
/// // A dry run says what would go.
/// let report = prune(&store, &Prune::Session(SessionKey::new("ann")), true)?;
/// assert_eq!((report.evaluations.len(), report.messages, report.dry_run), (1, 2, true));
/// // A session a worker holds is left alone.
/// let held = store.claim(&SessionKey::new("ann"), Duration::from_secs(60))?;
/// let report = prune(&store, &Prune::Session(SessionKey::new("ann")), false)?;
/// assert_eq!(report.claimed, [SessionKey::new("ann")]);
/// drop(held);
/// let report = prune(&store, &Prune::Session(SessionKey::new("ann")), false)?;
/// assert_eq!(report.messages, 2);
/// assert!(store.evaluations_of(&SessionKey::new("ann"))?.is_empty());
/// assert_eq!(store.evaluations()?.len(), 1); // bob's stays
/// // The heads a Python session keeps for a key go with it.
/// store.put_checkpoint("curator.items/responses/bob", &serde_json::json!({"removed": []}))?;
/// let report = prune(&store, &Prune::Session(SessionKey::new("bob")), false)?;
/// assert_eq!(report.heads, ["curator.items/responses/bob"]);
/// assert!(store.checkpoint("curator.items/responses/bob")?.is_none());
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// A store error: what was deleted before it stays deleted (each session is deleted in one
/// transaction), what was not stays whole.
pub fn prune<S: SessionStore + ClaimStore>(
    store: &S,
    rule: &Prune,
    dry_run: bool,
) -> Result<Pruned> {
    let listed = match rule {
        Prune::Session(key) => {
            key.check()?;
            store.evaluations_of(key)?
        }
        Prune::KeepLast(_) | Prune::OlderThan(_) => store.evaluations()?,
    };
    let mut by_key: BTreeMap<SessionKey, Vec<EvaluationSummary>> = BTreeMap::new();
    for summary in listed {
        by_key.entry(summary.key.clone()).or_default().push(summary);
    }
    let mut report = Pruned { dry_run, ..Pruned::default() };
    for (key, evaluations) in by_key {
        let listed = victims(rule, evaluations);
        if listed.is_empty() {
            continue;
        }
        let victims = if dry_run {
            listed
        } else {
            let claim = match store.claim(&key, PRUNE_LEASE) {
                Ok(claim) => claim,
                Err(Error::Claimed { .. }) => {
                    report.claimed.push(key);
                    continue;
                }
                Err(e) => return Err(e),
            };
            // Decided again under the claim: between the listing and the claim a worker
            // may have appended to an old evaluation or started a newer one.
            let victims = victims(rule, store.evaluations_of(&key)?);
            let ids: Vec<EvaluationId> = victims.iter().map(|e| e.evaluation_id).collect();
            if !ids.is_empty() {
                store.delete_evaluations(&key, &ids)?;
            }
            claim.release()?;
            victims
        };
        report.messages += victims.iter().map(|e| e.messages).sum::<u64>();
        report.evaluations.extend(victims);
    }
    if let Prune::Session(key) = rule
        && !report.claimed.contains(key)
    {
        // The key's item log heads (the Python sessions' records of pops and clears) go
        // with its evaluations, under a claim as they do.
        let heads = item_heads(store, key)?;
        if dry_run || heads.is_empty() {
            report.heads = heads;
        } else {
            match store.claim(key, PRUNE_LEASE) {
                Ok(claim) => {
                    let heads = item_heads(store, key)?;
                    let names: Vec<&str> = heads.iter().map(String::as_str).collect();
                    store.delete_checkpoints(&names)?;
                    claim.release()?;
                    report.heads = heads;
                }
                Err(Error::Claimed { .. }) => report.claimed.push(key.clone()),
                Err(e) => return Err(e),
            }
        }
    }
    report.evaluations.sort_by_key(|e| e.first_at);
    Ok(report)
}

/// The evaluations of one session that `rule` deletes.
fn victims(rule: &Prune, mut evaluations: Vec<EvaluationSummary>) -> Vec<EvaluationSummary> {
    match rule {
        Prune::Session(_) => evaluations,
        Prune::KeepLast(keep) => {
            // Newest first by start; the ones past `keep` go.
            evaluations.sort_by_key(|e| std::cmp::Reverse(e.first_at));
            evaluations.into_iter().skip(*keep).collect()
        }
        Prune::OlderThan(before) => {
            evaluations.into_iter().filter(|e| e.last_at < *before).collect()
        }
    }
}
