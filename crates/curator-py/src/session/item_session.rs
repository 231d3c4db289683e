//! The Python class of a session of items (`ItemSession`): opening, adding, reading the
//! curated view, popping and clearing, with the GIL released while it works.

use std::sync::{Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::PyList;
use serde_json::Value;

use super::{ItemFormat, ItemLog, Templates, in_file, is_postgres, open_store};
use crate::error::Failure;

/// A session of items in a store, for Python: the Agents SDK session and the LangChain
/// history (`curator_context.agents`, `curator_context.langchain`) are thin async and
/// LangChain faces of it. Its methods release the GIL while they read, write and curate.
#[pyclass(frozen, module = "curator_context._native")]
pub(crate) struct ItemSession {
    session_id: String,
    postgres: bool,
    /// Whether `get_items()` curates (a pipeline was given).
    curates: bool,
    log: Mutex<ItemLog>,
    /// What the last curated view handed out, to copy instead of writing again. Taken out
    /// while a call curates, so that two calls at once never share it (the second writes).
    templates: Mutex<Templates>,
}

impl std::fmt::Debug for ItemSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ItemSession").field("session_id", &self.session_id).finish_non_exhaustive()
    }
}

impl ItemSession {
    /// Says which items the curated view left out because no provider takes them: an
    /// `UnsendableWarning`, which `warnings.simplefilter("error", UnsendableWarning)` turns
    /// into an exception. They stay in the record.
    fn warn_unsendable(&self, py: Python<'_>, items: &[usize]) -> PyResult<()> {
        let message = std::ffi::CString::new(self.unsendable_message(items)).unwrap_or_default();
        let level = crate::error::caller_level(py);
        PyErr::warn(py, &py.get_type::<crate::error::UnsendableWarning>(), &message, level)
    }

    fn unsendable_message(&self, items: &[usize]) -> String {
        let shown: Vec<String> = items.iter().take(20).map(ToString::to_string).collect();
        let more = if items.len() > shown.len() { ", ..." } else { "" };
        format!(
            "{} item(s) of session `{}` (at {}{more}) answer no open call or call a tool whose \
             result never came before a user or system message: no provider takes them, so \
             the curated view leaves them out (they stay in the record)",
            items.len(),
            self.session_id,
            shown.join(", ")
        )
    }

    /// The items `get_items` hands out, and the indices of those the curated view left out
    /// because no provider takes them (empty when there is no curated view).
    fn items_and_unsendable<'py>(
        &self,
        py: Python<'py>,
        limit: Option<&Bound<'py, PyAny>>,
        reserve: u64,
    ) -> PyResult<(Bound<'py, PyList>, Vec<usize>)> {
        let limit = match limit.filter(|l| !l.is_none()) {
            None => None,
            Some(limit) => Some(count_argument("limit", limit)?),
        };
        if limit.is_none() && self.curates {
            let curated = self.with_log(py, |log| {
                let templates = std::mem::take(
                    &mut *self.templates.lock().unwrap_or_else(PoisonError::into_inner),
                );
                let Some(curated) = log.curated(templates, reserve)? else { return Ok(None) };
                // Only a curated view leaves them out; the items as recorded hold them.
                Ok(Some((curated, log.unsendable())))
            })?;
            if let Some((curated, unsendable)) = curated {
                let (list, templates) = curated.into_python(py, &unsendable)?;
                *self.templates.lock().unwrap_or_else(PoisonError::into_inner) = templates;
                return Ok((list, unsendable));
            }
        }
        let items = self.with_log(py, |log| log.items(limit))?;
        let list = PyList::empty(py);
        for item in &items {
            list.append(crate::json::to_python(py, item)?)?;
        }
        Ok((list, Vec::new()))
    }

    fn with_log<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut ItemLog) -> Result<T, Failure> + Send,
    ) -> PyResult<T> {
        py.detach(|| f(&mut self.log.lock().unwrap_or_else(PoisonError::into_inner)))
            .map_err(PyErr::from)
    }
}

#[pymethods]
impl ItemSession {
    /// Opens the session `session_id` of `store` (a SQLite file's path, or a PostgreSQL URL),
    /// loading its items; `format` is `"responses"` (Responses API items) or `"openai"`
    /// (Chat Completions messages). With `max_tokens` (the default pipeline's budget) or
    /// `pipeline` (a `StrategyConfig`), `get_items()` returns the curated view.
    #[new]
    #[pyo3(signature = (session_id, store, *, format = "responses", max_tokens = None, pipeline = None))]
    fn new(
        py: Python<'_>,
        session_id: &Bound<'_, PyAny>,
        store: &Bound<'_, PyAny>,
        format: &str,
        max_tokens: Option<&Bound<'_, PyAny>>,
        pipeline: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let session_id = crate::pipeline::string_argument("session_id", session_id)?;
        let store = crate::pipeline::string_argument("store", store)?;
        let format = ItemFormat::from_name(format)?;
        let config =
            if max_tokens.is_some_and(|m| !m.is_none()) || pipeline.is_some_and(|p| !p.is_none()) {
                Some(crate::pipeline::config(max_tokens, pipeline)?)
            } else {
                None
            };
        let postgres = is_postgres(&store);
        let log = py.detach(|| {
            let opened = open_store(&store)?;
            let log = ItemLog::open(opened, &session_id, format, config.as_ref())?;
            Ok::<_, Failure>(if postgres || !in_file(&store) {
                log
            } else {
                log.watching_file(
                    std::path::absolute(&store).unwrap_or_else(|_| store.clone().into()),
                )
            })
        })?;
        Ok(Self {
            session_id: log.key.as_str().to_owned(),
            postgres,
            curates: config.is_some(),
            log: Mutex::new(log),
            templates: Mutex::default(),
        })
    }

    /// The session's id, the key its items are recorded under.
    #[getter]
    fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Whether the store is PostgreSQL (whose calls wait on the network).
    #[getter]
    fn is_postgres(&self) -> bool {
        self.postgres
    }

    /// Number of items held, as of the last call.
    fn __len__(&self) -> usize {
        self.log.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// The items, or the newest `limit` of them; with a pipeline and no `limit`, the curated
    /// view as items (an `UnsendableWarning` names the items it left out because no
    /// provider takes them).
    #[pyo3(signature = (limit = None))]
    fn get_items<'py>(
        &self,
        py: Python<'py>,
        limit: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let (list, unsendable) = self.items_and_unsendable(py, limit, 0)?;
        if !unsendable.is_empty() {
            self.warn_unsendable(py, &unsendable)?;
        }
        Ok(list)
    }

    /// As `get_items`, with the warning's text returned (`None` when there is none) for
    /// the caller to give where its user called: for async callers, whose work runs on
    /// another thread. The curated view holds `reserve` tokens of the budget back for what
    /// is sent beside the items (instructions, tools).
    #[pyo3(signature = (limit = None, *, reserve = 0))]
    fn get_items_noting<'py>(
        &self,
        py: Python<'py>,
        limit: Option<&Bound<'py, PyAny>>,
        reserve: u64,
    ) -> PyResult<(Bound<'py, PyList>, Option<String>)> {
        let (list, unsendable) = self.items_and_unsendable(py, limit, reserve)?;
        let note = (!unsendable.is_empty()).then(|| self.unsendable_message(&unsendable));
        Ok((list, note))
    }

    /// The curated view again, as `get_items_noting` gives it, when nothing was recorded
    /// since the last curated view (with the same `reserve`) and that is known without
    /// waiting: one read of SQLite's change stamp, which waits for no writer, and fresh
    /// copies of the items handed out then. `None` otherwise (the items not loaded yet, a
    /// PostgreSQL store, something recorded since, another call at work): the caller then
    /// runs `get_items_noting`, which reads and curates, on a worker thread.
    #[pyo3(signature = (*, reserve = 0))]
    fn get_items_unchanged<'py>(
        &self,
        py: Python<'py>,
        reserve: u64,
    ) -> PyResult<Option<(Bound<'py, PyList>, Option<String>)>> {
        if !self.curates {
            return Ok(None);
        }
        let state = {
            let Ok(log) = self.log.try_lock() else { return Ok(None) };
            match log.unchanged()? {
                Some(state) => state,
                None => return Ok(None),
            }
        };
        let Ok(templates) = self.templates.try_lock() else { return Ok(None) };
        let Some((list, unsendable)) = templates.again(py, state, reserve)? else {
            return Ok(None);
        };
        let note = (!unsendable.is_empty()).then(|| self.unsendable_message(unsendable));
        Ok(Some((list, note)))
    }

    /// Records items after the session's items, all or none.
    fn add_items(&self, py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<()> {
        let Value::Array(items) = crate::json::to_value(items, "items")? else {
            return Err(Failure::Input {
                kind: "wrong_type",
                message: format!(
                    "`items` should be a list of items, found {}",
                    crate::pipeline::type_name(items)
                ),
            }
            .into());
        };
        self.with_log(py, |log| log.add(&items))
    }

    /// Removes the newest item and returns it, or `None` when there is none.
    fn pop_item<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self.with_log(py, ItemLog::pop)? {
            Some(item) => crate::json::to_python(py, &item),
            None => Ok(py.None().into_bound(py)),
        }
    }

    /// Starts the session afresh; what was recorded stays in the record.
    fn clear(&self, py: Python<'_>) -> PyResult<()> {
        self.with_log(py, ItemLog::clear)
    }
}

/// Reads a non-negative integer argument.
fn count_argument(name: &str, value: &Bound<'_, PyAny>) -> Result<usize, Failure> {
    let wrong = || Failure::Config {
        kind: "invalid_argument",
        message: format!(
            "`{name}` should be a non-negative integer or None, found {}",
            value.repr().map_or_else(|_| crate::pipeline::type_name(value), |r| r.to_string())
        ),
    };
    if value.cast::<pyo3::types::PyBool>().is_ok() {
        return Err(wrong());
    }
    value.extract::<usize>().map_err(|_| wrong())
}
