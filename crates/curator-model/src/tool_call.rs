//! Tool calls requested by the assistant.

use serde_json::Value;

use crate::ProviderFields;

/// One tool invocation requested by an assistant message.
///
/// `arguments` is the JSON text exactly as the provider sent it, byte for byte; models
/// sometimes send text that is not valid JSON, and the record keeps it anyway.
///
/// # Examples
///
/// ```
/// use curator::model::ToolCall;
///
/// let call = ToolCall::new("call_1", "read_file", r#"{"path": "a.txt"}"#);
/// assert_eq!(call.name(), "read_file");
/// assert_eq!(call.arguments_json()?["path"], "a.txt");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    id: String,
    name: String,
    arguments: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    extra: Option<ProviderFields>,
}

impl ToolCall {
    /// Replaces the argument text (for [`Message::map_tool_call_arguments`](crate::Message::map_tool_call_arguments)).
    pub(crate) fn set_arguments(&mut self, arguments: String) {
        self.arguments = arguments;
    }

    /// Replaces the id (for [`Message::map_tool_call_ids`](crate::Message::map_tool_call_ids)).
    pub(crate) fn set_id(&mut self, id: String) {
        self.id = id;
    }

    /// A call with the provider's id, the tool name and the arguments as JSON text.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::ToolCall;
    /// let call = ToolCall::new("c1", "search", r#"{"q": "rust"}"#);
    /// assert_eq!((call.id(), call.name()), ("c1", "search"));
    /// ```
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self { id: id.into(), name: name.into(), arguments: arguments.into(), extra: None }
    }

    /// A call whose arguments are given as a JSON value (serialised compactly).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::ToolCall;
    /// use serde_json::json;
    ///
    /// let call = ToolCall::from_json("toolu_1", "search", &json!({"q": "rust"}));
    /// assert_eq!(call.arguments(), r#"{"q":"rust"}"#);
    /// ```
    pub fn from_json(id: impl Into<String>, name: impl Into<String>, arguments: &Value) -> Self {
        Self::new(id, name, arguments.to_string())
    }

    /// Attaches provider fields that curator carries but does not interpret.
    #[must_use]
    pub fn with_extra(mut self, extra: Option<ProviderFields>) -> Self {
        self.extra = extra;
        self
    }

    /// The provider's identifier, which the tool result quotes.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The arguments as the JSON text the provider sent.
    pub fn arguments(&self) -> &str {
        &self.arguments
    }

    /// Provider fields of the call that curator does not model.
    pub fn extra(&self) -> Option<&ProviderFields> {
        self.extra.as_ref()
    }

    /// The arguments parsed as JSON. An empty string reads as an empty object, as
    /// providers treat a call without arguments.
    ///
    /// # Errors
    ///
    /// The JSON parser's error when the text is not valid JSON.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::ToolCall;
    /// assert_eq!(ToolCall::new("1", "f", "").arguments_json()?, serde_json::json!({}));
    /// assert!(ToolCall::new("1", "f", "{oops").arguments_json().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn arguments_json(&self) -> Result<Value, serde_json::Error> {
        if self.arguments.trim().is_empty() {
            Ok(Value::Object(serde_json::Map::new()))
        } else {
            serde_json::from_str(&self.arguments)
        }
    }
}

/// Where a tool call stands, derived from the record (never stored).
///
/// A call is [`Completed`](ToolCallStatus::Completed) once a tool message answers its id,
/// [`Failed`](ToolCallStatus::Failed) when that answer is marked as an error, and
/// [`Pending`](ToolCallStatus::Pending) until then, and
/// [`Unanswered`](ToolCallStatus::Unanswered) when a later message closed it without a result.
/// See [`crate::tool_call_states`] and the rule in [`crate::pairing`].
///
/// # Examples
///
/// ```
/// use curator::model::{Message, ToolCall, ToolCallStatus, tool_call_states};
///
/// let messages = vec![
///     Message::user("list files"),
///     Message::assistant_with_calls(None, vec![
///         ToolCall::new("a", "ls", "{}"),
///         ToolCall::new("b", "ls", "{}"),
///     ]),
///     Message::tool_result("a", "x.txt"),
/// ];
/// let states = tool_call_states(&messages);
/// assert_eq!(states[0].status, ToolCallStatus::Completed);
/// assert_eq!(states[1].status, ToolCallStatus::Pending);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ToolCallStatus {
    /// No result recorded yet, and nothing after the call closed it: the conversation
    /// stopped mid-tool-call, and a resume runs it.
    Pending,
    /// A later message closed the call before any result answered it (see
    /// [`pairing`](crate::pairing)): it will never have a result.
    Unanswered,
    /// A result was recorded.
    Completed,
    /// A result marked as an error was recorded.
    Failed,
}
