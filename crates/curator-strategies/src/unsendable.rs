//! The messages of a history no view can send: tool results that answer no open call, and
//! calls whose results never come.

use curator_model::pairing;

use crate::{History, View};

impl History<'_> {
    /// Positions of the messages no provider takes, whole or in part, so that no view sends
    /// them as they are: tool results that answer no open call, and assistant messages with
    /// calls a user or system message closed before their results came (see
    /// [`pairing`](curator_model::pairing)); a view leaves such a message out, or keeps its
    /// text without those calls. Calls still waiting at the end of the history are not
    /// counted: they are its present, answered by the next step. Callers that take messages
    /// from users say so with this list. Costs O(history).
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
        let messages = self.messages();
        // The calls still open at the end: the present, not a loss.
        let mut pairing = pairing::pairing(messages);
        pairing.by_ref().for_each(drop);
        let pending = pairing.open();
        let is_pending =
            |pos: usize, call: usize| pending.iter().any(|c| c.message == pos && c.call == call);
        let repaired = View::full(self).repaired();
        let mut shown: Vec<Option<Vec<(String, String, String)>>> = vec![None; messages.len()];
        for entry in repaired.iter() {
            if let Some(slot) = entry.pos.and_then(|pos| shown.get_mut(pos)) {
                *slot = Some(
                    entry
                        .message
                        .tool_calls()
                        .iter()
                        .map(|c| (c.id().to_owned(), c.name().to_owned(), c.arguments().to_owned()))
                        .collect(),
                );
            }
        }
        (0..messages.len())
            .filter(|&pos| {
                let raw = &messages[pos];
                match &shown[pos] {
                    // Left out whole: unless it is nothing but calls still waiting.
                    None => {
                        !raw.has_tool_calls()
                            || (0..raw.tool_calls().len()).any(|call| !is_pending(pos, call))
                    }
                    // Shown without some of its calls (a text kept, its closed call not; one
                    // of two calls sharing an id): each call shown stands for one call only.
                    Some(kept) => {
                        let mut kept = kept.clone();
                        raw.tool_calls().iter().enumerate().any(|(call, c)| {
                            let found = kept.iter().position(|(id, name, arguments)| {
                                id == c.id() && name == c.name() && arguments == c.arguments()
                            });
                            match found {
                                Some(at) => {
                                    kept.swap_remove(at);
                                    false
                                }
                                None => !is_pending(pos, call),
                            }
                        })
                    }
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use curator_model::{Message, ToolCall};

    use crate::History;

    fn calls(text: Option<&str>, ids: &[&str]) -> Message {
        Message::assistant_with_calls(
            text.map(Into::into),
            ids.iter().map(|id| ToolCall::new(*id, "ls", "{}")).collect(),
        )
    }

    #[track_caller]
    fn check(messages: Vec<Message>, expected: &[usize]) {
        assert_eq!(History::from(messages).unsendable(), expected);
    }

    #[test]
    fn a_closed_call_is_named_even_when_its_text_is_kept() {
        // The text of message 1 goes out, its call cannot: it is named.
        check(
            vec![Message::user("go"), calls(Some("thinking aloud"), &["a"]), Message::user("stop")],
            &[1],
        );
        // One of two calls closed before its result: named.
        check(
            vec![
                Message::user("go"),
                calls(None, &["a", "b"]),
                Message::tool_result("a", "x"),
                Message::user("stop"),
            ],
            &[1],
        );
    }

    #[test]
    fn calls_still_waiting_at_the_end_are_not_named() {
        check(vec![Message::user("go"), calls(Some("let me look"), &["a"])], &[]);
        check(
            vec![Message::user("go"), calls(None, &["a", "b"]), Message::tool_result("a", "x")],
            &[],
        );
    }

    #[test]
    fn one_of_two_calls_sharing_an_id_is_named() {
        let twins = Message::assistant_with_calls(
            None,
            vec![ToolCall::new("a", "e", "{}"), ToolCall::new("a", "f", "{}")],
        );
        check(
            vec![
                Message::user("go"),
                twins,
                Message::tool_result("a", "r"),
                Message::assistant("ok"),
            ],
            &[1],
        );
    }

    #[test]
    fn an_orphan_result_is_named() {
        check(
            vec![Message::user("go"), Message::tool_result("x", "y"), Message::assistant("ok")],
            &[1],
        );
    }
}
