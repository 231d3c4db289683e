//! Values from JSON: what a tool that answers in JSON returns, as the program sees it.

use crate::value::Value;

/// A JSON value as a program's value: `null` is `nil`, numbers are integers when they fit
/// in an `i64` (floats otherwise), arrays are vectors, and objects are maps in the order
/// the JSON holds them, their keys keywords (`:name`) when they read as one and strings
/// (`"first name"`) when not.
///
/// The conversion takes the JSON apart with a stack on the heap, so JSON of any depth converts
/// (and is dropped) without recursion; `serde_json` itself parses text only 128 levels deep.
///
/// # Examples
///
/// ```
/// use curator::coalesce::{Limits, Value, to_clojure};
///
/// let result = Value::from(serde_json::json!({"id": 7, "tags": ["new", null]}));
/// assert_eq!(to_clojure(&result, Limits::UNLIMITED), r#"{:id 7, :tags ["new" nil]}"#);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl From<serde_json::Value> for Value {
    fn from(json: serde_json::Value) -> Self {
        // Each step converts one JSON value, or builds a collection from the last values
        // converted: `Vector(len)` from `len` items, `Map(keys)` from one value per key.
        enum Step {
            Convert(serde_json::Value),
            Vector(usize),
            Map(Vec<Value>),
        }
        let mut steps = vec![Step::Convert(json)];
        let mut done: Vec<Value> = Vec::new();
        while let Some(step) = steps.pop() {
            match step {
                Step::Convert(serde_json::Value::Null) => done.push(Self::Nil),
                Step::Convert(serde_json::Value::Bool(flag)) => done.push(Self::Boolean(flag)),
                Step::Convert(serde_json::Value::Number(number)) => {
                    done.push(match number.as_i64() {
                        Some(integer) => Self::Integer(integer),
                        // A u64 above i64::MAX or a fraction: JSON numbers always have an f64.
                        None => Self::Float(number.as_f64().unwrap_or(f64::NAN)),
                    });
                }
                Step::Convert(serde_json::Value::String(text)) => done.push(Self::String(text)),
                Step::Convert(serde_json::Value::Array(items)) => {
                    steps.push(Step::Vector(items.len()));
                    // Reversed, so that the items are converted (and land in `done`) in order.
                    steps.extend(items.into_iter().rev().map(Step::Convert));
                }
                Step::Convert(serde_json::Value::Object(entries)) => {
                    let mut keys = Vec::with_capacity(entries.len());
                    let mut values = Vec::with_capacity(entries.len());
                    for (key, value) in entries {
                        keys.push(if is_keyword(&key) {
                            Self::Keyword(key)
                        } else {
                            Self::String(key)
                        });
                        values.push(Step::Convert(value));
                    }
                    steps.push(Step::Map(keys));
                    steps.extend(values.into_iter().rev());
                }
                Step::Vector(len) => {
                    let items = done.split_off(done.len().saturating_sub(len));
                    done.push(Self::Vector(items));
                }
                Step::Map(keys) => {
                    let values = done.split_off(done.len().saturating_sub(keys.len()));
                    done.push(Self::Map(keys.into_iter().zip(values).collect()));
                }
            }
        }
        done.pop().unwrap_or(Self::Nil)
    }
}

/// Whether `name` prints as a keyword that reads back as itself: not empty, not starting
/// with a digit, and free of whitespace and of the characters the reader treats specially.
fn is_keyword(name: &str) -> bool {
    name.chars().next().is_some_and(|first| !first.is_ascii_digit())
        && name.chars().all(|c| !c.is_whitespace() && !"()[]{}\",;:@^`'~\\#".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_are_not_keywords_stay_strings() {
        for (key, keyword) in [
            ("name", true),
            ("valid?", true),
            ("user-id", true),
            ("a/b", true),
            ("first name", false),
            ("9lives", false),
            ("", false),
            ("a:b", false),
        ] {
            assert_eq!(is_keyword(key), keyword, "{key:?}");
        }
    }

    #[test]
    fn json_100_000_levels_deep_converts_and_drops() {
        let mut json = serde_json::json!({"leaf": true});
        for _ in 0..100_000 {
            // Not `json!`: it would serialize the interpolated value, recursively.
            json = serde_json::Value::Array(vec![json, serde_json::json!({"k": []})]);
        }
        let value = Value::from(json);
        assert_eq!(value.type_label(), "list[2]");
        let Value::Vector(items) = &value else { panic!("{value:?}") };
        assert_eq!(items[1], Value::map([("k", Value::list([]))]));
    }
}
