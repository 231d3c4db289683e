//! Traversals of [`Value`] that no input can turn into a stack overflow: clone, equality and
//! drop walk with a stack on the heap; `Debug` and `Serialize` recurse, but only to a bound.

use std::fmt;

use serde::ser::{Error as _, SerializeStruct};
use serde::{Serialize, Serializer};

use crate::value::Value;

/// How many levels of a [`Value`] `Debug` prints (deeper levels print as `..`) and
/// serialization writes (a deeper value is an error): enough for any data a tool returns as
/// JSON, which `serde_json` parses only to 128 levels, and little enough that the recursion
/// of serde and of the formatter stays far from the end of a thread's stack.
///
/// # Examples
///
/// ```
/// use curator::coalesce::{MAX_NESTING, Value};
///
/// let mut deep = Value::Nil;
/// for _ in 0..=MAX_NESTING {
///     deep = Value::list([deep]);
/// }
/// let error = serde_json::to_string(&deep).unwrap_err();
/// assert!(error.to_string().contains("nested deeper than 128 levels"));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const MAX_NESTING: usize = 128;

impl Drop for Value {
    fn drop(&mut self) {
        // A value whose items are scalars or empty collections drops them directly (one level
        // of recursion); anything deeper is taken apart here, one level at a time, so that
        // every value the loop drops is shallow.
        if !self.nests() {
            return;
        }
        let mut pending = Vec::new();
        take_items(self, &mut pending);
        while let Some(mut value) = pending.pop() {
            if value.nests() {
                take_items(&mut value, &mut pending);
            }
        }
    }
}

/// Moves the items of a collection (keys and values of a map) onto `pending`.
fn take_items(value: &mut Value, pending: &mut Vec<Value>) {
    match value {
        Value::List(items) | Value::Vector(items) | Value::Set(items) => pending.append(items),
        Value::Map(entries) => {
            for (key, value) in entries.drain(..) {
                pending.push(key);
                pending.push(value);
            }
        }
        _ => {}
    }
}

/// The kind of a collection, to rebuild it from its cloned items.
#[derive(Clone, Copy)]
enum Shape {
    List,
    Vector,
    Set,
    Map,
}

impl Shape {
    fn build(self, mut items: Vec<Value>) -> Value {
        match self {
            Self::List => Value::List(items),
            Self::Vector => Value::Vector(items),
            Self::Set => Value::Set(items),
            Self::Map => {
                let mut entries = Vec::with_capacity(items.len() / 2);
                let mut items = items.drain(..);
                while let (Some(key), Some(value)) = (items.next(), items.next()) {
                    entries.push((key, value));
                }
                Value::Map(entries)
            }
        }
    }
}

impl Clone for Value {
    fn clone(&self) -> Self {
        match self {
            Self::Nil => Self::Nil,
            Self::Boolean(flag) => Self::Boolean(*flag),
            Self::Integer(number) => Self::Integer(*number),
            Self::Float(number) => Self::Float(*number),
            Self::String(text) => Self::String(text.clone()),
            Self::Keyword(name) => Self::Keyword(name.clone()),
            Self::Function(function) => Self::Function(function.clone()),
            nested if nested.nests() => clone_nested(nested),
            // The items are scalars or empty collections: cloning them recurses once at most.
            Self::List(items) => Self::List(items.clone()),
            Self::Vector(items) => Self::Vector(items.clone()),
            Self::Set(items) => Self::Set(items.clone()),
            Self::Map(entries) => Self::Map(entries.clone()),
        }
    }
}

/// One step of [`clone_nested`]: clone a value, or build a collection from the last `len`
/// clones made (`2 * len` for a map: keys and values).
enum Task<'a> {
    Visit(&'a Value),
    Build(Shape, usize),
}

fn clone_nested(root: &Value) -> Value {
    let mut tasks = vec![Task::Visit(root)];
    let mut built: Vec<Value> = Vec::new();
    while let Some(task) = tasks.pop() {
        match task {
            Task::Visit(value) if !value.nests() => built.push(value.clone()),
            Task::Visit(value) => {
                let (shape, items) = match value {
                    Value::List(items) => (Shape::List, items),
                    Value::Vector(items) => (Shape::Vector, items),
                    Value::Set(items) => (Shape::Set, items),
                    Value::Map(entries) => {
                        tasks.push(Task::Build(Shape::Map, 2 * entries.len()));
                        for (key, value) in entries.iter().rev() {
                            tasks.push(Task::Visit(value));
                            tasks.push(Task::Visit(key));
                        }
                        continue;
                    }
                    // Only collections nest.
                    scalar => {
                        built.push(scalar.clone());
                        continue;
                    }
                };
                tasks.push(Task::Build(shape, items.len()));
                // Reversed, so that the items are cloned (and land in `built`) in order.
                tasks.extend(items.iter().rev().map(Task::Visit));
            }
            Task::Build(shape, count) => {
                let items = built.split_off(built.len().saturating_sub(count));
                built.push(shape.build(items));
            }
        }
    }
    built.pop().unwrap_or(Value::Nil)
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        // The pairs still to compare; nothing is allocated until two collections are met.
        let mut pending: Vec<(&Value, &Value)> = Vec::new();
        let (mut left, mut right) = (self, other);
        loop {
            let equal = match (left, right) {
                (Self::Nil, Self::Nil) => true,
                (Self::Boolean(a), Self::Boolean(b)) => a == b,
                (Self::Integer(a), Self::Integer(b)) => a == b,
                (Self::Float(a), Self::Float(b)) => a == b,
                (Self::String(a), Self::String(b)) | (Self::Keyword(a), Self::Keyword(b)) => a == b,
                (Self::Function(a), Self::Function(b)) => a == b,
                (Self::List(a), Self::List(b))
                | (Self::Vector(a), Self::Vector(b))
                | (Self::Set(a), Self::Set(b)) => {
                    a.len() == b.len() && {
                        pending.extend(a.iter().zip(b));
                        true
                    }
                }
                (Self::Map(a), Self::Map(b)) => {
                    a.len() == b.len() && {
                        for ((key_a, value_a), (key_b, value_b)) in a.iter().zip(b) {
                            pending.push((key_a, key_b));
                            pending.push((value_a, value_b));
                        }
                        true
                    }
                }
                _ => false,
            };
            if !equal {
                return false;
            }
            match pending.pop() {
                Some((a, b)) => (left, right) = (a, b),
                None => return true,
            }
        }
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&Bounded { value: self, depth: 1 }, f)
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Bounded { value: self, depth: 1 }.serialize(serializer)
    }
}

/// A value at `depth` (the root is at 1), for the traversals that recurse to a bound.
#[derive(Clone, Copy)]
struct Bounded<'a> {
    value: &'a Value,
    depth: usize,
}

/// The items of a collection at `depth`.
#[derive(Clone, Copy)]
struct Items<'a> {
    items: &'a [Value],
    depth: usize,
}

/// The entries of a map at `depth`.
#[derive(Clone, Copy)]
struct Entries<'a> {
    entries: &'a [(Value, Value)],
    depth: usize,
}

impl<'a> Bounded<'a> {
    fn items(self, items: &'a [Value]) -> Items<'a> {
        Items { items, depth: self.depth + 1 }
    }

    fn entries(self, entries: &'a [(Value, Value)]) -> Entries<'a> {
        Entries { entries, depth: self.depth + 1 }
    }
}

// The same text as `#[derive(Debug)]` would print, down to `MAX_NESTING` levels.
impl fmt::Debug for Bounded<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.depth > MAX_NESTING {
            return f.write_str("..");
        }
        match self.value {
            Value::Nil => f.write_str("Nil"),
            Value::Boolean(flag) => f.debug_tuple("Boolean").field(flag).finish(),
            Value::Integer(number) => f.debug_tuple("Integer").field(number).finish(),
            Value::Float(number) => f.debug_tuple("Float").field(number).finish(),
            Value::String(text) => f.debug_tuple("String").field(text).finish(),
            Value::Keyword(name) => f.debug_tuple("Keyword").field(name).finish(),
            Value::List(items) => f.debug_tuple("List").field(&self.items(items)).finish(),
            Value::Vector(items) => f.debug_tuple("Vector").field(&self.items(items)).finish(),
            Value::Set(items) => f.debug_tuple("Set").field(&self.items(items)).finish(),
            Value::Map(entries) => f.debug_tuple("Map").field(&self.entries(entries)).finish(),
            Value::Function(function) => f.debug_tuple("Function").field(function).finish(),
        }
    }
}

impl fmt::Debug for Items<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let depth = self.depth;
        f.debug_list().entries(self.items.iter().map(|value| Bounded { value, depth })).finish()
    }
}

impl fmt::Debug for Entries<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let depth = self.depth;
        f.debug_list()
            .entries(
                self.entries
                    .iter()
                    .map(|(key, value)| (Bounded { value: key, depth }, Bounded { value, depth })),
            )
            .finish()
    }
}

// What `#[serde(tag = "type", content = "value", rename_all = "snake_case")]` would write,
// refusing values nested deeper than `MAX_NESTING` levels.
impl Serialize for Bounded<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.depth > MAX_NESTING {
            return Err(S::Error::custom(format_args!(
                "a value nested deeper than {MAX_NESTING} levels cannot be serialized"
            )));
        }
        match self.value {
            Value::Nil => {
                let mut state = serializer.serialize_struct("Value", 1)?;
                state.serialize_field("type", "nil")?;
                state.end()
            }
            Value::Boolean(flag) => tagged(serializer, "boolean", flag),
            Value::Integer(number) => tagged(serializer, "integer", number),
            Value::Float(number) => tagged(serializer, "float", number),
            Value::String(text) => tagged(serializer, "string", text),
            Value::Keyword(name) => tagged(serializer, "keyword", name),
            Value::List(items) => tagged(serializer, "list", &self.items(items)),
            Value::Vector(items) => tagged(serializer, "vector", &self.items(items)),
            Value::Set(items) => tagged(serializer, "set", &self.items(items)),
            Value::Map(entries) => tagged(serializer, "map", &self.entries(entries)),
            Value::Function(function) => tagged(serializer, "function", function),
        }
    }
}

fn tagged<S: Serializer, T: Serialize + ?Sized>(
    serializer: S,
    tag: &'static str,
    content: &T,
) -> Result<S::Ok, S::Error> {
    let mut state = serializer.serialize_struct("Value", 2)?;
    state.serialize_field("type", tag)?;
    state.serialize_field("value", content)?;
    state.end()
}

impl Serialize for Items<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let depth = self.depth;
        serializer.collect_seq(self.items.iter().map(|value| Bounded { value, depth }))
    }
}

impl Serialize for Entries<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let depth = self.depth;
        serializer.collect_seq(
            self.entries
                .iter()
                .map(|(key, value)| (Bounded { value: key, depth }, Bounded { value, depth })),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Function;

    /// `depth` lists, each the only item of the one around it, built without recursion.
    fn nested(depth: usize) -> Value {
        let mut value = Value::from("bottom");
        for _ in 0..depth {
            value = Value::list([value]);
        }
        value
    }

    fn every_variant() -> Value {
        every_variant_with(Value::Float(f64::NAN))
    }

    fn every_variant_with(float: Value) -> Value {
        Value::List(vec![
            Value::Nil,
            Value::from(true),
            Value::from(42),
            Value::from(2.75),
            float,
            Value::from("hi \"x\""),
            Value::keyword("k"),
            Value::list([Value::from(1)]),
            Value::Set(vec![Value::from(1)]),
            Value::Map(vec![(Value::keyword("a"), Value::from(1)), (Value::list([]), Value::Nil)]),
            Value::Function(Function::new("f", ["x"]).with_docstring("d").with_return_type("nil")),
            Value::Function(Function::new("g", Vec::<String>::new())),
        ])
    }

    #[test]
    fn serialization_and_debug_print_what_the_derives_printed() {
        // Both strings are what `#[derive(Serialize, Debug)]` printed before the impls were
        // written by hand: checkpoints saved before read back, and logs read the same.
        assert_eq!(
            serde_json::to_string(&every_variant()).unwrap(),
            r#"{"type":"list","value":[{"type":"nil"},{"type":"boolean","value":true},{"type":"integer","value":42},{"type":"float","value":2.75},{"type":"float","value":null},{"type":"string","value":"hi \"x\""},{"type":"keyword","value":"k"},{"type":"vector","value":[{"type":"integer","value":1}]},{"type":"set","value":[{"type":"integer","value":1}]},{"type":"map","value":[[{"type":"keyword","value":"a"},{"type":"integer","value":1}],[{"type":"vector","value":[]},{"type":"nil"}]]},{"type":"function","value":{"name":"f","params":["x"],"docstring":"d","return_type":"nil"}},{"type":"function","value":{"name":"g","params":[]}}]}"#
        );
        assert_eq!(
            format!("{:?}", every_variant()),
            r#"List([Nil, Boolean(true), Integer(42), Float(2.75), Float(NaN), String("hi \"x\""), Keyword("k"), Vector([Integer(1)]), Set([Integer(1)]), Map([(Keyword("a"), Integer(1)), (Vector([]), Nil)]), Function(Function { name: "f", params: ["x"], docstring: Some("d"), return_type: Some("nil") }), Function(Function { name: "g", params: [], docstring: None, return_type: None })])"#
        );
        let pretty = format!("{:#?}", Value::map([("a", Value::list([Value::from(1)]))]));
        assert!(pretty.starts_with("Map(\n    [\n        (\n            Keyword(\n"), "{pretty}");
    }

    #[test]
    fn clone_and_equality_follow_the_structure() {
        let value = every_variant_with(Value::Float(-0.5));
        assert_eq!(format!("{:?}", every_variant().clone()), format!("{:?}", every_variant()));
        assert_eq!(value.clone(), value);
        let map = Value::Map(vec![(Value::list([value.clone()]), Value::Set(vec![value]))]);
        assert_eq!(map.clone(), map);
        // NaN is not equal to itself, as with the derive; lists and vectors differ.
        assert_ne!(Value::Float(f64::NAN), Value::Float(f64::NAN));
        assert_ne!(Value::List(vec![]), Value::Vector(vec![]));
        assert_ne!(nested(3), nested(4));
        assert_ne!(
            Value::map([("a", Value::list([Value::from(1)]))]),
            Value::map([("a", Value::list([Value::from(2)]))])
        );
    }

    #[test]
    fn a_value_100_000_levels_deep_clones_compares_prints_and_drops() {
        let deep = nested(100_000);
        let copy = deep.clone();
        assert!(copy == deep);
        assert!(copy != nested(99_999));
        let debug = format!("{deep:?}");
        assert!(debug.starts_with("Vector([Vector(["), "{}", &debug[..40]);
        assert!(debug.contains(".."));
        let error = serde_json::to_value(&deep).unwrap_err();
        assert_eq!(error.to_string(), "a value nested deeper than 128 levels cannot be serialized");
        let map = (0..100_000)
            .fold(Value::Nil, |value, _| Value::Map(vec![(Value::keyword("k"), value)]));
        assert!(map.clone() == map);
        drop((deep, copy, map));
    }

    #[test]
    fn values_up_to_the_bound_round_trip() {
        let value = nested(MAX_NESTING - 1);
        let json = serde_json::to_value(&value).unwrap();
        assert_eq!(serde_json::from_value::<Value>(json).unwrap(), value);
    }
}
