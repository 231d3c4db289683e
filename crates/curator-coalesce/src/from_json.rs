//! Values from JSON: what a tool that answers in JSON returns, as the program sees it.

use crate::value::Value;

/// A JSON value as a program's value: `null` is `nil`, numbers are integers when they fit
/// in an `i64` (floats otherwise), arrays are vectors, and objects are maps in the order
/// the JSON holds them, their keys keywords (`:name`) when they read as one and strings
/// (`"first name"`) when not.
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
        match json {
            serde_json::Value::Null => Self::Nil,
            serde_json::Value::Bool(flag) => Self::Boolean(flag),
            serde_json::Value::Number(number) => match number.as_i64() {
                Some(integer) => Self::Integer(integer),
                // A u64 above i64::MAX or a fraction: JSON numbers always have an f64.
                None => Self::Float(number.as_f64().unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(text) => Self::String(text),
            serde_json::Value::Array(items) => {
                Self::Vector(items.into_iter().map(Self::from).collect())
            }
            serde_json::Value::Object(entries) => Self::Map(
                entries
                    .into_iter()
                    .map(|(key, value)| {
                        let key =
                            if is_keyword(&key) { Self::Keyword(key) } else { Self::String(key) };
                        (key, Self::from(value))
                    })
                    .collect(),
            ),
        }
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
}
