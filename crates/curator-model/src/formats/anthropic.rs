//! Anthropic Messages API.
//!
//! The system prompt is the request's top-level `system` (a string or text blocks); the
//! `messages` alternate `user` and `assistant`; an assistant calls tools with `tool_use`
//! blocks whose `input` is a JSON object, and the answers come back as `tool_result` blocks
//! (with an optional `is_error`) at the start of the next user message, several in one
//! message.
//!
//! Reading turns each `tool_result` block into its own tool [`Message`] and the other blocks
//! of a user message into user messages, keeping their order; a `tool_use` block becomes a
//! [`ToolCall`] whose arguments are the compact JSON text of `input`: as written when read
//! from text ([`parse`], [`parse_response`]), so that numbers keep their form and precision,
//! and as `serde_json::Value` prints it when read from a value ([`to_messages`]), which turns
//! integers beyond 64 bits into floats and `1e2` into `100.0`. [`to_json`] writes each
//! `input` from its call's argument text in the same way. Writing merges
//! consecutive messages of one side into one turn, as the API itself does, except where
//! the input had them apart: a message read from a wire message of its own after one of
//! the same side is marked [`Message::starts_turn`] and written apart again. Blocks curator
//! does not model (thinking, documents, …) and block fields (`cache_control`, `citations`)
//! are kept and written back, so `Anthropic → Message → Anthropic` gives equal JSON except
//! that an assistant's text blocks are written before its `tool_use` blocks. Fields of a
//! message other than `role` and `content` are kept on the first message read from it, and
//! refused ([`Error::UnexpectedField`]) on a user message that starts with a tool result.
//!
//! The reader is strict: OpenAI's message fields (`tool_calls`, `tool_call_id`, …) and parts
//! (`image_url`, `input_audio`, `file`, `refusal`, and the Responses API's `input_text`,
//! `output_text`, `input_image`, `input_file`) are [`Error::ForeignField`].
//!
//! Writing messages read from the OpenAI format leaves out OpenAI-only fields and the `name`
//! of tool results (a `tool_result` has none), skips empty text (the API refuses empty text
//! blocks), and refuses a system message after the conversation started, arguments that are
//! not a JSON object, and OpenAI-only content parts.
//!
//! # Examples
//!
//! ```
//! use curator::model::formats::anthropic;
//! use serde_json::json;
//!
//! let request = json!({
//!     "system": "You are terse.",
//!     "messages": [
//!         {"role": "user", "content": "Weather in Paris?"},
//!         {"role": "assistant", "content": [
//!             {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}}
//!         ]},
//!         {"role": "user", "content": [
//!             {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18°C"}
//!         ]}
//!     ]
//! });
//! let messages = anthropic::to_messages(&request)?;
//! assert_eq!(messages.len(), 4);
//! assert_eq!(messages[2].tool_calls()[0].arguments(), r#"{"city":"Paris"}"#);
//! assert_eq!(anthropic::from_messages(&messages)?.to_value(), request);
//! Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::borrow::Borrow;

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::object::Object;
use super::{exact, wide};
use crate::error::json_kind;
use crate::provider_fields::fields_for;
use crate::{
    Content, Error, Format, ImageSource, Message, Part, ProviderFields, Result, Role, ToolCall,
};

/// The parts of a Messages API request that carry the conversation.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, formats::anthropic};
///
/// let request = anthropic::from_messages(&[Message::system("Be kind."), Message::user("hi")])?;
/// assert_eq!(request.system, Some(serde_json::json!("Be kind.")));
/// assert_eq!(request.messages.len(), 1);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Request {
    /// The top-level system prompt: a string or an array of text blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<Value>,
    /// The user and assistant messages.
    pub messages: Vec<Value>,
}

impl Request {
    /// The request as a JSON object with `system` (when there is one) and `messages`.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, formats::anthropic};
    ///
    /// let request = anthropic::from_messages(&[Message::user("hi")])?;
    /// assert_eq!(request.to_value(), serde_json::json!({"messages": [{"role": "user", "content": "hi"}]}));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_value(&self) -> Value {
        let mut out = Map::new();
        if let Some(system) = &self.system {
            out.insert("system".into(), system.clone());
        }
        out.insert("messages".into(), Value::Array(self.messages.clone()));
        Value::Object(out)
    }
}

/// Parses JSON text holding a request object or a bare array of messages.
///
/// # Errors
///
/// [`Error::NotJson`] when the text is not JSON, then as [`to_messages`].
///
/// # Examples
///
/// ```
/// use curator::model::formats::anthropic;
///
/// let messages = anthropic::parse(r#"{"system": "Be kind.", "messages": [{"role": "user", "content": "hi"}]}"#)?;
/// assert_eq!(messages.len(), 2);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn parse(json: &str) -> Result<Vec<Message>> {
    let inputs = exact::request_inputs(json);
    let value = match wide::value_keeping(json, inputs.iter().flatten().copied())? {
        Some(value) => value,
        None => serde_json::from_str(json).map_err(|source| Error::NotJson { source })?,
    };
    read_request(&value, &inputs)
}

pub use super::wide::{check_numbers, parse_value};

/// Reads a request object (`system` and `messages`; other request fields are ignored) or a
/// bare array of messages.
///
/// Error indices count the `messages` array; errors in `system` have index 0 and a field
/// path starting with `system`.
///
/// # Errors
///
/// A typed [`Error`] naming the index and field: a role other than `user` or `assistant`,
/// missing `content`, a `tool_use` without `id`, `name` or `input`, a `tool_result` without
/// `tool_use_id`, a `tool_use` inside a user message or a `tool_result` inside an assistant
/// message, or a field of the wrong type.
///
/// # Examples
///
/// ```
/// use curator::model::{Error, formats::anthropic};
/// use serde_json::json;
///
/// let err = anthropic::to_messages(&json!([
///     {"role": "user", "content": "hi"},
///     {"role": "assistant", "content": [{"type": "tool_use", "name": "ls", "input": {}}]}
/// ])).unwrap_err();
/// assert_eq!(err.to_string(), "message 1: missing field `content[0].id`");
/// ```
pub fn to_messages(value: &Value) -> Result<Vec<Message>> {
    read_request(value, &[])
}

/// Reads a request; `inputs` holds, per message, the text of its `tool_use` inputs when the
/// request was read from text (see [`exact`]).
fn read_request(value: &Value, inputs: &[Vec<&RawValue>]) -> Result<Vec<Message>> {
    let (system, messages) = match value {
        Value::Array(messages) => (None, messages),
        Value::Object(request) => match request.get("messages") {
            Some(Value::Array(messages)) => (request.get("system"), messages),
            Some(other) => {
                return Err(Error::WrongType {
                    index: 0,
                    field: "messages".into(),
                    expected: "an array",
                    found: json_kind(other),
                });
            }
            None => return Err(Error::MissingField { index: 0, field: "messages".into() }),
        },
        other => {
            return Err(Error::WrongType {
                index: 0,
                field: "request".into(),
                expected: "an object or an array",
                found: json_kind(other),
            });
        }
    };
    let mut out = Vec::with_capacity(messages.len() + 1);
    match system {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => out.push(Message::system(s.as_str())),
        Some(Value::Array(blocks)) => {
            let parts = blocks
                .iter()
                .enumerate()
                .map(|(k, b)| read_block_part(0, &format!("system[{k}]"), b))
                .collect::<Result<Vec<_>>>()?;
            out.push(Message::system(Content::Parts(parts)));
        }
        Some(other) => {
            return Err(Error::WrongType {
                index: 0,
                field: "system".into(),
                expected: "a string or an array",
                found: json_kind(other),
            });
        }
    }
    let mut previous_role = None;
    for (index, value) in messages.iter().enumerate() {
        let texts = inputs.get(index).map_or(&[][..], Vec::as_slice);
        let first = out.len();
        read_message(index, value, texts, &mut out)?;
        keep_message_fields(index, value, first, &mut out)?;
        let role = value.get("role").and_then(Value::as_str);
        // The API merges consecutive same-role messages; curator keeps them apart so that
        // writing gives back what was read.
        if role.is_some()
            && role == previous_role
            && let Some(message) = out.get_mut(first)
        {
            *message = std::mem::replace(message, Message::user("")).with_starts_turn(true);
        }
        previous_role = role;
    }
    Ok(out)
}

/// Keeps the fields of a wire message other than `role` and `content` on the first message
/// read from it, to be written back; a user message that starts with a tool result has no
/// such message, and its fields are refused rather than dropped.
fn keep_message_fields(
    index: usize,
    value: &Value,
    first: usize,
    out: &mut [Message],
) -> Result<()> {
    let Some(fields) = value.as_object() else { return Ok(()) };
    let rest: Map<String, Value> = fields
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "role" | "content"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let Some(key) = rest.keys().next().cloned() else { return Ok(()) };
    match out.get_mut(first) {
        Some(message) if message.role() != Role::Tool && message.extra().is_none() => {
            let kept = std::mem::replace(message, Message::user(""));
            *message = kept.with_extra(ProviderFields::non_empty(Format::Anthropic, rest));
            Ok(())
        }
        _ => Err(Error::UnexpectedField {
            index,
            role: if value.get("role").and_then(Value::as_str) == Some("assistant") {
                "assistant"
            } else {
                "user"
            },
            field: key,
        }),
    }
}

fn read_message(
    index: usize,
    value: &Value,
    inputs: &[&RawValue],
    out: &mut Vec<Message>,
) -> Result<()> {
    let obj = Object::new(index, "", value)?;
    if let Some(field) = super::OPENAI_MESSAGE_FIELDS.iter().find(|f| obj.get(f).is_some()) {
        return Err(Error::ForeignField {
            index,
            field: (*field).to_owned(),
            value: (*field).to_owned(),
            format: "OpenAI",
        });
    }
    let role = match obj.str("role")? {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        other => return Err(Error::UnknownRole { index, role: other.to_owned() }),
    };
    let blocks = match obj.get("content") {
        None => return Err(obj.missing("content")),
        Some(Value::String(s)) => {
            out.push(if role == Role::User {
                Message::user(s.as_str())
            } else {
                Message::assistant(s.as_str())
            });
            return Ok(());
        }
        Some(Value::Array(blocks)) => blocks,
        Some(other) => return Err(obj.wrong_type("content", "a string or an array", other)),
    };
    if role == Role::Assistant {
        let mut parts = Vec::new();
        let mut calls = Vec::new();
        for (k, block) in blocks.iter().enumerate() {
            let path = format!("content[{k}]");
            let b = Object::new(index, path.as_str(), block)?;
            match b.opt_str("type")? {
                Some("tool_use") => calls.push(read_tool_use(&b, inputs.get(calls.len()))?),
                Some("tool_result") => {
                    return Err(Error::UnexpectedField {
                        index,
                        role: "assistant",
                        field: b.field("type"),
                    });
                }
                _ => parts.push(read_block_part(index, &path, block)?),
            }
        }
        let content =
            if parts.is_empty() && !calls.is_empty() { None } else { Some(Content::Parts(parts)) };
        out.push(Message::assistant_with_calls(content, calls));
        return Ok(());
    }
    // A user message: each tool_result is a tool message; runs of other blocks are user
    // messages, in the order they came.
    let mut parts: Option<Vec<Part>> = if blocks.is_empty() { Some(Vec::new()) } else { None };
    for (k, block) in blocks.iter().enumerate() {
        let path = format!("content[{k}]");
        let b = Object::new(index, path.as_str(), block)?;
        match b.opt_str("type")? {
            Some("tool_result") => {
                if let Some(parts) = parts.take() {
                    out.push(Message::user(Content::Parts(parts)));
                }
                out.push(read_tool_result(&b)?);
            }
            Some("tool_use") => {
                return Err(Error::UnexpectedField { index, role: "user", field: b.field("type") });
            }
            _ => parts.get_or_insert_with(Vec::new).push(read_block_part(index, &path, block)?),
        }
    }
    if let Some(parts) = parts {
        out.push(Message::user(Content::Parts(parts)));
    }
    Ok(())
}

/// Reads a `tool_use` block; `text` is its `input` as written, when known, which becomes the
/// call's arguments (so that no number is rewritten).
fn read_tool_use(b: &Object<'_>, text: Option<&&RawValue>) -> Result<ToolCall> {
    let id = b.str("id")?;
    let name = b.str("name")?;
    let input = b.get("input").ok_or_else(|| b.missing("input"))?;
    if !input.is_object() {
        return Err(b.wrong_type("input", "an object", input));
    }
    let extra =
        ProviderFields::non_empty(Format::Anthropic, b.rest(&["type", "id", "name", "input"]));
    // The text is the same input unless the two readings disagree on the block order,
    // which only malformed text (duplicate keys) can cause: then the value is used.
    let call = match text {
        Some(text) if wide::input_value(text.get()).is_some_and(|v| v == *input) => {
            ToolCall::new(id, name, exact::compact(text))
        }
        _ => ToolCall::from_json(id, name, input),
    };
    Ok(call.with_extra(extra))
}

fn read_tool_result(b: &Object<'_>) -> Result<Message> {
    let id = b.str("tool_use_id")?;
    let mut message = Message::tool_result(id, "");
    match b.get("content") {
        None => message.set_content_omitted(),
        Some(Value::String(s)) => message = message.with_content(Some(Content::Text(s.clone()))),
        Some(Value::Array(blocks)) => {
            let parts = blocks
                .iter()
                .enumerate()
                .map(|(k, v)| read_block_part(b.index, &b.field(&format!("content[{k}]")), v))
                .collect::<Result<Vec<_>>>()?;
            message = message.with_content(Some(Content::Parts(parts)));
        }
        Some(other) => return Err(b.wrong_type("content", "a string or an array", other)),
    }
    match b.get("is_error") {
        None => {}
        Some(Value::Bool(flag)) => message.set_is_error(Some(*flag)),
        Some(other) => return Err(b.wrong_type("is_error", "a boolean", other)),
    }
    let extra = ProviderFields::non_empty(
        Format::Anthropic,
        b.rest(&["type", "tool_use_id", "content", "is_error"]),
    );
    Ok(message.with_extra(extra))
}

/// Reads a content block that is not a tool block: text, an image, or anything else kept raw.
fn read_block_part(index: usize, path: &str, value: &Value) -> Result<Part> {
    let b = Object::new(index, path, value)?;
    let kind = b.opt_str("type")?;
    if let Some(kind) = kind.filter(|k| super::OPENAI_PARTS.contains(k)) {
        return Err(Error::ForeignField {
            index,
            field: b.field("type"),
            value: kind.to_owned(),
            format: "OpenAI",
        });
    }
    if let Some(kind) = kind.filter(|k| super::RESPONSES_PARTS.contains(k)) {
        return Err(Error::ForeignField {
            index,
            field: b.field("type"),
            value: kind.to_owned(),
            format: "OpenAI Responses",
        });
    }
    match kind {
        Some("text") => Ok(Part::Text {
            text: b.str("text")?.to_owned(),
            extra: ProviderFields::non_empty(Format::Anthropic, b.rest(&["type", "text"])),
        }),
        Some("image") => match b.get("source").and_then(read_image_source) {
            Some(source) => Ok(Part::Image {
                source,
                extra: ProviderFields::non_empty(Format::Anthropic, b.rest(&["type", "source"])),
            }),
            None => Ok(Part::Raw { format: Format::Anthropic, value: value.clone() }),
        },
        Some(_) => Ok(Part::Raw { format: Format::Anthropic, value: value.clone() }),
        None => Err(b.missing("type")),
    }
}

/// An image source curator models exactly, or `None` to keep the block raw.
fn read_image_source(source: &Value) -> Option<ImageSource> {
    let source = source.as_object()?;
    let text = |k: &str| source.get(k).and_then(Value::as_str).map(str::to_owned);
    match source.get("type").and_then(Value::as_str)? {
        "base64" if source.len() == 3 => {
            Some(ImageSource::Base64 { media_type: text("media_type")?, data: text("data")? })
        }
        "url" if source.len() == 2 => Some(ImageSource::Url { url: text("url")? }),
        _ => None,
    }
}

/// Writes messages as a Messages API request.
///
/// Leading system messages become `system` (a string for one text message, else text
/// blocks); consecutive user and tool messages become one user message, consecutive
/// assistant messages one assistant message.
///
/// # Errors
///
/// [`Error::SystemInsideConversation`] for a system message after the first non-system
/// message; [`Error::InvalidArguments`] or [`Error::ArgumentsNotObject`] for tool-call
/// arguments that are not a JSON object (an empty string counts as `{}`);
/// [`Error::UnsupportedValue`] for an OpenAI-only content part.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, ToolCall, formats::anthropic};
/// use serde_json::json;
///
/// let request = anthropic::from_messages(&[
///     Message::user("list"),
///     Message::assistant_with_calls(None, vec![ToolCall::new("t1", "ls", r#"{"dir": "/"}"#)]),
///     Message::tool_error("t1", "denied"),
/// ])?;
/// assert_eq!(request.messages[1]["content"][0]["input"], json!({"dir": "/"}));
/// assert_eq!(request.messages[2]["content"][0]["is_error"], true);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn from_messages<M: Borrow<Message>>(messages: &[M]) -> Result<Request> {
    write_request(messages, Inputs::Values)
}

/// How `tool_use` inputs are written: as values, or (for [`to_json`]) as a placeholder where
/// the argument text is a JSON object that a value cannot hold (`1E400`), spliced as text.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Inputs {
    Values,
    Text,
}

/// Stands for an input that only its text can carry; [`to_json`] replaces it by that text.
const TEXT_ONLY_INPUT: &str = "\u{0}curator: input written as text\u{0}";

fn write_request<M: Borrow<Message>>(messages: &[M], inputs: Inputs) -> Result<Request> {
    let start =
        messages.iter().position(|m| m.borrow().role() != Role::System).unwrap_or(messages.len());
    let system = write_system(&messages[..start])?;
    let mut out = Vec::new();
    let mut i = start;
    while i < messages.len() {
        let assistant = messages[i].borrow().role() == Role::Assistant;
        let end = messages[i..]
            .iter()
            .map(Borrow::borrow)
            .enumerate()
            .position(|(n, m): (usize, &Message)| {
                (m.role() == Role::Assistant) != assistant
                    || m.role() == Role::System
                    || (n > 0 && m.starts_turn())
            })
            .map_or(messages.len(), |n| i + n);
        if messages[i].borrow().role() == Role::System {
            return Err(Error::SystemInsideConversation { index: i });
        }
        let run = &messages[i..end];
        let content =
            if assistant { write_assistant(i, run, inputs)? } else { write_user(i, run)? };
        let mut message = Map::new();
        message.insert("role".into(), json!(if assistant { "assistant" } else { "user" }));
        message.insert("content".into(), content);
        // Fields of the wire message kept on its first message (a tool result's go in its
        // block instead).
        let first = messages[i].borrow();
        if first.role() != Role::Tool {
            super::object::merge(&mut message, fields_for(first.extra(), Format::Anthropic));
        }
        out.push(Value::Object(message));
        i = end;
    }
    Ok(Request { system, messages: out })
}

/// Writes `messages` as the JSON text of an Anthropic request (`messages`, and `system` when
/// there is one), as [`from_messages`] builds it, but with each `tool_use` `input` written
/// from its call's argument text rather than through `serde_json::Value`: a number stays as
/// it was written (`123456789012345678901234567890` and `1e2` are not rewritten as floats).
/// Use it, or [`Request::to_value`] when numbers are ordinary, to send the request.
///
/// # Errors
///
/// As [`from_messages`].
///
/// # Examples
///
/// ```
/// use curator::model::{Message, ToolCall, formats::anthropic};
///
/// let messages = vec![
///     Message::user("order it"),
///     Message::assistant_with_calls(None, vec![ToolCall::new("t1", "order", r#"{"sku":123456789012345678901234567890,"qty":1e2}"#)]),
/// ];
/// let json = anthropic::to_json(&messages)?;
/// assert!(json.contains(r#""input":{"sku":123456789012345678901234567890,"qty":1e2}"#));
/// // And back: the call's arguments are the text as written.
/// assert_eq!(anthropic::parse(&json)?, messages);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn to_json<M: Borrow<Message>>(messages: &[M]) -> Result<String> {
    let request = write_request(messages, Inputs::Text)?;
    let mut calls = messages
        .iter()
        .map(Borrow::borrow)
        .filter(|m| m.role() == Role::Assistant)
        .flat_map(Message::tool_calls)
        .peekable();
    let mut inputs = Vec::new();
    for (m, message) in request.messages.iter().enumerate() {
        let Some(Value::Array(blocks)) = message.get("content") else { continue };
        for (b, block) in blocks.iter().enumerate() {
            if block.get("type").and_then(Value::as_str) != Some("tool_use") {
                continue;
            }
            let id = block.get("id").and_then(Value::as_str);
            let text_only = block.get("input").and_then(Value::as_str) == Some(TEXT_ONLY_INPUT);
            let call = calls.next_if(|c| Some(c.id()) == id);
            let text = call.map_or("", |c| c.arguments().trim());
            // The text that reads as this block's input (so never a verbatim block that
            // happens to share the id); empty arguments are `{}` either way.
            if !text.is_empty()
                && (text_only
                    || serde_json::from_str::<Value>(text)
                        .is_ok_and(|v| Some(&v) == block.get("input")))
                && let Ok(raw) = RawValue::from_string(text.to_owned())
            {
                inputs.push((m, b, raw));
            } else if text_only {
                // Never write the placeholder: a call whose text is not spliced is refused.
                return Err(Error::InvalidArguments {
                    index: m,
                    field: format!("content[{b}].input"),
                    reason: "the arguments could not be written as text".into(),
                });
            }
        }
    }
    let spliced = exact::Spliced {
        system: request.system.as_ref(),
        messages: &request.messages,
        inputs: &inputs,
    };
    serde_json::to_string(&spliced).map_err(|e| Error::InvalidArguments {
        index: 0,
        field: "request".into(),
        reason: e.to_string(),
    })
}

fn write_system<M: Borrow<Message>>(system: &[M]) -> Result<Option<Value>> {
    match system {
        [] => Ok(None),
        [only] if matches!(only.borrow().content(), Some(Content::Text(_))) => {
            Ok(Some(Value::String(only.borrow().text().into_owned())))
        }
        many => {
            let mut blocks = Vec::new();
            for (i, m) in many.iter().map(Borrow::borrow).enumerate() {
                push_content_blocks(i, m.content(), &mut blocks)?;
            }
            Ok(Some(Value::Array(blocks)))
        }
    }
}

fn write_assistant<M: Borrow<Message>>(first: usize, run: &[M], inputs: Inputs) -> Result<Value> {
    if let [only] = run
        && let (Some(Content::Text(text)), false) =
            (only.borrow().content(), only.borrow().has_tool_calls())
    {
        return Ok(Value::String(text.clone()));
    }
    let mut blocks = Vec::new();
    for (offset, m) in run.iter().map(Borrow::borrow).enumerate() {
        let index = first + offset;
        push_content_blocks(index, m.content(), &mut blocks)?;
        for (j, call) in m.tool_calls().iter().enumerate() {
            if super::openai::is_custom_call(call) {
                // Free-form input has no Anthropic form: a tool_use takes a JSON object.
                return Err(Error::UnsupportedValue {
                    index,
                    field: format!("tool_calls[{j}].type"),
                    value: "custom".into(),
                });
            }
            let input = arguments_object(index, j, call, inputs)?;
            let mut block =
                fields_for(call.extra(), Format::Anthropic).cloned().unwrap_or_default();
            block.insert("type".into(), json!("tool_use"));
            block.insert("id".into(), Value::String(call.id().to_owned()));
            block.insert("name".into(), Value::String(call.name().to_owned()));
            block.insert("input".into(), input);
            blocks.push(Value::Object(block));
        }
    }
    Ok(Value::Array(blocks))
}

fn arguments_object(index: usize, j: usize, call: &ToolCall, inputs: Inputs) -> Result<Value> {
    let field = || format!("tool_calls[{j}].function.arguments");
    let text = call.arguments().trim();
    let input = match call.arguments_json() {
        Ok(input) => input,
        // Valid JSON that a value cannot hold (a number beyond a double): the text can.
        Err(_)
            if inputs == Inputs::Text
                && text.starts_with('{')
                && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() =>
        {
            return Ok(Value::String(TEXT_ONLY_INPUT.to_owned()));
        }
        Err(e) => {
            return Err(Error::InvalidArguments { index, field: field(), reason: e.to_string() });
        }
    };
    if input.is_object() {
        Ok(input)
    } else {
        Err(Error::ArgumentsNotObject { index, field: field(), found: json_kind(&input) })
    }
}

fn write_user<M: Borrow<Message>>(first: usize, run: &[M]) -> Result<Value> {
    if let [only] = run
        && let (Role::User, Some(Content::Text(text))) =
            (only.borrow().role(), only.borrow().content())
    {
        return Ok(Value::String(text.clone()));
    }
    let mut blocks = Vec::new();
    for (offset, m) in run.iter().map(Borrow::borrow).enumerate() {
        let index = first + offset;
        if m.role() == Role::Tool {
            blocks.push(write_tool_result(index, m)?);
        } else {
            push_content_blocks(index, m.content(), &mut blocks)?;
        }
    }
    Ok(Value::Array(blocks))
}

fn write_tool_result(index: usize, m: &Message) -> Result<Value> {
    let mut block = fields_for(m.extra(), Format::Anthropic).cloned().unwrap_or_default();
    block.insert("type".into(), json!("tool_result"));
    // See the Responses writer: an id-less tool message is refused, not written with `""`.
    let call_id = m
        .tool_call_id()
        .ok_or_else(|| Error::MissingField { index, field: "tool_call_id".into() })?;
    block.insert("tool_use_id".into(), Value::String(call_id.to_owned()));
    match m.content() {
        None => {}
        Some(Content::Text(s)) => {
            block.insert("content".into(), Value::String(s.clone()));
        }
        Some(Content::Parts(parts)) => {
            let blocks = parts
                .iter()
                .enumerate()
                .map(|(k, p)| write_part(index, k, p))
                .collect::<Result<Vec<_>>>()?;
            block.insert("content".into(), Value::Array(blocks));
        }
    }
    if let Some(flag) = m.is_error_field() {
        block.insert("is_error".into(), Value::Bool(flag));
    }
    Ok(Value::Object(block))
}

/// Appends the blocks of a message's content; empty text is skipped, as the API refuses it.
fn push_content_blocks(
    index: usize,
    content: Option<&Content>,
    blocks: &mut Vec<Value>,
) -> Result<()> {
    match content {
        None => {}
        Some(Content::Text(s)) if s.is_empty() => {}
        Some(Content::Text(s)) => blocks.push(json!({"type": "text", "text": s})),
        Some(Content::Parts(parts)) => {
            for (k, part) in parts.iter().enumerate() {
                blocks.push(write_part(index, k, part)?);
            }
        }
    }
    Ok(())
}

fn write_part(index: usize, k: usize, part: &Part) -> Result<Value> {
    let extra = |e: &Option<ProviderFields>| {
        fields_for(e.as_ref(), Format::Anthropic).cloned().unwrap_or_default()
    };
    match part {
        Part::Text { text, extra: e } => {
            let mut out = extra(e);
            out.insert("type".into(), json!("text"));
            out.insert("text".into(), Value::String(text.clone()));
            Ok(Value::Object(out))
        }
        Part::Image { source, extra: e } => {
            let mut out = extra(e);
            out.insert("type".into(), json!("image"));
            let source = match source {
                ImageSource::Url { url } => json!({"type": "url", "url": url}),
                ImageSource::Base64 { media_type, data } => {
                    json!({"type": "base64", "media_type": media_type, "data": data})
                }
            };
            out.insert("source".into(), source);
            Ok(Value::Object(out))
        }
        Part::Raw { format: Format::Anthropic, value } => Ok(value.clone()),
        Part::Raw { value, .. } => Err(Error::UnsupportedValue {
            index,
            field: format!("content[{k}].type"),
            value: value.get("type").and_then(Value::as_str).unwrap_or("unknown").to_owned(),
        }),
    }
}

/// Reads the assistant's reply out of a Messages API response
/// (`{"type": "message", "role": "assistant", "content": [...], "stop_reason": ...}`): its
/// content blocks become one assistant [`Message`] as [`to_messages`] reads an assistant
/// turn (text, `tool_use` calls, other blocks kept). The response's other fields (`id`,
/// `model`, `stop_reason`, `usage`) describe the call, not the message, and are not kept.
///
/// # Errors
///
/// [`Error::MissingField`] when there is no `content`, [`Error::UnsupportedValue`] when the
/// `role` is not `assistant` (or `type` not `message`); then as [`to_messages`] (index 0).
///
/// # Examples
///
/// ```
/// use curator::model::{Role, formats::anthropic};
/// use serde_json::json;
///
/// let response = json!({
///     "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
///     "content": [
///         {"type": "text", "text": "Let me look."},
///         {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}}
///     ],
///     "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}
/// });
/// let reply = anthropic::response_message(&response)?;
/// assert_eq!((reply.role(), reply.text().as_ref()), (Role::Assistant, "Let me look."));
/// assert_eq!(reply.tool_calls()[0].arguments(), r#"{"city":"Paris"}"#);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn response_message(response: &Value) -> Result<Message> {
    read_response(response, &[])
}

fn read_response(response: &Value, inputs: &[&RawValue]) -> Result<Message> {
    for (field, expected) in [("type", "message"), ("role", "assistant")] {
        match response.get(field) {
            None => {}
            Some(Value::String(found)) if found == expected => {}
            Some(other) => {
                return Err(Error::UnsupportedValue {
                    index: 0,
                    field: field.into(),
                    value: other.as_str().map_or_else(|| other.to_string(), str::to_owned),
                });
            }
        }
    }
    let content = response
        .get("content")
        .ok_or_else(|| Error::MissingField { index: 0, field: "content".into() })?;
    let turn = json!({"messages": [{"role": "assistant", "content": content}]});
    let mut messages = read_request(&turn, &[inputs.to_vec()])?;
    match (messages.pop(), messages.is_empty()) {
        (Some(message), true) => Ok(message),
        // An empty content array reads as an assistant reply with no content.
        (None, _) => Ok(Message::assistant("")),
        (Some(_), false) => Err(Error::UnsupportedValue {
            index: 0,
            field: "content".into(),
            value: "blocks that do not make one assistant message".into(),
        }),
    }
}

/// Parses a Messages API response from JSON text; see [`response_message`].
///
/// # Errors
///
/// [`Error::NotJson`] when the text is not JSON, then as [`response_message`].
///
/// # Examples
///
/// ```
/// use curator::model::formats::anthropic;
///
/// let reply = anthropic::parse_response(r#"{"role": "assistant", "content": [{"type": "text", "text": "Hi."}], "stop_reason": "end_turn"}"#)?;
/// assert_eq!(reply.text(), "Hi.");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn parse_response(json: &str) -> Result<Message> {
    let inputs = exact::response_inputs(json);
    let value = match wide::value_keeping(json, inputs.iter().copied())? {
        Some(value) => value,
        None => serde_json::from_str(json).map_err(|source| Error::NotJson { source })?,
    };
    read_response(&value, &inputs)
}

/// Converts OpenAI `tools` (`{"type": "function", "function": {name, description,
/// parameters, strict}}`) to Anthropic tools (`{name, description, input_schema, strict}`).
/// A function without `parameters` takes the empty object schema Anthropic requires.
///
/// # Errors
///
/// [`Error::ToolSchema`] naming the tool and field: `tools` not an array, a tool that is not
/// an object, a `type` other than `function` (`custom` tools have no Anthropic form), a
/// missing or non-string `function.name`, `parameters` that is not an object, or a field
/// this conversion does not know (it is never dropped silently).
///
/// # Examples
///
/// ```
/// use curator::model::formats::anthropic;
/// use serde_json::json;
///
/// let tools = json!([{"type": "function", "function": {"name": "ls", "description": "List.",
///     "parameters": {"type": "object", "properties": {"dir": {"type": "string"}}}}}]);
/// assert_eq!(anthropic::tools_from_openai(&tools)?, json!([{"name": "ls", "description": "List.",
///     "input_schema": {"type": "object", "properties": {"dir": {"type": "string"}}}}]));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn tools_from_openai(tools: &Value) -> Result<Value> {
    super::tools::openai_to_anthropic(tools)
}

/// Adapts messages read in another format (OpenAI) to what the Messages API accepts,
/// leaving what is valid as it is: text parts that are empty or only whitespace are left
/// out (the API refuses blank text blocks), and so is the blank text of an assistant
/// message that calls tools; an assistant message after one that calls no tool is marked
/// [`Message::starts_turn`], so that it is written as a message of its own and reads back
/// as one. [`convert`] writes the adapted messages; use [`to_json`] on
/// them to keep the numbers of arguments as written.
///
/// # Examples
///
/// ```
/// use curator::model::{Content, Message, ToolCall, formats::anthropic};
///
/// let adapted = anthropic::adapt(&[
///     Message::user("go"),
///     Message::assistant_with_calls(Some(Content::Text(" ".into())), vec![ToolCall::new("c", "f", "{}")]),
/// ]);
/// assert!(adapted[1].content().is_none());
/// ```
pub fn adapt<M: Borrow<Message>>(messages: &[M]) -> Vec<Message> {
    super::adapt::for_anthropic(messages)
}

/// Writes messages read in another format as a Messages API request: [`adapt`], then
/// [`from_messages`].
///
/// # Errors
///
/// As [`from_messages`].
///
/// # Examples
///
/// ```
/// use curator::model::formats::{anthropic, openai};
/// use serde_json::json;
///
/// let read = openai::to_messages(&json!([{"role": "user", "content": [
///     {"type": "text", "text": ""}, {"type": "text", "text": "hi"}]}]))?;
/// assert_eq!(anthropic::convert(&read)?.messages[0]["content"], json!([{"type": "text", "text": "hi"}]));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn convert<M: Borrow<Message>>(messages: &[M]) -> Result<Request> {
    from_messages(&adapt(messages))
}
