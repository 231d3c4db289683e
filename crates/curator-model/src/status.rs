//! Tool-call status, derived from the record.

use std::collections::HashMap;

use crate::{Message, Role, ToolCall, ToolCallStatus};

/// The derived state of one tool call in a message list; see [`tool_call_states`].
///
/// # Examples
///
/// ```
/// use curator_model::{Message, ToolCall, ToolCallStatus, tool_call_states};
///
/// let messages = [Message::assistant_with_calls(None, vec![ToolCall::new("1", "ls", "{}")]), Message::tool_result("1", "x")];
/// let state = tool_call_states(&messages)[0];
/// assert_eq!((state.message_index, state.call.id(), state.status, state.result_index), (0, "1", ToolCallStatus::Completed, Some(1)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolCallState<'a> {
    /// Index of the assistant message that made the call.
    pub message_index: usize,
    /// The call.
    pub call: &'a ToolCall,
    /// Where it stands.
    pub status: ToolCallStatus,
    /// Index of the tool message that answered it, if any.
    pub result_index: Option<usize>,
}

/// Derives the status of every tool call in `messages`, in the order the calls were made.
///
/// A tool message answers the most recent still-open call with its id, never the first call
/// ever made with that id: real transcripts reuse ids once a call has been answered. Tool
/// messages that answer no open call are ignored here (the validator reports them).
///
/// # Examples
///
/// ```
/// use curator_model::{Message, ToolCall, ToolCallStatus, tool_call_states};
///
/// let messages = vec![
///     Message::assistant_with_calls(None, vec![ToolCall::new("1", "rm", "{}")]),
///     Message::tool_error("1", "permission denied"),
///     Message::assistant_with_calls(None, vec![ToolCall::new("1", "rm", "{}")]),
/// ];
/// let states = tool_call_states(&messages);
/// assert_eq!(states[0].status, ToolCallStatus::Failed);
/// assert_eq!(states[0].result_index, Some(1));
/// assert_eq!(states[1].status, ToolCallStatus::Pending);
/// ```
pub fn tool_call_states(messages: &[Message]) -> Vec<ToolCallState<'_>> {
    let mut states = Vec::new();
    let mut open: HashMap<&str, Vec<usize>> = HashMap::new();
    for (index, message) in messages.iter().enumerate() {
        match message.role() {
            Role::Assistant => {
                for call in message.tool_calls() {
                    open.entry(call.id()).or_default().push(states.len());
                    states.push(ToolCallState {
                        message_index: index,
                        call,
                        status: ToolCallStatus::Pending,
                        result_index: None,
                    });
                }
            }
            Role::Tool => {
                let Some(id) = message.tool_call_id() else { continue };
                if let Some(state) = open.get_mut(id).and_then(Vec::pop) {
                    states[state].status = if message.is_error() {
                        ToolCallStatus::Failed
                    } else {
                        ToolCallStatus::Completed
                    };
                    states[state].result_index = Some(index);
                }
            }
            Role::System | Role::User => {}
        }
    }
    states
}

/// The calls still waiting for a result: what a resumed conversation must re-run.
///
/// # Examples
///
/// ```
/// use curator_model::{Message, ToolCall, pending_tool_calls};
///
/// let messages = vec![
///     Message::assistant_with_calls(None, vec![ToolCall::new("a", "ls", "{}"), ToolCall::new("b", "cat", "{}")]),
///     Message::tool_result("a", "x"),
/// ];
/// let pending: Vec<_> = pending_tool_calls(&messages).iter().map(|c| c.id()).collect();
/// assert_eq!(pending, ["b"]);
/// ```
pub fn pending_tool_calls(messages: &[Message]) -> Vec<&ToolCall> {
    tool_call_states(messages)
        .into_iter()
        .filter(|s| s.status == ToolCallStatus::Pending)
        .map(|s| s.call)
        .collect()
}
