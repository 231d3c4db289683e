//! A history held between calls (`HeldHistory` in Python): each call hands the whole list of
//! messages, and only those not seen before are converted, counted and appended, so that a
//! call costs what is new, and a pipeline that remembers its last walk (the default
//! pipeline's views that keep the prompt cache) goes on from where it was.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use curator::strategies::{CurationContext, History, HistoryManager, HistoryManagerExt};
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::error::Failure;
use crate::lazy::{Kept, Lazy};
use crate::lists::PyMessages;
use crate::unsendable::UnsendableScan;

/// What a [`HeldHistory`] holds: the messages as a curation history, and the Python objects
/// they were read from, in order.
#[derive(Debug)]
struct Held {
    history: History<'static>,
    objects: Vec<Py<PyAny>>,
    /// The messages no provider takes, and those already said.
    unsendable: UnsendableScan,
    said: BTreeSet<usize>,
}

impl Held {
    fn new() -> Self {
        Held {
            history: History::new(),
            objects: Vec::new(),
            unsendable: UnsendableScan::default(),
            said: BTreeSet::new(),
        }
    }

    /// The messages no provider takes that were not said before.
    fn newly_unsendable(&mut self) -> Vec<usize> {
        let found = self.unsendable.positions(self.history.messages());
        let new: Vec<usize> =
            found.iter().copied().filter(|pos| !self.said.contains(pos)).collect();
        self.said.extend(&new);
        new
    }
}

/// A curation history held between calls, for callers that curate a growing list of OpenAI
/// dicts, or of objects a converter turns into them (LangChain messages), on every model
/// call. See the [module](self) documentation.
#[pyclass(frozen, module = "curator_context._native")]
pub(crate) struct HeldHistory {
    pipeline: Arc<dyn HistoryManager>,
    held: Mutex<Held>,
}

impl std::fmt::Debug for HeldHistory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeldHistory").finish_non_exhaustive()
    }
}

/// How many of `held` start `list`: each the same object, or an equal one.
fn common_start(list: &Bound<'_, PyList>, held: &[Py<PyAny>]) -> usize {
    let py = list.py();
    held.iter()
        .zip(list.iter())
        .take_while(|(held, given)| {
            let held = held.bind(py);
            given.is(held) || given.eq(held).unwrap_or(false)
        })
        .count()
}

impl HeldHistory {
    /// The held history, taken without waiting while holding the GIL: its holder may be
    /// curating with the GIL released, and needs it back to finish.
    fn lock(&self, py: Python<'_>) -> MutexGuard<'_, Held> {
        loop {
            match self.held.try_lock() {
                Ok(held) => return held,
                Err(TryLockError::Poisoned(poisoned)) => return poisoned.into_inner(),
                Err(TryLockError::WouldBlock) => {
                    py.detach(|| std::thread::sleep(std::time::Duration::from_micros(50)));
                }
            }
        }
    }
}

#[pymethods]
impl HeldHistory {
    /// A held history curated with the default pipeline for `max_tokens`, or `pipeline`.
    #[new]
    #[pyo3(signature = (max_tokens = None, *, pipeline = None))]
    fn new(
        max_tokens: Option<&Bound<'_, PyAny>>,
        pipeline: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let config = crate::pipeline::config(max_tokens, pipeline)?;
        Ok(Self { pipeline: crate::pipeline::built(&config)?, held: Mutex::new(Held::new()) })
    }

    /// Curates `messages`, the whole conversation so far: OpenAI dicts, or objects of class
    /// `base` that `convert` turns into them. Messages that start the list as they started
    /// the last call's (the same objects, or equal ones) are not read again; any other
    /// change starts the history afresh. Returns, per message of the view, the position of a
    /// message kept unchanged (an `int`), or the message as a dict when a strategy changed or
    /// made it.
    #[pyo3(signature = (messages, *, convert = None, base = None))]
    fn curate<'py>(
        &self,
        py: Python<'py>,
        messages: &Bound<'py, PyList>,
        convert: Option<Bound<'py, PyAny>>,
        base: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut held = self.lock(py);
        let same = common_start(messages, &held.objects);
        if same < held.objects.len() {
            // Not a continuation: read the list from its start.
            *held = Held::new();
        }
        let start = held.objects.len();
        let mut source = match (convert.filter(|c| !c.is_none()), base.filter(|b| !b.is_none())) {
            (Some(convert), Some(base)) => PyMessages::objects(messages.clone(), convert, base),
            _ => PyMessages::dicts(messages.clone()),
        };
        let mut new = Vec::with_capacity(source.len().saturating_sub(start));
        for index in start..source.len() {
            new.push(source.message(index)?);
        }
        for (offset, message) in new.into_iter().enumerate() {
            held.history.push(message);
            held.objects.push(messages.get_item(start + offset)?.unbind());
        }
        let unsendable =
            if held.objects.len() > start { held.newly_unsendable() } else { Vec::new() };
        let history = &held.history;
        let pipeline = &self.pipeline;
        let kept = py.detach(|| {
            let view = pipeline.curate_history(history, &CurationContext::default())?;
            Ok::<_, Failure>(
                view.iter()
                    .map(|entry| Kept::of(entry.pos, &entry.message, Some))
                    .collect::<Vec<_>>(),
            )
        })?;
        drop(held);
        crate::io::warn_unsendable(py, &unsendable)?;
        crate::io::positions_or_dicts(py, &kept)
    }

    /// Number of messages held.
    fn __len__(&self, py: Python<'_>) -> usize {
        self.lock(py).objects.len()
    }
}
