//! The error type of the entry model, its formats and its builders.

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A cause of any type, kept whole so that callers can walk
/// [`source`](std::error::Error::source) chains and downcast; the crates above wrap backend,
/// provider and summarizer errors in it rather than turning them into strings.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong while building, reading or converting messages.
///
/// Every variant that comes from a message list names the index of the message in the
/// list that was being read and the field (as a path such as `tool_calls[1].function.name`)
/// that was wrong.
///
/// # Examples
///
/// ```
/// use curator::model::{Error, formats::openai};
///
/// let err = openai::parse(r#"[{"role": "assistant", "tool_calls": [{"id": "1", "function": {"name": 7}}]}]"#).unwrap_err();
/// assert!(matches!(&err, Error::WrongType { index: 0, field, .. } if field == "tool_calls[0].function.name"));
/// assert_eq!(err.to_string(), "message 0: field `tool_calls[0].function.name` should be a string, found a number");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input was not JSON at all.
    #[error("input is not valid JSON: {source}")]
    NotJson {
        /// What the JSON parser reported, with line and column.
        #[source]
        source: serde_json::Error,
    },
    /// A number whose value a 64-bit integer or a double cannot hold (`1E400`, an integer of
    /// 20 digits or more, a decimal with more digits than a double keeps) outside a tool
    /// call's input, where only a value would keep it: read, it would change.
    #[error(
        "line {line}, column {column}: the number `{number}` cannot be kept (a 64-bit integer or a double would change it); only a tool call's input keeps numbers as written"
    )]
    InexactNumber {
        /// The line of the number, from 1.
        line: usize,
        /// Its column (in characters), from 1.
        column: usize,
        /// The number as written.
        number: String,
    },
    /// A required field is missing.
    #[error("message {index}: missing field `{field}`")]
    MissingField {
        /// Position of the offending message in the input list.
        index: usize,
        /// Path of the missing field inside that message.
        field: String,
    },
    /// A field has the wrong JSON type.
    #[error("message {index}: field `{field}` should be {expected}, found {found}")]
    WrongType {
        /// Position of the offending message in the input list.
        index: usize,
        /// Path of the field inside that message.
        field: String,
        /// What was expected, e.g. "a string".
        expected: &'static str,
        /// What was found, e.g. "a number".
        found: &'static str,
    },
    /// A role name this format does not know.
    #[error("message {index}: unknown role `{role}` in field `role`")]
    UnknownRole {
        /// Position of the offending message in the input list.
        index: usize,
        /// The role that was given.
        role: String,
    },
    /// A field that this role may not carry.
    #[error("message {index}: a {role} message cannot carry field `{field}`")]
    UnexpectedField {
        /// Position of the offending message in the input list.
        index: usize,
        /// The role of the message.
        role: &'static str,
        /// The field that is not allowed.
        field: String,
    },
    /// Tool-call arguments that must be JSON (to become an Anthropic `input` object) are not.
    #[error("message {index}: field `{field}` is not valid JSON: {reason}")]
    InvalidArguments {
        /// Position of the offending message in the input list.
        index: usize,
        /// Path of the arguments field.
        field: String,
        /// What the JSON parser reported.
        reason: String,
    },
    /// Tool-call arguments that must be a JSON object are some other JSON value.
    #[error("message {index}: field `{field}` must hold a JSON object, found {found}")]
    ArgumentsNotObject {
        /// Position of the offending message in the input list.
        index: usize,
        /// Path of the arguments field.
        field: String,
        /// The kind of JSON value that was found.
        found: &'static str,
    },
    /// A value of a field is not one this format allows (an unknown block or call type, say).
    #[error("message {index}: field `{field}` has unsupported value `{value}`")]
    UnsupportedValue {
        /// Position of the offending message in the input list.
        index: usize,
        /// Path of the field.
        field: String,
        /// The value that was given.
        value: String,
    },
    /// A field, part or block that belongs to the other provider's format, read with an
    /// explicit format: strict readers never drop it nor pass it through.
    #[error("message {index}: {}, which belongs to the {format} format", foreign(.field, .value))]
    ForeignField {
        /// Position of the offending message in the input list.
        index: usize,
        /// Path of the field (for a part or block, its `type`).
        field: String,
        /// What was found: the part or block type, or the field name.
        value: String,
        /// The format it belongs to: `OpenAI` (or `OpenAI Chat Completions`), `OpenAI
        /// Responses` or `Anthropic`.
        format: &'static str,
    },
    /// A `tools` schema that cannot be read or has no counterpart in the target format.
    #[error("tool {index}: field `{field}` {reason}")]
    ToolSchema {
        /// Position of the tool in the `tools` array.
        index: usize,
        /// Path of the field inside that tool.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A system message after the conversation started, which the Anthropic format cannot carry.
    #[error(
        "message {index}: a system message after the first non-system message cannot be expressed in the Anthropic format"
    )]
    SystemInsideConversation {
        /// Position of the system message in the input list.
        index: usize,
    },
    /// An identifier that does not parse.
    #[error("invalid {kind} `{value}`: {reason}")]
    InvalidId {
        /// Which identifier, e.g. "message id".
        kind: &'static str,
        /// The text that was given.
        value: String,
        /// Why it was refused.
        reason: String,
    },
    /// An entry that breaks the numbering rules.
    #[error("invalid entry: {reason}")]
    InvalidEntry {
        /// What is wrong with it.
        reason: String,
    },
    /// Messages whose signs no one format has (see [`formats::detect`](crate::formats::detect)):
    /// two signs that disagree, each with the formats that have it.
    #[error("cannot tell the format: {first} is {first_formats}, but {then} is {then_formats}")]
    AmbiguousFormat {
        /// The earlier sign, such as ``role `tool` at message 0``.
        first: String,
        /// The formats that have it, such as `OpenAI's`.
        first_formats: &'static str,
        /// The sign that contradicts it.
        then: String,
        /// The formats that have that one.
        then_formats: &'static str,
    },
}

/// Names the JSON type of a value for error messages: `null`, `a boolean`, `a number`, `a
/// string`, `an array`, `an object`.
///
/// # Examples
///
/// ```
/// use curator::model::json_kind;
/// use serde_json::json;
///
/// assert_eq!(format!("expected an object, found {}", json_kind(&json!([1]))), "expected an object, found an array");
/// ```
pub fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// What a [`Error::ForeignField`] found: the field and its value, or the field alone when the
/// field itself is the foreign thing (`tool_calls` in an Anthropic message).
fn foreign(field: &str, value: &str) -> String {
    if field == value || field.ends_with(&format!(".{value}")) {
        format!("field `{field}`")
    } else {
        format!("field `{field}` is `{value}`")
    }
}
