//! A history held between calls (`HeldHistory` in Python): each call hands the whole list of
//! messages, and only those not seen before are converted, counted and appended, so that a
//! call costs what is new, and a pipeline that remembers its last walk (the default
//! pipeline's views that keep the prompt cache) goes on from where it was.
//!
//! A message is taken as seen only when it is what it was: a dict equal to a copy kept of it
//! (see [`crate::unchanged`]); an object of the same class whose attributes (`__dict__`, and
//! pydantic's extra fields) equal a copy kept of them, or, for an object whose attributes
//! are not all JSON's types, whose conversion equals a copy of its conversion. So a message
//! changed in place between calls (`message.content = ...`, an item appended to its tool
//! calls) reads as changed, and the list is read afresh: the view is always the one a fresh
//! read gives.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use curator::strategies::{CurationContext, History, HistoryManager, HistoryManagerExt};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple, PyType};

use crate::error::Failure;
use crate::lazy::{Kept, Lazy};
use crate::lists::PyMessages;
use crate::unchanged::Copies;
use crate::unsendable::UnsendableScan;

/// What a [`HeldHistory`] holds: the messages as a curation history, and what tells whether
/// a later list starts with them unchanged.
#[derive(Debug)]
struct Held {
    history: History<'static>,
    /// A copy of what stands for each message read: the dict itself, or an object's
    /// [`attributes`] or conversion.
    copies: Copies,
    /// For objects, the class of each message read, and whether it stands by its conversion.
    objects: Vec<(Py<PyType>, bool)>,
    /// Whether the messages are objects (read with a conversion) rather than dicts.
    converted: bool,
    /// Set when a message could not be copied: the next call reads the list afresh.
    afresh: bool,
    /// The messages no provider takes, and those already said.
    unsendable: UnsendableScan,
    said: BTreeSet<usize>,
}

impl Held {
    fn new(py: Python<'_>, converted: bool) -> Self {
        Held {
            history: History::new(),
            copies: Copies::new(py),
            objects: Vec::new(),
            converted,
            afresh: false,
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

    /// Whether `list` starts with every message held, unchanged (objects are converted with
    /// `convert` where they stand by their conversion).
    fn continued_by(&self, list: &Bound<'_, PyList>, convert: Option<&Bound<'_, PyAny>>) -> bool {
        if self.afresh || self.converted != convert.is_some() {
            return false;
        }
        let Some(convert) = convert else { return self.copies.start(list) };
        let py = list.py();
        if list.len() < self.objects.len() {
            return false;
        }
        let mut standing = Vec::with_capacity(self.objects.len());
        for ((class, by_conversion), item) in self.objects.iter().zip(list.iter()) {
            if !item.get_type().is(class) {
                return false;
            }
            let stands =
                if *by_conversion { convert.call1((&item,)).ok() } else { attributes(&item) };
            let Some(stands) = stands else { return false };
            standing.push(stands);
        }
        PyList::new(py, standing).is_ok_and(|standing| self.copies.start(&standing))
    }

    /// Holds `items`, read from the list (converted with `convert` when they are objects),
    /// as `messages`.
    fn hold(
        &mut self,
        items: &[Bound<'_, PyAny>],
        messages: Vec<curator::model::Message>,
        convert: Option<&Bound<'_, PyAny>>,
    ) {
        for item in items {
            let copied = match convert {
                None => self.copies.push(item).unwrap_or(false),
                Some(convert) => {
                    let by_attributes = attributes(item)
                        .is_some_and(|stands| self.copies.push(&stands).unwrap_or(false));
                    let by_conversion = !by_attributes
                        && convert
                            .call1((item,))
                            .is_ok_and(|stands| self.copies.push(&stands).unwrap_or(false));
                    self.objects.push((item.get_type().unbind(), by_conversion));
                    by_attributes || by_conversion
                }
            };
            if !copied {
                self.afresh = true;
            }
        }
        for message in messages {
            self.history.push(message);
        }
    }
}

/// What stands for an object in a comparison: its `__dict__` (where pydantic keeps its
/// fields) and pydantic's extra fields (`None` when there are none); `None` for an object
/// without a `__dict__`.
fn attributes<'py>(item: &Bound<'py, PyAny>) -> Option<Bound<'py, PyAny>> {
    let py = item.py();
    let fields = item.getattr(intern!(py, "__dict__")).ok()?;
    fields.cast::<PyDict>().ok()?;
    let extra = item
        .getattr(intern!(py, "__pydantic_extra__"))
        .unwrap_or_else(|_| py.None().into_bound(py));
    PyTuple::new(py, [fields, extra]).ok().map(Bound::into_any)
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
        py: Python<'_>,
        max_tokens: Option<&Bound<'_, PyAny>>,
        pipeline: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let config = crate::pipeline::config(max_tokens, pipeline)?;
        Ok(Self {
            pipeline: crate::pipeline::built(&config)?,
            held: Mutex::new(Held::new(py, false)),
        })
    }

    /// Curates `messages`, the whole conversation so far: OpenAI dicts, or objects of class
    /// `base` that `convert` turns into them. Messages that start the list as they started
    /// the last call's, unchanged since (see the [module](self) documentation), are not read
    /// again; any other change starts the history afresh. Returns, per message of the view,
    /// the position of a message kept unchanged (an `int`), or the message as a dict when a
    /// strategy changed or made it.
    #[pyo3(signature = (messages, *, convert = None, base = None))]
    fn curate<'py>(
        &self,
        py: Python<'py>,
        messages: &Bound<'py, PyList>,
        convert: Option<Bound<'py, PyAny>>,
        base: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let convert = convert.filter(|c| !c.is_none());
        let base = base.filter(|b| !b.is_none());
        let objects = convert.as_ref().zip(base.as_ref());
        let convert = objects.map(|(convert, _)| convert);
        let mut held = self.lock(py);
        if !held.continued_by(messages, convert) {
            // Not a continuation: read the list from its start.
            *held = Held::new(py, convert.is_some());
        }
        let start = held.history.messages().len();
        let mut source = match objects {
            Some((convert, base)) => {
                PyMessages::objects(messages.clone(), convert.clone(), base.clone())
            }
            None => PyMessages::dicts(messages.clone()),
        };
        let mut new = Vec::with_capacity(source.len().saturating_sub(start));
        let mut items = Vec::with_capacity(new.capacity());
        for index in start..source.len() {
            new.push(source.message(index)?);
            items.push(messages.get_item(index)?);
        }
        held.hold(&items, new, convert);
        let unsendable = if held.history.messages().len() > start {
            held.newly_unsendable()
        } else {
            Vec::new()
        };
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
        self.lock(py).history.messages().len()
    }
}
