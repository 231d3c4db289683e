//! Reading conversations: a JSON array of messages, `{"messages": [...]}`, or JSON Lines.

use std::path::Path;

use anyhow::{Context, Result, bail};
use curator::model::{Message, formats};
use serde_json::{Map, Value};

/// A message format on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// OpenAI Chat Completions messages.
    Openai,
    /// Anthropic Messages API.
    Anthropic,
    /// Decide from the content.
    Auto,
}

/// How the file was laid out, so output can mirror it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// A JSON array of messages.
    Array,
    /// A JSON object with `messages` (and, for Anthropic, `system`).
    Object,
    /// One conversation object per line.
    Lines,
}

/// One conversation read from the input.
#[derive(Debug, Clone)]
pub(crate) struct Conversation {
    /// Its `id`, or its position.
    pub(crate) id: String,
    pub(crate) messages: Vec<Message>,
    /// The format it was read in.
    pub(crate) format: Format,
    /// The object it came in (for objects and lines), to write back its other fields.
    pub(crate) envelope: Option<Map<String, Value>>,
}

/// Everything read from one file.
#[derive(Debug)]
pub(crate) struct Input {
    pub(crate) layout: Layout,
    pub(crate) conversations: Vec<Conversation>,
}

/// Reads a file of conversations.
pub(crate) fn read(path: &Path, format: Format) -> Result<Input> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse(&text, format).with_context(|| format!("{}", path.display()))
}

/// Parses the text of a conversation file.
pub(crate) fn parse(text: &str, format: Format) -> Result<Input> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(messages)) => {
            let format = resolve(format, &Value::Array(messages.clone()), None);
            let messages = to_messages(&Value::Array(messages), format)?;
            Ok(Input {
                layout: Layout::Array,
                conversations: vec![Conversation {
                    id: "1".into(),
                    messages,
                    format,
                    envelope: None,
                }],
            })
        }
        Ok(Value::Object(object)) => {
            let conversation = from_object(object, format, "1")?;
            Ok(Input { layout: Layout::Object, conversations: vec![conversation] })
        }
        Ok(other) => bail!(
            "expected a JSON array of messages or an object with `messages`, found {}",
            kind(&other)
        ),
        Err(whole) => {
            // Not one JSON document: JSON Lines when its first line is a JSON object on its
            // own, else a broken document (reported where the parser stopped).
            let lines: Vec<(usize, &str)> = text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
                .map(|(n, l)| (n + 1, l))
                .collect();
            let first_is_object = lines
                .first()
                .is_some_and(|(_, l)| serde_json::from_str::<Map<String, Value>>(l).is_ok());
            if lines.len() < 2 || !first_is_object {
                bail!("invalid JSON at line {}, column {}: {whole}", whole.line(), whole.column());
            }
            let mut conversations = Vec::with_capacity(lines.len());
            for (number, line) in lines {
                let value: Value = serde_json::from_str(line).map_err(|e| {
                    anyhow::anyhow!("invalid JSON at line {number}, column {}: {e}", e.column())
                })?;
                let Value::Object(object) = value else {
                    bail!(
                        "line {number}: expected a conversation object with `messages`, found {}",
                        kind(&value)
                    );
                };
                let id = object
                    .get("id")
                    .and_then(Value::as_str)
                    .map_or_else(|| number.to_string(), str::to_owned);
                conversations.push(
                    from_object(object, format, &id).with_context(|| format!("line {number}"))?,
                );
            }
            Ok(Input { layout: Layout::Lines, conversations })
        }
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn from_object(object: Map<String, Value>, format: Format, id: &str) -> Result<Conversation> {
    let messages =
        object.get("messages").cloned().ok_or_else(|| anyhow::anyhow!("no `messages` field"))?;
    let format = resolve(format, &messages, object.get("system"));
    let messages = match format {
        Format::Anthropic => {
            let mut request = Map::new();
            if let Some(system) = object.get("system") {
                request.insert("system".into(), system.clone());
            }
            request.insert("messages".into(), messages);
            formats::anthropic::to_messages(&Value::Object(request))?
        }
        _ => formats::openai::to_messages(&messages)?,
    };
    let id = object.get("id").and_then(Value::as_str).unwrap_or(id).to_owned();
    Ok(Conversation { id, messages, format, envelope: Some(object) })
}

/// Decides the format: Anthropic when there is a top-level `system`, or a message carries
/// `tool_use`/`tool_result` blocks; OpenAI otherwise.
fn resolve(format: Format, messages: &Value, system: Option<&Value>) -> Format {
    if format != Format::Auto {
        return format;
    }
    if system.is_some() {
        return Format::Anthropic;
    }
    let anthropic_block = |m: &Value| {
        m["content"].as_array().is_some_and(|blocks| {
            blocks.iter().any(|b| matches!(b["type"].as_str(), Some("tool_use" | "tool_result")))
        })
    };
    if messages.as_array().is_some_and(|ms| ms.iter().any(anthropic_block)) {
        Format::Anthropic
    } else {
        Format::Openai
    }
}

fn to_messages(messages: &Value, format: Format) -> Result<Vec<Message>> {
    Ok(match format {
        Format::Anthropic => formats::anthropic::to_messages(messages)?,
        _ => formats::openai::to_messages(messages)?,
    })
}

/// Writes messages in a format: the OpenAI messages array, or the Anthropic request parts.
pub(crate) fn write_messages<M: std::borrow::Borrow<Message>>(
    messages: &[M],
    format: Format,
) -> Result<(Value, Option<Value>)> {
    Ok(match format {
        Format::Anthropic => {
            let request = formats::anthropic::from_messages(messages)?;
            (Value::Array(request.messages), request.system)
        }
        _ => (formats::openai::from_messages(messages)?, None),
    })
}
