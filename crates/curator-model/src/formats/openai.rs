//! OpenAI Chat Completions messages.
//!
//! Reads and writes the `messages` array of a Chat Completions request (and the `message` of
//! a response): `system`, `user`, `assistant` and `tool` roles, string or part-array content,
//! `null` or absent content, `tool_calls` with `type: "function"`, `tool_call_id` and `name`.
//! Fields curator does not model (`refusal`, `audio`, `function_call`, part fields, …) are
//! kept as [`ProviderFields`] and written back, so `OpenAI → Message → OpenAI` gives equal
//! JSON. The `developer` role (o-series and GPT-5 requests) is read as a system message that
//! remembers its role, and `custom` tool calls (free-form input) as tool calls whose
//! arguments are that input, both written back as they were. Not modelled, and refused with
//! a typed error: the legacy `function` role and tool calls of any other `type`.
//!
//! The reader is strict: an Anthropic block in content (`tool_use`, `tool_result`,
//! `thinking`, `document`, an `image` with a `source`, …) or a Responses API part
//! (`input_text`, `output_text`, `input_image`, `input_file`) is [`Error::ForeignField`],
//! never kept as an unknown part.
//!
//! Writing messages read from the Anthropic format leaves out what OpenAI cannot express:
//! the `is_error` mark of a tool result and Anthropic-only fields; an Anthropic-only content
//! part (a thinking block, a document) is refused with [`Error::UnsupportedValue`]. Messages
//! read from Responses API items ([`super::responses`]) keep an image's `detail` and lose
//! the items' `id`, `status`, `annotations` and `logprobs`; a reasoning item or any other
//! item that is not a message is refused in the same way.
//!
//! # Examples
//!
//! ```
//! use curator::model::formats::openai;
//! use serde_json::json;
//!
//! let wire = json!([
//!     {"role": "user", "content": "What is in /tmp?"},
//!     {"role": "assistant", "content": null, "tool_calls": [
//!         {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{\"dir\":\"/tmp\"}"}}
//!     ]},
//!     {"role": "tool", "tool_call_id": "call_1", "name": "ls", "content": "a.txt"}
//! ]);
//! let messages = openai::to_messages(&wire)?;
//! assert_eq!(messages[1].tool_calls()[0].name(), "ls");
//! assert_eq!(openai::from_messages(&messages)?, wire);
//! Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::borrow::Borrow;

use serde_json::{Map, Value, json};

use super::object::{Object, merge};
use crate::error::json_kind;
use crate::{
    Content, Error, Format, ImageSource, Message, Part, ProviderFields, Result, Role, ToolCall,
};

const MESSAGE_FIELDS: &[&str] = &["role", "content", "tool_calls", "tool_call_id", "name"];

/// Parses JSON text holding an array of messages.
///
/// # Errors
///
/// [`Error::NotJson`] when the text is not JSON, then as [`to_messages`].
///
/// # Examples
///
/// ```
/// use curator::model::{Error, formats::openai};
///
/// let messages = openai::parse(r#"[{"role": "user", "content": "hi"}]"#)?;
/// assert_eq!(messages.len(), 1);
/// assert!(matches!(openai::parse("[{"), Err(Error::NotJson { .. })));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn parse(json: &str) -> Result<Vec<Message>> {
    let value: Value = serde_json::from_str(json).map_err(|source| Error::NotJson { source })?;
    to_messages(&value)
}

/// Reads an array of OpenAI messages.
///
/// # Errors
///
/// A typed [`Error`] naming the index and field of the first message that is not a valid
/// OpenAI message: not an object, a missing or unknown role, a field of the wrong type, a
/// tool message without `tool_call_id`, tool calls on a message that is not the assistant's,
/// a tool call without `id` or `function.name`, or a call type other than `function`.
///
/// # Examples
///
/// ```
/// use curator::model::{Error, formats::openai};
/// use serde_json::json;
///
/// let err = openai::to_messages(&json!([{"role": "user", "content": "a"}, {"role": "robot"}])).unwrap_err();
/// assert!(matches!(err, Error::UnknownRole { index: 1, .. }));
/// ```
pub fn to_messages(value: &Value) -> Result<Vec<Message>> {
    match value {
        Value::Array(items) => {
            items.iter().enumerate().map(|(i, v)| message_from_value(i, v)).collect()
        }
        other => Err(Error::WrongType {
            index: 0,
            field: "messages".into(),
            expected: "an array",
            found: json_kind(other),
        }),
    }
}

/// Reads one OpenAI message; `index` is its position in the list, used in errors.
///
/// # Errors
///
/// As [`to_messages`].
///
/// # Examples
///
/// ```
/// use curator::model::{Role, formats::openai};
/// use serde_json::json;
///
/// let m = openai::message_from_value(0, &json!({"role": "tool", "tool_call_id": "c1", "content": "ok"}))?;
/// assert_eq!((m.role(), m.tool_call_id()), (Role::Tool, Some("c1")));
/// assert!(openai::message_from_value(3, &json!({"role": "tool", "content": "ok"})).is_err());
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn message_from_value(index: usize, value: &Value) -> Result<Message> {
    let obj = Object::new(index, "", value)?;
    let role_name = obj.str("role")?;
    let role = match role_name {
        "system" | "developer" => Role::System,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        other => return Err(Error::UnknownRole { index, role: other.to_owned() }),
    };
    let mut rest = obj.rest(MESSAGE_FIELDS);
    if role_name == "developer" {
        // Written back as it was read; other formats see a system message.
        rest.insert("role".into(), Value::String(role_name.to_owned()));
    }
    let content = match obj.get("content") {
        None => None,
        Some(Value::Null) => Some(None),
        Some(v) => Some(Some(read_content(&obj, v)?)),
    };
    let tool_calls = match obj.get("tool_calls") {
        Some(Value::Array(calls)) if !calls.is_empty() => {
            if role != Role::Assistant {
                return Err(Error::UnexpectedField {
                    index,
                    role: role.as_str(),
                    field: "tool_calls".into(),
                });
            }
            calls
                .iter()
                .enumerate()
                .map(|(j, c)| read_call(index, j, c))
                .collect::<Result<Vec<_>>>()?
        }
        // `null` or `[]` carry no call: keep them verbatim so the message writes back as read.
        Some(v @ (Value::Null | Value::Array(_))) => {
            rest.insert("tool_calls".into(), v.clone());
            Vec::new()
        }
        Some(other) => return Err(obj.wrong_type("tool_calls", "an array", other)),
        None => Vec::new(),
    };
    let tool_call_id = obj.opt_str("tool_call_id")?;
    let mut message = match (role, tool_call_id) {
        (Role::Tool, Some(id)) => Message::tool_result(id, ""),
        (Role::Tool, None) => return Err(obj.missing("tool_call_id")),
        (_, Some(_)) => {
            return Err(Error::UnexpectedField {
                index,
                role: role.as_str(),
                field: "tool_call_id".into(),
            });
        }
        (Role::System, None) => Message::system(""),
        (Role::User, None) => Message::user(""),
        (Role::Assistant, None) => Message::assistant_with_calls(None, tool_calls),
    };
    match content {
        None => message.set_content_omitted(),
        Some(content) => message = message.with_content(content),
    }
    if let Some(name) = obj.opt_str("name")? {
        message = message.with_name(name);
    } else if let Some(v @ Value::Null) = obj.get("name") {
        rest.insert("name".into(), v.clone());
    }
    Ok(message.with_extra(ProviderFields::non_empty(Format::OpenAi, rest)))
}

fn read_content(obj: &Object<'_>, value: &Value) -> Result<Content> {
    match value {
        Value::String(s) => Ok(Content::Text(s.clone())),
        Value::Array(parts) => parts
            .iter()
            .enumerate()
            .map(|(k, p)| read_part(obj.index, &format!("content[{k}]"), p))
            .collect::<Result<Vec<_>>>()
            .map(Content::Parts),
        other => Err(obj.wrong_type("content", "a string, an array or null", other)),
    }
}

fn read_part(index: usize, path: &str, value: &Value) -> Result<Part> {
    let part = Object::new(index, path, value)?;
    let kind = part.opt_str("type")?;
    if let Some(kind) = kind
        && (super::ANTHROPIC_BLOCKS.contains(&kind)
            || (kind == "image" && part.get("source").is_some()))
    {
        return Err(Error::ForeignField {
            index,
            field: part.field("type"),
            value: kind.to_owned(),
            format: "Anthropic",
        });
    }
    if let Some(kind) = kind.filter(|k| super::RESPONSES_PARTS.contains(k)) {
        return Err(Error::ForeignField {
            index,
            field: part.field("type"),
            value: kind.to_owned(),
            format: "OpenAI Responses",
        });
    }
    match kind {
        Some("text") => Ok(Part::Text {
            text: part.str("text")?.to_owned(),
            extra: ProviderFields::non_empty(Format::OpenAi, part.rest(&["type", "text"])),
        }),
        Some("image_url") if part.only(&["type", "image_url"]) => {
            let image = part
                .get("image_url")
                .map(|v| Object::new(index, part.field("image_url"), v))
                .transpose()?;
            match image.as_ref().and_then(|i| i.opt_str("url").ok().flatten().map(|url| (i, url))) {
                Some((image, url)) => Ok(Part::Image {
                    source: ImageSource::from_url(url),
                    extra: ProviderFields::non_empty(Format::OpenAi, image.rest(&["url"])),
                }),
                None => Ok(Part::Raw { format: Format::OpenAi, value: value.clone() }),
            }
        }
        _ => Ok(Part::Raw { format: Format::OpenAi, value: value.clone() }),
    }
}

fn read_call(index: usize, j: usize, value: &Value) -> Result<ToolCall> {
    let call = Object::new(index, format!("tool_calls[{j}]"), value)?;
    match call.opt_str("type")? {
        None | Some("function") => {}
        Some("custom") => return read_custom_call(&call),
        Some(other) => {
            return Err(Error::UnsupportedValue {
                index,
                field: call.field("type"),
                value: other.to_owned(),
            });
        }
    }
    let id = call.str("id")?;
    let function = Object::new(
        index,
        call.field("function"),
        call.get("function").ok_or_else(|| call.missing("function"))?,
    )?;
    let name = function.str("name")?;
    let arguments = function.str("arguments")?;
    let mut rest = call.rest(&["id", "type", "function"]);
    let function_rest = function.rest(&["name", "arguments"]);
    if !function_rest.is_empty() {
        rest.insert("function".into(), Value::Object(function_rest));
    }
    Ok(ToolCall::new(id, name, arguments)
        .with_extra(ProviderFields::non_empty(Format::OpenAi, rest)))
}

/// A `custom` tool call: its free-form `input` is the call's arguments (not JSON).
fn read_custom_call(call: &Object<'_>) -> Result<ToolCall> {
    let id = call.str("id")?;
    let custom = Object::new(
        call.index,
        call.field("custom"),
        call.get("custom").ok_or_else(|| call.missing("custom"))?,
    )?;
    let name = custom.str("name")?;
    let input = custom.str("input")?;
    let mut rest = call.rest(&["id", "custom"]);
    let custom_rest = custom.rest(&["name", "input"]);
    if !custom_rest.is_empty() {
        rest.insert("custom".into(), Value::Object(custom_rest));
    }
    Ok(ToolCall::new(id, name, input).with_extra(ProviderFields::non_empty(Format::OpenAi, rest)))
}

/// Whether a call was read as an OpenAI `custom` tool call.
pub(crate) fn is_custom_call(call: &ToolCall) -> bool {
    crate::provider_fields::fields_for(call.extra(), Format::OpenAi)
        .and_then(|f| f.get("type"))
        .and_then(Value::as_str)
        == Some("custom")
}

/// Writes messages as an OpenAI `messages` array. Takes `Message`s or anything that
/// borrows as one (a curated view's `MessageRef`s), so nothing is cloned to write.
///
/// # Errors
///
/// [`Error::UnsupportedValue`] for a content part that only the Anthropic format can carry.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, ToolCall, formats::openai};
/// use serde_json::json;
///
/// let body = openai::from_messages(&[Message::assistant_with_calls(None, vec![ToolCall::new("c1", "ls", "{}")])])?;
/// assert_eq!(body, json!([{"role": "assistant", "content": null, "tool_calls": [
///     {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
/// ]}]));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn from_messages<M: Borrow<Message>>(messages: &[M]) -> Result<Value> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| message_to_value(i, m.borrow()))
        .collect::<Result<Vec<_>>>()
        .map(Value::Array)
}

/// Writes one message as an OpenAI message; `index` is used in errors.
///
/// # Errors
///
/// As [`from_messages`].
///
/// # Examples
///
/// ```
/// use curator::model::{Message, formats::openai};
///
/// let value = openai::message_to_value(0, &Message::user("hi").with_name("ann"))?;
/// assert_eq!(value, serde_json::json!({"role": "user", "content": "hi", "name": "ann"}));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn message_to_value(index: usize, message: &Message) -> Result<Value> {
    let mut out = Map::new();
    let read_as = crate::provider_fields::fields_for(message.extra(), Format::OpenAi)
        .and_then(|f| f.get("role"))
        .and_then(Value::as_str);
    let role = match (message.role(), read_as) {
        (Role::System, Some("developer")) => "developer",
        (role, _) => role.as_str(),
    };
    out.insert("role".into(), Value::String(role.to_owned()));
    if !message.content_omitted() {
        let content = match message.content() {
            None => Value::Null,
            Some(Content::Text(s)) => Value::String(s.clone()),
            Some(Content::Parts(parts)) => Value::Array(
                parts
                    .iter()
                    .enumerate()
                    .map(|(k, p)| write_part(index, k, p))
                    .collect::<Result<Vec<_>>>()?,
            ),
        };
        out.insert("content".into(), content);
    }
    if message.has_tool_calls() {
        let calls = message.tool_calls().iter().map(write_call).collect();
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    if let Some(id) = message.tool_call_id() {
        out.insert("tool_call_id".into(), Value::String(id.to_owned()));
    }
    if let Some(name) = message.name() {
        out.insert("name".into(), Value::String(name.to_owned()));
    }
    merge(&mut out, crate::provider_fields::fields_for(message.extra(), Format::OpenAi));
    Ok(Value::Object(out))
}

fn write_part(index: usize, k: usize, part: &Part) -> Result<Value> {
    let extra = |e: &Option<ProviderFields>| {
        crate::provider_fields::fields_for(e.as_ref(), Format::OpenAi).cloned()
    };
    match part {
        Part::Text { text, extra: e } => {
            let mut out = extra(e).unwrap_or_default();
            out.insert("type".into(), json!("text"));
            out.insert("text".into(), Value::String(text.clone()));
            Ok(Value::Object(out))
        }
        Part::Image { source, extra: e } => {
            let mut image = extra(e).unwrap_or_default();
            // An image read from Responses items: its `detail` means the same here.
            if let Some(detail) = crate::provider_fields::fields_for(e.as_ref(), Format::Responses)
                .and_then(|f| f.get("detail"))
            {
                image.entry("detail").or_insert_with(|| detail.clone());
            }
            image.insert("url".into(), Value::String(source.to_url()));
            Ok(json!({"type": "image_url", "image_url": image}))
        }
        Part::Raw { format: Format::OpenAi, value } => Ok(value.clone()),
        Part::Raw { value, .. } => Err(Error::UnsupportedValue {
            index,
            field: format!("content[{k}].type"),
            value: value.get("type").and_then(Value::as_str).unwrap_or("unknown").to_owned(),
        }),
    }
}

fn write_call(call: &ToolCall) -> Value {
    if is_custom_call(call) {
        let mut custom = Map::new();
        custom.insert("name".into(), Value::String(call.name().to_owned()));
        custom.insert("input".into(), Value::String(call.arguments().to_owned()));
        let mut out = Map::new();
        out.insert("id".into(), Value::String(call.id().to_owned()));
        out.insert("type".into(), json!("custom"));
        if let Some(extra) = crate::provider_fields::fields_for(call.extra(), Format::OpenAi) {
            for (k, v) in extra {
                match (k.as_str(), v) {
                    ("custom", Value::Object(more)) => merge(&mut custom, Some(more)),
                    _ => {
                        out.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                }
            }
        }
        out.insert("custom".into(), Value::Object(custom));
        return Value::Object(out);
    }
    let mut function = Map::new();
    function.insert("name".into(), Value::String(call.name().to_owned()));
    function.insert("arguments".into(), Value::String(call.arguments().to_owned()));
    let mut out = Map::new();
    out.insert("id".into(), Value::String(call.id().to_owned()));
    out.insert("type".into(), json!("function"));
    if let Some(extra) = crate::provider_fields::fields_for(call.extra(), Format::OpenAi) {
        for (k, v) in extra {
            match (k.as_str(), v) {
                ("function", Value::Object(more)) => merge(&mut function, Some(more)),
                _ => {
                    out.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }
    }
    out.insert("function".into(), Value::Object(function));
    Value::Object(out)
}

/// Reads the assistant's reply out of a chat completion response
/// (`{"choices": [{"message": {...}, "finish_reason": ...}], ...}`): the message of the first
/// choice, as [`message_from_value`] reads it (provider fields such as `refusal` kept).
///
/// # Errors
///
/// [`Error::MissingField`] when there is no `choices[0].message`, [`Error::WrongType`] when
/// `choices` is not an array or the message not an object, [`Error::UnsupportedValue`] when
/// the message is not the assistant's; then as [`message_from_value`] (index 0).
///
/// # Examples
///
/// ```
/// use curator::model::{Role, formats::openai};
/// use serde_json::json;
///
/// let response = json!({
///     "id": "chatcmpl-1", "object": "chat.completion",
///     "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
///         "role": "assistant", "content": null,
///         "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]
///     }}]
/// });
/// let reply = openai::response_message(&response)?;
/// assert_eq!((reply.role(), reply.tool_calls()[0].id()), (Role::Assistant, "call_1"));
/// assert!(openai::response_message(&json!({"choices": []})).is_err());
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn response_message(response: &Value) -> Result<Message> {
    let choices = response
        .get("choices")
        .ok_or_else(|| Error::MissingField { index: 0, field: "choices".into() })?;
    let Value::Array(choices) = choices else {
        return Err(Error::WrongType {
            index: 0,
            field: "choices".into(),
            expected: "an array",
            found: json_kind(choices),
        });
    };
    let message = choices
        .first()
        .and_then(|choice| choice.get("message"))
        .ok_or_else(|| Error::MissingField { index: 0, field: "choices[0].message".into() })?;
    if !message.is_object() {
        return Err(Error::WrongType {
            index: 0,
            field: "choices[0].message".into(),
            expected: "an object",
            found: json_kind(message),
        });
    }
    match message.get("role").and_then(Value::as_str) {
        Some("assistant") | None => {}
        Some(other) => {
            return Err(Error::UnsupportedValue {
                index: 0,
                field: "choices[0].message.role".into(),
                value: other.to_owned(),
            });
        }
    }
    let mut message = message.clone();
    if let Value::Object(fields) = &mut message {
        fields.entry("role").or_insert_with(|| Value::String("assistant".into()));
    }
    message_from_value(0, &message)
}

/// Parses a chat completion response from JSON text; see [`response_message`].
///
/// # Errors
///
/// [`Error::NotJson`] when the text is not JSON, then as [`response_message`].
///
/// # Examples
///
/// ```
/// use curator::model::formats::openai;
///
/// let reply = openai::parse_response(r#"{"choices": [{"message": {"role": "assistant", "content": "Hi."}}]}"#)?;
/// assert_eq!(reply.text(), "Hi.");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn parse_response(json: &str) -> Result<Message> {
    let value: Value = serde_json::from_str(json).map_err(|source| Error::NotJson { source })?;
    response_message(&value)
}

/// Converts Anthropic tools (`{name, description, input_schema, strict}`) to OpenAI `tools`
/// (`{"type": "function", "function": {name, description, parameters, strict}}`).
///
/// # Errors
///
/// [`Error::ToolSchema`] naming the tool and field: `tools` not an array, a tool that is not
/// an object, a server or client tool with a `type` (`web_search_...`, `bash_...`: OpenAI has
/// no counterpart), a missing or non-string `name`, a missing `input_schema`, or a field
/// this conversion does not know (`cache_control` is left out: OpenAI caches by itself).
///
/// # Examples
///
/// ```
/// use curator::model::formats::openai;
/// use serde_json::json;
///
/// let tools = json!([{"name": "ls", "input_schema": {"type": "object", "properties": {}}}]);
/// assert_eq!(openai::tools_from_anthropic(&tools)?, json!([{"type": "function", "function":
///     {"name": "ls", "parameters": {"type": "object", "properties": {}}}}]));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn tools_from_anthropic(tools: &Value) -> Result<Value> {
    super::tools::anthropic_to_openai(tools)
}

/// Adapts messages read in another format (Anthropic) to what the Chat Completions API
/// accepts, leaving what is valid as it is: consecutive assistant messages after one that
/// calls tools are merged into it (Anthropic splits parallel `tool_use` over several, OpenAI
/// wants every call of a turn in one message before the results); a tool result without
/// content gets empty text; images in tool results (which OpenAI refuses in tool messages)
/// move to a user message right after the run of tool messages; the content of a user or
/// assistant message that is one plain text part becomes a string. [`convert`] writes the adapted messages.
///
/// # Examples
///
/// ```
/// use curator::model::formats::{anthropic, openai};
/// use serde_json::json;
///
/// let read = anthropic::to_messages(&json!([
///     {"role": "user", "content": "both"},
///     {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "a", "input": {}}]},
///     {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "b", "input": {}}]}
/// ]))?;
/// let adapted = openai::adapt(&read);
/// assert_eq!(adapted.len(), 2);
/// assert_eq!(adapted[1].tool_calls().len(), 2);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn adapt<M: Borrow<Message>>(messages: &[M]) -> Vec<Message> {
    super::adapt::for_openai(messages)
}

/// Writes messages read in another format as an OpenAI `messages` array: [`adapt`], then
/// [`from_messages`].
///
/// # Errors
///
/// As [`from_messages`]: an Anthropic-only part (a thinking block, a document) is refused.
///
/// # Examples
///
/// ```
/// use curator::model::formats::{anthropic, openai};
/// use serde_json::json;
///
/// let read = anthropic::to_messages(&json!([
///     {"role": "user", "content": "go"},
///     {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "a", "input": {}}]},
///     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]}
/// ]))?;
/// assert_eq!(openai::convert(&read)?[2], json!({"role": "tool", "tool_call_id": "t1", "content": ""}));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn convert<M: Borrow<Message>>(messages: &[M]) -> Result<Value> {
    from_messages(&adapt(messages))
}
