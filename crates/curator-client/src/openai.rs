//! The client of OpenAI's chat completions API, and of every server that speaks it.

use std::time::Duration;

use crate::endpoint::Endpoint;
use curator_model::formats::openai;
use serde_json::{Map, Value};

use crate::env;
use crate::error::ClientError;
use crate::reply::{ModelReply, Usage};
use crate::request::{ModelRequest, ModelSettings};
use crate::retry::Retry;
use crate::stream;
use crate::wire::Wire;

/// The provider's name in errors.
const PROVIDER: &str = "OpenAI";
/// The chat completions path under `/v1`.
const CHAT_COMPLETIONS: &str = "chat/completions";
/// Where [`OpenAiClient::from_env`] posts without `OPENAI_BASE_URL`.
const DEFAULT_BASE_URL: &str = "https://api.openai.com";

/// A [`ModelClient`](crate::ModelClient) that posts to `{base_url}/v1/chat/completions`: OpenAI, or any server
/// that speaks its chat completions (vLLM, Ollama, `llama.cpp`'s server, `LiteLLM`, ...).
///
/// The messages are written by curator's OpenAI format ([`openai::convert`]: messages read
/// from Anthropic are adapted first), the tools sent as given, the request's
/// [`cache_key`](ModelRequest::cache_key) as `prompt_cache_key`, the [`ModelSettings`] added
/// (`model`, `temperature`, `max_tokens`, then `extra`). The reply is the first choice's
/// message with its tool calls, the `usage` (`prompt_tokens`, `completion_tokens`, and the
/// cached part of the prompt) and the `finish_reason`. Failures that may pass are retried as the [`Retry`] says (the default:
/// 4 attempts). Clones share the endpoint's connections.
///
/// # Examples
///
/// ```no_run
/// use curator::model::Message;
/// use curator::client::{ModelClient, ModelRequest, OpenAiClient};
///
/// let client = OpenAiClient::from_env("gpt-4o-mini"); // OPENAI_API_KEY, OPENAI_BASE_URL
/// let reply = client.complete(&ModelRequest::new(&[Message::user("Say hi.")]))?;
/// println!("{} ({:?})", reply.message.text(), reply.usage);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct OpenAiClient {
    endpoint: Endpoint,
    settings: ModelSettings,
    retry: Retry,
}

impl OpenAiClient {
    /// A client of `model` at `base_url` (scheme, host and port, with or without `/v1`: the
    /// [`Endpoint`] rule), with no API key, the endpoint's default timeouts (120 s for a
    /// request, 10 s to connect) and the default [`Retry`].
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::client::OpenAiClient;
    ///
    /// let client = OpenAiClient::new("http://localhost:11434/v1", "llama3.1");
    /// assert_eq!(client.url(), "http://localhost:11434/v1/chat/completions");
    /// assert_eq!(client.settings().model, "llama3.1");
    /// ```
    pub fn new(base_url: impl AsRef<str>, model: impl Into<String>) -> Self {
        Self::with_endpoint(Endpoint::new(base_url), model)
    }

    /// A client of `model` on an [`Endpoint`] configured elsewhere (its timeouts, key and
    /// headers; shared with the summarizer, say).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use curator::client::OpenAiClient;
    /// use curator::client::Endpoint;
    ///
    /// let server = Endpoint::new("http://localhost:8000").with_timeout(Duration::from_secs(30));
    /// let client = OpenAiClient::with_endpoint(server, "big-model");
    /// assert_eq!(client.endpoint().timeout(), Duration::from_secs(30));
    /// ```
    pub fn with_endpoint(endpoint: Endpoint, model: impl Into<String>) -> Self {
        Self { endpoint, settings: ModelSettings::new(model), retry: Retry::new() }
    }

    /// A client of `model` at `OPENAI_BASE_URL` (default `https://api.openai.com`), with the
    /// key `OPENAI_API_KEY` when it is set (a local server needs none; without it, a call to
    /// `api.openai.com` fails at once with [`ClientError::Config`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::client::OpenAiClient;
    ///
    /// let client = OpenAiClient::from_env("gpt-4o-mini");
    /// assert!(client.url().ends_with("/v1/chat/completions"));
    /// ```
    pub fn from_env(model: impl Into<String>) -> Self {
        let base_url = env("OPENAI_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
        let client = Self::new(base_url, model);
        match env("OPENAI_API_KEY") {
            Some(key) => client.with_api_key(key),
            None => client,
        }
    }

    /// Whether the client can make a request that could succeed: a base URL with a scheme
    /// and a host ([`Endpoint::problem`]), and an API key when it posts to OpenAI's own
    /// server (`api.openai.com`; other servers may need none). [`complete`](crate::ModelClient::complete)
    /// checks it before the first attempt.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::client::{ClientError, OpenAiClient};
    ///
    /// let err = OpenAiClient::new("https://api.openai.com", "gpt-4o-mini").check().unwrap_err();
    /// assert!(matches!(err, ClientError::Config { .. }));
    /// assert!(err.to_string().contains("OPENAI_API_KEY"), "{err}");
    /// assert!(OpenAiClient::new("localhost:11434", "llama3.1").check().is_err()); // no scheme
    /// assert!(OpenAiClient::new("http://localhost:11434", "llama3.1").check().is_ok());
    /// ```
    ///
    /// # Errors
    ///
    /// [`ClientError::Config`] naming what is wrong and how to set it right.
    pub fn check(&self) -> Result<(), ClientError> {
        let problem = self.endpoint.problem().or_else(|| {
            (self.endpoint.host() == "api.openai.com"
                && !self.endpoint.has_api_key()
                && !self.endpoint.has_header("authorization")).then(|| {
                "no API key for api.openai.com: set OPENAI_API_KEY (read by from_env) or call with_api_key".to_owned()
            })
        });
        problem.map_or(Ok(()), |problem| Err(ClientError::Config { provider: PROVIDER, problem }))
    }

    /// Sends `Authorization: Bearer <key>`.
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.endpoint = self.endpoint.with_api_key(key);
        self
    }

    /// Gives up on a request after `timeout` (a timeout is retried like a 5xx).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.endpoint = self.endpoint.with_timeout(timeout);
        self
    }

    /// Uses `settings` (its model among them) for every call.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::client::{ModelSettings, OpenAiClient};
    ///
    /// let client = OpenAiClient::new("http://localhost:8000", "m")
    ///     .with_settings(ModelSettings::new("gpt-4o").with_temperature(0.0));
    /// assert_eq!((client.settings().model.as_str(), client.settings().temperature), ("gpt-4o", Some(0.0)));
    /// ```
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
        self.endpoint.url(CHAT_COMPLETIONS)
    }

    /// The JSON body [`complete`](crate::ModelClient::complete) posts for `request`.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Message;
    /// use curator::client::{ModelRequest, ModelSettings, OpenAiClient};
    /// use serde_json::json;
    ///
    /// let client = OpenAiClient::new("http://localhost:8000", "m")
    ///     .with_settings(ModelSettings::new("m").with_max_tokens(100));
    /// let body = client.request_body(&ModelRequest::new(&[Message::user("hi")]))?;
    /// assert_eq!(body, json!({"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`ClientError::Conversion`]: a message the OpenAI format cannot carry (an
    /// Anthropic-only block, such as a thinking block or a document).
    pub fn request_body(&self, request: &ModelRequest<'_>) -> Result<Value, ClientError> {
        let messages = openai::convert(request.messages)
            .map_err(|source| ClientError::Conversion { provider: PROVIDER, source })?;
        let mut body = Map::new();
        body.insert("messages".into(), messages);
        if let Some(tools) = request.tools_to_send() {
            body.insert("tools".into(), tools.clone());
        }
        if let Some(key) = request.cache_key {
            body.insert("prompt_cache_key".into(), Value::String(key.to_owned()));
        }
        self.settings.write(&mut body, None);
        Ok(Value::Object(body))
    }
}

impl Wire for OpenAiClient {
    const PROVIDER: &'static str = PROVIDER;
    const PATH: &'static str = CHAT_COMPLETIONS;
    type Assembly = stream::openai::Assembly;

    fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn retry(&self) -> &Retry {
        &self.retry
    }

    fn check(&self) -> Result<(), ClientError> {
        OpenAiClient::check(self)
    }

    fn body(&self, request: &ModelRequest<'_>) -> Result<Value, ClientError> {
        self.request_body(request)
    }

    fn stream_fields(fields: &mut Map<String, Value>) {
        fields
            .entry("stream_options")
            .or_insert_with(|| serde_json::json!({"include_usage": true}));
    }

    fn reply(value: &Value) -> Result<ModelReply, ClientError> {
        reply_of(value)
    }
}

/// The reply a chat completion holds: its first choice's message, usage and finish reason.
fn reply_of(value: &Value) -> Result<ModelReply, ClientError> {
    let message = openai::response_message(value)
        .map_err(|e| ClientError::malformed(PROVIDER, "a chat completion", e))?;
    Ok(ModelReply {
        message,
        usage: Usage::read_openai(value),
        stop_reason: value
            .pointer("/choices/0/finish_reason")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

crate::wire::model_client!(
    OpenAiClient, "openai",
    complete {
    /// Posts the request and reads the first choice.
    ///
    /// # Errors
    ///
    /// [`ClientError`]: [`Conversion`](ClientError::Conversion) as
    /// [`request_body`](OpenAiClient::request_body); after the retries,
    /// [`Status`](ClientError::Status) with OpenAI's message,
    /// [`Timeout`](ClientError::Timeout) or [`Connection`](ClientError::Connection);
    /// [`MalformedReply`](ClientError::MalformedReply) for a body that is not JSON or not a
    /// chat completion (no `choices[0].message`, say).
    }
    stream {
    /// Posts the request with `stream: true` (and `stream_options.include_usage`, for the
    /// usage), reports each chunk's text, reasoning (`reasoning_content`, from servers that
    /// send one) and tool-call pieces, and reads the completion they make when the stream
    /// ends (`[DONE]`).
    ///
    /// # Errors
    ///
    /// As [`complete`](crate::ModelClient::complete) (a failure before the stream flows is retried);
    /// [`StreamCut`](ClientError::StreamCut) when the stream ends before a finish reason,
    /// [`StreamError`](ClientError::StreamError) for an error chunk,
    /// [`Timeout`](ClientError::Timeout) when the whole request outlasts the endpoint's
    /// timeout.
    }
);
