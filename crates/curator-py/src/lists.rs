//! Python lists read lazily (see [`crate::lazy`]): OpenAI Chat Completions dicts, and
//! objects a Python function turns into such dicts (LangChain messages).
//!
//! Roles are read for every message, cheaply: a dict's `role` key; for objects, the class's
//! role, looked up once per class (LangChain's `type` field is fixed per class), or through
//! the conversion for classes that hold their role per instance (`ChatMessage`).

use std::collections::HashMap;

use curator::model::{Error as ModelError, Message, Role, formats};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use crate::error::Failure;
use crate::json;
use crate::lazy::Lazy;

/// A list of OpenAI dicts, or of objects `convert` turns into OpenAI dicts.
pub(crate) struct PyMessages<'py> {
    list: Bound<'py, PyList>,
    convert: Option<Bound<'py, PyAny>>,
    /// `BaseMessage`, when `convert` is given: every object must be one.
    base: Option<Bound<'py, PyAny>>,
    /// The role of each class seen (by its address), for objects.
    classes: HashMap<usize, Option<Role>>,
    /// The roles, once read.
    roles: Vec<Role>,
}

impl<'py> PyMessages<'py> {
    /// OpenAI dicts.
    pub(crate) fn dicts(list: Bound<'py, PyList>) -> Self {
        Self { list, convert: None, base: None, classes: HashMap::new(), roles: Vec::new() }
    }

    /// Objects of class `base` that `convert` turns into OpenAI dicts.
    pub(crate) fn objects(
        list: Bound<'py, PyList>,
        convert: Bound<'py, PyAny>,
        base: Bound<'py, PyAny>,
    ) -> Self {
        Self {
            list,
            convert: Some(convert),
            base: Some(base),
            classes: HashMap::new(),
            roles: Vec::new(),
        }
    }

    /// Reads every role. Afterwards [`Lazy::role`] answers from what was read.
    ///
    /// # Errors
    ///
    /// The first message whose role cannot be read.
    pub(crate) fn read_roles(&mut self) -> Result<&[Role], Failure> {
        if self.roles.len() != self.list.len() {
            let mut roles = Vec::with_capacity(self.list.len());
            if self.convert.is_none() {
                // Dicts: one pass over the list with the key and the names at hand.
                let py = self.list.py();
                let key = intern!(py, "role");
                let names = role_names(py);
                for (index, item) in self.list.iter().enumerate() {
                    roles.push(dict_role_with(index, &item, key, &names)?);
                }
            } else {
                for index in 0..self.list.len() {
                    roles.push(self.read_role(index)?);
                }
            }
            self.roles = roles;
        }
        Ok(&self.roles)
    }

    /// Message `index` as the dict it stands for.
    fn dict(&self, index: usize) -> Result<Bound<'py, PyAny>, Failure> {
        let item = self.item(index)?;
        let Some(convert) = &self.convert else { return Ok(item) };
        let dict = convert.call1((&item,)).map_err(|e| Failure::Input {
            kind: "unreadable_message",
            message: format!("message {index}: cannot convert it: {e}"),
        })?;
        if dict.cast::<PyDict>().is_err() {
            // A message the conversion writes as several OpenAI messages (tool results
            // inside a human message) could not be handed back as the object it was.
            return Err(Failure::Input {
                kind: "unsupported_message",
                message: format!(
                    "message {index}: a `{}` that is not one OpenAI message",
                    class_name(&item)
                ),
            });
        }
        Ok(dict)
    }

    fn item(&self, index: usize) -> Result<Bound<'py, PyAny>, Failure> {
        self.list.get_item(index).map_err(|e| Failure::Input {
            kind: "wrong_type",
            message: format!("message {index}: {e}"),
        })
    }

    fn read_role(&mut self, index: usize) -> Result<Role, Failure> {
        let item = self.item(index)?;
        if self.convert.is_none() {
            return dict_role(index, &item);
        }
        let class = item.get_type();
        let address = class.as_ptr() as usize;
        let known = if let Some(known) = self.classes.get(&address) {
            *known
        } else {
            let known = self.class_role(index, &item)?;
            self.classes.insert(address, known);
            known
        };
        match known {
            Some(role) => Ok(role),
            None => dict_role(index, &self.dict(index)?),
        }
    }

    /// The role every object of `item`'s class has, `None` when it is held per object.
    fn class_role(&self, index: usize, item: &Bound<'py, PyAny>) -> Result<Option<Role>, Failure> {
        if let Some(base) = &self.base
            && !item.is_instance(base).unwrap_or(false)
        {
            return Err(Failure::Input {
                kind: "wrong_type",
                message: format!(
                    "message {index}: a list of LangChain messages holds only messages, found a `{}`",
                    class_name(item)
                ),
            });
        }
        let kind = item.getattr(intern!(item.py(), "type")).ok();
        let kind = kind.as_ref().and_then(|k| k.cast::<PyString>().ok());
        let kind = kind.and_then(|k| k.to_cow().ok().map(std::borrow::Cow::into_owned));
        Ok(match kind.as_deref() {
            Some("system") => Some(Role::System),
            Some("human") => Some(Role::User),
            Some("ai") => Some(Role::Assistant),
            Some("tool") => Some(Role::Tool),
            _ => None,
        })
    }
}

impl Lazy for PyMessages<'_> {
    fn len(&self) -> usize {
        self.list.len()
    }

    fn role(&mut self, index: usize) -> Result<Role, Failure> {
        match self.roles.get(index) {
            Some(role) => Ok(*role),
            None => self.read_role(index),
        }
    }

    fn message(&mut self, index: usize) -> Result<Message, Failure> {
        if self.base.is_some() {
            // An object of a class not yet seen is checked to be a message first.
            self.role(index)?;
        }
        let dict = self.dict(index)?;
        let value = json::item_to_value(&dict, index)?;
        Ok(formats::openai::message_from_value(index, &value)?)
    }
}

/// The role of an OpenAI dict, read from its `role` key alone.
fn dict_role(index: usize, item: &Bound<'_, PyAny>) -> Result<Role, Failure> {
    let py = item.py();
    dict_role_with(index, item, intern!(py, "role"), &role_names(py))
}

/// The role names and the roles they stand for.
type RoleNames<'py> = [(&'py Bound<'py, PyString>, Role); 5];

fn role_names(py: Python<'_>) -> RoleNames<'_> {
    [
        (intern!(py, "tool"), Role::Tool),
        (intern!(py, "assistant"), Role::Assistant),
        (intern!(py, "user"), Role::User),
        (intern!(py, "system"), Role::System),
        (intern!(py, "developer"), Role::System),
    ]
}

/// [`dict_role`] with the key and the names at hand.
fn dict_role_with(
    index: usize,
    item: &Bound<'_, PyAny>,
    key: &Bound<'_, PyString>,
    names: &RoleNames<'_>,
) -> Result<Role, Failure> {
    let dict = item.cast::<PyDict>().map_err(|_| Failure::Input {
        kind: "wrong_type",
        message: format!("message {index}: expected a dict, found a `{}`", class_name(item)),
    })?;
    let role =
        dict.get_item(key).ok().flatten().ok_or_else(|| {
            Failure::Model(ModelError::MissingField { index, field: "role".into() })
        })?;
    // Names written in Python code are the interpreter's interned strings, found by
    // address; others are compared.
    if let Some((_, role)) = names.iter().find(|(n, _)| role.is(*n)) {
        return Ok(*role);
    }
    if role.cast::<PyString>().is_ok()
        && let Some((_, role)) = names.iter().find(|(n, _)| role.eq(*n).unwrap_or(false))
    {
        return Ok(*role);
    }
    let shown = role
        .cast::<PyString>()
        .ok()
        .and_then(|r| r.to_cow().ok().map(std::borrow::Cow::into_owned));
    Err(Failure::Model(ModelError::UnknownRole {
        index,
        role: shown.unwrap_or_else(|| format!("(a `{}`)", class_name(&role))),
    }))
}

fn class_name(item: &Bound<'_, PyAny>) -> String {
    item.get_type().name().map_or_else(|_| "?".to_owned(), |n| n.to_string())
}
