//! Clojure-like printing of values, bounded so that one large value cannot flood a prompt.

use std::fmt::Write as _;

use crate::value::Value;

/// The marker that stands for whatever a limit cut: the rest of a string (inside its
/// quotes) or the remaining items of a collection.
pub const ELLIPSIS: &str = "...";

/// How much of a value [`to_clojure`] prints.
///
/// `items` bounds every collection, at every depth; `chars` bounds every string, counted in
/// characters (never splitting one). `None` means no bound.
///
/// # Examples
///
/// ```
/// use curator::coalesce::{Limits, Value, to_clojure};
///
/// let numbers = Value::list((1..=5).map(Value::from));
/// assert_eq!(to_clojure(&numbers, Limits::new(Some(2), None)), "[1 2 ...]");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Limits {
    /// The most items printed per collection.
    pub items: Option<usize>,
    /// The most characters printed per string.
    pub chars: Option<usize>,
}

impl Limits {
    /// No bound at all.
    pub const UNLIMITED: Self = Self::new(None, None);
    /// Samples in the `data/` and `user/` sections: 3 items, 80 characters.
    pub const SAMPLE: Self = Self::new(Some(3), Some(80));
    /// Arguments in the tool-call history: 3 items, 60 characters.
    pub const TOOL_ARGS: Self = Self::new(Some(3), Some(60));

    /// Limits on items per collection and characters per string.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::Limits;
    ///
    /// assert_eq!(Limits::new(Some(3), Some(80)), Limits::SAMPLE);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub const fn new(items: Option<usize>, chars: Option<usize>) -> Self {
        Self { items, chars }
    }
}

/// Print a value in Clojure syntax, within `limits`.
///
/// `nil`, `true`, `42`, `3.14`, `"text"`, `:keyword`, `[1 2 3]` for lists and vectors,
/// `#{1 2}` for sets, `{:name "Laptop", :price 1200}` for maps (entries separated by
/// `", "`, as Clojure prints them), and `#fn[x y]` for functions. What a limit cuts is
/// replaced by [`ELLIPSIS`]: `[1 2 3 ...]`, `"Customer Review..."`.
///
/// # Examples
///
/// ```
/// use curator::coalesce::{Limits, Value, to_clojure};
///
/// let review = Value::from("Customer Review Summary for Electronics");
/// assert_eq!(to_clojure(&review, Limits::new(None, Some(15))), r#""Customer Review...""#);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn to_clojure(value: &Value, limits: Limits) -> String {
    let mut out = String::new();
    write_value(&mut out, value, limits);
    out
}

fn write_value(out: &mut String, value: &Value, limits: Limits) {
    match value {
        Value::Nil => out.push_str("nil"),
        Value::Boolean(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Integer(number) => {
            let _ = write!(out, "{number}");
        }
        Value::Float(number) => write_float(out, *number),
        Value::String(text) => write_string(out, text, limits.chars),
        Value::Keyword(name) => {
            out.push(':');
            out.push_str(name);
        }
        Value::List(items) | Value::Vector(items) => write_items(out, "[", "]", items, limits),
        Value::Set(items) => write_items(out, "#{", "}", items, limits),
        Value::Map(entries) => {
            write_bounded(out, ("{", ", ", "}"), entries, limits, |out, (key, value)| {
                write_value(out, key, limits);
                out.push(' ');
                write_value(out, value, limits);
            });
        }
        Value::Function(function) => {
            out.push_str("#fn[");
            out.push_str(&function.params().join(" "));
            out.push(']');
        }
    }
}

fn write_items(out: &mut String, open: &str, close: &str, items: &[Value], limits: Limits) {
    write_bounded(out, (open, " ", close), items, limits, |out, item| {
        write_value(out, item, limits);
    });
}

/// Writes at most `limits.items` items between `open` and `close`, then [`ELLIPSIS`] for
/// the rest: the one place collections are cut, so lists, sets and maps cut alike.
fn write_bounded<T>(
    out: &mut String,
    (open, separator, close): (&str, &str, &str),
    items: &[T],
    limits: Limits,
    mut write_one: impl FnMut(&mut String, &T),
) {
    out.push_str(open);
    let shown = limits.items.map_or(items.len(), |limit| limit.min(items.len()));
    for (index, item) in items.iter().take(shown).enumerate() {
        if index > 0 {
            out.push_str(separator);
        }
        write_one(out, item);
    }
    if shown < items.len() {
        if shown > 0 {
            out.push_str(separator);
        }
        out.push_str(ELLIPSIS);
    }
    out.push_str(close);
}

fn write_float(out: &mut String, number: f64) {
    if number.is_nan() {
        out.push_str("##NaN");
    } else if number.is_infinite() {
        out.push_str(if number > 0.0 { "##Inf" } else { "##-Inf" });
    } else {
        // Display gives the shortest text that reads back as the same float, so 1.1 + 2.2
        // shows its real value without padding; a whole float keeps its `.0` to stay a float.
        let start = out.len();
        let _ = write!(out, "{number}");
        if !out[start..].contains('.') {
            out.push_str(".0");
        }
    }
}

fn write_string(out: &mut String, text: &str, limit: Option<usize>) {
    out.push('"');
    let mut cut = false;
    for (count, ch) in text.chars().enumerate() {
        if limit.is_some_and(|limit| count >= limit) {
            cut = true;
            break;
        }
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            other => out.push(other),
        }
    }
    if cut {
        out.push_str(ELLIPSIS);
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Function;

    #[track_caller]
    fn check(value: &Value, limits: Limits, expected: &str) {
        assert_eq!(to_clojure(value, limits), expected);
    }

    #[test]
    fn scalars() {
        check(&Value::Nil, Limits::UNLIMITED, "nil");
        check(&Value::from(false), Limits::UNLIMITED, "false");
        check(&Value::from(-7), Limits::UNLIMITED, "-7");
        check(&Value::from(2.75), Limits::UNLIMITED, "2.75");
        check(&Value::from(2.0), Limits::UNLIMITED, "2.0");
        check(&Value::from(1.1 + 2.2), Limits::UNLIMITED, "3.3000000000000003");
        check(&Value::from(f64::NAN), Limits::UNLIMITED, "##NaN");
        check(&Value::from(f64::NEG_INFINITY), Limits::UNLIMITED, "##-Inf");
        check(&Value::keyword("active"), Limits::UNLIMITED, ":active");
        check(&Value::from("say \"hi\"\n"), Limits::UNLIMITED, r#""say \"hi\"\n""#);
    }

    #[test]
    fn collections_and_functions() {
        let nested =
            Value::list([Value::map([("a", Value::from(1))]), Value::map([("b", Value::from(2))])]);
        check(&nested, Limits::UNLIMITED, "[{:a 1} {:b 2}]");
        check(&Value::Set(vec![Value::from(1), Value::from(2)]), Limits::UNLIMITED, "#{1 2}");
        check(&Value::map::<&str>([]), Limits::UNLIMITED, "{}");
        check(&Value::Function(Function::new("f", ["x", "y"])), Limits::UNLIMITED, "#fn[x y]");
    }

    #[test]
    fn limits_apply_at_every_depth() {
        let inner = Value::list((1..=5).map(Value::from));
        let outer = Value::list([inner.clone(), inner.clone(), inner.clone(), inner]);
        check(&outer, Limits::new(Some(2), None), "[[1 2 ...] [1 2 ...] ...]");
        let map = Value::map([("a", Value::from("abcdef")), ("b", Value::Nil), ("c", Value::Nil)]);
        check(&map, Limits::new(Some(1), Some(3)), r#"{:a "abc...", ...}"#);
        check(&Value::list([Value::Nil]), Limits::new(Some(0), None), "[...]");
    }

    #[test]
    fn strings_are_cut_by_characters_not_bytes() {
        check(&Value::from("héllo wörld"), Limits::new(None, Some(7)), r#""héllo w...""#);
        check(&Value::from("exact"), Limits::new(None, Some(5)), r#""exact""#);
    }
}
