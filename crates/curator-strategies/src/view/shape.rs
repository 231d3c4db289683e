//! The shapes strategies reason in: the pinned head and the coherence units of a view.

use std::ops::Range;

use curator_model::{Message, Role};

/// What trimming strategies keep whatever happens: the system messages and the task (the
/// first user message before any assistant message), as the context asks; see
/// [`View::head`](crate::View::head).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    pub(super) pinned: Vec<usize>,
    pub(super) contiguous: usize,
}

impl Head {
    /// The view indices of the pinned messages, in order.
    pub fn pinned(&self) -> &[usize] {
        &self.pinned
    }

    /// How many leading messages are pinned without a gap: the body (the units) starts
    /// after them. A pinned message after a gap (the task when the system messages are not
    /// pinned, a system message later in the conversation) also stands in the body as a unit
    /// of its own; trimming keeps it whatever it decides about the units around it.
    pub fn len(&self) -> usize {
        self.contiguous
    }

    /// Whether nothing is pinned at the start of the view.
    pub fn is_empty(&self) -> bool {
        self.contiguous == 0
    }

    /// Whether the message at view index `index` is pinned.
    pub fn is_pinned(&self, index: usize) -> bool {
        self.pinned.binary_search(&index).is_ok()
    }
}

/// A coherence unit of a view: an assistant message with the tool results that answer its
/// calls, or any other single message; see [`View::units_rev`](crate::View::units_rev).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unit {
    pub(super) start: usize,
    pub(super) end: usize,
}

impl Unit {
    /// The view indices of the unit's messages.
    pub fn range(&self) -> Range<usize> {
        self.start..self.end
    }

    /// The first view index.
    pub fn start(&self) -> usize {
        self.start
    }

    /// Number of messages.
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// Whether the unit holds no message (never, for a unit a view hands out).
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }
}

/// Whether a message is an assistant message of tool calls and nothing else, which
/// coherence removes when its calls are still pending at the end of the view.
pub(crate) fn pending_only(message: &Message) -> bool {
    message.role() == Role::Assistant
        && message.has_tool_calls()
        && message.content().is_none_or(curator_model::Content::is_empty)
}
