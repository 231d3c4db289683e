//! A Messages API stream (`message_start`, content block starts, deltas and stops,
//! `message_delta`, `message_stop`), put together into the message it stands for.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::Delta;
use crate::ClientError;

/// The provider's name in errors.
const PROVIDER: &str = "Anthropic";

/// What the events of one stream have said so far.
#[derive(Debug, Default)]
pub(crate) struct Assembly {
    message: Map<String, Value>,
    blocks: Vec<Block>,
    /// A tool-use block's place among the reply's calls, by block index.
    calls: HashMap<usize, usize>,
    usage: Map<String, Value>,
    stop_reason: Option<Value>,
    stop_sequence: Option<Value>,
    done: bool,
}

#[derive(Debug)]
struct Block {
    value: Map<String, Value>,
    /// The tool input's JSON text, streamed in pieces.
    input: String,
}

impl crate::wire::Assemble for Assembly {
    fn take(
        &mut self,
        name: Option<&str>,
        data: &str,
        on_delta: &mut dyn FnMut(&Delta),
    ) -> Result<bool, ClientError> {
        Assembly::take(self, name, data, on_delta)
    }

    fn finish(self, url: &str) -> Result<Value, ClientError> {
        Assembly::finish(self, url)
    }
}

impl Assembly {
    /// Takes one event (its name and data), reporting what it adds to `on_delta`;
    /// `Ok(true)` at `message_stop`.
    ///
    /// # Errors
    ///
    /// [`ClientError::StreamError`] for an `error` event, [`ClientError::MalformedReply`] for
    /// an event that is not JSON or not one of the Messages API's.
    pub(crate) fn take(
        &mut self,
        name: Option<&str>,
        data: &str,
        on_delta: &mut dyn FnMut(&Delta),
    ) -> Result<bool, ClientError> {
        let event: Value = serde_json::from_str(data).map_err(|e| malformed(data, Some(e)))?;
        let kind = name.or_else(|| event.get("type").and_then(Value::as_str)).unwrap_or_default();
        match kind {
            "message_start" => {
                let message = event.get("message").and_then(Value::as_object);
                let message = message.ok_or_else(|| malformed(data, None))?;
                self.message.clone_from(message);
                if let Some(usage) = message.get("usage").and_then(Value::as_object) {
                    self.usage.extend(usage.clone());
                }
            }
            "content_block_start" => self.block_start(&event, data, on_delta)?,
            "content_block_delta" => self.block_delta(&event, data, on_delta)?,
            "message_delta" => {
                if let Some(delta) = event.get("delta") {
                    self.stop_reason =
                        delta.get("stop_reason").cloned().or(self.stop_reason.take());
                    self.stop_sequence =
                        delta.get("stop_sequence").cloned().or(self.stop_sequence.take());
                }
                if let Some(usage) = event.get("usage").and_then(Value::as_object) {
                    self.usage.extend(
                        usage
                            .iter()
                            .filter(|(_, v)| !v.is_null())
                            .map(|(k, v)| (k.clone(), v.clone())),
                    );
                }
            }
            "message_stop" => {
                self.done = true;
                return Ok(true);
            }
            "error" => {
                let error = event.get("error");
                let text = |name: &str| {
                    error.and_then(|e| e.get(name)).and_then(Value::as_str).map(str::to_owned)
                };
                return Err(ClientError::StreamError {
                    provider: PROVIDER,
                    message: text("message").unwrap_or_else(|| data.to_owned()),
                    error_type: text("type"),
                });
            }
            // `ping`, `content_block_stop`, and events added later.
            _ => {}
        }
        Ok(false)
    }

    /// A `content_block_start`: a new block, reported when it is a tool use or starts with
    /// text.
    fn block_start(
        &mut self,
        event: &Value,
        data: &str,
        on_delta: &mut dyn FnMut(&Delta),
    ) -> Result<(), ClientError> {
        let index = index(event).ok_or_else(|| malformed(data, None))?;
        let block = event.get("content_block").and_then(Value::as_object);
        let block = block.ok_or_else(|| malformed(data, None))?;
        if index != self.blocks.len() {
            return Err(malformed(data, None));
        }
        if block.get("type").and_then(Value::as_str) == Some("tool_use") {
            let call = self.calls.len();
            self.calls.insert(index, call);
            on_delta(&Delta::ToolCall {
                index: call,
                id: block.get("id").and_then(Value::as_str).map(str::to_owned),
                name: block.get("name").and_then(Value::as_str).map(str::to_owned),
                arguments: String::new(),
            });
        }
        for (field, delta) in
            [("text", Delta::Text as fn(String) -> Delta), ("thinking", Delta::Thinking)]
        {
            if let Some(text) = block.get(field).and_then(Value::as_str).filter(|t| !t.is_empty()) {
                on_delta(&delta(text.to_owned()));
            }
        }
        self.blocks.push(Block { value: block.clone(), input: String::new() });
        Ok(())
    }

    /// A `content_block_delta`: more of a block's text, thinking, signature, tool input or
    /// citations.
    fn block_delta(
        &mut self,
        event: &Value,
        data: &str,
        on_delta: &mut dyn FnMut(&Delta),
    ) -> Result<(), ClientError> {
        let index = index(event).ok_or_else(|| malformed(data, None))?;
        let delta = event.get("delta").ok_or_else(|| malformed(data, None))?;
        let call = self.calls.get(&index).copied();
        let block = self.blocks.get_mut(index).ok_or_else(|| malformed(data, None))?;
        // A delta without the text its type names is malformed, never read as empty.
        let text = |name: &str| {
            delta.get(name).and_then(Value::as_str).ok_or_else(|| malformed(data, None))
        };
        match delta.get("type").and_then(Value::as_str) {
            Some("text_delta") => {
                let piece = text("text")?;
                append(&mut block.value, "text", piece);
                on_delta(&Delta::Text(piece.to_owned()));
            }
            Some("thinking_delta") => {
                let piece = text("thinking")?;
                append(&mut block.value, "thinking", piece);
                on_delta(&Delta::Thinking(piece.to_owned()));
            }
            Some("signature_delta") => append(&mut block.value, "signature", text("signature")?),
            Some("input_json_delta") => {
                let piece = text("partial_json")?;
                block.input.push_str(piece);
                if let Some(index) = call {
                    on_delta(&Delta::ToolCall {
                        index,
                        id: None,
                        name: None,
                        arguments: piece.to_owned(),
                    });
                }
            }
            Some("citations_delta") => {
                let citation = delta.get("citation").ok_or_else(|| malformed(data, None))?;
                let list = block.value.entry("citations").or_insert_with(|| json!([]));
                if let Value::Array(list) = list {
                    list.push(citation.clone());
                }
            }
            _ => return Err(malformed(data, None)),
        }
        Ok(())
    }

    /// The message the stream stands for, as the Messages API answers without streaming.
    ///
    /// # Errors
    ///
    /// [`ClientError::StreamCut`] when the stream ended before `message_stop`;
    /// [`ClientError::MalformedReply`] when a tool's input is not JSON.
    pub(crate) fn finish(self, url: &str) -> Result<Value, ClientError> {
        if !self.done {
            return Err(ClientError::StreamCut {
                provider: PROVIDER,
                url: url.to_owned(),
                detail: "no message_stop event".to_owned(),
                source: None,
            });
        }
        let mut message = self.message;
        let mut content = Vec::with_capacity(self.blocks.len());
        for Block { mut value, input } in self.blocks {
            if value.get("type").and_then(Value::as_str) == Some("tool_use") && !input.is_empty() {
                let parsed = serde_json::from_str::<Value>(&input).map_err(|e| {
                    ClientError::MalformedReply {
                        provider: PROVIDER,
                        field: Some("input".to_owned()),
                        detail: format!("a streamed tool input that is not JSON: {e}"),
                        source: Some(Box::new(e)),
                    }
                })?;
                value.insert("input".into(), parsed);
            }
            content.push(Value::Object(value));
        }
        message.insert("content".into(), Value::Array(content));
        message.insert("stop_reason".into(), self.stop_reason.unwrap_or(Value::Null));
        message.insert("stop_sequence".into(), self.stop_sequence.unwrap_or(Value::Null));
        message.insert("usage".into(), Value::Object(self.usage));
        Ok(Value::Object(message))
    }
}

/// The `index` of a content block event.
fn index(event: &Value) -> Option<usize> {
    event.get("index").and_then(Value::as_u64).and_then(|i| usize::try_from(i).ok())
}

/// Appends `piece` to the string field `field` of `block`.
fn append(block: &mut Map<String, Value>, field: &str, piece: &str) {
    match block.get_mut(field) {
        Some(Value::String(text)) => text.push_str(piece),
        _ => {
            block.insert(field.to_owned(), Value::String(piece.to_owned()));
        }
    }
}

/// An event that is not one.
fn malformed(data: &str, source: Option<serde_json::Error>) -> ClientError {
    let start: String = data.chars().take(200).collect();
    ClientError::MalformedReply {
        provider: PROVIDER,
        field: None,
        detail: format!("a stream event that is not a Messages API event: {start:?}"),
        source: source.map(|e| Box::new(e) as curator_model::BoxError),
    }
}
