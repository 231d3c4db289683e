//! A summarizer that asks any OpenAI-compatible chat completions endpoint (feature
//! `openai-compatible`).

use std::borrow::Cow;

use std::fmt::Write as _;
use std::time::Duration;

use curator_model::{BoxError, Message};
use serde_json::json;

use crate::http::Endpoint;
use crate::map::stable_hash;

use crate::{Error, Result, Summarizer};

/// The default instructions sent with the messages to summarize.
pub(super) const DEFAULT_PROMPT: &str = "You summarize the earlier part of an AI agent's conversation so that the agent can continue its work without it. Keep the user's requests and decisions (attributed to the user), the tool calls made and what they found, errors met, and open questions. Be concise and factual; do not invent anything. If a previous summary is given, extend it.";

/// Summarizes with a model behind an OpenAI-compatible `POST {base_url}/v1/chat/completions`
/// (OpenAI itself, vLLM, `llama.cpp`, Ollama, `LiteLLM`, …), through a blocking HTTP client.
///
/// The request carries the prompt as the system message and, as the user message, the
/// previous summary (when there is one) and the messages as a plain transcript
/// (`role: text`, tool calls as `name(arguments)`). The summary is the first choice's
/// message content.
///
/// # Errors
///
/// [`Error::Summarizer`] naming the failure: the HTTP status and the start of the body
/// (401, 429, 500, …), a timeout, a connection failure, or an answer that is not the
/// chat completions shape.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use curator::strategies::{OpenAiCompatible, Summarize};
///
/// let summarizer = OpenAiCompatible::new("http://localhost:11434", "llama3.1")
///     .with_api_key("secret")
///     .with_timeout(Duration::from_secs(20));
/// let summarize = Summarize::new(summarizer);
/// ```
#[derive(Clone)]
pub struct OpenAiCompatible {
    endpoint: Endpoint,
    model: String,
    prompt: String,
}

impl OpenAiCompatible {
    /// A summarizer calling `model` at `base_url` (scheme, host and port, with or without
    /// `/v1`: the [`Endpoint`] rule), with a 30 s timeout and the default prompt.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self::with_endpoint(
            Endpoint::new(base_url.into()).with_timeout(Duration::from_secs(30)),
            model,
        )
    }

    /// A summarizer calling `model` on an [`Endpoint`] configured elsewhere (shared with
    /// the agent's own chat step, for example), with its timeouts.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::strategies::OpenAiCompatible;
    /// use curator::strategies::http::Endpoint;
    ///
    /// let server = Endpoint::new("http://localhost:8000/v1").with_api_key("secret");
    /// let summarizer = OpenAiCompatible::with_endpoint(server.clone(), "small-model");
    /// assert_eq!(summarizer.endpoint().base_url(), "http://localhost:8000");
    /// ```
    pub fn with_endpoint(endpoint: Endpoint, model: impl Into<String>) -> Self {
        Self { endpoint, model: model.into(), prompt: DEFAULT_PROMPT.to_owned() }
    }

    /// Sends `Authorization: Bearer <key>`.
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.endpoint = self.endpoint.with_api_key(key);
        self
    }

    /// Gives up after `timeout` for the whole request.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.endpoint = self.endpoint.with_timeout(timeout);
        self
    }

    /// Replaces the instructions.
    #[must_use]
    pub fn with_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.prompt = prompt.into();
        self
    }

    /// The server it posts to.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn fail(&self, message: String, source: Option<BoxError>) -> Error {
        Error::Summarizer { summarizer: self.name().into_owned(), message, source }
    }
}

impl std::fmt::Debug for OpenAiCompatible {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiCompatible")
            .field("endpoint", &self.endpoint)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

/// The messages as a plain transcript.
fn transcript(previous: Option<&str>, messages: &[&Message]) -> String {
    let mut out = String::new();
    if let Some(previous) = previous {
        let _ = write!(out, "Summary so far:\n{previous}\n\nWhat happened next:\n");
    }
    for m in messages {
        let _ = write!(out, "{}: {}", m.role(), m.text());
        for call in m.tool_calls() {
            let _ = write!(out, " [calls {}({})]", call.name(), call.arguments());
        }
        out.push('\n');
    }
    out
}

impl Summarizer for OpenAiCompatible {
    fn summarize(&self, previous: Option<&str>, messages: &[&Message]) -> Result<String> {
        let body = json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": self.prompt},
                {"role": "user", "content": transcript(previous, messages)},
            ],
        });
        let path = "chat/completions";
        let value = self
            .endpoint
            .post_json(path, &body)
            .map_err(|e| self.fail(e.to_string(), Some(Box::new(e))))?;
        value["choices"][0]["message"]["content"].as_str().map(str::to_owned).ok_or_else(|| {
            let url = self.endpoint.url(path);
            self.fail(format!("the answer from {url} has no `choices[0].message.content`"), None)
        })
    }

    fn key(&self) -> u64 {
        stable_hash(&[
            b"openai-compatible",
            self.endpoint.base_url().as_bytes(),
            self.model.as_bytes(),
            self.prompt.as_bytes(),
        ])
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("openai-compatible")
    }
}
