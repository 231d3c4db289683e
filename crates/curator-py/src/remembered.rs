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
//! each message (its dicts, lists and tuples copied, its strings, numbers, booleans and `None`
//! shared, since Python never changes those in place) and compares the list with the copies
//! with one `==`, at the interpreter's speed. Where `==` is looser than JSON (`1 == 1.0 ==
//! True`), the numbers and booleans of a message must also be the very objects they were. A
//! dict changed in place (a key set to a new string, an item appended to `tool_calls`)
//! therefore reads as changed, and the list is read afresh: the view is always the one a
//! fresh read gives.

use std::sync::{Arc, Mutex, PoisonError};

use curator::model::formats;
use curator::strategies::{CurationContext, History, HistoryManager, HistoryManagerExt};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::detect::{self, Format};
use crate::error::Failure;
use crate::json::{self, MAX_DEPTH};
use crate::lazy::{Curated, Kept};
use crate::unsendable::UnsendableScan;

/// How many conversations are remembered (the least recently curated is forgotten first).
const REMEMBERED: usize = 4;

/// One part of a message's make-up, in the order a walk meets it.
#[derive(Debug)]
enum Mark {
    /// A string, number, boolean or `None`, by the object itself (held, so that its address
    /// is not given to another object while it is remembered).
    Leaf(Py<PyAny>),
    /// A dict of this many keys (each key then its value follows).
    Dict(usize),
    /// A list or tuple of this many items.
    List(usize),
}

/// A copy of `value` that shares its strings, numbers, booleans and `None` (which Python
/// never changes in place) and copies its dicts, lists and tuples, so that comparing it with
/// `==` later tells whether `value` was changed in place. Sets `numeric` when it holds a
/// number or a boolean (where `==` is looser than JSON: `1 == 1.0 == True`). `None` when it
/// holds anything else than JSON's types, or nests too deep.
fn copy<'py>(
    value: &Bound<'py, PyAny>,
    depth: usize,
    numeric: &mut bool,
) -> Option<Bound<'py, PyAny>> {
    if value.is_none() || value.cast::<PyString>().is_ok() {
        return Some(value.clone());
    }
    if value.cast::<PyBool>().is_ok()
        || value.cast::<PyInt>().is_ok()
        || value.cast::<PyFloat>().is_ok()
    {
        *numeric = true;
        return Some(value.clone());
    }
    if depth >= MAX_DEPTH {
        return None;
    }
    let py = value.py();
    if let Ok(dict) = value.cast::<PyDict>() {
        let out = PyDict::new(py);
        for (key, item) in dict.iter() {
            key.cast::<PyString>().ok()?;
            out.set_item(key, copy(&item, depth + 1, numeric)?).ok()?;
        }
        return Some(out.into_any());
    }
    let items = |iter: &mut dyn Iterator<Item = Bound<'py, PyAny>>, numeric: &mut bool| {
        iter.map(|item| copy(&item, depth + 1, numeric)).collect::<Option<Vec<_>>>()
    };
    if let Ok(list) = value.cast::<PyList>() {
        return PyList::new(py, items(&mut list.iter(), numeric)?).ok().map(Bound::into_any);
    }
    if let Ok(tuple) = value.cast::<PyTuple>() {
        return PyTuple::new(py, items(&mut tuple.iter(), numeric)?).ok().map(Bound::into_any);
    }
    None
}

/// Appends the marks of `value` (made of JSON's types, as [`copy`] found) to `marks`.
fn mark(value: &Bound<'_, PyAny>, marks: &mut Vec<Mark>) {
    if let Ok(dict) = value.cast::<PyDict>() {
        marks.push(Mark::Dict(dict.len()));
        for (key, item) in dict.iter() {
            mark(&key, marks);
            mark(&item, marks);
        }
    } else if let Ok(list) = value.cast::<PyList>() {
        marks.push(Mark::List(list.len()));
        list.iter().for_each(|item| mark(&item, marks));
    } else if let Ok(tuple) = value.cast::<PyTuple>() {
        marks.push(Mark::List(tuple.len()));
        tuple.iter().for_each(|item| mark(&item, marks));
    } else {
        marks.push(Mark::Leaf(value.clone().unbind()));
    }
}

/// Whether `value` is made exactly as `marks[*at..]` says, of the very same leaves (moving
/// `at` past its marks).
fn same(value: &Bound<'_, PyAny>, marks: &[Mark], at: &mut usize) -> bool {
    let Some(next) = marks.get(*at) else { return false };
    *at += 1;
    match next {
        Mark::Leaf(leaf) => value.is(leaf),
        Mark::Dict(len) => value.cast::<PyDict>().is_ok_and(|dict| {
            dict.len() == *len
                && dict.iter().all(|(key, item)| same(&key, marks, at) && same(&item, marks, at))
        }),
        Mark::List(len) => {
            if let Ok(list) = value.cast::<PyList>() {
                list.len() == *len && list.iter().all(|item| same(&item, marks, at))
            } else if let Ok(tuple) = value.cast::<PyTuple>() {
                tuple.len() == *len && tuple.iter().all(|item| same(&item, marks, at))
            } else {
                false
            }
        }
    }
}

/// A conversation `curate` remembers.
struct Conversation {
    /// The pipeline it was curated with (its own: a pipeline remembers one walk).
    pipeline: Arc<dyn HistoryManager>,
    /// The configuration's key (its JSON).
    key: String,
    history: History<'static>,
    /// A copy of each message read (see [`copy`]).
    copies: Py<PyList>,
    /// The marks of each message that holds a number or a boolean, by position.
    numeric: Vec<(usize, Vec<Mark>)>,
    unsendable: UnsendableScan,
}

impl std::fmt::Debug for Conversation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversation")
            .field("messages", &self.history.messages().len())
            .finish_non_exhaustive()
    }
}

impl Conversation {
    /// Whether `list` starts with every message remembered, unchanged: equal to its copy
    /// (one comparison, in the interpreter), and of the very same numbers and booleans.
    fn continued_by(&self, list: &Bound<'_, PyList>) -> bool {
        let py = list.py();
        let copies = self.copies.bind(py);
        let held = copies.len();
        if list.len() < held || !list.get_slice(0, held).eq(copies).unwrap_or(false) {
            return false;
        }
        self.numeric.iter().all(|(index, marks)| {
            let mut at = 0;
            list.get_item(*index).is_ok_and(|item| same(&item, marks, &mut at)) && at == marks.len()
        })
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
            copies: PyList::empty(py).unbind(),
            numeric: Vec::new(),
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
        .rposition(|c| c.key == key && c.continued_by(list))
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
    let py = list.py();
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
    let mut copies = Vec::with_capacity(items.len());
    let mut numeric = Vec::new();
    for (offset, item) in items.iter().enumerate() {
        let mut has_numbers = false;
        let Some(duplicate) = copy(item, 1, &mut has_numbers) else { return Ok(false) };
        copies.push(duplicate);
        if has_numbers {
            let mut marks = Vec::new();
            mark(item, &mut marks);
            numeric.push((start + offset, marks));
        }
    }
    let held = conversation.copies.bind(py);
    for duplicate in copies {
        held.append(duplicate).map_err(|e| Failure::Input {
            kind: "wrong_type",
            message: format!("cannot hold a message: {e}"),
        })?;
    }
    conversation.numeric.extend(numeric);
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
