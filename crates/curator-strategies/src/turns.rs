//! `TurnLimit`: the last N provider round-trips.

use std::borrow::Cow;

use curator_model::Role;

use crate::trim::{Take, keep_newest};
use crate::{CurationContext, HistoryManager, Result, View};

/// Keeps the leading system messages, the task, and the last `max_turns` provider
/// round-trips.
///
/// A round-trip is one assistant message with the results of its tool calls; a user message
/// belongs to the round-trip that answers it (the next assistant message). User messages at
/// the end that no assistant has answered yet are kept in addition: they are what the next
/// call answers. [`CurationContext::preserve_last_n`] keeps more when larger. Costs O(kept).
///
/// # Examples
///
/// ```
/// use curator::model::{Message, ToolCall};
/// use curator::strategies::{CurationContext, HistoryManagerExt, TurnLimit};
///
/// let messages = vec![
///     Message::user("task"),
///     Message::assistant_with_calls(None, vec![ToolCall::new("1", "ls", "{}")]),
///     Message::tool_result("1", "a.txt"),
///     Message::assistant_with_calls(None, vec![ToolCall::new("2", "cat", "{}")]),
///     Message::tool_result("2", "hello"),
///     Message::user("thanks, and now?"),
/// ];
/// let view = TurnLimit::new(1).curate_messages(&messages, &CurationContext::default())?;
/// assert_eq!(view, [&messages[..1], &messages[3..]].concat());
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TurnLimit {
    max_turns: usize,
}

impl TurnLimit {
    /// Keeps the last `max_turns` round-trips.
    pub const fn new(max_turns: usize) -> Self {
        Self { max_turns }
    }

    /// The number of round-trips kept.
    pub const fn max_turns(&self) -> usize {
        self.max_turns
    }
}

impl HistoryManager for TurnLimit {
    fn curate<'h>(&self, view: View<'h>, ctx: &CurationContext<'_>) -> Result<View<'h>> {
        let mut turns = 0;
        let mut kept = 0;
        let head = view.head(ctx);
        let trimmed = keep_newest(&view, &head, view.present(&head), true, |unit| {
            if view.structure(unit.start()).role() == Role::Assistant {
                turns += 1;
            }
            if turns <= self.max_turns || kept < ctx.preserve_last_n {
                kept += unit.len();
                Take::Keep
            } else {
                Take::Stop
            }
        });
        Ok(trimmed.unwrap_or_else(|| view.repaired()))
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("turn_limit")
    }
}
