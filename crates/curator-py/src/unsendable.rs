//! The messages of a growing history that no provider takes, found again only where they can
//! have changed: for the item sessions and the held histories.

use curator::model::{Message, Role};
use curator::strategies::History;

/// The positions of the messages no provider takes (see `History::unsendable`) in a history
/// that grows by appends, looked for again only from the last user or system message (which
/// closes every call before it, so that nothing before it changes status), once per change.
#[derive(Debug, Default)]
pub(crate) struct UnsendableScan {
    found: Vec<usize>,
    /// How many messages the last scan saw (`None`: scan from the start).
    checked: Option<usize>,
    settled: usize,
}

impl UnsendableScan {
    /// Forgets what was found: the next scan reads the history from its start (after a change
    /// that is not an append).
    pub(crate) fn restart(&mut self) {
        *self = Self::default();
    }

    /// The positions in `messages` (the history it scanned before, plus appends) of the
    /// messages no provider takes.
    pub(crate) fn positions(&mut self, messages: &[Message]) -> &[usize] {
        if self.checked != Some(messages.len()) {
            let from = if self.checked.is_some() { self.settled.min(messages.len()) } else { 0 };
            let found = History::from(&messages[from..]).unsendable();
            self.found.retain(|&pos| pos < from);
            self.found.extend(found.into_iter().map(|pos| pos + from));
            self.settled = messages
                .iter()
                .rposition(|m| matches!(m.role(), Role::User | Role::System))
                .map_or(from, |last| last.max(from));
            self.checked = Some(messages.len());
        }
        &self.found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use curator::model::ToolCall;

    #[test]
    fn appends_are_scanned_from_the_last_user_message_and_a_restart_from_the_start() {
        let mut messages = vec![
            Message::user("go"),
            Message::tool_result("nobody", "?"),
            Message::assistant_with_calls(None, vec![ToolCall::new("c1", "ls", "{}")]),
        ];
        let mut scan = UnsendableScan::default();
        // The call at the end waits for its result: the present, not a loss.
        assert_eq!(scan.positions(&messages), [1]);
        messages.push(Message::user("never mind"));
        assert_eq!(scan.positions(&messages), [1, 2]);
        messages.truncate(2);
        scan.restart();
        assert_eq!(scan.positions(&messages), [1]);
    }
}
