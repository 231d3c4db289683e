//! What a model call sends: the messages and tools of one call ([`ModelRequest`]) and the
//! settings of every call of a client ([`ModelSettings`]).

use curator_model::Message;
use serde_json::{Map, Value};

/// What a model call needs besides the messages: the model, the sampling settings, and any
/// other field of the provider's request body.
///
/// # Examples
///
/// ```
/// use curator::client::ModelSettings;
/// use serde_json::json;
///
/// let settings = ModelSettings::new("gpt-4o-mini")
///     .with_temperature(0.2)
///     .with_max_tokens(512)
///     .with_extra("seed", json!(7));
/// assert_eq!((settings.model.as_str(), settings.max_tokens), ("gpt-4o-mini", Some(512)));
/// assert_eq!(settings.extra["seed"], 7);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ModelSettings {
    /// The model's name, sent as `model`.
    pub model: String,
    /// The sampling temperature, sent as `temperature` when set.
    pub temperature: Option<f64>,
    /// The most tokens the reply may take, sent as `max_tokens` (Anthropic requires it: its
    /// client sends 4096 when it is unset).
    pub max_tokens: Option<u32>,
    /// Other fields of the request body (`top_p`, `seed`, `max_completion_tokens`, Anthropic's
    /// `metadata`, ...), written last: one of these replaces a field of the same name that
    /// the client wrote.
    pub extra: Map<String, Value>,
}

impl ModelSettings {
    /// Settings for `model`, with the provider's defaults for the rest.
    pub fn new(model: impl Into<String>) -> Self {
        Self { model: model.into(), ..Self::default() }
    }

    /// Sends a sampling temperature.
    #[must_use]
    pub fn with_temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Caps the reply at `max_tokens` tokens.
    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Sends the field `key` with `value` in the request body (see [`extra`](Self::extra)).
    #[must_use]
    pub fn with_extra(mut self, key: impl Into<String>, value: Value) -> Self {
        self.extra.insert(key.into(), value);
        self
    }

    /// Writes the settings into a request body that holds the messages and tools: `model`,
    /// `temperature`, `max_tokens` (or `default_max_tokens`), then `extra`.
    #[cfg(feature = "http")]
    pub(crate) fn write(&self, body: &mut Map<String, Value>, default_max_tokens: Option<u32>) {
        body.insert("model".into(), Value::String(self.model.clone()));
        if let Some(temperature) = self.temperature {
            body.insert("temperature".into(), Value::from(temperature));
        }
        if let Some(max_tokens) = self.max_tokens.or(default_max_tokens) {
            body.insert("max_tokens".into(), Value::from(max_tokens));
        }
        body.extend(self.extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
}

/// One call's input: the messages (curated, usually: a view's
/// [`to_messages`](curator_strategies::View::to_messages)) and the tools the model may call.
///
/// # Examples
///
/// ```
/// use curator::model::Message;
/// use curator::client::ModelRequest;
/// use serde_json::json;
///
/// let tools = json!([{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}]);
/// let messages = [Message::system("Be brief."), Message::user("What is here?")];
/// let request = ModelRequest::new(&messages).with_tools(&tools);
/// assert_eq!((request.messages.len(), request.tools.is_some()), (2, true));
/// ```
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct ModelRequest<'a> {
    /// The messages, system messages first; each client writes them in its provider's format.
    pub messages: &'a [Message],
    /// The tools, as an OpenAI `tools` array (`[{"type": "function", "function": {name,
    /// description, parameters}}]`); the Anthropic client converts them. An empty array is
    /// not sent.
    pub tools: Option<&'a Value>,
    /// A key that routes the requests of one conversation to the same prompt cache: sent
    /// as OpenAI's `prompt_cache_key` (Anthropic caches at the breakpoints its client
    /// places, and needs none). `curator::agent::Agent` sets one per session.
    pub cache_key: Option<&'a str>,
}

impl<'a> ModelRequest<'a> {
    /// A request with `messages` and no tools.
    pub const fn new(messages: &'a [Message]) -> Self {
        Self { messages, tools: None, cache_key: None }
    }

    /// Offers the model `tools` (an OpenAI `tools` array).
    #[must_use]
    pub const fn with_tools(mut self, tools: &'a Value) -> Self {
        self.tools = Some(tools);
        self
    }

    /// Routes the request to the prompt cache of `key` (see [`cache_key`](Self::cache_key)).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Message;
    /// use curator::client::{ModelRequest, OpenAiClient};
    ///
    /// let messages = [Message::user("hi")];
    /// let request = ModelRequest::new(&messages).with_cache_key("curator-5f0c");
    /// let body = OpenAiClient::new("http://localhost:8000", "m").request_body(&request)?;
    /// assert_eq!(body["prompt_cache_key"], "curator-5f0c");
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub const fn with_cache_key(mut self, key: &'a str) -> Self {
        self.cache_key = Some(key);
        self
    }

    /// The tools to send: `None` when there are none, or an empty array.
    #[cfg(feature = "http")]
    pub(crate) fn tools_to_send(&self) -> Option<&'a Value> {
        self.tools.filter(|tools| !tools.as_array().is_some_and(Vec::is_empty))
    }
}
