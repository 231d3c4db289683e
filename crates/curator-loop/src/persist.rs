//! Checkpointing a loop's state in a session store, incrementally: a small head document and
//! the turns in fixed pages, of which an iteration rewrites only the last one or two.

use std::sync::Arc;

use curator_model::Message;
use std::time::Duration;

use curator_session::{Claim, ClaimStore, SessionKey, SessionStore};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::turn::{ConversationTurn, Paused};

/// Turns per page: an iteration rewrites at most the page its new turns land in (and the
/// next), so its cost does not grow with the conversation.
pub(crate) const PAGE: usize = 16;

/// The `format` of a loop checkpoint's head.
pub const LOOP_CHECKPOINT_FORMAT: &str = "curator.loop";

/// The head's version this build writes.
const VERSION: u32 = 1;

/// The head document: everything but the turns.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Head {
    format: String,
    version: u32,
    iteration: u64,
    turns: usize,
    page: usize,
    /// The next iteration's input.
    input: String,
    /// Whether a run was in progress (interrupted, paused or failed): `run` continues it.
    #[serde(default)]
    running: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    paused: Option<Paused>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Page {
    turns: Vec<ConversationTurn>,
}

/// What a checkpoint restores.
#[derive(Debug)]
pub(crate) struct Restored {
    pub(crate) iteration: u64,
    pub(crate) turns: Vec<ConversationTurn>,
    pub(crate) input: String,
    pub(crate) running: bool,
    pub(crate) paused: Option<Paused>,
}

/// What a save writes besides the turns (as kept: redacted when the loop redacts what it
/// persists).
#[derive(Debug)]
pub(crate) struct HeadValues<'a> {
    pub(crate) iteration: u64,
    pub(crate) input: &'a str,
    pub(crate) running: bool,
    pub(crate) paused: Option<&'a Paused>,
}

/// Where and how far a loop's state is saved.
pub(crate) struct Persister {
    store: Arc<dyn SessionStore>,
    head: String,
    /// The claim on the loop's session, renewed at every save: a save after it was lost is
    /// refused.
    claim: Claim,
    /// Turns saved by the last save: pages before the one holding turn `saved` are final.
    saved: usize,
}

impl std::fmt::Debug for Persister {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Persister")
            .field("head", &self.head)
            .field("saved", &self.saved)
            .finish_non_exhaustive()
    }
}

/// The checkpoint name of the head of loop `name` under `key`.
pub(crate) fn head_name(key: &SessionKey, name: &str) -> String {
    format!("{LOOP_CHECKPOINT_FORMAT}/{key}/{name}")
}

impl Persister {
    /// Claims the loop's session (`claim` tries once, or waits as the builder says) and
    /// returns the persister that holds the claim.
    pub(crate) fn claim(
        store: Arc<dyn SessionStore>,
        claims: &dyn ClaimStore,
        key: &SessionKey,
        name: &str,
        lease: Duration,
        wait: Duration,
    ) -> Result<Self> {
        let head = head_name(key, name);
        let claim = claims
            .claim_within(&SessionKey::new(head.clone()), lease, wait)
            .map_err(|source| Error::Claim { session: head.clone(), source })?;
        Ok(Self { store, head, claim, saved: 0 })
    }

    /// The checkpoint name of the loop's head (also the claimed session).
    pub(crate) fn head(&self) -> &str {
        &self.head
    }

    pub(crate) fn store(&self) -> &Arc<dyn SessionStore> {
        &self.store
    }

    fn page_name(&self, page: usize) -> String {
        format!("{}/turns/{page}", self.head)
    }

    /// Saves the state in one transaction of the store (one commit): the pages holding turns
    /// not saved yet (from the page of the first unsaved turn on), then the head. The claim
    /// is renewed first, so a loop that lost its session to another process saves nothing.
    /// A store that saves checkpoints one at a time (not those of this workspace) may stop
    /// between a page and the head: the previous head then reads only the turns it counts,
    /// so the state read back is always one that was saved whole.
    pub(crate) fn save(&mut self, messages: &[Message], values: &HeadValues<'_>) -> Result<()> {
        self.claim.renew().map_err(|source| Error::Claim { session: self.head.clone(), source })?;
        let n = messages.len();
        let mut documents: Vec<(String, Value)> = Vec::with_capacity(3);
        if n > 0 {
            for page in self.saved.min(n) / PAGE..=(n - 1) / PAGE {
                // The page's JSON is built straight from the messages (the turns' own
                // serialisation), with no intermediate copy.
                let turns: Vec<Value> = messages[page * PAGE..n.min((page + 1) * PAGE)]
                    .iter()
                    .map(|m| {
                        let mut turn = serde_json::Map::with_capacity(2);
                        turn.insert("role".to_owned(), Value::from(m.role().as_str()));
                        turn.insert("content".to_owned(), Value::from(m.text().into_owned()));
                        Value::Object(turn)
                    })
                    .collect();
                documents.push((self.page_name(page), serde_json::json!({ "turns": turns })));
            }
        }
        let mut head = serde_json::json!({
            "format": LOOP_CHECKPOINT_FORMAT,
            "version": VERSION,
            "iteration": values.iteration,
            "turns": n,
            "page": PAGE,
            "input": values.input,
            "running": values.running,
        });
        if let (Some(paused), Value::Object(map)) = (values.paused, &mut head) {
            let paused = serde_json::to_value(paused).map_err(|e| Error::BadCheckpoint {
                checkpoint: self.head.clone(),
                reason: format!("the pause cannot be saved: {e}"),
            })?;
            map.insert("paused".to_owned(), paused);
        }
        documents.push((self.head.clone(), head));
        let batch: Vec<(&str, &Value)> = documents.iter().map(|(n, d)| (n.as_str(), d)).collect();
        self.store
            .put_checkpoints(&batch)
            .map_err(|source| Error::Store { checkpoint: self.head.clone(), source })?;
        self.saved = n;
        Ok(())
    }

    /// Reads the saved state, or `None` when nothing was saved under this name.
    pub(crate) fn load(&mut self) -> Result<Option<Restored>> {
        let bad = |reason: String| Error::BadCheckpoint { checkpoint: self.head.clone(), reason };
        let read = |name: &str| {
            self.store
                .checkpoint(name)
                .map_err(|source| Error::Store { checkpoint: name.to_owned(), source })
        };
        let Some(head) = read(&self.head)? else { return Ok(None) };
        let head: Head = serde_json::from_value(head.document).map_err(|e| bad(e.to_string()))?;
        if head.format != LOOP_CHECKPOINT_FORMAT {
            return Err(bad(format!(
                "format is `{}`, not `{LOOP_CHECKPOINT_FORMAT}`",
                head.format
            )));
        }
        if head.version > VERSION {
            return Err(bad(format!(
                "version {} is newer than this build's {VERSION}",
                head.version
            )));
        }
        if head.page == 0 {
            return Err(bad("page size 0".to_owned()));
        }
        let mut turns = Vec::with_capacity(head.turns);
        let mut page = 0;
        while turns.len() < head.turns {
            let name = self.page_name(page);
            let document = read(&name)?
                .ok_or_else(|| {
                    bad(format!("page `{name}` is missing ({} turns counted)", head.turns))
                })?
                .document;
            let Page { turns: mut these } =
                serde_json::from_value(document).map_err(|e| bad(format!("page `{name}`: {e}")))?;
            // A page may hold turns of a save whose head never landed: they are not counted.
            these.truncate(head.page.min(head.turns - turns.len()));
            if these.is_empty() {
                return Err(bad(format!("page `{name}` holds fewer turns than the head counts")));
            }
            turns.extend(these);
            page += 1;
        }
        // Pages of another size are read whole; this build then rewrites from the start.
        self.saved = if head.page == PAGE { head.turns } else { 0 };
        Ok(Some(Restored {
            iteration: head.iteration,
            turns,
            input: head.input,
            running: head.running,
            paused: head.paused,
        }))
    }
}
