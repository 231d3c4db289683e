//! An agent step that calls any OpenAI-compatible chat completions endpoint over HTTP
//! (feature `openai`).

use std::time::Duration;

use curator_model::formats::openai;
use curator_model::{BoxError, Message};
use curator_strategies::http::Endpoint;
use serde_json::json;

use crate::error::Error;
use crate::step::{Injection, Output, Step, StepCall, StepKind, StepOutcome};

/// The chat completions path under `/v1`.
const CHAT_COMPLETIONS: &str = "chat/completions";

/// An agent step that sends its messages to `POST {base_url}/v1/chat/completions` (OpenAI,
/// vLLM, Ollama, llama.cpp's server, `LiteLLM`, …) through a blocking HTTP client, and answers
/// with the first choice's message: its text, and its tool calls as artifacts.
///
/// The history is injected as chat messages, after the step's system prompt. Failures are
/// [`Error::Http`] (boxed as the step's error): the endpoint and what went wrong (the status
/// and the start of the body, a timeout, a connection refused, an answer that is not a chat
/// completion).
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use curator::conversation_loop::{Hitl, LoopBuilder, LoopConfig, OpenAiChat};
///
/// let model = OpenAiChat::new("http://localhost:11434", "llama3.1")
///     .with_system("You are a helpful assistant.")
///     .with_timeout(Duration::from_secs(60));
/// let mut chat = LoopBuilder::new("chat", LoopConfig::conversational())
///     .step("user", Hitl::default())
///     .step("assistant", model)
///     .build()?;
/// chat.run("")?;                         // pauses at `user`
/// let outcome = chat.resume("Hello!")?;  // the model answers; pauses at `user` again
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct OpenAiChat {
    endpoint: Endpoint,
    model: String,
    system: Option<String>,
    temperature: Option<f64>,
}

impl std::fmt::Debug for OpenAiChat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiChat")
            .field("endpoint", &self.endpoint)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl OpenAiChat {
    /// A step calling `model` at `base_url` (scheme, host and port, with or without `/v1`:
    /// the [`Endpoint`] rule), with a 120 s timeout for the whole request and 10 s to
    /// connect.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self::with_endpoint(Endpoint::new(base_url.into()), model)
    }

    /// A step calling `model` on an [`Endpoint`] configured elsewhere (shared with the
    /// summarizer, for example), with its timeouts and key.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::conversation_loop::OpenAiChat;
    /// use curator::strategies::http::Endpoint;
    ///
    /// let server = Endpoint::new("http://localhost:8000").with_api_key("secret");
    /// let step = OpenAiChat::with_endpoint(server, "big-model");
    /// assert_eq!(step.url(), "http://localhost:8000/v1/chat/completions");
    /// ```
    pub fn with_endpoint(endpoint: Endpoint, model: impl Into<String>) -> Self {
        Self { endpoint, model: model.into(), system: None, temperature: None }
    }

    /// Sends `Authorization: Bearer <key>`.
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.endpoint = self.endpoint.with_api_key(key);
        self
    }

    /// The system prompt, sent first (never changed by injection).
    #[must_use]
    pub fn with_system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// Gives up after `timeout` for the whole request (connection, sending, the answer).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.endpoint = self.endpoint.with_timeout(timeout);
        self
    }

    /// Gives up connecting after `timeout`.
    #[must_use]
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.endpoint = self.endpoint.with_connect_timeout(timeout);
        self
    }

    /// Sends a sampling temperature.
    #[must_use]
    pub fn with_temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// The endpoint the step posts to.
    pub fn url(&self) -> String {
        self.endpoint.url(CHAT_COMPLETIONS)
    }

    /// Sends `messages` and reads the reply.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::conversation_loop::{Error, OpenAiChat};
    /// use curator::model::Message;
    ///
    /// // Nothing listens on port 9 of the loopback interface: a typed error, not a panic.
    /// let err = OpenAiChat::new("http://127.0.0.1:9", "m").complete(&[Message::user("hi")]).unwrap_err();
    /// assert!(matches!(err, Error::Http { .. }));
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Http`]: the endpoint cannot be reached, does not answer in time, answers with
    /// a status other than 2xx, or with a body that is not a chat completion.
    pub fn complete(&self, messages: &[Message]) -> Result<Message, Error> {
        let url = self.url();
        let fail = |reason: String, source: Option<BoxError>| Error::Http {
            url: url.clone(),
            reason,
            source,
        };
        let wire = openai::from_messages(messages).map_err(|e| {
            fail("the messages cannot be written for OpenAI".into(), Some(Box::new(e)))
        })?;
        let mut body = json!({ "model": self.model, "messages": wire });
        if let Some(t) = self.temperature {
            body["temperature"] = json!(t);
        }
        let value = self
            .endpoint
            .post_json(CHAT_COMPLETIONS, &body)
            .map_err(|e| fail(e.reason.clone(), Some(Box::new(e))))?;
        openai::response_message(&value)
            .map_err(|e| fail("the answer is not a chat completion".into(), Some(Box::new(e))))
    }
}

impl Step for OpenAiChat {
    fn kind(&self) -> StepKind {
        StepKind::Agent(Injection::Messages)
    }

    fn request(&self, input: &str) -> Vec<Message> {
        let mut messages = Vec::with_capacity(2);
        if let Some(system) = &self.system {
            messages.push(Message::system(system.as_str()));
        }
        if !input.is_empty() {
            messages.push(Message::user(input));
        }
        messages
    }

    fn run(&mut self, call: StepCall<'_>) -> Result<StepOutcome, BoxError> {
        let reply = self.complete(call.messages)?;
        let mut output = Output::text(reply.text().into_owned());
        for tool_call in reply.tool_calls() {
            output = output.with_artifact(
                json!({"tool_call": {"id": tool_call.id(), "name": tool_call.name(), "arguments": tool_call.arguments()}})
                    .to_string(),
            );
        }
        Ok(StepOutcome::Output(output))
    }
}
