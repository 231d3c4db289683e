//! [`ModelSummarizer`]: a [`Summarizer`] that asks any [`ModelClient`].

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use curator_model::Message;
use curator_strategies::{Error, Result, Summarizer, stable_hash};

use crate::{ModelClient, ModelRequest};

/// The default instructions sent with the messages to summarize.
pub const DEFAULT_SUMMARY_PROMPT: &str = "You summarize the earlier part of an AI agent's conversation so that the agent can continue its work without it. Keep the user's requests and decisions (attributed to the user), the tool calls made and what they found, errors met, and open questions. Be concise and factual; do not invent anything. If a previous summary is given, extend it.";

/// Summarizes with a model, through any [`ModelClient`]: an `OpenAiClient` (OpenAI, vLLM,
/// `llama.cpp`, Ollama, `LiteLLM`, …), an `AnthropicClient`, or one of your own. It takes the
/// client's retries, timeouts and typed errors.
///
/// The request carries the prompt as the system message and, as the user message, the
/// previous summary (when there is one) and the messages as a plain transcript
/// (`role: text`, tool calls as `name(arguments)`). The summary is the reply's text.
///
/// Summaries are memoised by [`key`](Summarizer::key): the prompt and the client's
/// [`identity`](ModelClient::identity) (its provider, server and model), so that another
/// model's summary is never taken for this one's.
///
/// # Errors
///
/// [`Error::Summarizer`] naming the failure: the client's error (the provider's status and
/// message, a timeout, a connection failure, a malformed reply), or a reply without text.
///
/// # Examples
///
/// ```
/// use curator::client::{ClientError, ModelClient, ModelReply, ModelRequest, ModelSummarizer};
/// use curator::model::Message;
/// use curator::strategies::Summarizer;
///
/// /// A stand-in model that counts the lines it was asked to summarize.
/// struct Counter;
///
/// impl ModelClient for Counter {
///     fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelReply, ClientError> {
///         let lines = request.messages[1].text().lines().count();
///         Ok(ModelReply::new(Message::assistant(format!("{lines} lines"))))
///     }
/// }
///
/// let summarizer = ModelSummarizer::new(Counter);
/// let (a, b) = (Message::user("fix the test"), Message::assistant("done"));
/// assert_eq!(summarizer.summarize(None, &[&a, &b])?, "2 lines");
/// # Ok::<(), curator::strategies::Error>(())
/// ```
///
/// With a real model (feature `openai`):
///
/// ```no_run
/// use curator::client::{ModelSummarizer, OpenAiClient};
/// use curator::strategies::Summarize;
///
/// let client = OpenAiClient::new("http://localhost:11434", "llama3.1");
/// let summarize = Summarize::new(ModelSummarizer::new(client));
/// ```
#[derive(Clone, Debug)]
pub struct ModelSummarizer<C> {
    client: C,
    prompt: String,
    /// The tokens its calls took, as the client reported them (shared by clones).
    tokens: Arc<AtomicU64>,
}

impl<C: ModelClient> ModelSummarizer<C> {
    /// A summarizer asking `client`, with the default prompt.
    pub fn new(client: C) -> Self {
        Self { client, prompt: DEFAULT_SUMMARY_PROMPT.to_owned(), tokens: Arc::default() }
    }

    /// Replaces the instructions.
    #[must_use]
    pub fn with_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.prompt = prompt.into();
        self
    }

    /// The client it asks.
    pub fn client(&self) -> &C {
        &self.client
    }

    /// The instructions it sends.
    pub fn prompt(&self) -> &str {
        &self.prompt
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

impl<C: ModelClient> Summarizer for ModelSummarizer<C> {
    fn summarize(&self, previous: Option<&str>, messages: &[&Message]) -> Result<String> {
        let request =
            [Message::system(self.prompt.as_str()), Message::user(transcript(previous, messages))];
        let fail = |message: String, source: Option<curator_model::BoxError>| Error::Summarizer {
            summarizer: self.name().into_owned(),
            message,
            source,
        };
        let reply = self
            .client
            .complete(&ModelRequest::new(&request))
            .map_err(|e| fail("the model call failed".to_owned(), Some(Box::new(e))))?;
        if let Some(usage) = reply.usage {
            self.tokens.fetch_add(usage.total(), Ordering::Relaxed);
        }
        let text = reply.message.text();
        if text.trim().is_empty() {
            return Err(fail("the model's reply has no text".to_owned(), None));
        }
        Ok(text.into_owned())
    }

    fn key(&self) -> u64 {
        stable_hash(&[b"model", self.client.identity().as_bytes(), self.prompt.as_bytes()])
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Owned(format!("model summarizer ({})", self.client.identity()))
    }

    fn tokens_used(&self) -> u64 {
        self.tokens.load(Ordering::Relaxed)
    }
}
