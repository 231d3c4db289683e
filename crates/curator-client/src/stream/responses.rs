//! A Responses API stream (`response.created`, output items added, text, refusal, reasoning
//! summary and function-call argument deltas, `response.completed`), read for its pieces; the
//! reply is the response the last event holds whole.

use std::collections::HashMap;

use serde_json::Value;

use super::Delta;
use crate::ClientError;

/// The provider's name in errors.
const PROVIDER: &str = "OpenAI";

/// What the events of one stream have said so far.
#[derive(Debug, Default)]
pub(crate) struct Assembly {
    /// A `function_call` item's place among the reply's calls, by output index.
    calls: HashMap<u64, usize>,
    /// The response of the `response.completed` (or `response.incomplete`) event.
    response: Option<Value>,
}

impl crate::wire::Assemble for Assembly {
    /// Takes one event (its name and data), reporting what it adds to `on_delta`;
    /// `Ok(true)` when the response is complete.
    ///
    /// # Errors
    ///
    /// [`ClientError::StreamError`] for an `error` or `response.failed` event,
    /// [`ClientError::MalformedReply`] for an event that is not JSON, or a delta without its
    /// text.
    fn take(
        &mut self,
        name: Option<&str>,
        data: &str,
        on_delta: &mut dyn FnMut(&Delta),
    ) -> Result<bool, ClientError> {
        let event: Value = serde_json::from_str(data).map_err(|e| malformed(data, Some(e)))?;
        let kind = name.or_else(|| event.get("type").and_then(Value::as_str)).unwrap_or_default();
        // A delta without the text its event names is malformed, never read as empty.
        let delta = || {
            event
                .get("delta")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| malformed(data, None))
        };
        match kind {
            "response.output_item.added" => {
                let item = event.get("item").ok_or_else(|| malformed(data, None))?;
                if item.get("type").and_then(Value::as_str) == Some("function_call") {
                    let at = event.get("output_index").and_then(Value::as_u64);
                    let at = at.ok_or_else(|| malformed(data, None))?;
                    let index = self.calls.len();
                    self.calls.insert(at, index);
                    let field =
                        |name: &str| item.get(name).and_then(Value::as_str).map(str::to_owned);
                    on_delta(&Delta::ToolCall {
                        index,
                        id: field("call_id"),
                        name: field("name"),
                        arguments: field("arguments").unwrap_or_default(),
                    });
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                on_delta(&Delta::Text(delta()?));
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                on_delta(&Delta::Thinking(delta()?));
            }
            "response.function_call_arguments.delta" => {
                let at = event.get("output_index").and_then(Value::as_u64);
                let index = at.and_then(|at| self.calls.get(&at).copied());
                let index = index.ok_or_else(|| malformed(data, None))?;
                on_delta(&Delta::ToolCall { index, id: None, name: None, arguments: delta()? });
            }
            "response.completed" | "response.incomplete" => {
                let response = event.get("response").ok_or_else(|| malformed(data, None))?;
                self.response = Some(response.clone());
                return Ok(true);
            }
            "response.failed" | "error" => {
                let error = event
                    .pointer("/response/error")
                    .or_else(|| event.get("error"))
                    .unwrap_or(&event);
                let text = |name: &str| error.get(name).and_then(Value::as_str).map(str::to_owned);
                return Err(ClientError::StreamError {
                    provider: PROVIDER,
                    message: text("message").unwrap_or_else(|| data.to_owned()),
                    error_type: text("code").or_else(|| text("type")),
                });
            }
            // `response.created`, `response.in_progress`, `…done` events, and events added
            // later: the completed response holds what they say.
            _ => {}
        }
        Ok(false)
    }

    /// The response the stream ended with, as the API answers without streaming.
    ///
    /// # Errors
    ///
    /// [`ClientError::StreamCut`] when the stream ended before the response was complete.
    fn finish(self, url: &str) -> Result<Value, ClientError> {
        self.response.ok_or_else(|| ClientError::StreamCut {
            provider: PROVIDER,
            url: url.to_owned(),
            detail: "no response.completed event".to_owned(),
            source: None,
        })
    }
}

/// An event that is not one.
fn malformed(data: &str, source: Option<serde_json::Error>) -> ClientError {
    let start: String = data.chars().take(200).collect();
    ClientError::MalformedReply {
        provider: PROVIDER,
        field: None,
        detail: format!("a stream event that is not a Responses API event: {start:?}"),
        source: source.map(|e| Box::new(e) as curator_model::BoxError),
    }
}
