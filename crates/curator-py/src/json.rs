//! Python objects to JSON values and back: dicts, lists, tuples, strings, numbers, booleans
//! and `None`, walked directly (no JSON text in between), so that a call costs one pass over
//! what it is given and one over what it returns.

use std::fmt::Write as _;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

use crate::error::Failure;

/// Reads a Python object as a JSON value; `path` names it in errors (`messages[3].content`).
///
/// # Errors
///
/// [`Failure::Input`] naming the path and the Python type of a value JSON cannot hold (an
/// object that is not a dict, list, tuple, string, number, boolean or `None`; a key that is
/// not a string; an integer beyond 64 bits; a float that is not finite), or a value nested
/// deeper than [`MAX_DEPTH`] levels.
pub(crate) fn to_value(object: &Bound<'_, PyAny>, path: &str) -> Result<Value, Failure> {
    read(object, 0).map_err(|error| failure(error, path))
}

/// Reads item `index` of a list as [`to_value`] reads it inside the list given whole: its
/// depth, and the path an error names, counted from the list.
///
/// # Errors
///
/// As [`to_value`].
pub(crate) fn item_to_value(object: &Bound<'_, PyAny>, index: usize) -> Result<Value, Failure> {
    read(object, 1).map_err(|mut error| {
        error.path.push(Segment::Index(index));
        failure(error, "")
    })
}

/// The failure `error` says, at `path` and below.
fn failure(mut error: Unreadable, path: &str) -> Failure {
    // The segments were pushed on the way out, innermost first.
    error.path.reverse();
    let mut at = path.to_owned();
    let shown = error.path.len().min(SHOWN_SEGMENTS);
    for segment in &error.path[..shown] {
        match segment {
            Segment::Key(key) => {
                if !at.is_empty() {
                    at.push('.');
                }
                at.push_str(key);
            }
            Segment::Index(index) => {
                let _ = write!(at, "[{index}]");
            }
        }
    }
    if error.path.len() > shown {
        at.push('…');
    }
    let shown = if at.is_empty() { "the input".to_owned() } else { format!("`{at}`") };
    Failure::Input { kind: "wrong_type", message: format!("{shown}: {}", error.problem) }
}

/// How deep a value may nest (each dict, list or tuple is a level, the outermost included).
/// Reading, curating and writing a value walk it recursively, so a value nested tens of
/// thousands of levels deep would overflow the stack and kill the process; none this deep is
/// a conversation (the formats' JSON parser stops tool arguments at 128 levels).
pub(crate) const MAX_DEPTH: usize = 256;

/// The segments of a path an error shows, the outermost first.
const SHOWN_SEGMENTS: usize = 12;

/// A value that JSON cannot hold, and where: the path is only built when something is wrong,
/// so that reading costs nothing per key.
struct Unreadable {
    problem: String,
    path: Vec<Segment>,
}

enum Segment {
    Key(String),
    Index(usize),
}

fn unreadable(problem: String) -> Unreadable {
    Unreadable { problem, path: Vec::new() }
}

fn read(object: &Bound<'_, PyAny>, depth: usize) -> Result<Value, Unreadable> {
    if object.is_none() {
        return Ok(Value::Null);
    }
    // `bool` is a subclass of `int`: it is asked first.
    if let Ok(flag) = object.cast::<PyBool>() {
        return Ok(Value::Bool(flag.is_true()));
    }
    if let Ok(text) = object.cast::<PyString>() {
        return Ok(Value::String(text_of(text)?));
    }
    if let Ok(dict) = object.cast::<PyDict>() {
        if depth >= MAX_DEPTH {
            return Err(too_deep());
        }
        let mut map = Map::new();
        for (key, item) in dict.iter() {
            let Ok(key) = key.cast::<PyString>() else {
                return Err(unreadable(format!(
                    "a dict key should be a string, found {}",
                    type_of(&key)
                )));
            };
            let key = text_of(key)?;
            match read(&item, depth + 1) {
                Ok(value) => map.insert(key, value),
                Err(mut error) => {
                    error.path.push(Segment::Key(key));
                    return Err(error);
                }
            };
        }
        return Ok(Value::Object(map));
    }
    if let Ok(list) = object.cast::<PyList>() {
        return sequence(list.iter(), list.len(), depth);
    }
    if let Ok(tuple) = object.cast::<PyTuple>() {
        return sequence(tuple.iter(), tuple.len(), depth);
    }
    if let Ok(int) = object.cast::<PyInt>() {
        if let Ok(n) = int.extract::<i64>() {
            return Ok(Value::Number(n.into()));
        }
        if let Ok(n) = int.extract::<u64>() {
            return Ok(Value::Number(n.into()));
        }
        return Err(unreadable("the integer does not fit in 64 bits".to_owned()));
    }
    if let Ok(float) = object.cast::<PyFloat>() {
        return Number::from_f64(float.value())
            .map(Value::Number)
            .ok_or_else(|| unreadable(format!("JSON cannot hold the float {}", float.value())));
    }
    Err(unreadable(format!(
        "a value should be a dict, list, string, number, boolean or None, found {}",
        type_of(object)
    )))
}

fn sequence<'py>(
    items: impl Iterator<Item = Bound<'py, PyAny>>,
    len: usize,
    depth: usize,
) -> Result<Value, Unreadable> {
    if depth >= MAX_DEPTH {
        return Err(too_deep());
    }
    let mut out = Vec::with_capacity(len);
    for (index, item) in items.enumerate() {
        match read(&item, depth + 1) {
            Ok(value) => out.push(value),
            Err(mut error) => {
                error.path.push(Segment::Index(index));
                return Err(error);
            }
        }
    }
    Ok(Value::Array(out))
}

fn too_deep() -> Unreadable {
    unreadable(format!("nested deeper than {MAX_DEPTH} levels"))
}

fn text_of(text: &Bound<'_, PyString>) -> Result<String, Unreadable> {
    text.to_cow()
        .map(std::borrow::Cow::into_owned)
        .map_err(|_| unreadable("a string that is not valid Unicode text".to_owned()))
}

fn type_of(found: &Bound<'_, PyAny>) -> String {
    found.get_type().name().map_or_else(|_| "?".to_owned(), |n| format!("a `{n}`"))
}

/// Builds the Python object of a JSON value: dicts, lists, strings, ints, floats, booleans
/// and `None`.
///
/// # Errors
///
/// What Python reports when it cannot allocate an object.
pub(crate) fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(flag) => PyBool::new(py, *flag).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_python(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (key, item) in map {
                dict.set_item(key, to_python(py, item)?)?;
            }
            dict.into_any()
        }
    })
}
