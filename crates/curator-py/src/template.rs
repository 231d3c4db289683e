//! Python values built once and copied for each call: a copy makes every dict and list
//! afresh and shares only immutable leaves (strings, numbers, booleans, `None`), so that a
//! caller who changes what a call returned changes nothing that a later call returns.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use serde_json::Value;

/// A Python value and where its containers are, to copy it without walking its leaves.
///
/// The template's own objects are never handed out: [`Template::fresh`] copies each
/// container (`dict.copy()` and a list slice, which copy a table of references at C speed)
/// and puts fresh copies of the nested containers in place.
#[derive(Debug)]
pub(crate) enum Template {
    /// An immutable value, shared by every copy.
    Leaf(Py<PyAny>),
    /// A dict, and its values that are containers, by key.
    Dict(Py<PyDict>, Vec<(Py<PyString>, Template)>),
    /// A list, and its items that are containers, by index.
    List(Py<PyList>, Vec<(usize, Template)>),
}

impl Template {
    /// Builds the template of a JSON value.
    ///
    /// # Errors
    ///
    /// What Python reports when it cannot allocate an object.
    pub(crate) fn new(py: Python<'_>, value: &Value) -> PyResult<Self> {
        Ok(match value {
            Value::Object(map) => {
                let dict = PyDict::new(py);
                let mut nested = Vec::new();
                for (key, item) in map {
                    let key = PyString::new(py, key);
                    let item = Self::new(py, item)?;
                    dict.set_item(&key, item.object(py))?;
                    if !matches!(item, Self::Leaf(_)) {
                        nested.push((key.unbind(), item));
                    }
                }
                Self::Dict(dict.unbind(), nested)
            }
            Value::Array(items) => {
                let list = PyList::empty(py);
                let mut nested = Vec::new();
                for (index, item) in items.iter().enumerate() {
                    let item = Self::new(py, item)?;
                    list.append(item.object(py))?;
                    if !matches!(item, Self::Leaf(_)) {
                        nested.push((index, item));
                    }
                }
                Self::List(list.unbind(), nested)
            }
            leaf => Self::Leaf(crate::json::to_python(py, leaf)?.unbind()),
        })
    }

    /// The template's own object (never handed out: see [`Template::fresh`]).
    fn object<'py>(&self, py: Python<'py>) -> &Bound<'py, PyAny> {
        match self {
            Self::Leaf(object) => object.bind(py),
            Self::Dict(dict, _) => dict.bind(py).as_any(),
            Self::List(list, _) => list.bind(py).as_any(),
        }
    }

    /// A copy whose dicts and lists are all new objects.
    ///
    /// # Errors
    ///
    /// What Python reports when it cannot allocate an object.
    pub(crate) fn fresh<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(match self {
            Self::Leaf(object) => object.bind(py).clone(),
            Self::Dict(dict, nested) => {
                let copy = dict.bind(py).copy()?;
                for (key, item) in nested {
                    copy.set_item(key.bind(py), item.fresh(py)?)?;
                }
                copy.into_any()
            }
            Self::List(list, nested) => {
                let list = list.bind(py);
                let copy = list.get_slice(0, list.len());
                for (index, item) in nested {
                    copy.set_item(*index, item.fresh(py)?)?;
                }
                copy.into_any()
            }
        })
    }
}
