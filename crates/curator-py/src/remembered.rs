//! The conversations `curate` curated last, remembered so that a call whose list starts with
//! an earlier call's messages, unchanged, reads and curates only what was appended.
//!
//! An agent calls `curate(messages, ...)` on every model call with the whole conversation so
//! far; read afresh each time, a call costs the whole history (and the default pipeline, which
//! keeps the provider's prompt cache, would walk the history from its start to find where it
//! compacted). So `curate` remembers, for the last few conversations it curated, their
//! messages as a curation history and the pipeline that curated them (which remembers its
//! walk).
//!
//! A message is taken as unchanged only when it equals what it was: `curate` keeps a copy of
//! each message ([`crate::unchanged`]: its dicts, lists and tuples copied, its strings and
//! `None` shared, since Python never changes those in place) and compares the list with the
//! copies with one `==`, at the interpreter's speed. Where `==` is looser than JSON (`1 ==
//! 1.0 == True`), a number or boolean must also be of the type it was. A dict changed in
//! place (a key set to a new string, an item appended to `tool_calls`) therefore reads as
//! changed, and the list is read afresh: the view is always the one a fresh read gives.

use std::sync::{Arc, Mutex, PoisonError};

use curator::model::formats;
use curator::strategies::{CurationContext, History, HistoryManager, HistoryManagerExt};
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::detect::{self, Format};
use crate::error::Failure;
use crate::json;
use crate::lazy::{Curated, Kept};
use crate::unchanged::Copies;
use crate::unsendable::UnsendableScan;

/// How many conversations are remembered (the least recently curated is forgotten first).
const REMEMBERED: usize = 4;

/// A conversation `curate` remembers.
struct Conversation {
    /// The pipeline it was curated with (its own: a pipeline remembers one walk).
    pipeline: Arc<dyn HistoryManager>,
    /// The configuration's key (its JSON).
    key: String,
    history: History<'static>,
    /// A copy of each message read, to tell whether a later list starts with them unchanged.
    copies: Copies,
    unsendable: UnsendableScan,
}

impl std::fmt::Debug for Conversation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversation")
            .field("messages", &self.history.messages().len())
            .finish_non_exhaustive()
    }
}

/// The remembered conversations, the most recently curated last.
static REMEMBERED_CONVERSATIONS: Mutex<Vec<Conversation>> = Mutex::new(Vec::new());

fn remembered() -> std::sync::MutexGuard<'static, Vec<Conversation>> {
    REMEMBERED_CONVERSATIONS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Forgets every remembered conversation (releasing the messages they hold, once the lock
/// is let go: releasing an object may run Python code).
pub(crate) fn forget() {
    let all = std::mem::take(&mut *remembered());
    drop(all);
}

/// Where [`curate`] starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Start {
    /// From a remembered conversation the list continues, or not at all (`None`).
    Remembered,
    /// Afresh, remembering the list from now on.
    Afresh,
}

/// Curates `list`, OpenAI dicts, with the pipeline `config` builds: going on from a
/// remembered conversation the list continues, or afresh; `None` when `start` asks for a
/// remembered conversation and none is continued, or when the list cannot be remembered (a
/// value that is not JSON, or nesting too deep), for the caller to read it another way.
///
/// # Errors
///
/// A message that cannot be read (naming its position in the list), or what the pipeline
/// says.
pub(crate) fn curate(
    py: Python<'_>,
    list: &Bound<'_, PyList>,
    config: &curator::strategies::StrategyConfig,
    format: Option<Format>,
    start: Start,
) -> Result<Option<Curated>, Failure> {
    let mut key = serde_json::to_string(config).map_err(|e| Failure::Config {
        kind: "config",
        message: format!("strategy configuration: cannot write it: {e}"),
    })?;
    if format.is_some() {
        // Messages read as OpenAI's because the caller said so are not told from their signs.
        key.push_str(" format=openai");
    }
    let mut conversation = if start == Start::Remembered {
        match take_continued(list, &key) {
            Some(conversation) => conversation,
            None => return Ok(None),
        }
    } else {
        Conversation {
            pipeline: Arc::from(config.build()?),
            key,
            history: History::new(),
            copies: Copies::new(py),
            unsendable: UnsendableScan::default(),
        }
    };
    match read_appended(&mut conversation, list, format) {
        Ok(true) => {}
        Ok(false) => return Ok(None),
        Err(error) => {
            keep(conversation);
            return Err(error);
        }
    }
    let unsendable = conversation.unsendable.positions(conversation.history.messages()).to_vec();
    let (history, pipeline) = (&conversation.history, &conversation.pipeline);
    let kept = py.detach(|| {
        let view = pipeline.curate_history(history, &CurationContext::default())?;
        Ok::<_, Failure>(
            view.iter().map(|entry| Kept::of(entry.pos, &entry.message, Some)).collect::<Vec<_>>(),
        )
    });
    // The conversation stays remembered even when curation fails: the next call (a larger
    // budget, a message more) goes on from it.
    keep(conversation);
    Ok(Some(Curated { kept: kept?, unsendable }))
}

/// Takes out of those remembered the conversation of configuration `key` that `list`
/// continues, if any. The comparisons run with the conversations out of the lock (comparing
/// Python objects may run Python code, which may let another thread in), so a thread that
/// curates meanwhile finds none remembered and reads its list afresh.
fn take_continued(list: &Bound<'_, PyList>, key: &str) -> Option<Conversation> {
    let mut candidates = std::mem::take(&mut *remembered());
    let found = candidates
        .iter()
        .rposition(|c| c.key == key && c.copies.start(list))
        .map(|at| candidates.remove(at));
    let evicted = {
        let mut all = remembered();
        // Those remembered meanwhile are the more recent.
        candidates.append(&mut all);
        let over = candidates.len().saturating_sub(REMEMBERED);
        let evicted: Vec<Conversation> = candidates.drain(..over).collect();
        *all = candidates;
        evicted
    };
    drop(evicted);
    found
}

/// Reads the messages of `list` past those `conversation` holds, and appends them; `false`
/// (appending nothing) when one cannot be remembered, or when, without `format`, their
/// signs tell another format than OpenAI's or contradict each other (a fresh read of the
/// whole list says which, or what is wrong).
fn read_appended(
    conversation: &mut Conversation,
    list: &Bound<'_, PyList>,
    format: Option<Format>,
) -> Result<bool, Failure> {
    let start = conversation.history.messages().len();
    let mut items = Vec::with_capacity(list.len().saturating_sub(start));
    let mut values = Vec::with_capacity(items.capacity());
    for index in start..list.len() {
        let item = list.get_item(index).map_err(|e| Failure::Input {
            kind: "wrong_type",
            message: format!("message {index}: {e}"),
        })?;
        // Read first: a message that cannot be read is said to be so, as a fresh read says.
        values.push(json::item_to_value(&item, index)?);
        items.push(item);
    }
    // Another format is read whole by the caller: nothing is copied for it.
    if format.is_none() && !matches!(detect::detect(None, &values), Ok(Format::Openai)) {
        return Ok(false);
    }
    let mut new = Vec::with_capacity(values.len());
    for (offset, value) in values.iter().enumerate() {
        new.push(formats::openai::message_from_value(start + offset, value)?);
    }
    let copied = conversation.copies.extend(&items).map_err(|e| Failure::Input {
        kind: "wrong_type",
        message: format!("cannot hold a message: {e}"),
    })?;
    if !copied {
        return Ok(false);
    }
    for message in new {
        conversation.history.push(message);
    }
    Ok(true)
}

/// Remembers `conversation` as the most recently curated, forgetting the least recent one
/// past [`REMEMBERED`]; a conversation of no message is not worth remembering.
fn keep(conversation: Conversation) {
    if conversation.history.messages().is_empty() {
        return;
    }
    let evicted = {
        let mut all = remembered();
        all.push(conversation);
        let over = all.len().saturating_sub(REMEMBERED);
        all.drain(..over).collect::<Vec<_>>()
    };
    // Released once the lock is let go: releasing an object may run Python code.
    drop(evicted);
}
