//! [`ModelStep`]: an agent step that asks any model client.

use std::sync::Arc;

use curator_client::{Delta, DeltaFn, ModelClient, ModelReply, ModelRequest};
use curator_model::{BoxError, Message};
use serde_json::{Value, json};

use crate::error::Error;
use crate::step::{Injection, Output, Step, StepCall, StepKind, StepOutcome};

/// An agent step that sends its messages to a model through any [`ModelClient`]
/// (`curator::client::OpenAiClient` for OpenAI and the servers that speak its chat
/// completions, `AnthropicClient`, or one of your own), and answers with the reply: its
/// text, and its tool calls as artifacts (`{"tool_call": {"id", "name", "arguments"}}`).
///
/// The history is injected as chat messages, after the step's system prompt. The client's
/// retries, timeouts and typed errors apply; a failure is [`Error::Model`] (boxed as the
/// step's error), and the loop rolls the iteration back.
///
/// # Examples
///
/// ```no_run
/// use std::time::Duration;
/// use curator::client::OpenAiClient;
/// use curator::conversation_loop::{Hitl, LoopBuilder, LoopConfig, ModelStep};
///
/// let client = OpenAiClient::new("http://localhost:11434", "llama3.1").with_timeout(Duration::from_secs(60));
/// let model = ModelStep::new(client).with_system("You are a helpful assistant.");
/// let mut chat = LoopBuilder::new("chat", LoopConfig::conversational())
///     .step("user", Hitl::default())
///     .step("assistant", model)
///     .build()?;
/// chat.run("")?;                         // pauses at `user`
/// let outcome = chat.resume("Hello!")?;  // the model answers; pauses at `user` again
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct ModelStep {
    client: Arc<dyn ModelClient>,
    system: Option<String>,
    tools: Option<Value>,
    on_delta: Option<Arc<DeltaFn>>,
}

impl std::fmt::Debug for ModelStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelStep")
            .field("client", &self.client.identity())
            .field("system", &self.system.is_some())
            .field("tools", &self.tools.is_some())
            .field("streams", &self.on_delta.is_some())
            .finish()
    }
}

impl ModelStep {
    /// A step asking `client`.
    pub fn new(client: impl ModelClient + 'static) -> Self {
        Self::shared(Arc::new(client))
    }

    /// A step asking a client shared with other parts of the program (the summarizer, say).
    pub fn shared(client: Arc<dyn ModelClient>) -> Self {
        Self { client, system: None, tools: None, on_delta: None }
    }

    /// The system prompt, sent first (never changed by injection).
    #[must_use]
    pub fn with_system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// Offers the model `tools`, an OpenAI `tools` array (`[{"type": "function",
    /// "function": {name, description, parameters}}]`; the Anthropic client converts it),
    /// with every request.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::client::{ClientError, ModelClient, ModelReply, ModelRequest};
    /// use curator::conversation_loop::ModelStep;
    /// use curator::model::{Message, ToolCall};
    /// use serde_json::json;
    ///
    /// /// A stand-in model that calls the first tool it is offered.
    /// struct Caller;
    ///
    /// impl ModelClient for Caller {
    ///     fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelReply, ClientError> {
    ///         let name = request.tools.and_then(|t| t[0]["function"]["name"].as_str()).unwrap_or("none");
    ///         Ok(ModelReply::new(Message::assistant_with_calls(None, vec![ToolCall::new("c1", name, "{}")])))
    ///     }
    /// }
    ///
    /// let step = ModelStep::new(Caller)
    ///     .with_tools(json!([{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}]));
    /// let reply = step.complete(&[Message::user("What is here?")])?;
    /// assert_eq!(reply.message.tool_calls()[0].name(), "ls");
    /// # Ok::<(), curator::conversation_loop::Error>(())
    /// ```
    #[must_use]
    pub fn with_tools(mut self, tools: Value) -> Self {
        self.tools = Some(tools);
        self
    }

    /// Asks the model to stream its replies and hands each piece to `on_delta` as it arrives
    /// (see `ModelClient::stream`). The step's output is the whole reply, once its stream
    /// has ended; a stream that breaks off fails the step ([`Error::Model`]), and the loop
    /// rolls the iteration back: no turn holds part of a reply.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use curator::client::{ClientError, Delta, ModelClient, ModelReply, ModelRequest};
    /// use curator::conversation_loop::ModelStep;
    /// use curator::model::Message;
    ///
    /// struct Hello;
    ///
    /// impl ModelClient for Hello {
    ///     fn complete(&self, _: &ModelRequest<'_>) -> Result<ModelReply, ClientError> {
    ///         Ok(ModelReply::new(Message::assistant("Hello!")))
    ///     }
    /// }
    ///
    /// let shown = Arc::new(Mutex::new(String::new()));
    /// let screen = Arc::clone(&shown);
    /// let step = ModelStep::new(Hello).stream_to(move |delta| {
    ///     if let Delta::Text(text) = delta {
    ///         screen.lock().unwrap().push_str(text);
    ///     }
    /// });
    /// assert_eq!(step.complete(&[Message::user("Hi")])?.message.text(), "Hello!");
    /// assert_eq!(*shown.lock().unwrap(), "Hello!");
    /// # Ok::<(), curator::conversation_loop::Error>(())
    /// ```
    #[must_use]
    pub fn stream_to(mut self, on_delta: impl Fn(&Delta) + Send + Sync + 'static) -> Self {
        self.on_delta = Some(Arc::new(on_delta));
        self
    }

    /// The client it asks.
    pub fn client(&self) -> &dyn ModelClient {
        &*self.client
    }

    /// Sends `messages` (and the step's tools) and reads the reply.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::client::{OpenAiClient, Retry};
    /// use curator::conversation_loop::{Error, ModelStep};
    /// use curator::model::Message;
    ///
    /// // Nothing listens on port 9 of the loopback interface: a typed error, not a panic.
    /// let step = ModelStep::new(OpenAiClient::new("http://127.0.0.1:9", "m").with_retry(Retry::none()));
    /// let err = step.complete(&[Message::user("hi")]).unwrap_err();
    /// assert!(matches!(err, Error::Model(_)));
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Model`]: the client's error (the server cannot be reached, does not answer
    /// in time, answers with an error status, or with a reply its format does not read).
    pub fn complete(&self, messages: &[Message]) -> Result<ModelReply, Error> {
        let mut request = ModelRequest::new(messages);
        if let Some(tools) = &self.tools {
            request = request.with_tools(tools);
        }
        Ok(match &self.on_delta {
            Some(on_delta) => self.client.stream(&request, &mut |d| on_delta(d))?,
            None => self.client.complete(&request)?,
        })
    }
}

impl Step for ModelStep {
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
        let usage = reply.usage;
        let reply = reply.message;
        let mut output = Output::text(reply.text().into_owned());
        if let Some(usage) = usage {
            output = output.with_usage(usage);
        }
        for tool_call in reply.tool_calls() {
            output = output.with_artifact(
                json!({"tool_call": {"id": tool_call.id(), "name": tool_call.name(), "arguments": tool_call.arguments()}})
                    .to_string(),
            );
        }
        Ok(StepOutcome::Output(output))
    }
}
