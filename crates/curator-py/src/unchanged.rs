//! Copies of Python values that tell, later, whether the values are still what they were:
//! for callers that hold what they read of a list between calls (`curate`'s remembered
//! conversations, `HeldHistory`) and must notice a message changed in place.
//!
//! A copy duplicates dicts, lists and tuples and shares strings, numbers, booleans and `None`
//! (which Python never changes in place), so comparing the values with their copies with one
//! `==`, at the interpreter's speed, tells whether a dict or list was changed since. Where
//! `==` is looser than JSON (`1 == 1.0 == True`), a copy holds each number or boolean as an
//! [`Exactly`], which equals only a value of the same type and value: a `True` that became
//! `1` is a change.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::json::MAX_DEPTH;

/// A number or a boolean in a copy: equal only to a value of its very type that equals it
/// (Python's own `==` says `1 == 1.0 == True`, where JSON tells them apart). Python asks it
/// when the value compared with it declines (as `int`, `float` and `bool` decline anything
/// else than numbers).
#[pyclass(frozen, module = "curator_context._native")]
pub(crate) struct Exactly {
    value: Py<PyAny>,
}

#[pymethods]
impl Exactly {
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        let value = self.value.bind(other.py());
        other.is(value)
            || (other.get_type().is(value.get_type()) && other.eq(value).unwrap_or(false))
    }

    fn __ne__(&self, other: &Bound<'_, PyAny>) -> bool {
        !self.__eq__(other)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!("Exactly({})", self.value.bind(py))
    }
}

/// Copies of values, in order, to tell later whether a list of values starts with them,
/// unchanged.
#[derive(Debug)]
pub(crate) struct Copies {
    copies: Py<PyList>,
}

impl Copies {
    /// No copies yet.
    pub(crate) fn new(py: Python<'_>) -> Self {
        Copies { copies: PyList::empty(py).unbind() }
    }

    /// How many values are copied.
    pub(crate) fn len(&self, py: Python<'_>) -> usize {
        self.copies.bind(py).len()
    }

    /// Appends a copy of `value`; `false`, appending nothing, when it holds anything else
    /// than JSON's types (dicts with string keys, lists, tuples, strings, numbers, booleans,
    /// `None`) or nests too deep.
    ///
    /// # Errors
    ///
    /// Python's, if the copy cannot be appended to the list that holds them.
    pub(crate) fn push(&mut self, value: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Some(duplicate) = copy(value, 1) else { return Ok(false) };
        self.copies.bind(value.py()).append(duplicate)?;
        Ok(true)
    }

    /// Appends copies of `values`; `false`, appending none, when one of them cannot be
    /// copied (see [`Copies::push`]).
    ///
    /// # Errors
    ///
    /// Python's, if a copy cannot be appended to the list that holds them.
    pub(crate) fn extend(&mut self, values: &[Bound<'_, PyAny>]) -> PyResult<bool> {
        let Some(first) = values.first() else { return Ok(true) };
        let py = first.py();
        let start = self.len(py);
        for value in values {
            if !self.push(value)? {
                let copies = self.copies.bind(py);
                copies.del_slice(start, copies.len())?;
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Whether `values` starts with every value copied, unchanged: equal to its copy (one
    /// comparison, in the interpreter).
    pub(crate) fn start(&self, values: &Bound<'_, PyList>) -> bool {
        let copies = self.copies.bind(values.py());
        let held = copies.len();
        values.len() >= held && values.get_slice(0, held).eq(copies).unwrap_or(false)
    }
}

/// A copy of `value` that shares its strings and `None`, holds its numbers and booleans as
/// [`Exactly`], and copies its dicts, lists and tuples. `None` when it holds anything else than
/// JSON's types, or nests too deep.
fn copy<'py>(value: &Bound<'py, PyAny>, depth: usize) -> Option<Bound<'py, PyAny>> {
    if value.is_none() || value.cast::<PyString>().is_ok() {
        return Some(value.clone());
    }
    let py = value.py();
    if value.cast::<PyBool>().is_ok()
        || value.cast::<PyInt>().is_ok()
        || value.cast::<PyFloat>().is_ok()
    {
        return Bound::new(py, Exactly { value: value.clone().unbind() }).ok().map(Bound::into_any);
    }
    if depth >= MAX_DEPTH {
        return None;
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        let out = PyDict::new(py);
        for (key, item) in dict.iter() {
            key.cast::<PyString>().ok()?;
            out.set_item(key, copy(&item, depth + 1)?).ok()?;
        }
        return Some(out.into_any());
    }
    let items = |iter: &mut dyn Iterator<Item = Bound<'py, PyAny>>| {
        iter.map(|item| copy(&item, depth + 1)).collect::<Option<Vec<_>>>()
    };
    if let Ok(list) = value.cast::<PyList>() {
        return PyList::new(py, items(&mut list.iter())?).ok().map(Bound::into_any);
    }
    if let Ok(tuple) = value.cast::<PyTuple>() {
        return PyTuple::new(py, items(&mut tuple.iter())?).ok().map(Bound::into_any);
    }
    None
}
