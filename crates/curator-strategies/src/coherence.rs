//! Coherence: tool calls and their results stay together.
//!
//! Messages form *units*: an assistant message that calls tools, together with every tool
//! message that answers one of its calls, is one unit; every other message is a unit of its
//! own. Strategies keep or drop whole units. After a strategy has chosen what to keep, these
//! rules make the view one that providers accept:
//!
//! 1. Results pair with calls by the one rule of [`pairing`](curator_model::pairing): a tool
//!    message answers the most recent still-open call with its id; a user or system message,
//!    or an assistant message that does not directly follow an assistant message, closes the
//!    calls still open (consecutive assistant messages form one Anthropic turn).
//! 2. A tool message that answers no open call (its call is not in the view, was already
//!    answered, or was closed) is dropped.
//! 3. An assistant tool call whose answer is not in the view is removed from its message, and
//!    the message is dropped when nothing is left (no call and no content).
//!
//! Repair does not rename calls: an assistant message that opens two calls of one id is
//! paired consistently (a result answers the newest), but stays a list the validators
//! report; providers refuse it, and the session driver never records it.
//!
//! Rule 3 also removes calls still pending at the end of the view: a provider rejects a
//! request whose last assistant message has unanswered calls. The record keeps them.
//!
//! Repair reads only structure (roles, call ids), which maps never change, so it never
//! runs a transformation; it costs O(view), and trimming strategies run it on what they
//! keep, not on the whole history. [`Edit::finish`](crate::Edit::finish) and
//! [`View::retain`](crate::View::retain) apply it, so every strategy built on them keeps the
//! rules.
//!
//! # Examples
//!
//! ```
//! use curator::model::{Message, ToolCall, validate};
//! use curator::strategies::{CurationContext, HistoryManagerExt, SlidingWindow};
//!
//! let messages = vec![
//!     Message::tool_result("lost", "orphan from a cut transcript"),
//!     Message::user("go"),
//!     Message::assistant_with_calls(None, vec![ToolCall::new("a", "ls", "{}"), ToolCall::new("b", "ls", "{}")]),
//!     Message::tool_result("a", "x"),
//! ];
//! let view = SlidingWindow::new(10).curate_messages(&messages, &CurationContext::default())?;
//! // The orphan is gone and the unanswered call `b` was removed from the assistant message.
//! assert_eq!(view.len(), 3);
//! assert_eq!(view[1].tool_calls().len(), 1);
//! validate::openai(&view)?;
//! Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use curator_model::pairing::{CallRef, Link, Pairer};
use curator_model::{Message, Role};

/// What repair changes in a message list, in index order: tool messages to drop (`None`),
/// and assistant messages that keep only the calls flagged `true`.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Repairs {
    changes: Vec<(usize, Option<Vec<bool>>)>,
}

impl Repairs {
    pub(crate) fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (usize, Option<&[bool]>)> + '_ {
        self.changes.iter().map(|(index, calls)| (*index, calls.as_deref()))
    }
}

/// [`plan`] for a view part of one message with no call open before it (the newest
/// message after a settled point, as a rule): a tool message answers nothing and goes, and
/// an assistant message's calls are all unanswered. No pairing state is built.
pub(crate) fn plan_alone(message: &Message) -> Repairs {
    let changes = match message.role() {
        Role::Tool => vec![(0, None)],
        Role::Assistant if message.has_tool_calls() => {
            vec![(0, Some(vec![false; message.tool_calls().len()]))]
        }
        _ => Vec::new(),
    };
    Repairs { changes }
}

/// The repairs that make `messages` (given in order, with `at(i)` for random access to the
/// earlier ones) follow the rules. O(messages); allocation-free when nothing needs repair,
/// but for the pairing's list of open calls.
pub(crate) fn plan<'m>(
    messages: impl Iterator<Item = &'m Message>,
    at: impl Fn(usize) -> &'m Message,
) -> Repairs {
    let mut pairer = Pairer::new();
    let mut changes = Vec::new();
    // Calls closed without an answer, and the open calls as they were before a step.
    let mut unanswered: Vec<CallRef> = Vec::new();
    let mut before: Vec<CallRef> = Vec::new();
    for (index, message) in messages.enumerate() {
        let closing = message.role() != Role::Tool && !pairer.open().is_empty();
        if closing {
            before.clear();
            before.extend_from_slice(pairer.open());
        }
        let step = pairer.step(index, message, &at);
        if step.link == Link::Orphan {
            changes.push((index, None));
        }
        if closing && step.closed_calls() {
            unanswered.extend_from_slice(&before);
        }
    }
    unanswered.extend_from_slice(pairer.open());
    if !unanswered.is_empty() {
        unanswered.sort_unstable();
        for group in unanswered.chunk_by(|a, b| a.message == b.message) {
            let message = group[0].message;
            let mut flags = vec![true; at(message).tool_calls().len()];
            for call in group {
                if let Some(flag) = flags.get_mut(call.call) {
                    *flag = false;
                }
            }
            changes.push((message, Some(flags)));
        }
        changes.sort_unstable_by_key(|(index, _)| *index);
    }
    Repairs { changes }
}

#[cfg(test)]
mod tests {
    use curator_model::ToolCall;
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn a_lone_message_is_planned_as_the_pairing_plans_it(
            kind in 0usize..5,
            ids in prop::collection::vec(prop_oneof![Just("a"), Just("b")], 0..4),
        ) {
            let calls = ids.iter().map(|id| ToolCall::new(*id, "t", "{}")).collect();
            let message = match kind {
                0 => Message::tool_result("a", "x"),
                1 => Message::assistant_with_calls(None, calls),
                2 => Message::assistant_with_calls(Some("text".into()), calls),
                3 => Message::user("u"),
                _ => Message::system("s"),
            };
            let planned = plan(std::iter::once(&message), |_| &message);
            prop_assert_eq!(plan_alone(&message), planned);
        }
    }
}
