//! What the module's functions share: reading what Python hands in (requests, messages in
//! each format), the token counters, and writing what goes back (views as positions or
//! dicts, the warning of what no provider takes).

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use curator::model::{Message, formats};
use curator::strategies::{TokenCounter, Tokenizer};
use pyo3::prelude::*;
use pyo3::types::PyList;
use serde_json::{Map, Value};

use crate::detect::Format;
use crate::error::{self, Failure};
use crate::json;
use crate::lazy::Kept;

/// Says which messages of the input no provider takes (tool results answering no call,
/// calls whose results never come), which every view leaves out: an `UnsendableWarning`,
/// which `warnings.simplefilter("error", UnsendableWarning)` turns into an exception.
pub(crate) fn warn_unsendable(py: Python<'_>, unsendable: &[usize]) -> PyResult<()> {
    if unsendable.is_empty() {
        return Ok(());
    }
    let positions: Vec<String> = unsendable.iter().map(ToString::to_string).collect();
    let message = format!(
        "{} message(s) of the input (at {}) answer no open call or call a tool whose result never comes (a system or user message came between): no provider takes them, so no view sends them",
        unsendable.len(),
        positions.join(", ")
    );
    let message = std::ffi::CString::new(message).unwrap_or_default();
    PyErr::warn(py, &py.get_type::<error::UnsendableWarning>(), &message, error::caller_level(py))
}

/// For [`curate_kept`]: positions as `int`s, changed messages as `(position, dict)` tuples
/// (the dict an OpenAI message), made messages as OpenAI dicts.
pub(crate) fn positions_or_dicts<'py>(
    py: Python<'py>,
    kept: &[Kept],
) -> PyResult<Bound<'py, PyAny>> {
    let out = PyList::empty(py);
    let dict = |index: usize, message: &Message| {
        json::to_python(
            py,
            &formats::openai::message_to_value(index, message).map_err(Failure::from)?,
        )
    };
    for (index, item) in kept.iter().enumerate() {
        match item {
            Kept::Position(position) => out.append(position)?,
            Kept::Changed(position, message) => {
                out.append((position, dict(index, message)?))?;
            }
            Kept::Message(message) => out.append(dict(index, message)?)?,
        }
    }
    Ok(out.into_any())
}

/// The token counter a tokenizer names, made once per process (an exact encoding loads its
/// vocabulary).
pub(crate) fn counter(tokenizer: Tokenizer) -> Result<Arc<dyn TokenCounter>, Failure> {
    type Counters = Mutex<Vec<(Tokenizer, Arc<dyn TokenCounter>)>>;
    static COUNTERS: OnceLock<Counters> = OnceLock::new();
    let counters = COUNTERS.get_or_init(Mutex::default);
    let mut counters = counters.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, counter)) = counters.iter().find(|(t, _)| *t == tokenizer) {
        return Ok(Arc::clone(counter));
    }
    let counter = tokenizer.counter()?;
    counters.push((tokenizer, Arc::clone(&counter)));
    Ok(counter)
}

/// A request dict's keys other than its messages.
pub(crate) type Envelope = Map<String, Value>;

/// A list of messages, or a request dict: its messages, and the request's other keys.
///
/// # Errors
///
/// A request that is neither, or whose `messages` is not a list.
pub(crate) fn split_request(input: Value) -> Result<(Vec<Value>, Option<Envelope>), Failure> {
    Ok(match input {
        Value::Array(items) => (items, None),
        Value::Object(mut object) => match object.remove("messages") {
            Some(Value::Array(items)) => (items, Some(object)),
            Some(other) => {
                return Err(Failure::Input {
                    kind: "wrong_type",
                    message: format!("`messages` should be a list, found {}", python_kind(&other)),
                });
            }
            None => {
                return Err(Failure::Input {
                    kind: "missing_field",
                    message: "the request dict has no `messages`".to_owned(),
                });
            }
        },
        other => {
            return Err(Failure::Input {
                kind: "wrong_type",
                message: format!(
                    "expected a list of messages or a request dict with `messages`, found {}",
                    python_kind(&other)
                ),
            });
        }
    })
}

/// Reads messages in `format`; `system` is an Anthropic request's top-level system prompt.
pub(crate) fn read(
    format: Format,
    items: Vec<Value>,
    system: Option<Value>,
) -> Result<Vec<Message>, Failure> {
    Ok(match format {
        Format::Openai => formats::openai::to_messages(&Value::Array(items))?,
        Format::Responses => formats::responses::to_messages(&items)?,
        Format::Anthropic => {
            let mut request = Map::new();
            if let Some(system) = system {
                request.insert("system".to_owned(), system);
            }
            request.insert("messages".to_owned(), Value::Array(items));
            formats::anthropic::to_messages(&Value::Object(request))?
        }
    })
}

/// Names the Python type a JSON value comes from, for error messages (`a dict`, `a list`,
/// `None`: Python's words, where `curator::model::json_kind` says JSON's).
fn python_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "None",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a dict",
    }
}
