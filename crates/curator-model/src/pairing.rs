//! The pairing rule: which tool call each tool result answers, written once.
//!
//! Every part of curator that needs to know which call a result answers (the derived
//! [`ToolCallStatus`](crate::ToolCallStatus), the [`validate`](crate::validate) checks, the
//! strategies' history index and coherence repair, the session driver's pending calls) asks
//! this module, so they cannot disagree. The rule:
//!
//! 1. An assistant message *opens* its tool calls.
//! 2. A tool message answers the **most recent still-open call with its id**; real
//!    transcripts reuse an id once its call was answered, so the first call ever made with
//!    that id is the wrong one. A tool message that finds no open call with its id is an
//!    *orphan*: it answers nothing.
//! 3. A user or system message *closes* every open call: a call still open then stays
//!    unanswered for good, and a later result with its id is an orphan.
//! 4. An assistant message closes every open call too, except when it comes **directly after
//!    an assistant message** (nothing between): then its calls *join* the open ones, because
//!    Anthropic merges consecutive assistant messages into one turn whose `tool_use` blocks
//!    are answered together. OpenAI does not merge, and its validator reports such a join.
//! 5. Calls still open at the end of the list are *pending*: the conversation stopped
//!    mid-tool-call and the caller is about to answer them.
//!
//! The [`Pairer`] applies the rule one message at a time (for lists that grow, such as a
//! history being recorded); [`pairing`] runs it over a whole list.
//!
//! # Examples
//!
//! ```
//! use curator::model::{Message, ToolCall, pairing::{self, CallRef, Link}};
//!
//! let messages = vec![
//!     Message::assistant_with_calls(None, vec![ToolCall::new("a", "ls", "{}"), ToolCall::new("b", "cat", "{}")]),
//!     Message::tool_result("b", "text"),
//!     Message::user("stop"),
//!     Message::tool_result("a", "too late"),
//! ];
//! let links: Vec<Link> = pairing::pairing(&messages).map(|step| step.link).collect();
//! assert_eq!(links[1], Link::Answers(CallRef { message: 0, call: 1 }));
//! assert_eq!(links[3], Link::Orphan); // the user message closed call `a`
//! ```

use std::borrow::Borrow;

use crate::{Message, Role};

/// Where a tool call sits: the index of the message that made it, and its place among that
/// message's calls.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, ToolCall, pairing::CallRef};
///
/// let messages = [Message::assistant_with_calls(None, vec![ToolCall::new("a", "ls", "{}")])];
/// let call = CallRef { message: 0, call: 0 };
/// assert_eq!(call.get(&messages).map(ToolCall::id), Some("a"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallRef {
    /// Index of the assistant message that made the call.
    pub message: usize,
    /// Index of the call among that message's tool calls.
    pub call: usize,
}

impl CallRef {
    /// The call in `messages`, when the indices point at one.
    pub fn get<M: Borrow<Message>>(self, messages: &[M]) -> Option<&crate::ToolCall> {
        messages.get(self.message)?.borrow().tool_calls().get(self.call)
    }
}

/// What one message does to the open calls; see the [module rules](self).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Link {
    /// A tool message that answers this call.
    Answers(CallRef),
    /// A tool message that answers no open call (rule 2).
    Orphan,
    /// An assistant message. Its calls, if any, are now open.
    Opens {
        /// It came directly after an assistant message whose calls were still open, so its
        /// calls joined them instead of closing them (rule 4).
        joined: bool,
        /// The first of its calls whose id was already open, with the open call of that id:
        /// a later result could not say which of the two it answers (it answers this one).
        duplicate: Option<(usize, CallRef)>,
    },
    /// A user or system message.
    Other,
}

/// The pairing of one message: what it links to and which open calls it found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Step {
    /// The message's index.
    pub index: usize,
    /// What it links to.
    pub link: Link,
    /// For a message that is not a tool message: the oldest call that was open when it
    /// arrived. Unless the message joined (see [`Link::Opens`]), that call and every other
    /// open call are now closed unanswered. Always `None` for a tool message.
    pub unanswered: Option<CallRef>,
}

impl Step {
    /// Whether this message closed calls that stay unanswered (rules 3 and 4).
    pub fn closed_calls(&self) -> bool {
        self.unanswered.is_some() && !matches!(self.link, Link::Opens { joined: true, .. })
    }
}

/// Applies the pairing rule one message at a time.
///
/// It keeps positions, not ids, so it borrows nothing: each [`step`](Pairer::step) is told
/// how to read the earlier messages it may need (the ones whose calls are open). Only the
/// calls of the latest assistant turn can be open, so a step costs O(calls open).
///
/// # Examples
///
/// ```
/// use curator::model::{Message, ToolCall, pairing::{CallRef, Link, Pairer}};
///
/// let mut messages = Vec::new();
/// let mut pairer = Pairer::new();
/// for message in [
///     Message::assistant_with_calls(None, vec![ToolCall::new("a", "ls", "{}")]),
///     Message::tool_result("a", "x"),
/// ] {
///     let step = pairer.step(messages.len(), &message, |i| &messages[i]);
///     messages.push(message);
///     if messages.len() == 2 {
///         assert_eq!(step.link, Link::Answers(CallRef { message: 0, call: 0 }));
///     }
/// }
/// assert!(pairer.open().is_empty());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Pairer {
    /// Calls still open, in the order they were made.
    open: Vec<CallRef>,
    /// Whether the previous message was an assistant message.
    after_assistant: bool,
}

impl Pairer {
    /// A pairer that has seen no message.
    pub const fn new() -> Self {
        Self { open: Vec::new(), after_assistant: false }
    }

    /// Pairs the message at `index`; `earlier(i)` must return the message at index `i` for
    /// every earlier index this pairer was given.
    pub fn step<'m>(
        &mut self,
        index: usize,
        message: &Message,
        earlier: impl Fn(usize) -> &'m Message,
    ) -> Step {
        let id_of =
            |c: CallRef| earlier(c.message).tool_calls().get(c.call).map(crate::ToolCall::id);
        let role = message.role();
        if role == Role::Tool {
            self.after_assistant = false;
            let id = message.tool_call_id().unwrap_or_default();
            let link = match self.open.iter().rposition(|c| id_of(*c) == Some(id)) {
                Some(i) => Link::Answers(self.open.remove(i)),
                None => Link::Orphan,
            };
            return Step { index, link, unanswered: None };
        }
        let unanswered = self.open.first().copied();
        let link = if role == Role::Assistant {
            let joined = self.after_assistant && unanswered.is_some();
            if !joined {
                self.open.clear();
            }
            let mut duplicate = None;
            for (call, tool_call) in message.tool_calls().iter().enumerate() {
                if duplicate.is_none() {
                    let same = |c: &CallRef| {
                        if c.message == index {
                            message.tool_calls().get(c.call).map(crate::ToolCall::id)
                                == Some(tool_call.id())
                        } else {
                            id_of(*c) == Some(tool_call.id())
                        }
                    };
                    duplicate = self.open.iter().rev().find(|c| same(c)).map(|c| (call, *c));
                }
                self.open.push(CallRef { message: index, call });
            }
            Link::Opens { joined, duplicate }
        } else {
            self.open.clear();
            Link::Other
        };
        self.after_assistant = role == Role::Assistant;
        Step { index, link, unanswered }
    }

    /// The calls still open, in the order they were made: at the end of a list, the pending
    /// ones.
    pub fn open(&self) -> &[CallRef] {
        &self.open
    }
}

/// Pairs every message of `messages`, in order.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, ToolCall, pairing::{self, Link}};
///
/// let messages = [
///     Message::assistant_with_calls(None, vec![ToolCall::new("a", "ls", "{}")]),
///     Message::assistant_with_calls(None, vec![ToolCall::new("b", "ls", "{}")]),
///     Message::tool_result("a", "x"),
///     Message::tool_result("b", "y"),
/// ];
/// let steps: Vec<_> = pairing::pairing(&messages).collect();
/// // The second assistant message joined the first (one Anthropic turn).
/// assert!(matches!(steps[1].link, Link::Opens { joined: true, .. }));
/// assert!(matches!(steps[3].link, Link::Answers(c) if c.message == 1));
/// ```
pub fn pairing<M: Borrow<Message>>(messages: &[M]) -> Pairing<'_, M> {
    Pairing { messages, next: 0, pairer: Pairer::new() }
}

/// The iterator of [`pairing`]; [`open`](Pairing::open) tells which calls are still open.
#[derive(Debug)]
pub struct Pairing<'m, M> {
    messages: &'m [M],
    next: usize,
    pairer: Pairer,
}

impl<M> Pairing<'_, M> {
    /// The calls open after the messages paired so far (after the last one: the pending
    /// calls).
    pub fn open(&self) -> &[CallRef] {
        self.pairer.open()
    }
}

impl<M: Borrow<Message>> Iterator for Pairing<'_, M> {
    type Item = Step;

    fn next(&mut self) -> Option<Step> {
        let messages = self.messages;
        let message = messages.get(self.next)?.borrow();
        let step = self.pairer.step(self.next, message, |i| messages[i].borrow());
        self.next += 1;
        Some(step)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.messages.len() - self.next;
        (left, Some(left))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolCall;

    fn call(ids: &[&str]) -> Message {
        Message::assistant_with_calls(
            None,
            ids.iter().map(|id| ToolCall::new(*id, "t", "{}")).collect(),
        )
    }

    #[track_caller]
    fn check(messages: &[Message], expected: &[Link], open_at_end: &[CallRef]) {
        let mut pairing = pairing(messages);
        let links: Vec<Link> = pairing.by_ref().map(|s| s.link).collect();
        assert_eq!(links, expected);
        assert_eq!(pairing.open(), open_at_end);
    }

    const fn at(message: usize, call: usize) -> CallRef {
        CallRef { message, call }
    }

    const OPENS: Link = Link::Opens { joined: false, duplicate: None };

    #[test]
    fn a_reused_id_pairs_with_the_most_recent_open_call() {
        check(
            &[
                call(&["x"]),
                Message::tool_result("x", "1"),
                call(&["x"]),
                Message::tool_result("x", "2"),
            ],
            &[OPENS, Link::Answers(at(0, 0)), OPENS, Link::Answers(at(2, 0))],
            &[],
        );
    }

    #[test]
    fn parallel_results_may_come_in_any_order() {
        check(
            &[call(&["a", "b", "c"]), Message::tool_result("c", ""), Message::tool_result("a", "")],
            &[OPENS, Link::Answers(at(0, 2)), Link::Answers(at(0, 0))],
            &[at(0, 1)],
        );
    }

    #[test]
    fn a_user_message_closes_open_calls() {
        let steps: Vec<Step> =
            pairing(&[call(&["a"]), Message::user("?"), Message::tool_result("a", "")]).collect();
        assert_eq!(steps[1].unanswered, Some(at(0, 0)));
        assert!(steps[1].closed_calls());
        assert_eq!(steps[2].link, Link::Orphan);
    }

    #[test]
    fn an_assistant_message_after_results_closes_what_is_left() {
        check(
            &[
                call(&["a", "b"]),
                Message::tool_result("a", ""),
                call(&["c"]),
                Message::tool_result("b", ""),
            ],
            &[OPENS, Link::Answers(at(0, 0)), OPENS, Link::Orphan],
            &[at(2, 0)],
        );
    }

    #[test]
    fn consecutive_assistant_messages_join() {
        let messages = [
            call(&["a"]),
            call(&["b"]),
            Message::tool_result("a", ""),
            Message::tool_result("b", ""),
        ];
        let steps: Vec<Step> = pairing(&messages).collect();
        assert_eq!(steps[1].link, Link::Opens { joined: true, duplicate: None });
        assert_eq!(steps[1].unanswered, Some(at(0, 0)));
        assert!(!steps[1].closed_calls());
        assert_eq!(steps[2].link, Link::Answers(at(0, 0)));
        assert_eq!(steps[3].link, Link::Answers(at(1, 0)));
    }

    #[test]
    fn duplicate_open_ids_are_reported_and_the_newest_answers() {
        let messages = [call(&["a", "a"]), Message::tool_result("a", "")];
        let steps: Vec<Step> = pairing(&messages).collect();
        assert_eq!(steps[0].link, Link::Opens { joined: false, duplicate: Some((1, at(0, 0))) });
        assert_eq!(steps[1].link, Link::Answers(at(0, 1)));
        let joined = [call(&["a"]), call(&["a"])];
        let steps: Vec<Step> = pairing(&joined).collect();
        assert_eq!(steps[1].link, Link::Opens { joined: true, duplicate: Some((0, at(0, 0))) });
    }

    #[test]
    fn an_assistant_message_without_open_calls_does_not_join() {
        let steps: Vec<Step> = pairing(&[Message::assistant("thinking"), call(&["a"])]).collect();
        assert_eq!(steps[1].link, OPENS);
    }
}
