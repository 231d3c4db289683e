//! The messages of a history no view can send: tool results that answer no open call, and
//! calls whose results never come.

use curator_model::Message;

use crate::{History, View};

impl History<'_> {
    /// Positions of the messages no provider takes, so that no view sends them: tool results
    /// that answer no open call, and assistant messages whose calls a user or system message
    /// closed before their results came (see [`pairing`](curator_model::pairing)). Calls still
    /// waiting at the end of the history are not counted: they are its present, answered by
    /// the next step. Strategies leave these messages out (coherence); callers that take
    /// messages from users say so with this list. Costs O(history).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, ToolCall};
    /// use curator::strategies::History;
    ///
    /// let history = History::from(vec![
    ///     Message::user("hi"),
    ///     Message::tool_result("x", "a result whose call is not there"),
    ///     Message::assistant_with_calls(None, vec![ToolCall::new("a", "ls", "{}")]),
    /// ]);
    /// assert_eq!(history.unsendable(), [1]);
    /// ```
    #[must_use]
    pub fn unsendable(&self) -> Vec<usize> {
        let repaired = View::full(self).repaired();
        let mut kept = vec![false; self.len()];
        for entry in repaired.iter() {
            if let Some(slot) = entry.pos.and_then(|pos| kept.get_mut(pos)) {
                *slot = true;
            }
        }
        let mut left_out: Vec<usize> = (0..self.len()).filter(|&pos| !kept[pos]).collect();
        // A history that ends with calls still waiting: its last assistant message goes.
        if let Some(&last) = left_out.last()
            && last + 1 == self.len()
            && self.get(last).is_some_and(Message::has_tool_calls)
        {
            left_out.pop();
        }
        left_out
    }
}
