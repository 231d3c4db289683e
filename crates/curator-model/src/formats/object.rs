//! Field access on wire JSON objects, with errors that name the message and field.

use serde_json::{Map, Value};

use crate::error::json_kind;
use crate::{Error, Result};

/// One JSON object of a wire message, read with errors that name where it sits.
pub(crate) struct Object<'a> {
    pub(crate) index: usize,
    pub(crate) path: String,
    pub(crate) map: &'a Map<String, Value>,
}

impl<'a> Object<'a> {
    /// Reads `value` as an object at `path` (empty for the message itself).
    pub(crate) fn new(index: usize, path: impl Into<String>, value: &'a Value) -> Result<Self> {
        let path = path.into();
        match value {
            Value::Object(map) => Ok(Self { index, path, map }),
            other => Err(Error::WrongType {
                index,
                field: if path.is_empty() { "message".to_owned() } else { path },
                expected: "an object",
                found: json_kind(other),
            }),
        }
    }

    /// The path of a field of this object.
    pub(crate) fn field(&self, key: &str) -> String {
        if self.path.is_empty() { key.to_owned() } else { format!("{}.{key}", self.path) }
    }

    pub(crate) fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    pub(crate) fn missing(&self, key: &str) -> Error {
        Error::MissingField { index: self.index, field: self.field(key) }
    }

    pub(crate) fn wrong_type(&self, key: &str, expected: &'static str, found: &Value) -> Error {
        Error::WrongType {
            index: self.index,
            field: self.field(key),
            expected,
            found: json_kind(found),
        }
    }

    /// An optional string field (`null` counts as absent).
    pub(crate) fn opt_str(&self, key: &str) -> Result<Option<&'a str>> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.wrong_type(key, "a string", other)),
        }
    }

    /// A required string field.
    pub(crate) fn str(&self, key: &str) -> Result<&'a str> {
        match self.map.get(key) {
            None => Err(self.missing(key)),
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(self.wrong_type(key, "a string", other)),
        }
    }

    /// The fields other than `known`, which the caller keeps verbatim.
    pub(crate) fn rest(&self, known: &[&str]) -> Map<String, Value> {
        self.map
            .iter()
            .filter(|(k, _)| !known.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Whether the object has no fields other than `known`.
    pub(crate) fn only(&self, known: &[&str]) -> bool {
        self.map.keys().all(|k| known.contains(&k.as_str()))
    }
}

/// Copies `extra` (fields kept from a source of this format) into `target`.
pub(crate) fn merge(target: &mut Map<String, Value>, extra: Option<&Map<String, Value>>) {
    if let Some(extra) = extra {
        for (k, v) in extra {
            target.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
}
