//! Tool-call inputs kept as the JSON text that was written, numbers included.
//!
//! `serde_json::Value` holds a number as a 64-bit integer or a float, so a value read into
//! it and written back can change: `123456789012345678901234567890` becomes
//! `1.2345678901234568e+29`, `1e2` becomes `100.0`. OpenAI carries tool-call arguments as a
//! string, which curator keeps verbatim; Anthropic carries them as a JSON object (`input`).
//! Reading JSON text, curator takes each `input` from the text itself; writing JSON text, it
//! writes each `input` from the call's argument text. Nothing in between parses the numbers.

use std::borrow::Cow;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// The argument text of a tool call read from `raw`: the JSON as written, without the
/// whitespace between tokens.
pub(super) fn compact(raw: &RawValue) -> String {
    let text = raw.get();
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            in_string = c == '"';
            out.push(c);
        }
    }
    out
}

#[derive(Deserialize)]
struct Request<'a> {
    #[serde(borrow, default)]
    messages: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Turn<'a> {
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
}

/// The `input` of each `tool_use` block of each message of an Anthropic request (or bare
/// array of messages) written as `json`, in order; empty lists where the text has another
/// shape, which the reader then reports.
pub(super) fn request_inputs(json: &str) -> Vec<Vec<&RawValue>> {
    let messages = match json.trim_start().as_bytes().first() {
        Some(b'[') => Some(json),
        Some(b'{') => serde_json::from_str::<Request<'_>>(json)
            .ok()
            .and_then(|r| r.messages)
            .map(RawValue::get),
        _ => None,
    };
    let Some(Ok(messages)) = messages.map(serde_json::from_str::<Vec<&RawValue>>) else {
        return Vec::new();
    };
    messages
        .into_iter()
        .map(|m| {
            serde_json::from_str::<Turn<'_>>(m.get())
                .ok()
                .and_then(|t| t.content)
                .map_or_else(Vec::new, content_inputs)
        })
        .collect()
}

#[derive(Deserialize)]
struct Response<'a> {
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
}

/// The `input` of each `tool_use` block of an Anthropic response written as `json`.
pub(super) fn response_inputs(json: &str) -> Vec<&RawValue> {
    serde_json::from_str::<Response<'_>>(json)
        .ok()
        .and_then(|r| r.content)
        .map_or_else(Vec::new, content_inputs)
}

/// The `input` of each `tool_use` block of a content array, in order.
pub(super) fn content_inputs(content: &RawValue) -> Vec<&RawValue> {
    let Ok(blocks) = serde_json::from_str::<Vec<Block<'_>>>(content.get()) else {
        return Vec::new();
    };
    blocks
        .into_iter()
        .filter(|b| b.kind.as_deref() == Some("tool_use"))
        .filter_map(|b| b.input)
        .collect()
}

/// An Anthropic request to write as JSON text: its values, with the `input` of some
/// `tool_use` blocks given as text (message index, block index, text).
pub(super) struct Spliced<'a> {
    pub(super) system: Option<&'a Value>,
    pub(super) messages: &'a [Value],
    pub(super) inputs: &'a [(usize, usize, Box<RawValue>)],
}

impl Serialize for Spliced<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        // Keys in the order `Request::to_value` writes them (sorted).
        map.serialize_entry(
            "messages",
            &Messages { messages: self.messages, inputs: self.inputs },
        )?;
        if let Some(system) = self.system {
            map.serialize_entry("system", system)?;
        }
        map.end()
    }
}

struct Messages<'a> {
    messages: &'a [Value],
    inputs: &'a [(usize, usize, Box<RawValue>)],
}

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.messages.len()))?;
        for (index, message) in self.messages.iter().enumerate() {
            let from = self.inputs.partition_point(|(m, _, _)| *m < index);
            let to = self.inputs.partition_point(|(m, _, _)| *m <= index);
            match (&self.inputs[from..to], message) {
                ([], _) => seq.serialize_element(message)?,
                (inputs, Value::Object(fields)) => {
                    seq.serialize_element(&Fields { fields, inputs })?;
                }
                (_, other) => seq.serialize_element(other)?,
            }
        }
        seq.end()
    }
}

/// A message object whose `content` blocks take some inputs as text.
struct Fields<'a> {
    fields: &'a serde_json::Map<String, Value>,
    inputs: &'a [(usize, usize, Box<RawValue>)],
}

impl Serialize for Fields<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.fields.len()))?;
        for (key, value) in self.fields {
            match value {
                Value::Array(blocks) if key == "content" => {
                    map.serialize_entry(key, &Blocks { blocks, inputs: self.inputs })?;
                }
                _ => map.serialize_entry(key, value)?,
            }
        }
        map.end()
    }
}

struct Blocks<'a> {
    blocks: &'a [Value],
    inputs: &'a [(usize, usize, Box<RawValue>)],
}

impl Serialize for Blocks<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.blocks.len()))?;
        for (index, block) in self.blocks.iter().enumerate() {
            let text = self.inputs.iter().find(|(_, b, _)| *b == index).map(|(_, _, t)| t);
            match (text, block) {
                (Some(text), Value::Object(fields)) => {
                    seq.serialize_element(&ToolUse { fields, input: text })?;
                }
                _ => seq.serialize_element(block)?,
            }
        }
        seq.end()
    }
}

/// A `tool_use` block whose `input` is written from text.
struct ToolUse<'a> {
    fields: &'a serde_json::Map<String, Value>,
    input: &'a RawValue,
}

impl Serialize for ToolUse<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.fields.len()))?;
        for (key, value) in self.fields {
            if key == "input" {
                map.serialize_entry(key, self.input)?;
            } else {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_removes_whitespace_between_tokens_only() {
        let raw: Box<RawValue> = serde_json::from_str(
            " { \"a b\" : [ 1e2 , \"x\\\" y\" ] ,\n\"n\": 123456789012345678901234567890 } ",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(compact(&raw), r#"{"a b":[1e2,"x\" y"],"n":123456789012345678901234567890}"#);
    }
}
