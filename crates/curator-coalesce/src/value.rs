//! The values agent programs produce, and the type vocabulary the model sees.

use serde::{Deserialize, Serialize};

/// A value produced by an agent program: what a `def` binds, a tool returns or a turn ends with.
///
/// Maps keep insertion order, so what the model sees follows what the program built.
/// Lists and vectors print the same way (`[1 2 3]`) and share the `list[N]` label; the
/// distinction is kept for interpreters that care.
///
/// # Depth
///
/// A value may nest as deep as its producer likes: converting from JSON, cloning, comparing,
/// dropping and printing ([`to_clojure`](crate::to_clojure)) walk it with a stack on the heap,
/// never by recursion, so a value 100,000 levels deep is as safe as a flat one. Two traversals are bounded instead:
/// `Debug` prints `..` below [`MAX_NESTING`](crate::MAX_NESTING) levels, and serializing a
/// value nested deeper than that fails with an error (serde serializers recurse; a checkpoint
/// of such a value is refused rather than crashing the process). Deserializing is bounded by
/// the deserializer: `serde_json` refuses text nested deeper than 128 levels.
///
/// Because `Value` implements `Drop` (to take deep values apart without recursion), a `match`
/// cannot move a field out of it: match on `&mut value` and take the field instead, as in
/// `if let Value::String(text) = &mut value { std::mem::take(text) }`.
///
/// # Examples
///
/// ```
/// use curator::coalesce::Value;
///
/// let config = Value::map([("env", Value::from("prod")), ("debug", Value::from(false))]);
/// assert_eq!(config.type_label(), "map[2]");
/// assert_eq!(Value::keyword("active").type_label(), "keyword");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
// `Clone`, `PartialEq`, `Debug`, `Serialize` and `Drop` are written by hand in `walk.rs`,
// without recursion (or with a bound), so that a deep value cannot overflow the stack.
#[derive(Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Value {
    /// `nil`.
    Nil,
    /// `true` or `false`.
    Boolean(bool),
    /// A whole number.
    Integer(i64),
    /// A floating-point number; NaN and the infinities print as `##NaN`, `##Inf`, `##-Inf`.
    Float(f64),
    /// A string.
    String(String),
    /// A keyword, stored without its leading colon: `Keyword("active")` prints `:active`.
    Keyword(String),
    /// A list.
    List(Vec<Value>),
    /// A vector.
    Vector(Vec<Value>),
    /// A map, in insertion order.
    Map(Vec<(Value, Value)>),
    /// A set, in insertion order.
    Set(Vec<Value>),
    /// A function defined by the program.
    Function(Function),
}

impl Value {
    /// A keyword, given without its leading colon.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::{Limits, Value, to_clojure};
    ///
    /// assert_eq!(to_clojure(&Value::keyword("active"), Limits::SAMPLE), ":active");
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn keyword(name: impl Into<String>) -> Self {
        Self::Keyword(name.into())
    }

    /// A vector of values (what a program's `[...]` or a tool's JSON array becomes).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::Value;
    ///
    /// assert_eq!(Value::list([1, 2, 3].map(Value::from)).type_label(), "list[3]");
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn list(items: impl IntoIterator<Item = Value>) -> Self {
        Self::Vector(items.into_iter().collect())
    }

    /// A map with keyword keys, in the order given.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::{Limits, Value, to_clojure};
    ///
    /// let user = Value::map([("id", Value::from(1))]);
    /// assert_eq!(to_clojure(&user, Limits::SAMPLE), "{:id 1}");
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn map<K: Into<String>>(entries: impl IntoIterator<Item = (K, Value)>) -> Self {
        Self::Map(
            entries.into_iter().map(|(key, value)| (Self::Keyword(key.into()), value)).collect(),
        )
    }

    /// The number of items of a collection, or `None` for a scalar or a function.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::Value;
    ///
    /// assert_eq!(Value::list([]).len(), Some(0));
    /// assert_eq!(Value::from(4).len(), None);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> Option<usize> {
        match self {
            Self::List(items) | Self::Vector(items) | Self::Set(items) => Some(items.len()),
            Self::Map(entries) => Some(entries.len()),
            _ => None,
        }
    }

    /// Whether this is an empty collection (`false` for scalars and functions).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::Value;
    ///
    /// assert!(Value::map::<&str>([]).is_empty());
    /// assert!(!Value::Nil.is_empty());
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }

    /// The label the model sees for this value's type: `list[N]`, `map[N]`, `set[N]`,
    /// `string`, `integer`, `float`, `boolean`, `keyword`, `nil` or `#fn[params]`.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::{Function, Value};
    ///
    /// assert_eq!(Value::from("hello").type_label(), "string");
    /// assert_eq!(Value::from(3.14).type_label(), "float");
    /// assert_eq!(Value::Function(Function::new("helper", ["x"])).type_label(), "#fn[x]");
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn type_label(&self) -> String {
        match self {
            Self::Nil => "nil".to_owned(),
            Self::Boolean(_) => "boolean".to_owned(),
            Self::Integer(_) => "integer".to_owned(),
            Self::Float(_) => "float".to_owned(),
            Self::String(_) => "string".to_owned(),
            Self::Keyword(_) => "keyword".to_owned(),
            Self::List(items) | Self::Vector(items) => format!("list[{}]", items.len()),
            Self::Map(entries) => format!("map[{}]", entries.len()),
            Self::Set(items) => format!("set[{}]", items.len()),
            Self::Function(function) => format!("#fn[{}]", function.params.join(" ")),
        }
    }

    /// What a sample of this value shows, or `None` when a sample would say nothing the
    /// type label does not: for `nil`, empty collections and functions.
    ///
    /// A list or set is sampled by its first item; a map and a scalar by themselves.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::Value;
    ///
    /// let items = Value::list([1, 2, 3].map(Value::from));
    /// assert_eq!(items.sample(), Some(&Value::from(1)));
    /// assert_eq!(Value::Nil.sample(), None);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sample(&self) -> Option<&Value> {
        match self {
            Self::Nil | Self::Function(_) => None,
            Self::List(items) | Self::Vector(items) | Self::Set(items) => items.first(),
            Self::Map(entries) if entries.is_empty() => None,
            _ => Some(self),
        }
    }

    /// Whether this is a collection holding at least one collection that is not empty: a
    /// value that nests, which the hand-written traversals walk without recursion.
    pub(crate) fn nests(&self) -> bool {
        let nonempty = |value: &Value| value.len().is_some_and(|len| len > 0);
        match self {
            Self::List(items) | Self::Vector(items) | Self::Set(items) => {
                items.iter().any(nonempty)
            }
            Self::Map(entries) => {
                entries.iter().any(|(key, value)| nonempty(key) || nonempty(value))
            }
            _ => false,
        }
    }
}

impl From<bool> for Value {
    fn from(value: bool) -> Self {
        Self::Boolean(value)
    }
}

impl From<i64> for Value {
    fn from(value: i64) -> Self {
        Self::Integer(value)
    }
}

impl From<i32> for Value {
    fn from(value: i32) -> Self {
        Self::Integer(value.into())
    }
}

impl From<f64> for Value {
    fn from(value: f64) -> Self {
        Self::Float(value)
    }
}

impl From<&str> for Value {
    fn from(value: &str) -> Self {
        Self::String(value.to_owned())
    }
}

impl From<String> for Value {
    fn from(value: String) -> Self {
        Self::String(value)
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(value: Option<T>) -> Self {
        value.map_or(Self::Nil, Into::into)
    }
}

/// A function a program defined: what the `user/` prelude can say about it.
///
/// # Examples
///
/// ```
/// use curator::coalesce::Function;
///
/// let helper = Function::new("fetch-users", ["category"])
///     .with_docstring("Fetches users by category")
///     .with_return_type("list[5]");
/// assert_eq!(helper.name(), "fetch-users");
/// assert_eq!(helper.return_type(), Some("list[5]"));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Function {
    name: String,
    params: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    docstring: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    return_type: Option<String>,
}

impl Function {
    /// A function with its name and parameter names.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::Function;
    ///
    /// assert_eq!(Function::new("helper", ["x"]).params(), ["x"]);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new<P: Into<String>>(
        name: impl Into<String>,
        params: impl IntoIterator<Item = P>,
    ) -> Self {
        Self {
            name: name.into(),
            params: params.into_iter().map(Into::into).collect(),
            docstring: None,
            return_type: None,
        }
    }

    /// The same function with its docstring.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::Function;
    ///
    /// let f = Function::new("helper", ["x"]).with_docstring("Doubles x");
    /// assert_eq!(f.docstring(), Some("Doubles x"));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_docstring(mut self, docstring: impl Into<String>) -> Self {
        self.docstring = Some(docstring.into());
        self
    }

    /// The same function with the type label of what its last call returned.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::{Function, Value};
    ///
    /// let f = Function::new("helper", ["x"]).with_return_type(Value::from(2).type_label());
    /// assert_eq!(f.return_type(), Some("integer"));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_return_type(mut self, label: impl Into<String>) -> Self {
        self.return_type = Some(label.into());
        self
    }

    /// The name the program gave the function.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The parameter names, in order.
    pub fn params(&self) -> &[String] {
        &self.params
    }

    /// The docstring, if the definition had one.
    pub fn docstring(&self) -> Option<&str> {
        self.docstring.as_deref()
    }

    /// The type label of what the last call returned; `None` until the function is called.
    pub fn return_type(&self) -> Option<&str> {
        self.return_type.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_round_trips_every_variant() {
        let value = Value::List(vec![
            Value::Nil,
            Value::from(true),
            Value::from(42),
            Value::from(2.75),
            Value::from("hello"),
            Value::keyword("active"),
            Value::Set(vec![Value::from(1)]),
            Value::map([("a", Value::from(1))]),
            Value::Function(Function::new("f", ["x"]).with_docstring("d").with_return_type("nil")),
        ]);
        let json = serde_json::to_string(&value).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&json).unwrap(), value);
    }

    #[test]
    fn samples_follow_the_vocabulary() {
        assert_eq!(Value::list([]).sample(), None);
        assert_eq!(Value::from("x").sample(), Some(&Value::from("x")));
        let map = Value::map([("a", Value::from(1))]);
        assert_eq!(map.sample(), Some(&map));
        assert_eq!(Value::Function(Function::new("f", ["x"])).sample(), None);
    }
}
