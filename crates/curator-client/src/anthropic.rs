//! The client of Anthropic's Messages API.

use std::time::Duration;

use crate::endpoint::Endpoint;
use curator_model::formats::anthropic;
use serde_json::{Map, Value};

use crate::env;
use crate::error::ClientError;
use crate::reply::{ModelReply, Usage};
use crate::request::{ModelRequest, ModelSettings};
use crate::retry::Retry;
use crate::stream;
use crate::wire::Wire;

/// The provider's name in errors.
const PROVIDER: &str = "Anthropic";
/// The Messages API path under `/v1`.
const MESSAGES: &str = "messages";
/// Where [`AnthropicClient::from_env`] posts without `ANTHROPIC_BASE_URL`.
const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The API version sent as `anthropic-version`, unless the endpoint sends another.
const API_VERSION: &str = "2023-06-01";
/// The `max_tokens` sent when the settings set none: Anthropic requires one.
const DEFAULT_MAX_TOKENS: u32 = 4096;

/// A [`ModelClient`](crate::ModelClient) that posts to Anthropic's `{base_url}/v1/messages`, with the headers
/// `x-api-key` and `anthropic-version: 2023-06-01`.
///
/// The messages are written by curator's Anthropic format ([`anthropic::convert`]: system
/// messages go to the top-level `system`, messages read from OpenAI are adapted first), the
/// OpenAI-shaped tools converted ([`anthropic::tools_from_openai`]), the [`ModelSettings`]
/// added (`model`, `temperature`, `max_tokens`, 4096 when unset since Anthropic requires it,
/// then `extra`), and prompt-cache breakpoints placed (see
/// [`with_cache_breakpoints`](AnthropicClient::with_cache_breakpoints)). The reply is the assistant's content blocks as one message with its tool
/// calls, the `usage` (`input_tokens`, `output_tokens`) and the `stop_reason`. Failures that
/// may pass (429, 529 overloaded, other 5xx, timeouts) are retried as the [`Retry`] says.
/// Clones share the endpoint's connections.
///
/// # Examples
///
/// ```no_run
/// use curator::model::Message;
/// use curator::client::{AnthropicClient, ModelClient, ModelRequest};
///
/// let client = AnthropicClient::from_env("claude-sonnet-4-5"); // ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL
/// let messages = [Message::system("Be brief."), Message::user("Say hi.")];
/// let reply = client.complete(&ModelRequest::new(&messages))?;
/// println!("{} ({:?})", reply.message.text(), reply.stop_reason);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct AnthropicClient {
    endpoint: Endpoint,
    settings: ModelSettings,
    retry: Retry,
    breakpoints: bool,
}

impl AnthropicClient {
    /// A client of `model` at `base_url` (scheme, host and port, with or without `/v1`: the
    /// [`Endpoint`] rule), with no API key, the endpoint's default timeouts (120 s for a
    /// request, 10 s to connect) and the default [`Retry`].
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::client::AnthropicClient;
    ///
    /// let client = AnthropicClient::new("https://api.anthropic.com", "claude-haiku-4-5");
    /// assert_eq!(client.url(), "https://api.anthropic.com/v1/messages");
    /// assert!(client.endpoint().has_header("anthropic-version"));
    /// ```
    pub fn new(base_url: impl AsRef<str>, model: impl Into<String>) -> Self {
        Self::with_endpoint(Endpoint::new(base_url), model)
    }

    /// A client of `model` on an [`Endpoint`] configured elsewhere (its timeouts and
    /// headers); it sends `anthropic-version: 2023-06-01` unless the endpoint sends a version.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::client::AnthropicClient;
    /// use curator::client::Endpoint;
    ///
    /// let proxy = Endpoint::new("http://localhost:4000").with_header("anthropic-version", "2024-01-01");
    /// let client = AnthropicClient::with_endpoint(proxy, "claude-haiku-4-5");
    /// assert!(client.endpoint().has_header("anthropic-version")); // 2024-01-01, kept
    /// ```
    pub fn with_endpoint(endpoint: Endpoint, model: impl Into<String>) -> Self {
        let endpoint = if endpoint.has_header("anthropic-version") {
            endpoint
        } else {
            endpoint.with_header("anthropic-version", API_VERSION)
        };
        Self {
            endpoint,
            settings: ModelSettings::new(model),
            retry: Retry::new(),
            breakpoints: true,
        }
    }

    /// A client of `model` at `ANTHROPIC_BASE_URL` (default `https://api.anthropic.com`),
    /// with the key `ANTHROPIC_API_KEY` when it is set (without it, a call to
    /// `api.anthropic.com` fails at once with [`ClientError::Config`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::client::AnthropicClient;
    ///
    /// let client = AnthropicClient::from_env("claude-haiku-4-5");
    /// assert!(client.url().ends_with("/v1/messages"));
    /// ```
    pub fn from_env(model: impl Into<String>) -> Self {
        let base_url = env("ANTHROPIC_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
        let client = Self::new(base_url, model);
        match env("ANTHROPIC_API_KEY") {
            Some(key) => client.with_api_key(key),
            None => client,
        }
    }

    /// Whether the client can make a request that could succeed: a base URL with a scheme
    /// and a host ([`Endpoint::problem`]), and an API key when it posts to Anthropic's own
    /// server (`api.anthropic.com`; a proxy may need none).
    /// [`complete`](crate::ModelClient::complete) checks it before the first attempt.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::client::{AnthropicClient, ClientError};
    ///
    /// let err = AnthropicClient::new("https://api.anthropic.com", "claude-haiku-4-5").check().unwrap_err();
    /// assert!(matches!(err, ClientError::Config { .. }));
    /// assert!(err.to_string().contains("ANTHROPIC_API_KEY"), "{err}");
    /// assert!(AnthropicClient::new("http://localhost:4000", "claude-haiku-4-5").check().is_ok());
    /// ```
    ///
    /// # Errors
    ///
    /// [`ClientError::Config`] naming what is wrong and how to set it right.
    pub fn check(&self) -> Result<(), ClientError> {
        let problem = self.endpoint.problem().or_else(|| {
            (self.endpoint.host() == "api.anthropic.com" && !self.endpoint.has_header("x-api-key"))
                .then(|| {
                    "no API key for api.anthropic.com: set ANTHROPIC_API_KEY (read by from_env) or call with_api_key".to_owned()
                })
        });
        problem.map_or(Ok(()), |problem| Err(ClientError::Config { provider: PROVIDER, problem }))
    }

    /// Sends `x-api-key: <key>` (never shown by `Debug`).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::client::AnthropicClient;
    ///
    /// let client = AnthropicClient::new("https://api.anthropic.com", "m").with_api_key("sk-ant-secret");
    /// assert!(client.endpoint().has_header("x-api-key"));
    /// assert!(!format!("{client:?}").contains("sk-ant-secret"));
    /// ```
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.endpoint = self.endpoint.with_header("x-api-key", key);
        self
    }

    /// Gives up on a request after `timeout` (a timeout is retried like a 5xx).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.endpoint = self.endpoint.with_timeout(timeout);
        self
    }

    /// Uses `settings` (its model among them) for every call.
    #[must_use]
    pub fn with_settings(mut self, settings: ModelSettings) -> Self {
        self.settings = settings;
        self
    }

    /// Retries as `retry` says ([`Retry::none`] never retries).
    #[must_use]
    pub fn with_retry(mut self, retry: Retry) -> Self {
        self.retry = retry;
        self
    }

    /// Whether requests carry prompt-cache breakpoints (`cache_control`; on by default): at
    /// the end of the head (the task, the first user message, after the tool definitions and
    /// the system prompt), on the block before curator's note of what a compaction left out,
    /// and on the last block of the newest message and of the one before it, each only where
    /// the prefix it ends is long enough for Anthropic to cache (about 1,024 tokens), four at
    /// most with those the messages already carry. A request then reads back what the one before it wrote, and pays a tenth of
    /// the input price for it.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Message;
    /// use curator::client::{AnthropicClient, ModelRequest};
    ///
    /// let client = AnthropicClient::new("https://api.anthropic.com", "claude-sonnet-4-5");
    /// let messages = [Message::system("The policy. ".repeat(600)), Message::user("Hi")];
    /// let body = client.request_body(&ModelRequest::new(&messages))?;
    /// // The head (system prompt and task) ends on the task, the newest message.
    /// assert_eq!(body["messages"][0]["content"][0]["cache_control"]["type"], "ephemeral");
    /// let plain = client.with_cache_breakpoints(false).request_body(&ModelRequest::new(&messages))?;
    /// assert!(plain["system"].is_string());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_cache_breakpoints(mut self, on: bool) -> Self {
        self.breakpoints = on;
        self
    }

    /// The endpoint the client posts to.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The settings of every call.
    pub fn settings(&self) -> &ModelSettings {
        &self.settings
    }

    /// The retry policy.
    pub fn retry(&self) -> &Retry {
        &self.retry
    }

    /// The URL the client posts to.
    pub fn url(&self) -> String {
        self.endpoint.url(MESSAGES)
    }

    /// The JSON body [`complete`](crate::ModelClient::complete) posts for `request`.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Message;
    /// use curator::client::{AnthropicClient, ModelRequest};
    /// use serde_json::json;
    ///
    /// let client = AnthropicClient::new("https://api.anthropic.com", "claude-haiku-4-5");
    /// let tools = json!([{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}]);
    /// let messages = [Message::system("Be brief."), Message::user("hi")];
    /// let body = client.request_body(&ModelRequest::new(&messages).with_tools(&tools))?;
    /// assert_eq!(body, json!({
    ///     "model": "claude-haiku-4-5", "max_tokens": 4096, "system": "Be brief.",
    ///     "messages": [{"role": "user", "content": "hi"}],
    ///     "tools": [{"name": "ls", "input_schema": {"type": "object"}}],
    /// }));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ClientError::Conversion`]: a message the Anthropic format cannot carry (a system
    /// message inside the conversation, tool-call arguments that are not a JSON object, an
    /// OpenAI-only part), or a tool without an Anthropic form.
    pub fn request_body(&self, request: &ModelRequest<'_>) -> Result<Value, ClientError> {
        let refused = |source| ClientError::Conversion { provider: PROVIDER, source };
        let wire = anthropic::convert(request.messages).map_err(refused)?;
        let mut body = Map::new();
        if let Some(system) = wire.system {
            body.insert("system".into(), system);
        }
        body.insert("messages".into(), Value::Array(wire.messages));
        if let Some(tools) = request.tools_to_send() {
            body.insert("tools".into(), anthropic::tools_from_openai(tools).map_err(refused)?);
        }
        if self.breakpoints {
            crate::breakpoints::place(&mut body);
        }
        self.settings.write(&mut body, Some(DEFAULT_MAX_TOKENS));
        Ok(Value::Object(body))
    }
}

impl Wire for AnthropicClient {
    const PROVIDER: &'static str = PROVIDER;
    const PATH: &'static str = MESSAGES;
    type Assembly = stream::anthropic::Assembly;

    fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn retry(&self) -> &Retry {
        &self.retry
    }

    fn check(&self) -> Result<(), ClientError> {
        AnthropicClient::check(self)
    }

    fn body(&self, request: &ModelRequest<'_>) -> Result<Value, ClientError> {
        self.request_body(request)
    }

    fn stream_fields(_: &mut Map<String, Value>) {}

    fn reply(value: &Value) -> Result<ModelReply, ClientError> {
        reply_of(value)
    }
}

/// The reply a Messages API answer holds: its message, usage and stop reason.
fn reply_of(value: &Value) -> Result<ModelReply, ClientError> {
    let message = anthropic::response_message(value)
        .map_err(|e| ClientError::malformed(PROVIDER, "a Messages API reply", e))?;
    Ok(ModelReply {
        message,
        usage: Usage::read_anthropic(value),
        stop_reason: value.get("stop_reason").and_then(Value::as_str).map(str::to_owned),
    })
}

crate::wire::model_client!(
    AnthropicClient, "anthropic",
    complete {
    /// Posts the request and reads the reply.
    ///
    /// # Errors
    ///
    /// [`ClientError`]: [`Conversion`](ClientError::Conversion) as
    /// [`request_body`](AnthropicClient::request_body); after the retries,
    /// [`Status`](ClientError::Status) with Anthropic's message and error type,
    /// [`Timeout`](ClientError::Timeout) or [`Connection`](ClientError::Connection);
    /// [`MalformedReply`](ClientError::MalformedReply) for a body that is not JSON or not a
    /// Messages API reply (no `content`, say).
    }
    stream {
    /// Posts the request with `stream: true`, reports each text, thinking and tool-input
    /// piece, and reads the message they make when the stream ends (`message_stop`), with
    /// the usage of `message_start` and `message_delta` (cache reads and writes included).
    ///
    /// # Errors
    ///
    /// As [`complete`](crate::ModelClient::complete) (a failure before the stream flows is retried);
    /// [`StreamCut`](ClientError::StreamCut) when the stream ends before `message_stop`,
    /// [`StreamError`](ClientError::StreamError) for an `error` event (`overloaded_error`),
    /// [`Timeout`](ClientError::Timeout) when the whole request outlasts the endpoint's
    /// timeout.
    }
);
