//! The client of OpenAI's Responses API.

use curator_model::formats::responses;
use curator_model::{Message, ToolCall};
use serde_json::{Map, Value};

use crate::OpenAiClient;
use crate::endpoint::Endpoint;
use crate::error::ClientError;
use crate::reply::{ModelReply, Usage};
use crate::request::{ModelRequest, ModelSettings};
use crate::retry::Retry;
use crate::stream;
use crate::wire::Wire;

/// The provider's name in errors.
const PROVIDER: &str = "OpenAI";
/// The Responses path under `/v1`.
const RESPONSES: &str = "responses";

/// A [`ModelClient`](crate::ModelClient) that posts to `{base_url}/v1/responses`, OpenAI's Responses API: made
/// from an [`OpenAiClient`] ([`OpenAiClient::responses`]), whose endpoint, key, settings
/// and retries it uses.
///
/// The request's `input` is the messages as Responses items
/// ([`responses::from_messages`]: messages read from another format are written as easy
/// input messages, tool calls as `function_call` items, results as `function_call_output`
/// items); tools given in the Chat Completions form (`{"type": "function", "function":
/// {...}}`) are sent in the Responses form (`{"type": "function", "name", ...}`), others as
/// given; the [`cache_key`](ModelRequest::cache_key) as `prompt_cache_key`; `max_tokens` as
/// `max_output_tokens`; then the settings' `extra` fields (`reasoning`, `store`, ...).
///
/// The reply is one assistant message: the text of the `message` items (a refusal is its
/// text too) and a tool call for each `function_call` item, with the usage (`input_tokens`,
/// `output_tokens`, and `input_tokens_details.cached_tokens`) and, as the stop reason, the
/// response's `status` (or the reason it is `incomplete`, such as `max_output_tokens`).
/// Reasoning items and the items of the server's own tools (web search, file search, ...)
/// are not part of the message: their ids would have the next request refused without
/// them, and the message is what every format can send back. A streamed reasoning summary
/// is reported as [`Delta::Thinking`](crate::Delta::Thinking).
///
/// # Examples
///
/// ```no_run
/// use curator::model::Message;
/// use curator::client::{ModelClient, ModelRequest, OpenAiClient};
///
/// let client = OpenAiClient::from_env("gpt-5-mini").responses();
/// let reply = client.complete(&ModelRequest::new(&[Message::user("Say hi.")]))?;
/// println!("{} ({:?})", reply.message.text(), reply.usage);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct ResponsesClient {
    inner: OpenAiClient,
}

impl OpenAiClient {
    /// The same client on the Responses API (`/v1/responses`) instead of chat completions.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::client::OpenAiClient;
    ///
    /// let client = OpenAiClient::new("http://localhost:8000", "m").responses();
    /// assert_eq!(client.url(), "http://localhost:8000/v1/responses");
    /// ```
    #[must_use]
    pub fn responses(self) -> ResponsesClient {
        ResponsesClient { inner: self }
    }
}

impl ResponsesClient {
    /// The endpoint the client posts to.
    pub fn endpoint(&self) -> &Endpoint {
        self.inner.endpoint()
    }

    /// The settings of every call.
    pub fn settings(&self) -> &ModelSettings {
        self.inner.settings()
    }

    /// The retry policy.
    pub fn retry(&self) -> &Retry {
        self.inner.retry()
    }

    /// The URL the client posts to.
    pub fn url(&self) -> String {
        self.inner.endpoint().url(RESPONSES)
    }

    /// The JSON body [`complete`](crate::ModelClient::complete) posts for `request`.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, ToolCall};
    /// use curator::client::{ModelRequest, ModelSettings, OpenAiClient};
    /// use serde_json::json;
    ///
    /// let client = OpenAiClient::new("http://localhost:8000", "m")
    ///     .with_settings(ModelSettings::new("m").with_max_tokens(100))
    ///     .responses();
    /// let tools = json!([{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}]);
    /// let messages = [
    ///     Message::system("Be brief."),
    ///     Message::user("What is here?"),
    ///     Message::assistant_with_calls(None, vec![ToolCall::new("c1", "ls", "{}")]),
    ///     Message::tool_result("c1", "a.txt"),
    /// ];
    /// let body = client.request_body(&ModelRequest::new(&messages).with_tools(&tools))?;
    /// assert_eq!(body, json!({
    ///     "model": "m",
    ///     "max_output_tokens": 100,
    ///     "input": [
    ///         {"role": "system", "content": "Be brief."},
    ///         {"role": "user", "content": "What is here?"},
    ///         {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
    ///         {"type": "function_call_output", "call_id": "c1", "output": "a.txt"},
    ///     ],
    ///     "tools": [{"type": "function", "name": "ls", "parameters": {"type": "object"}}],
    /// }));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ClientError::Conversion`]: a message the Responses format cannot carry (a thinking
    /// block, an audio part, a message with no content and no call).
    pub fn request_body(&self, request: &ModelRequest<'_>) -> Result<Value, ClientError> {
        let input = responses::from_messages(request.messages)
            .map_err(|source| ClientError::Conversion { provider: PROVIDER, source })?;
        let mut body = Map::new();
        body.insert("input".into(), Value::Array(input));
        if let Some(tools) = request.tools_to_send() {
            body.insert("tools".into(), responses_tools(tools));
        }
        if let Some(key) = request.cache_key {
            body.insert("prompt_cache_key".into(), Value::String(key.to_owned()));
        }
        let settings = self.inner.settings();
        // `max_tokens` is `max_output_tokens` here; the settings' `extra` fields come last.
        let mut written = Map::new();
        settings.write(&mut written, None);
        if settings.max_tokens.is_some()
            && !settings.extra.contains_key("max_tokens")
            && let Some(max) = written.remove("max_tokens")
        {
            written.entry("max_output_tokens").or_insert(max);
        }
        body.extend(written);
        Ok(Value::Object(body))
    }
}

/// Tools in the Responses form: a Chat Completions function tool is flattened, any other
/// tool (already in the Responses form, or one of the server's own) is sent as given.
fn responses_tools(tools: &Value) -> Value {
    let Value::Array(tools) = tools else { return tools.clone() };
    let flatten = |tool: &Value| {
        let function = tool.get("function").and_then(Value::as_object);
        match function {
            Some(function) if tool.get("type").and_then(Value::as_str) == Some("function") => {
                let mut flat = Map::new();
                flat.insert("type".into(), Value::String("function".into()));
                flat.extend(function.iter().map(|(k, v)| (k.clone(), v.clone())));
                Value::Object(flat)
            }
            _ => tool.clone(),
        }
    };
    Value::Array(tools.iter().map(flatten).collect())
}

impl Wire for ResponsesClient {
    const PROVIDER: &'static str = PROVIDER;
    const PATH: &'static str = RESPONSES;
    type Assembly = stream::responses::Assembly;

    fn endpoint(&self) -> &Endpoint {
        self.inner.endpoint()
    }

    fn retry(&self) -> &Retry {
        self.inner.retry()
    }

    fn check(&self) -> Result<(), ClientError> {
        self.inner.check()
    }

    fn body(&self, request: &ModelRequest<'_>) -> Result<Value, ClientError> {
        self.request_body(request)
    }

    fn stream_fields(_: &mut Map<String, Value>) {}

    fn reply(value: &Value) -> Result<ModelReply, ClientError> {
        reply_of(value)
    }
}

/// The reply a response holds: one assistant message of its `message` and `function_call`
/// items, its usage and its status.
fn reply_of(value: &Value) -> Result<ModelReply, ClientError> {
    let malformed = |field: &str, detail: &str| ClientError::MalformedReply {
        provider: PROVIDER,
        field: Some(field.to_owned()),
        detail: detail.to_owned(),
        source: None,
    };
    let status = value.get("status").and_then(Value::as_str);
    if status == Some("failed") {
        let error = value.get("error");
        let text =
            |name: &str| error.and_then(|e| e.get(name)).and_then(Value::as_str).map(str::to_owned);
        return Err(ClientError::StreamError {
            provider: PROVIDER,
            message: text("message").unwrap_or_else(|| "the response failed".to_owned()),
            error_type: text("code"),
        });
    }
    let output = value
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("output", "a response without its `output` list"))?;
    let mut text = String::new();
    let mut calls = Vec::new();
    for item in output {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                let parts = item.get("content").and_then(Value::as_array);
                for part in parts.into_iter().flatten() {
                    let field = match part.get("type").and_then(Value::as_str) {
                        Some("output_text") => "text",
                        Some("refusal") => "refusal",
                        _ => continue,
                    };
                    let piece = part
                        .get(field)
                        .and_then(Value::as_str)
                        .ok_or_else(|| malformed(field, "a message part without its text"))?;
                    text.push_str(piece);
                }
            }
            Some("function_call") => {
                let field = |name: &str| {
                    item.get(name).and_then(Value::as_str).ok_or_else(|| {
                        malformed(
                            name,
                            "a `function_call` item without its `call_id`, `name` or `arguments`",
                        )
                    })
                };
                calls.push(ToolCall::new(field("call_id")?, field("name")?, field("arguments")?));
            }
            // Reasoning, and the server's own tools' items.
            _ => {}
        }
    }
    let message = if calls.is_empty() {
        Message::assistant(text)
    } else {
        Message::assistant_with_calls((!text.is_empty()).then(|| text.into()), calls)
    };
    let stop_reason = match status {
        Some("incomplete") => value
            .pointer("/incomplete_details/reason")
            .and_then(Value::as_str)
            .or(Some("incomplete")),
        other => other,
    };
    Ok(ModelReply {
        message,
        usage: Usage::read_responses(value),
        stop_reason: stop_reason.map(str::to_owned),
    })
}

crate::wire::model_client!(
    ResponsesClient, "openai-responses",
    complete {
    /// Posts the request and reads the response's output.
    ///
    /// # Errors
    ///
    /// [`ClientError`]: [`Conversion`](ClientError::Conversion) as
    /// [`request_body`](ResponsesClient::request_body); after the retries,
    /// [`Status`](ClientError::Status) with OpenAI's message,
    /// [`Timeout`](ClientError::Timeout) or [`Connection`](ClientError::Connection);
    /// [`StreamError`](ClientError::StreamError) for a response whose status is `failed`;
    /// [`MalformedReply`](ClientError::MalformedReply) for a body that is not JSON or not a
    /// response.
    }
    stream {
    /// Posts the request with `stream: true`, reports each event's text
    /// (`response.output_text.delta`, `response.refusal.delta`), reasoning summary
    /// (`response.reasoning_summary_text.delta`) and tool-call pieces
    /// (`response.output_item.added`, `response.function_call_arguments.delta`), and reads
    /// the response the `response.completed` (or `response.incomplete`) event holds.
    ///
    /// # Errors
    ///
    /// As [`complete`](crate::ModelClient::complete); [`StreamCut`](ClientError::StreamCut) when the
    /// stream ends before the response is complete, [`StreamError`](ClientError::StreamError)
    /// for an `error` or `response.failed` event, [`Timeout`](ClientError::Timeout) when the
    /// whole request outlasts the endpoint's timeout.
    }
);
