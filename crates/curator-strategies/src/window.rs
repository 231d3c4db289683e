//! `SlidingWindow`: the system message, the task, and the last N messages.

use std::borrow::Cow;

use crate::trim::{Take, keep_newest};
use crate::{CurationContext, HistoryManager, Result, View};

/// Keeps the leading system messages, the task, and the newest `window_size` messages,
/// cut on a unit boundary: an assistant message and the results of its tool calls are kept
/// or dropped together, so the window may hold fewer than `window_size` messages.
///
/// The window never empties the conversation's tail: when the newest unit alone is longer
/// than the window (an assistant message with many parallel calls), it is kept whole, since
/// dropping it would make the model repeat its calls. A window of 0 keeps only the head.
/// [`CurationContext::preserve_last_n`] widens the window when larger.
///
/// Costs O(kept), whatever the history's length.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, ToolCall};
/// use curator::strategies::{CurationContext, HistoryManagerExt, SlidingWindow};
///
/// let messages = vec![
///     Message::system("s"),
///     Message::user("task"),
///     Message::assistant("first answer"),
///     Message::user("more"),
///     Message::assistant_with_calls(None, vec![ToolCall::new("1", "ls", "{}")]),
///     Message::tool_result("1", "x"),
/// ];
/// let view = SlidingWindow::new(2).curate_messages(&messages, &CurationContext::default())?;
/// // System, task, then the newest unit (the call and its result).
/// assert_eq!(view, [&messages[..2], &messages[4..]].concat());
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlidingWindow {
    window_size: usize,
}

impl SlidingWindow {
    /// A window of `window_size` messages after the system messages and the task.
    pub const fn new(window_size: usize) -> Self {
        Self { window_size }
    }

    /// The window size.
    pub const fn window_size(&self) -> usize {
        self.window_size
    }
}

impl HistoryManager for SlidingWindow {
    fn curate<'h>(&self, view: View<'h>, ctx: &CurationContext<'_>) -> Result<View<'h>> {
        let window = self.window_size.max(ctx.preserve_last_n);
        let mut kept = 0;
        let head = view.head(ctx);
        let trimmed = keep_newest(&view, &head, view.present(&head), true, |unit| {
            let len = unit.len();
            if window > 0 && (kept == 0 || kept + len <= window) {
                kept += len;
                Take::Keep
            } else {
                Take::Stop
            }
        });
        Ok(trimmed.unwrap_or_else(|| view.repaired()))
    }

    fn name(&self) -> Cow<'_, str> {
        Cow::Borrowed("sliding_window")
    }
}
