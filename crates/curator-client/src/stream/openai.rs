//! A chat completions stream (`chat.completion.chunk` events, then `[DONE]`), put together
//! into the chat completion it stands for.

use serde_json::{Map, Value, json};

use super::Delta;
use crate::ClientError;

/// The provider's name in errors.
const PROVIDER: &str = "OpenAI";

/// What the chunks of one stream have said so far.
#[derive(Debug, Default)]
pub(crate) struct Assembly {
    id: Option<Value>,
    model: Option<Value>,
    content: String,
    reasoning: String,
    refusal: String,
    calls: Vec<Call>,
    finish_reason: Option<Value>,
    usage: Option<Value>,
    done: bool,
}

#[derive(Debug, Default)]
struct Call {
    id: String,
    kind: String,
    name: String,
    arguments: String,
}

impl crate::wire::Assemble for Assembly {
    fn take(
        &mut self,
        _: Option<&str>,
        data: &str,
        on_delta: &mut dyn FnMut(&Delta),
    ) -> Result<bool, ClientError> {
        Assembly::take(self, data, on_delta)
    }

    fn finish(self, url: &str) -> Result<Value, ClientError> {
        Assembly::finish(self, url)
    }
}

impl Assembly {
    /// Takes one event's data, reporting what it adds to `on_delta`; `Ok(true)` at `[DONE]`.
    ///
    /// # Errors
    ///
    /// [`ClientError::StreamError`] for an `error` chunk, [`ClientError::MalformedReply`]
    /// for a chunk that is not JSON or not a chunk.
    pub(crate) fn take(
        &mut self,
        data: &str,
        on_delta: &mut dyn FnMut(&Delta),
    ) -> Result<bool, ClientError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(true);
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| malformed(data, Some(e)))?;
        if let Some(error) = chunk.get("error") {
            let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
            return Err(ClientError::StreamError {
                provider: PROVIDER,
                message: text(error.get("message"))
                    .or_else(|| text(Some(error)))
                    .unwrap_or_else(|| error.to_string()),
                error_type: text(error.get("type")).or_else(|| text(error.get("code"))),
            });
        }
        if !chunk.is_object() {
            return Err(malformed(data, None));
        }
        self.id = self.id.take().or_else(|| chunk.get("id").cloned());
        self.model = self.model.take().or_else(|| chunk.get("model").cloned());
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(usage.clone());
        }
        let Some(choice) = chunk.pointer("/choices/0") else { return Ok(false) };
        if let Some(reason) = choice.get("finish_reason").filter(|r| !r.is_null()) {
            self.finish_reason = Some(reason.clone());
        }
        let Some(delta) = choice.get("delta") else { return Ok(false) };
        let text = |name: &str| delta.get(name).and_then(Value::as_str).filter(|t| !t.is_empty());
        if let Some(piece) = text("reasoning_content").or_else(|| text("reasoning")) {
            self.reasoning.push_str(piece);
            on_delta(&Delta::Thinking(piece.to_owned()));
        }
        if let Some(piece) = text("content") {
            self.content.push_str(piece);
            on_delta(&Delta::Text(piece.to_owned()));
        }
        if let Some(piece) = text("refusal") {
            self.refusal.push_str(piece);
            on_delta(&Delta::Text(piece.to_owned()));
        }
        for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let index = call
                .get("index")
                .and_then(Value::as_u64)
                .and_then(|i| usize::try_from(i).ok())
                .unwrap_or(self.calls.len().saturating_sub(1));
            if index > self.calls.len() || index > 1_024 {
                return Err(malformed(data, None));
            }
            if index == self.calls.len() {
                self.calls.push(Call::default());
            }
            let slot = &mut self.calls[index];
            let field = |name: &str| call.get(name).and_then(Value::as_str);
            let function =
                |name: &str| call.pointer(&format!("/function/{name}")).and_then(Value::as_str);
            let id = field("id").filter(|id| !id.is_empty());
            let name = function("name").filter(|n| !n.is_empty());
            let arguments = function("arguments").unwrap_or_default();
            if let Some(id) = id {
                id.clone_into(&mut slot.id);
            }
            if let Some(kind) = field("type") {
                kind.clone_into(&mut slot.kind);
            }
            if let Some(name) = name {
                slot.name.push_str(name);
            }
            slot.arguments.push_str(arguments);
            on_delta(&Delta::ToolCall {
                index,
                id: id.map(str::to_owned),
                name: name.map(str::to_owned),
                arguments: arguments.to_owned(),
            });
        }
        Ok(false)
    }

    /// The chat completion the stream stands for: its one choice's message, finish reason
    /// and usage.
    ///
    /// # Errors
    ///
    /// [`ClientError::StreamCut`] when the stream ended before `[DONE]` and before a
    /// finish reason (the reply may be missing its end).
    pub(crate) fn finish(self, url: &str) -> Result<Value, ClientError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(ClientError::StreamCut {
                provider: PROVIDER,
                url: url.to_owned(),
                detail: "no finish reason and no [DONE]".to_owned(),
                source: None,
            });
        }
        let mut message = Map::new();
        message.insert("role".into(), json!("assistant"));
        let content = if self.content.is_empty() && !self.calls.is_empty() {
            Value::Null
        } else {
            Value::String(self.content)
        };
        message.insert("content".into(), content);
        if !self.refusal.is_empty() {
            message.insert("refusal".into(), Value::String(self.refusal));
        }
        if !self.reasoning.is_empty() {
            message.insert("reasoning_content".into(), Value::String(self.reasoning));
        }
        if !self.calls.is_empty() {
            let calls = self.calls.into_iter().map(|call| {
                let kind = if call.kind.is_empty() { "function".to_owned() } else { call.kind };
                json!({"id": call.id, "type": kind,
                       "function": {"name": call.name, "arguments": call.arguments}})
            });
            message.insert("tool_calls".into(), Value::Array(calls.collect()));
        }
        Ok(json!({
            "id": self.id.unwrap_or(Value::Null),
            "object": "chat.completion",
            "model": self.model.unwrap_or(Value::Null),
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}],
            "usage": self.usage,
        }))
    }
}

/// A chunk that is not one.
fn malformed(data: &str, source: Option<serde_json::Error>) -> ClientError {
    let start: String = data.chars().take(200).collect();
    ClientError::MalformedReply {
        provider: PROVIDER,
        field: None,
        detail: format!("a stream event that is not a chat completion chunk: {start:?}"),
        source: source.map(|e| Box::new(e) as curator_model::BoxError),
    }
}

#[cfg(test)]
mod tests {
    use super::{Assembly, Delta};

    #[test]
    fn chunks_make_the_completion_and_report_each_piece() {
        let mut assembly = Assembly::default();
        let mut deltas = Vec::new();
        let mut on = |d: &Delta| deltas.push(d.clone());
        for data in [
            r#"{"id":"c1","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"ls","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"d\":"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}"#,
        ] {
            assert!(!assembly.take(data, &mut on).unwrap());
        }
        assert!(assembly.take("[DONE]", &mut on).unwrap());
        let completion = assembly.finish("u").unwrap();
        assert_eq!(
            completion["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
            "{\"d\":1}"
        );
        assert_eq!(completion["choices"][0]["message"]["content"], "Hi");
        assert_eq!(completion["usage"]["prompt_tokens"], 5);
        assert_eq!(deltas.len(), 4);
    }
}
