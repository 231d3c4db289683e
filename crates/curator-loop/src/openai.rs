//! An agent step that calls any OpenAI-compatible chat completions endpoint over HTTP
//! (feature `openai`).

use std::time::Duration;

use curator_model::formats::openai;
use curator_model::{BoxError, Message};
use serde_json::{Value, json};

use crate::error::Error;
use crate::step::{Injection, Output, Step, StepCall, StepKind, StepOutcome};

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
    base_url: String,
    model: String,
    api_key: Option<String>,
    system: Option<String>,
    timeout: Duration,
    connect_timeout: Duration,
    temperature: Option<f64>,
}

impl std::fmt::Debug for OpenAiChat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiChat")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "…"))
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl OpenAiChat {
    /// A step calling `model` at `base_url` (scheme, host and port, with or without `/v1`),
    /// with a 120 s timeout for the whole request and 10 s to connect.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        let base_url = base_url.into();
        let base_url = base_url.trim_end_matches('/');
        Self {
            base_url: base_url.strip_suffix("/v1").unwrap_or(base_url).to_owned(),
            model: model.into(),
            api_key: None,
            system: None,
            timeout: Duration::from_mins(2),
            connect_timeout: Duration::from_secs(10),
            temperature: None,
        }
    }

    /// Sends `Authorization: Bearer <key>`.
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
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
        self.timeout = timeout;
        self
    }

    /// Gives up connecting after `timeout`.
    #[must_use]
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
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
        format!("{}/v1/chat/completions", self.base_url)
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
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(self.timeout))
            .timeout_connect(Some(self.connect_timeout))
            .http_status_as_error(false)
            .build()
            .into();
        let mut request = agent.post(&url).header("Content-Type", "application/json");
        if let Some(key) = &self.api_key {
            request = request.header("Authorization", &format!("Bearer {key}"));
        }
        let timeout = self.timeout;
        let transport = |e: ureq::Error, what: &str| match e {
            ureq::Error::Timeout(_) => {
                fail(format!("no answer within {timeout:?}"), Some(Box::new(e)))
            }
            other => fail(what.to_owned(), Some(Box::new(other))),
        };
        let mut response =
            request.send(body.to_string()).map_err(|e| transport(e, "cannot send the request"))?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| transport(e, "the answer broke off"))?;
        if !(200..300).contains(&status) {
            let start: String = text.chars().take(200).collect();
            return Err(fail(format!("HTTP {status}: {start}"), None));
        }
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| fail("the answer is not JSON".into(), Some(Box::new(e))))?;
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
