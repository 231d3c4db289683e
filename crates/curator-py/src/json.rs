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
/// not a string; an integer beyond 64 bits; a float that is not finite).
pub(crate) fn to_value(object: &Bound<'_, PyAny>, path: &mut String) -> Result<Value, Failure> {
    if object.is_none() {
        return Ok(Value::Null);
    }
    // `bool` is a subclass of `int`: it is asked first.
    if let Ok(flag) = object.cast::<PyBool>() {
        return Ok(Value::Bool(flag.is_true()));
    }
    if let Ok(text) = object.cast::<PyString>() {
        return Ok(Value::String(text.to_cow().map_err(|_| not_text(path))?.into_owned()));
    }
    if let Ok(dict) = object.cast::<PyDict>() {
        let mut map = Map::new();
        for (key, item) in dict.iter() {
            let Ok(key) = key.cast::<PyString>() else {
                return Err(wrong(path, "a dict key", "a string", &key));
            };
            let key = key.to_cow().map_err(|_| not_text(path))?.into_owned();
            let len = path.len();
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(&key);
            let value = to_value(&item, path)?;
            path.truncate(len);
            map.insert(key, value);
        }
        return Ok(Value::Object(map));
    }
    if let Ok(list) = object.cast::<PyList>() {
        return sequence(list.iter(), list.len(), path);
    }
    if let Ok(tuple) = object.cast::<PyTuple>() {
        return sequence(tuple.iter(), tuple.len(), path);
    }
    if let Ok(int) = object.cast::<PyInt>() {
        if let Ok(n) = int.extract::<i64>() {
            return Ok(Value::Number(n.into()));
        }
        if let Ok(n) = int.extract::<u64>() {
            return Ok(Value::Number(n.into()));
        }
        return Err(Failure::Input {
            kind: "wrong_type",
            message: format!("{}: the integer does not fit in 64 bits", shown(path)),
        });
    }
    if let Ok(float) = object.cast::<PyFloat>() {
        return Number::from_f64(float.value()).map(Value::Number).ok_or_else(|| Failure::Input {
            kind: "wrong_type",
            message: format!("{}: JSON cannot hold the float {}", shown(path), float.value()),
        });
    }
    Err(wrong(path, "a value", "a dict, list, string, number, boolean or None", object))
}

fn sequence<'py>(
    items: impl Iterator<Item = Bound<'py, PyAny>>,
    len: usize,
    path: &mut String,
) -> Result<Value, Failure> {
    let mut out = Vec::with_capacity(len);
    for (index, item) in items.enumerate() {
        let at = path.len();
        let _ = write!(path, "[{index}]");
        out.push(to_value(&item, path)?);
        path.truncate(at);
    }
    Ok(Value::Array(out))
}

/// The path as errors show it: the whole input when empty.
fn shown(path: &str) -> String {
    if path.is_empty() { "the input".to_owned() } else { format!("`{path}`") }
}

fn not_text(path: &str) -> Failure {
    Failure::Input {
        kind: "wrong_type",
        message: format!("{}: a string that is not valid Unicode text", shown(path)),
    }
}

fn wrong(path: &str, what: &str, expected: &str, found: &Bound<'_, PyAny>) -> Failure {
    let found = found.get_type().name().map_or_else(|_| "?".to_owned(), |n| n.to_string());
    Failure::Input {
        kind: "wrong_type",
        message: format!("{}: {what} should be {expected}, found a `{found}`", shown(path)),
    }
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
