//! What a model call answers: the assistant's message, the tokens it took, why it stopped.

use curator_model::Message;

pub(crate) use crate::usage::Usage;

/// The model's answer to one call.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, ToolCall};
/// use curator::client::{ModelReply, Usage};
///
/// let reply = ModelReply::new(Message::assistant_with_calls(None, vec![ToolCall::new("c1", "ls", "{}")]))
///     .with_usage(Usage::new(120, 8))
///     .with_stop_reason("tool_calls");
/// assert_eq!(reply.usage.map(|u| u.total()), Some(128));
/// let message: Message = reply.into(); // what a conversation records
/// assert_eq!(message.tool_calls()[0].id(), "c1");
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ModelReply {
    /// The assistant's message, with its tool calls.
    pub message: Message,
    /// The tokens the call took, when the provider said.
    pub usage: Option<Usage>,
    /// Why the model stopped, in the provider's words: OpenAI's `finish_reason` (`stop`,
    /// `tool_calls`, `length`, ...), Anthropic's `stop_reason` (`end_turn`, `tool_use`,
    /// `max_tokens`, ...).
    pub stop_reason: Option<String>,
}

impl ModelReply {
    /// A reply holding `message`, without usage or stop reason.
    pub fn new(message: Message) -> Self {
        Self { message, usage: None, stop_reason: None }
    }

    /// Sets the tokens the call took.
    #[must_use]
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Sets why the model stopped.
    #[must_use]
    pub fn with_stop_reason(mut self, stop_reason: impl Into<String>) -> Self {
        self.stop_reason = Some(stop_reason.into());
        self
    }
}

impl From<ModelReply> for Message {
    fn from(reply: ModelReply) -> Self {
        reply.message
    }
}
