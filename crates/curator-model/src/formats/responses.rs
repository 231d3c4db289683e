//! OpenAI Responses API items.
//!
//! The Responses API (and the OpenAI Agents SDK, which stores its items in a session) keeps a
//! conversation as a list of *items* rather than messages: `message` items (roles `user`,
//! `assistant`, `system`, `developer`; content a string or parts such as `input_text`,
//! `output_text`, `input_image`, `input_file`, `refusal`), easy input messages without
//! `type` (`{"role": "user", "content": "hi"}`), `function_call` items (`call_id`, `name`,
//! `arguments`), `function_call_output` items (`call_id`, `output` as a string or parts),
//! `reasoning` items, and many more (`web_search_call`, `computer_call`, …).
//!
//! Reading maps them onto [`Message`]s:
//! - a `message` item is a message of its role (`developer` is a system message that
//!   remembers its role); its `id`, `status`, `type` and other fields are kept as
//!   [`ProviderFields`], and so are the fields of its parts (`annotations`, `logprobs`,
//!   `detail`); a text part remembers its `type` when it is not the role's usual one
//!   (`output_text` for the assistant, `input_text` otherwise);
//! - a `function_call` item is a [`ToolCall`] (its `call_id` is the call's id, its own `id`
//!   and `status` are kept) of the assistant message read from the item before it, when that
//!   item was on the assistant's side (a message, a reasoning item, another call): so an
//!   assistant turn of a message and its calls is one [`Message`], as in the other formats; a
//!   `function_call` with no such item before it makes an assistant message with no content;
//! - a `function_call_output` item is a tool [`Message`] answering `call_id`;
//! - a `reasoning` item, and every item of another type, is kept whole as the one
//!   [`Part::Raw`] of a message of its own (the assistant's, or the user's for the inputs
//!   that answer a call: `computer_call_output`, `mcp_approval_response`, …), as the
//!   Anthropic format keeps thinking blocks: strategies see it, count it and keep it with its
//!   turn, and writing gives the item back as it was.
//!
//! So `Responses → Message → Responses` gives equal JSON for every item
//! ([`from_messages`]`(`[`to_messages`]`(items)) == items`).
//!
//! The reader is strict: Chat Completions message fields (`tool_calls`, `tool_call_id`,
//! `function_call`, `refusal`, `audio`) and parts (`text`, `image_url`, `file`) and Anthropic
//! blocks (`tool_use`, `thinking`, an `image`, …) are [`Error::ForeignField`].
//!
//! Writing messages read from another format: a message becomes an easy input message
//! (`{"role", "content"}`), its text parts `input_text` (`output_text` for the assistant)
//! and its images `input_image` (with the Chat Completions `detail`); each tool call a
//! `function_call` item after it, each tool result a `function_call_output` item (a result
//! without content has the empty output). Left out, as the other formats leave out what
//! they cannot carry: the other formats' fields (`cache_control`, `refusal: null`), the
//! `name` of a message and the `is_error` mark of a result. Refused with a typed error: a
//! part only another format defines (a thinking block, an audio part), a Chat Completions
//! `custom` call, and a message with no content and no call.
//!
//! # Examples
//!
//! ```
//! use curator::model::{Role, formats::responses};
//! use serde_json::json;
//!
//! let items = vec![
//!     json!({"role": "user", "content": "Weather in Paris?"}),
//!     json!({"type": "reasoning", "id": "rs_1", "summary": []}),
//!     json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather",
//!            "arguments": "{\"city\":\"Paris\"}", "status": "completed"}),
//!     json!({"type": "function_call_output", "call_id": "call_1", "output": "18°C"}),
//!     json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
//!            "content": [{"type": "output_text", "text": "18°C.", "annotations": []}]}),
//! ];
//! let messages = responses::to_messages(&items)?;
//! assert_eq!(messages.len(), 4); // the call joined the reasoning item's message
//! assert_eq!(messages[1].tool_calls()[0].id(), "call_1");
//! assert_eq!((messages[2].role(), messages[2].text().as_ref()), (Role::Tool, "18°C"));
//! assert_eq!(responses::from_messages(&messages)?, items);
//! Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::borrow::Borrow;

use serde_json::{Map, Value, json};

use super::object::{Object, merge};
use crate::error::json_kind;
use crate::provider_fields::fields_for;
use crate::{
    Content, Error, Format, ImageSource, Message, Part, ProviderFields, Result, Role, ToolCall,
};

/// Content part types only the Chat Completions format defines.
const CHAT_PARTS: &[&str] = &["text", "image_url", "file"];

/// Item types that a caller sends to answer the model (read as the user's side).
const INPUT_ITEMS: &[&str] = &["mcp_approval_response", "item_reference"];

/// Parses JSON text holding an array of items.
///
/// # Errors
///
/// [`Error::NotJson`] when the text is not JSON, [`Error::WrongType`] when it is not an
/// array, then as [`to_messages`].
///
/// # Examples
///
/// ```
/// use curator::model::{Error, formats::responses};
///
/// let messages = responses::parse(r#"[{"role": "user", "content": "hi"}]"#)?;
/// assert_eq!(messages.len(), 1);
/// assert!(matches!(responses::parse("{}"), Err(Error::WrongType { .. })));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn parse(json: &str) -> Result<Vec<Message>> {
    let value: Value = serde_json::from_str(json).map_err(|source| Error::NotJson { source })?;
    match &value {
        Value::Array(items) => to_messages(items),
        other => Err(Error::WrongType {
            index: 0,
            field: "input".into(),
            expected: "an array of items",
            found: json_kind(other),
        }),
    }
}

/// Reads a list of Responses API items (a request's `input`, a response's `output`, or
/// what an Agents SDK session stores).
///
/// Error indices count the items.
///
/// # Errors
///
/// A typed [`Error`] naming the index and field of the first item that is not a valid
/// item: not an object, a message without `role` or `content` or with an unknown role
/// ([`Error::UnknownRole`]), a `function_call` without `call_id`, `name` or `arguments`, a
/// `function_call_output` without `call_id` or `output`, a `reasoning` item whose `summary`
/// is not a list of texts, a field of the wrong type, or a part of another format
/// ([`Error::ForeignField`]).
///
/// # Examples
///
/// ```
/// use curator::model::{Error, formats::responses};
/// use serde_json::json;
///
/// let err = responses::to_messages(&[
///     json!({"role": "user", "content": "hi"}),
///     json!({"type": "function_call", "call_id": "c1", "arguments": "{}"}),
/// ]).unwrap_err();
/// assert!(matches!(&err, Error::MissingField { index: 1, field } if field == "name"));
/// assert_eq!(err.to_string(), "message 1: missing field `name`");
/// ```
pub fn to_messages(items: &[Value]) -> Result<Vec<Message>> {
    let mut out: Vec<Message> = Vec::with_capacity(items.len());
    // Whether the last message was read from an item on the assistant's side, so that a
    // `function_call` item after it joins its turn.
    let mut joins = false;
    for (index, value) in items.iter().enumerate() {
        let item = Object::new(index, "", value)?;
        match item.opt_str("type")? {
            None | Some("message") => {
                let message = read_message(&item)?;
                joins = message.role() == Role::Assistant;
                out.push(message);
            }
            Some("function_call") => {
                let call = read_call(&item)?;
                match out.last_mut().filter(|_| joins) {
                    Some(last) => last.push_tool_call(call),
                    None => out.push(Message::assistant_with_calls(None, vec![call])),
                }
                joins = true;
            }
            Some("function_call_output") => {
                out.push(read_output(&item)?);
                joins = false;
            }
            Some(kind) => {
                if kind == "reasoning" {
                    check_reasoning(&item)?;
                }
                let user_side = kind.ends_with("_output") || INPUT_ITEMS.contains(&kind);
                out.push(item_message(kind, value, !user_side));
                joins = !user_side;
            }
        }
    }
    Ok(out)
}

/// The message that holds an item curator does not model as a message: the item whole, as
/// its one raw part, and its `type` in the message's fields, which marks the message as
/// standing for that item.
fn item_message(kind: &str, value: &Value, assistant: bool) -> Message {
    let content =
        Content::Parts(vec![Part::Raw { format: Format::Responses, value: value.clone() }]);
    let message = if assistant { Message::assistant(content) } else { Message::user(content) };
    let mut fields = Map::new();
    fields.insert("type".into(), Value::String(kind.to_owned()));
    message.with_extra(Some(ProviderFields::new(Format::Responses, fields)))
}

/// The text part type a role's parts have unless they say otherwise.
fn default_text_type(role: Role) -> &'static str {
    if role == Role::Assistant { "output_text" } else { "input_text" }
}

fn read_message(item: &Object<'_>) -> Result<Message> {
    if let Some(field) = super::OPENAI_MESSAGE_FIELDS.iter().find(|f| item.get(f).is_some()) {
        return Err(Error::ForeignField {
            index: item.index,
            field: (*field).to_owned(),
            value: (*field).to_owned(),
            format: "OpenAI Chat Completions",
        });
    }
    let role_name = item.str("role")?;
    let role = match role_name {
        "system" | "developer" => Role::System,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        other => return Err(Error::UnknownRole { index: item.index, role: other.to_owned() }),
    };
    let content = match item.get("content") {
        None => return Err(item.missing("content")),
        Some(value) => read_content(item, "content", value, role)?,
    };
    let mut rest = item.rest(&["role", "content"]);
    if role_name == "developer" {
        // Written back as it was read; other formats see a system message.
        rest.insert("role".into(), Value::String(role_name.to_owned()));
    }
    let message = match role {
        Role::System => Message::system(content),
        Role::Assistant => Message::assistant(content),
        Role::User | Role::Tool => Message::user(content),
    };
    Ok(message.with_extra(ProviderFields::non_empty(Format::Responses, rest)))
}

/// Reads a message's `content` or an output's `output`: a string or an array of parts.
fn read_content(item: &Object<'_>, key: &str, value: &Value, role: Role) -> Result<Content> {
    match value {
        Value::String(s) => Ok(Content::Text(s.clone())),
        Value::Array(parts) => parts
            .iter()
            .enumerate()
            .map(|(k, p)| read_part(item.index, &item.field(&format!("{key}[{k}]")), p, role))
            .collect::<Result<Vec<_>>>()
            .map(Content::Parts),
        other => Err(item.wrong_type(key, "a string or an array", other)),
    }
}

fn read_part(index: usize, path: &str, value: &Value, role: Role) -> Result<Part> {
    let part = Object::new(index, path, value)?;
    let Some(kind) = part.opt_str("type")? else { return Err(part.missing("type")) };
    let foreign = if CHAT_PARTS.contains(&kind) {
        Some("OpenAI Chat Completions")
    } else if super::ANTHROPIC_BLOCKS.contains(&kind) || kind == "image" {
        Some("Anthropic")
    } else {
        None
    };
    if let Some(format) = foreign {
        return Err(Error::ForeignField {
            index,
            field: part.field("type"),
            value: kind.to_owned(),
            format,
        });
    }
    match kind {
        "input_text" | "output_text" => {
            let text = part.str("text")?.to_owned();
            let mut rest = part.rest(&["text"]);
            if kind == default_text_type(role) {
                rest.remove("type");
            }
            Ok(Part::Text { text, extra: ProviderFields::non_empty(Format::Responses, rest) })
        }
        "input_image" => match part.get("image_url") {
            Some(Value::String(url)) => Ok(Part::Image {
                source: ImageSource::from_url(url),
                extra: ProviderFields::non_empty(
                    Format::Responses,
                    part.rest(&["type", "image_url"]),
                ),
            }),
            // A file id instead of a URL: kept as it is.
            None | Some(Value::Null) => {
                Ok(Part::Raw { format: Format::Responses, value: value.clone() })
            }
            Some(other) => Err(part.wrong_type("image_url", "a string", other)),
        },
        _ => Ok(Part::Raw { format: Format::Responses, value: value.clone() }),
    }
}

fn read_call(item: &Object<'_>) -> Result<ToolCall> {
    let call_id = item.str("call_id")?;
    let name = item.str("name")?;
    let arguments = item.str("arguments")?;
    let rest = item.rest(&["type", "call_id", "name", "arguments"]);
    Ok(ToolCall::new(call_id, name, arguments)
        .with_extra(ProviderFields::non_empty(Format::Responses, rest)))
}

fn read_output(item: &Object<'_>) -> Result<Message> {
    let call_id = item.str("call_id")?;
    let output = match item.get("output") {
        None => return Err(item.missing("output")),
        Some(value) => read_content(item, "output", value, Role::Tool)?,
    };
    let rest = item.rest(&["type", "call_id", "output"]);
    Ok(Message::tool_result(call_id, output)
        .with_extra(ProviderFields::non_empty(Format::Responses, rest)))
}

/// Checks the fields of a reasoning item that the API requires (it is kept whole).
fn check_reasoning(item: &Object<'_>) -> Result<()> {
    item.opt_str("id")?;
    item.opt_str("encrypted_content")?;
    let summary = match item.get("summary") {
        None => return Err(item.missing("summary")),
        Some(Value::Array(summary)) => summary,
        Some(other) => return Err(item.wrong_type("summary", "an array", other)),
    };
    for (k, entry) in summary.iter().enumerate() {
        let entry = Object::new(item.index, item.field(&format!("summary[{k}]")), entry)?;
        entry.str("type")?;
        entry.str("text")?;
    }
    match item.get("content") {
        None | Some(Value::Null | Value::Array(_)) => Ok(()),
        Some(other) => Err(item.wrong_type("content", "an array or null", other)),
    }
}

/// Writes messages as a list of Responses API items. Takes `Message`s or anything that
/// borrows as one (a curated view's `MessageRef`s).
///
/// A message becomes a `message` item (an easy input message when it was not read from
/// one), then one `function_call` item per tool call; a tool message a
/// `function_call_output`; a message read from another item gives that item back.
///
/// # Errors
///
/// [`Error::UnsupportedValue`] for a content part only another format defines (a thinking
/// block, an audio part) or a `custom` tool call, or a message read from an item whose
/// content was replaced; [`Error::MissingField`] for a message other than an assistant's
/// with calls that has no content.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, ToolCall, formats::responses};
/// use serde_json::json;
///
/// let items = responses::from_messages(&[
///     Message::user("list /tmp"),
///     Message::assistant_with_calls(None, vec![ToolCall::new("c1", "ls", r#"{"dir":"/tmp"}"#)]),
///     Message::tool_result("c1", "a.txt"),
/// ])?;
/// assert_eq!(items, vec![
///     json!({"role": "user", "content": "list /tmp"}),
///     json!({"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{\"dir\":\"/tmp\"}"}),
///     json!({"type": "function_call_output", "call_id": "c1", "output": "a.txt"}),
/// ]);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn from_messages<M: Borrow<Message>>(messages: &[M]) -> Result<Vec<Value>> {
    let mut out = Vec::with_capacity(messages.len());
    for (index, message) in messages.iter().enumerate() {
        write_message(index, message.borrow(), &mut out)?;
    }
    Ok(out)
}

/// Whether a message stands for a Responses `reasoning` item (alone, or with the calls that
/// followed it). The Responses API refuses an item without the reasoning item that produced
/// it, and a reasoning item without the item it produced: a view of Responses items keeps
/// them together (`curator_strategies::View::responses_entries`).
///
/// # Examples
///
/// ```
/// use curator::model::formats::responses;
/// use serde_json::json;
///
/// let messages = responses::to_messages(&[
///     json!({"type": "reasoning", "id": "rs_1", "summary": []}),
///     json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "4"}]}),
/// ])?;
/// assert!(responses::is_reasoning(&messages[0]));
/// assert!(!responses::is_reasoning(&messages[1]));
/// # Ok::<(), curator::model::Error>(())
/// ```
pub fn is_reasoning(message: &Message) -> bool {
    item_type(message) == Some("reasoning")
}

/// How an item that a message stands for is tied to another: a call the caller answers
/// with an item of its own, or the item that answers one. Function calls are [`ToolCall`]s
/// and their outputs tool messages, so they are not among these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemLink<'m> {
    /// A call the caller answers (`computer_call`, `custom_tool_call`, `local_shell_call`,
    /// `shell_call`, `apply_patch_call`, `mcp_approval_request`, …), by its id.
    Call(&'m str),
    /// The answer to a call (`computer_call_output`, `custom_tool_call_output`,
    /// `mcp_approval_response`, …), by the call's id.
    Output(&'m str),
}

/// The call or answer the item `message` stands for is, with the call's id (`call_id`; a
/// `local_shell_call_output`'s `id`; an MCP approval request's `id`, which its response
/// names as `approval_request_id`); `None`
/// for every other message. The Responses API refuses an answer without its call, and a
/// call without its answer before the next input.
///
/// # Examples
///
/// ```
/// use curator::model::formats::responses::{self, ItemLink};
/// use serde_json::json;
///
/// let messages = responses::to_messages(&[
///     json!({"type": "custom_tool_call", "call_id": "ct_1", "name": "sql", "input": "SELECT 1"}),
///     json!({"type": "custom_tool_call_output", "call_id": "ct_1", "output": "1"}),
/// ])?;
/// assert_eq!(responses::item_link(&messages[0]), Some(ItemLink::Call("ct_1")));
/// assert_eq!(responses::item_link(&messages[1]), Some(ItemLink::Output("ct_1")));
/// # Ok::<(), curator::model::Error>(())
/// ```
pub fn item_link(message: &Message) -> Option<ItemLink<'_>> {
    let kind = item_type(message)?;
    let Some(Content::Parts(parts)) = message.content() else { return None };
    let [Part::Raw { value, .. }] = parts.as_slice() else { return None };
    let id = |key: &str| value.get(key).and_then(Value::as_str);
    match kind {
        "mcp_approval_request" => id("id").map(ItemLink::Call),
        "mcp_approval_response" => id("approval_request_id").map(ItemLink::Output),
        // A `local_shell_call_output` names its call by `id` alone.
        _ if kind.ends_with("_call_output") => {
            id("call_id").or_else(|| id("id")).map(ItemLink::Output)
        }
        _ if kind.ends_with("_call") => id("call_id").map(ItemLink::Call),
        _ => None,
    }
}

/// The type of the item a message was read from, when it is not a `message` item
/// (`reasoning`, `web_search_call`, …).
pub(crate) fn item_type(message: &Message) -> Option<&str> {
    fields_for(message.extra(), Format::Responses)
        .and_then(|f| f.get("type"))
        .and_then(Value::as_str)
        .filter(|kind| *kind != "message")
}

fn write_message(index: usize, message: &Message, out: &mut Vec<Value>) -> Result<()> {
    if message.role() == Role::Tool {
        out.push(write_output(index, message)?);
        return Ok(());
    }
    if let Some(kind) = item_type(message) {
        match message.content() {
            Some(Content::Parts(parts)) => match parts.as_slice() {
                [Part::Raw { format: Format::Responses, value }] => out.push(value.clone()),
                _ => return Err(replaced_item(index, kind)),
            },
            _ => return Err(replaced_item(index, kind)),
        }
    } else if let Some(content) = message.content() {
        out.push(write_message_item(index, message, content)?);
    } else if !message.has_tool_calls() {
        return Err(Error::MissingField { index, field: "content".into() });
    }
    for (j, call) in message.tool_calls().iter().enumerate() {
        out.push(write_call(index, j, call)?);
    }
    Ok(())
}

fn replaced_item(index: usize, kind: &str) -> Error {
    Error::UnsupportedValue {
        index,
        field: "content".into(),
        value: format!("a `{kind}` item whose content is no longer the item"),
    }
}

fn write_message_item(index: usize, message: &Message, content: &Content) -> Result<Value> {
    let extra = fields_for(message.extra(), Format::Responses);
    let role = match (message.role(), extra.and_then(|f| f.get("role")).and_then(Value::as_str)) {
        (Role::System, Some("developer")) => "developer",
        (role, _) => role.as_str(),
    };
    let mut item = Map::new();
    item.insert("role".into(), Value::String(role.to_owned()));
    item.insert("content".into(), write_content(index, "content", message.role(), content)?);
    merge(&mut item, extra);
    Ok(Value::Object(item))
}

fn write_content(index: usize, key: &str, role: Role, content: &Content) -> Result<Value> {
    match content {
        Content::Text(s) => Ok(Value::String(s.clone())),
        Content::Parts(parts) => parts
            .iter()
            .enumerate()
            .map(|(k, p)| write_part(index, &format!("{key}[{k}]"), role, p))
            .collect::<Result<Vec<_>>>()
            .map(Value::Array),
    }
}

fn write_part(index: usize, path: &str, role: Role, part: &Part) -> Result<Value> {
    let extra = |e: &Option<ProviderFields>| {
        fields_for(e.as_ref(), Format::Responses).cloned().unwrap_or_default()
    };
    match part {
        Part::Text { text, extra: e } => {
            let mut out = extra(e);
            out.entry("type").or_insert_with(|| json!(default_text_type(role)));
            out.insert("text".into(), Value::String(text.clone()));
            Ok(Value::Object(out))
        }
        Part::Image { source, extra: e } => {
            let mut out = extra(e);
            // The Chat Completions `detail` means the same here.
            if let Some(detail) =
                fields_for(e.as_ref(), Format::OpenAi).and_then(|f| f.get("detail"))
            {
                out.entry("detail").or_insert_with(|| detail.clone());
            }
            out.insert("type".into(), json!("input_image"));
            out.insert("image_url".into(), Value::String(source.to_url()));
            Ok(Value::Object(out))
        }
        Part::Raw { format: Format::Responses, value } => Ok(value.clone()),
        Part::Raw { value, .. } => Err(Error::UnsupportedValue {
            index,
            field: format!("{path}.type"),
            value: value.get("type").and_then(Value::as_str).unwrap_or("unknown").to_owned(),
        }),
    }
}

fn write_call(index: usize, j: usize, call: &ToolCall) -> Result<Value> {
    if super::openai::is_custom_call(call) {
        return Err(Error::UnsupportedValue {
            index,
            field: format!("tool_calls[{j}].type"),
            value: "custom".into(),
        });
    }
    let mut item = fields_for(call.extra(), Format::Responses).cloned().unwrap_or_default();
    item.insert("type".into(), json!("function_call"));
    item.insert("call_id".into(), Value::String(call.id().to_owned()));
    item.insert("name".into(), Value::String(call.name().to_owned()));
    item.insert("arguments".into(), Value::String(call.arguments().to_owned()));
    Ok(Value::Object(item))
}

fn write_output(index: usize, message: &Message) -> Result<Value> {
    let mut item = fields_for(message.extra(), Format::Responses).cloned().unwrap_or_default();
    item.insert("type".into(), json!("function_call_output"));
    // A tool message always answers a call; one read from elsewhere (a stored entry) without
    // its id is refused rather than written as answering the call `""`.
    let call_id = message
        .tool_call_id()
        .ok_or_else(|| Error::MissingField { index, field: "tool_call_id".into() })?;
    item.insert("call_id".into(), Value::String(call_id.to_owned()));
    let output = match message.content() {
        None => Value::String(String::new()),
        Some(content) => write_content(index, "output", Role::Tool, content)?,
    };
    item.insert("output".into(), output);
    Ok(Value::Object(item))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn round_trip(items: &[Value]) -> Vec<Message> {
        let messages = to_messages(items).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(from_messages(&messages).unwrap_or_else(|e| panic!("{e}")), items);
        messages
    }

    #[test]
    fn text_parts_keep_their_type_only_when_it_is_not_the_roles_usual_one() {
        let messages = round_trip(&[
            json!({"role": "user", "content": [{"type": "input_text", "text": "a"}]}),
            json!({"role": "assistant", "content": [{"type": "input_text", "text": "b"}]}),
        ]);
        assert_eq!(messages[0].content(), Some(&Content::Parts(vec![Part::text("a")])));
        assert!(matches!(
            messages[1].content(),
            Some(Content::Parts(parts)) if matches!(&parts[0], Part::Text { extra: Some(_), .. })
        ));
    }

    #[test]
    fn an_item_message_whose_content_was_replaced_is_refused() {
        let messages = round_trip(&[json!({"type": "reasoning", "id": "rs", "summary": []})]);
        let cleared = messages[0].clone_with_content(Some(Content::Text("[cleared]".into())));
        assert!(matches!(
            from_messages(&[cleared]),
            Err(Error::UnsupportedValue { index: 0, field, .. }) if field == "content"
        ));
    }
}
