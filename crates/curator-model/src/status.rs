//! Tool-call status, derived from the record.

use crate::pairing::{self, CallRef, Link};
use crate::{Message, ToolCall, ToolCallStatus};

/// The derived state of one tool call in a message list; see [`tool_call_states`].
///
/// # Examples
///
/// ```
/// use curator::model::{Message, ToolCall, ToolCallStatus, tool_call_states};
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
/// Results pair with calls by the rule of [`pairing`](crate::pairing): a tool message answers
/// the most recent still-open call with its id, never the first call ever made with that id
/// (real transcripts reuse ids once a call has been answered); a user or system message (or
/// an assistant message that does not directly follow an assistant message) closes the calls
/// still open, which become [`Unanswered`](ToolCallStatus::Unanswered). Tool messages that
/// answer no open call are ignored here (the validator reports them).
///
/// # Examples
///
/// ```
/// use curator::model::{Message, ToolCall, ToolCallStatus, tool_call_states};
///
/// let messages = vec![
///     Message::assistant_with_calls(None, vec![ToolCall::new("1", "rm", "{}")]),
///     Message::tool_error("1", "permission denied"),
///     Message::assistant_with_calls(None, vec![ToolCall::new("1", "rm", "{}"), ToolCall::new("2", "ls", "{}")]),
///     Message::tool_result("2", "a.txt"),
///     Message::user("never mind"),
///     Message::assistant_with_calls(None, vec![ToolCall::new("3", "ls", "{}")]),
/// ];
/// let states = tool_call_states(&messages);
/// assert_eq!(states[0].status, ToolCallStatus::Failed);
/// assert_eq!(states[0].result_index, Some(1));
/// assert_eq!(states[1].status, ToolCallStatus::Unanswered);
/// assert_eq!(states[2].status, ToolCallStatus::Completed);
/// assert_eq!(states[3].status, ToolCallStatus::Pending);
/// ```
pub fn tool_call_states(messages: &[Message]) -> Vec<ToolCallState<'_>> {
    let mut states: Vec<ToolCallState<'_>> = Vec::new();
    // Index of each message's first call in `states`, for the messages that made calls.
    let mut first_state: Vec<(usize, usize)> = Vec::new();
    let state_of = |first: &[(usize, usize)], call: CallRef| {
        first.binary_search_by_key(&call.message, |(m, _)| *m).ok().map(|i| first[i].1 + call.call)
    };
    // Only the latest assistant turn's calls can be open: the states from here on.
    let mut open_from = 0;
    for step in pairing::pairing(messages) {
        let message = &messages[step.index];
        if step.closed_calls() {
            for state in &mut states[open_from..] {
                if state.status == ToolCallStatus::Pending {
                    state.status = ToolCallStatus::Unanswered;
                }
            }
        }
        if !matches!(step.link, Link::Answers(_) | Link::Orphan | Link::Opens { joined: true, .. })
        {
            open_from = states.len();
        }
        match step.link {
            Link::Opens { .. } if message.has_tool_calls() => {
                first_state.push((step.index, states.len()));
                states.extend(message.tool_calls().iter().map(|call| ToolCallState {
                    message_index: step.index,
                    call,
                    status: ToolCallStatus::Pending,
                    result_index: None,
                }));
            }
            Link::Answers(call) => {
                if let Some(state) = state_of(&first_state, call).and_then(|i| states.get_mut(i)) {
                    state.status = if message.is_error() {
                        ToolCallStatus::Failed
                    } else {
                        ToolCallStatus::Completed
                    };
                    state.result_index = Some(step.index);
                }
            }
            _ => {}
        }
    }
    states
}

/// The calls still waiting for a result (open at the end of the list, see
/// [`pairing`](crate::pairing)): what a resumed conversation must re-run.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, ToolCall, pending_tool_calls};
///
/// let messages = vec![
///     Message::assistant_with_calls(None, vec![ToolCall::new("a", "ls", "{}"), ToolCall::new("b", "cat", "{}")]),
///     Message::tool_result("a", "x"),
/// ];
/// let pending: Vec<_> = pending_tool_calls(&messages).iter().map(|c| c.id()).collect();
/// assert_eq!(pending, ["b"]);
/// ```
pub fn pending_tool_calls(messages: &[Message]) -> Vec<&ToolCall> {
    let mut pairing = pairing::pairing(messages);
    pairing.by_ref().for_each(drop);
    pairing.open().iter().filter_map(|call| call.get(messages)).collect()
}
