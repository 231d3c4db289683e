//! Checkpointing a loop's state in a session store, incrementally: a small head document and
//! the turns in fixed pages, of which an iteration rewrites only the last one or two.

use std::sync::Arc;
use std::time::Duration;

use curator_model::Message;

use curator_session::{Claim, ClaimStore, SessionKey, SessionStore};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::lens::{LensStep, is_lens, iteration_of, lens_prefix};
use crate::trace::PromptTrace;
use crate::turn::{ConversationTurn, LoopState, Paused};

/// Turns per page: an iteration rewrites at most the page its new turns land in (and the
/// next), so its cost does not grow with the conversation.
pub(crate) const PAGE: usize = 16;

/// The `format` of a loop checkpoint's head.
pub const LOOP_CHECKPOINT_FORMAT: &str = "curator.loop";

/// The head's version this build writes.
/// Version 2 added the session's key and the loop's name, and whether a run is under way.
const VERSION: u32 = 2;

/// The head document: everything but the turns.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Head {
    format: String,
    version: u32,
    /// The session key (from version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    /// The loop's name (from version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    iteration: u64,
    turns: usize,
    page: usize,
    /// The next iteration's input.
    input: String,
    /// Whether a run was in progress (interrupted, paused or failed): `run` continues it.
    #[serde(default)]
    running: bool,
    /// The iterations completed when the run started (0 in checkpoints written before runs
    /// were counted apart).
    #[serde(default)]
    run_start: u64,
    /// What the run used of its quota (0 in checkpoints written before quotas).
    #[serde(default)]
    quota_used: u64,
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
    pub(crate) run_start: u64,
    pub(crate) quota_used: u64,
    pub(crate) paused: Option<Paused>,
    pub(crate) key: Option<String>,
    pub(crate) name: Option<String>,
}

/// What a save writes besides the turns (as kept: redacted when the loop redacts what it
/// persists).
#[derive(Debug)]
pub(crate) struct HeadValues<'a> {
    pub(crate) iteration: u64,
    pub(crate) input: &'a str,
    pub(crate) running: bool,
    pub(crate) run_start: u64,
    pub(crate) quota_used: u64,
    pub(crate) paused: Option<&'a Paused>,
}

/// Where and how far a loop's state is saved.
pub(crate) struct Persister {
    store: Arc<dyn SessionStore>,
    head: String,
    key: String,
    name: String,
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

/// The checkpoint name of page `page` of the turns of the loop whose head is `head`.
fn page_name(head: &str, page: usize) -> String {
    format!("{head}/turns/{page}")
}

/// A loop session saved in a store, read without claiming it (what `curator inspect` and
/// `curator trace` show).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SavedLoop {
    /// The session key.
    pub key: String,
    /// The loop's name.
    pub name: String,
    /// Its state: turns, iteration, pause, next input.
    pub state: LoopState,
    /// When it was last saved.
    pub saved_at: chrono::DateTime<chrono::Utc>,
}

/// The loop sessions saved in `store`, by key and name, read only: nothing is claimed or
/// written, so a loop running in another process is read as its last save left it.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use curator::conversation_loop::{saved_loops, Hitl, LoopBuilder, LoopConfig};
/// use curator::session::MemoryStore;
///
/// let store = Arc::new(MemoryStore::new());
/// let mut chat = LoopBuilder::new("chat", LoopConfig::conversational())
///     .step("user", Hitl::new("you"))
///     .store(Arc::clone(&store), "alice")
///     .build()?;
/// chat.run("")?;
/// let saved = saved_loops(&*store)?;
/// assert_eq!((saved[0].key.as_str(), saved[0].name.as_str()), ("alice", "chat"));
/// assert!(saved[0].state.paused.is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`Error::Store`] when the store cannot be read; [`Error::BadCheckpoint`] when a saved
/// loop cannot be read back.
pub fn saved_loops(store: &dyn SessionStore) -> Result<Vec<SavedLoop>> {
    let prefix = format!("{LOOP_CHECKPOINT_FORMAT}/");
    let names = store
        .checkpoint_names(&prefix)
        .map_err(|source| Error::Store { checkpoint: prefix.clone(), source })?;
    let mut out = Vec::new();
    for head in names.iter().filter(|n| !is_page(n) && !is_lens(n)) {
        let saved_at = match store.checkpoint(head) {
            Ok(Some(c)) => c.saved_at,
            Ok(None) => continue,
            Err(source) => return Err(Error::Store { checkpoint: head.clone(), source }),
        };
        let Some((restored, _)) = load(store, head)? else { continue };
        // Heads of version 1 do not name their key and loop: the last `/` separates them.
        let rest = &head[prefix.len()..];
        let (key, name) = match (restored.key, restored.name) {
            (Some(key), Some(name)) => (key, name),
            _ => match rest.rsplit_once('/') {
                Some((key, name)) => (key.to_owned(), name.to_owned()),
                None => (rest.to_owned(), String::new()),
            },
        };
        out.push(SavedLoop {
            key,
            name,
            state: LoopState {
                iteration: restored.iteration,
                turns: restored.turns,
                paused: restored.paused,
                input: restored.input,
                running: restored.running,
                run_start: restored.run_start,
                quota_used: restored.quota_used,
            },
            saved_at,
        });
    }
    Ok(out)
}

/// The lens saved for loop `name` of session `key`: every agent step of every saved
/// iteration, oldest first (an iteration still under way, paused at a human step, shows
/// the steps it ran). Empty for a loop saved without `lens = true`.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use curator::conversation_loop::{saved_lens, FnStep, Injection, LoopBuilder, LoopConfig, StepOutcome};
/// use curator::session::MemoryStore;
///
/// let store = Arc::new(MemoryStore::new());
/// let config = LoopConfig::from_toml("conversation = true\nmax_iterations = 2\nlens = true")?;
/// let agent = FnStep::agent(Injection::Messages, |call| Ok(StepOutcome::text(format!("reply {}", call.iteration))))
///     .with_system("Be brief.");
/// let mut chat = LoopBuilder::new("chat", config).step("agent", agent).store(Arc::clone(&store), "alice").build()?;
/// chat.run("hello")?;
/// let lens = saved_lens(&*store, "alice", "chat")?;
/// assert_eq!(lens.len(), 2);
/// assert_eq!((lens[1].iteration, lens[1].step.as_str(), lens[1].injected), (2, "agent", true));
/// // The second call was sent the system prompt, the conversation so far and its input.
/// let sent: Vec<String> = lens[1].messages.iter().map(|m| m.text().into_owned()).collect();
/// assert_eq!(sent, ["Be brief.", "hello", "reply 1"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`Error::Store`] when the store cannot be read; [`Error::BadCheckpoint`] when a saved
/// lens cannot be read back.
pub fn saved_lens(store: &dyn SessionStore, key: &str, name: &str) -> Result<Vec<LensStep>> {
    let prefix = lens_prefix(&head_name(&SessionKey::new(key), name));
    let mut names = store
        .checkpoint_names(&prefix)
        .map_err(|source| Error::Store { checkpoint: prefix.clone(), source })?;
    names.retain(|n| is_lens(n));
    names.sort_by_key(|n| iteration_of(n));
    let mut out = Vec::new();
    for name in names {
        let Some(checkpoint) = store
            .checkpoint(&name)
            .map_err(|source| Error::Store { checkpoint: name.clone(), source })?
        else {
            continue;
        };
        let steps: Vec<LensStep> =
            serde_json::from_value(checkpoint.document.clone()).map_err(|e| {
                Error::BadCheckpoint { checkpoint: name.clone(), reason: e.to_string() }
            })?;
        out.extend(steps);
    }
    Ok(out)
}

/// What [`erase_loops`] did: the loop sessions of the key it erased (or, in a dry run, would
/// erase), and those it left alone because a loop drives them now (a live claim).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ErasedLoops {
    /// The loop sessions erased: each one's head and pages of turns deleted.
    pub erased: Vec<SavedLoop>,
    /// The loop sessions left whole because a loop holds their claim.
    pub held: Vec<SavedLoop>,
    /// The checkpoints deleted (none in a dry run).
    pub checkpoints: u64,
}

/// How long [`erase_loops`] holds a loop session's claim while it deletes.
const ERASE_LEASE: Duration = Duration::from_secs(30);

/// Erases every loop session (`curator chat` among them) saved under the session key `key`:
/// each one's head and pages of turns, under a claim on the loop's session so that a loop
/// running now is never touched (it is listed in [`ErasedLoops::held`]); with `dry_run`,
/// nothing is claimed or deleted and the report says what would go. Evaluations of the key
/// are retention's (`curator::session::prune`); a user's right to erasure needs both.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use curator::conversation_loop::{erase_loops, saved_loops, Hitl, LoopBuilder, LoopConfig};
/// use curator::session::MemoryStore;
///
/// let store = Arc::new(MemoryStore::new());
/// let mut chat = LoopBuilder::new("chat", LoopConfig::conversational())
///     .step("user", Hitl::new("you"))
///     .store(Arc::clone(&store), "alice")
///     .build()?;
/// chat.run("")?;
/// drop(chat); // the loop releases its session
/// let erased = erase_loops(&*store, "alice", false)?;
/// assert_eq!(erased.erased.len(), 1);
/// assert!(saved_loops(&*store)?.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`Error::Store`] when the store cannot be read or the deletion fails (a loop session is
/// deleted whole or not at all); [`Error::Claim`] when a claim fails other than by being
/// held; [`Error::BadCheckpoint`] when a saved loop cannot be read back.
pub fn erase_loops<S: SessionStore + ClaimStore>(
    store: &S,
    key: &str,
    dry_run: bool,
) -> Result<ErasedLoops> {
    let mut report = ErasedLoops::default();
    for saved in saved_loops(store)?.into_iter().filter(|l| l.key == key) {
        if dry_run {
            report.erased.push(saved);
            continue;
        }
        let head = head_name(&SessionKey::new(saved.key.as_str()), &saved.name);
        let claim = match store.claim(&SessionKey::new(head.clone()), ERASE_LEASE) {
            Ok(claim) => claim,
            Err(curator_session::Error::Claimed { .. }) => {
                report.held.push(saved);
                continue;
            }
            Err(source) => return Err(Error::Claim { session: head, source }),
        };
        let parts_of = format!("{head}/");
        let mut names = store
            .checkpoint_names(&parts_of)
            .map_err(|source| Error::Store { checkpoint: parts_of.clone(), source })?;
        // Its pages of turns and its lens, not another loop's head named `{name}/…`.
        names.retain(|n| {
            n.strip_prefix(&parts_of).is_some_and(|rest| {
                rest.strip_prefix("turns/")
                    .or_else(|| rest.strip_prefix("lens/"))
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            })
        });
        names.push(head.clone());
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        report.checkpoints += store
            .delete_checkpoints(&names)
            .map_err(|source| Error::Store { checkpoint: head.clone(), source })?;
        claim.release().map_err(|source| Error::Claim { session: head, source })?;
        report.erased.push(saved);
    }
    Ok(report)
}

/// Whether a checkpoint name is a page of turns (`…/turns/N`), not a head.
fn is_page(name: &str) -> bool {
    name.rsplit_once("/turns/")
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
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
        Ok(Self {
            store,
            head,
            key: key.as_str().to_owned(),
            name: name.to_owned(),
            claim,
            saved: 0,
        })
    }

    /// The checkpoint name of the loop's head (also the claimed session).
    pub(crate) fn head(&self) -> &str {
        &self.head
    }

    /// The lens saved of `iteration` (empty when none was).
    ///
    /// # Errors
    ///
    /// [`Error::Store`]; [`Error::BadCheckpoint`] when it cannot be read back.
    pub(crate) fn lens_of(&self, iteration: u64) -> Result<Vec<LensStep>> {
        let name = format!("{}{iteration}", lens_prefix(&self.head));
        let Some(checkpoint) = self
            .store
            .checkpoint(&name)
            .map_err(|source| Error::Store { checkpoint: name.clone(), source })?
        else {
            return Ok(Vec::new());
        };
        serde_json::from_value(checkpoint.document)
            .map_err(|e| Error::BadCheckpoint { checkpoint: name, reason: e.to_string() })
    }

    pub(crate) fn store(&self) -> &Arc<dyn SessionStore> {
        &self.store
    }

    fn page_name(&self, page: usize) -> String {
        page_name(&self.head, page)
    }

    /// Saves the state in one transaction of the store (one commit): the pages holding turns
    /// not saved yet (from the page of the first unsaved turn on), then the head. The claim
    /// is renewed first, so a loop that lost its session to another process saves nothing.
    /// A store that saves checkpoints one at a time (not those of this workspace) may stop
    /// between a page and the head: the previous head then reads only the turns it counts,
    /// so the state read back is always one that was saved whole.
    pub(crate) fn save(
        &mut self,
        messages: &[Message],
        values: &HeadValues<'_>,
        lens: &[PromptTrace],
    ) -> Result<()> {
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
            "key": self.key,
            "name": self.name,
            "iteration": values.iteration,
            "turns": n,
            "page": PAGE,
            "input": values.input,
            "running": values.running,
            "run_start": values.run_start,
            "quota_used": values.quota_used,
        });
        if let (Some(paused), Value::Object(map)) = (values.paused, &mut head) {
            let paused = serde_json::to_value(paused).map_err(|e| Error::BadCheckpoint {
                checkpoint: self.head.clone(),
                reason: format!("the pause cannot be saved: {e}"),
            })?;
            map.insert("paused".to_owned(), paused);
        }
        documents.extend(crate::lens::documents(&self.head, lens));
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
        let Some((restored, page)) = load(&*self.store, &self.head)? else { return Ok(None) };
        // Pages of another size are read whole; this build then rewrites from the start.
        self.saved = if page == PAGE { restored.turns.len() } else { 0 };
        Ok(Some(restored))
    }
}

/// Reads the state saved under the head `head`, with the page size it was saved with.
fn load(store: &dyn SessionStore, head_name: &str) -> Result<Option<(Restored, usize)>> {
    let bad = |reason: String| Error::BadCheckpoint { checkpoint: head_name.to_owned(), reason };
    let read = |name: &str| {
        store
            .checkpoint(name)
            .map_err(|source| Error::Store { checkpoint: name.to_owned(), source })
    };
    let Some(head) = read(head_name)? else { return Ok(None) };
    let head: Head = serde_json::from_value(head.document).map_err(|e| bad(e.to_string()))?;
    if head.format != LOOP_CHECKPOINT_FORMAT {
        return Err(bad(format!("format is `{}`, not `{LOOP_CHECKPOINT_FORMAT}`", head.format)));
    }
    if head.version > VERSION {
        return Err(bad(format!("version {} is newer than this build's {VERSION}", head.version)));
    }
    if head.page == 0 {
        return Err(bad("page size 0".to_owned()));
    }
    let mut turns = Vec::with_capacity(head.turns);
    let mut page = 0;
    while turns.len() < head.turns {
        let name = page_name(head_name, page);
        let document = read(&name)?
            .ok_or_else(|| bad(format!("page `{name}` is missing ({} turns counted)", head.turns)))?
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
    let restored = Restored {
        iteration: head.iteration,
        turns,
        input: head.input,
        running: head.running,
        run_start: head.run_start,
        quota_used: head.quota_used,
        paused: head.paused,
        key: head.key,
        name: head.name,
    };
    Ok(Some((restored, head.page)))
}
