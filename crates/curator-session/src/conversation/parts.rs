//! The parts of a conversation's state that one of its files each works on: start marks
//! (`started.rs`), where the user messages are (`keyed.rs`), and the redactor
//! (`redaction.rs`). Their fields are private here: each file changes its part through the
//! part's own methods.

use std::collections::{BTreeSet, HashMap};

use curator_model::{Entry, Message, MessageId, Role};
use curator_strategies::Redactor;

/// A conversation's start marks: whether it keeps them, and the calls of its latest reply
/// marked started (read back on resume).
#[derive(Debug, Default)]
pub(super) struct StartMarks {
    enabled: bool,
    started: BTreeSet<String>,
}

impl StartMarks {
    /// Whether a resumed call may have started: marked, or not known (no marks kept).
    pub(super) fn may_have_started(&self, call_id: &str) -> bool {
        !self.enabled || self.started.contains(call_id)
    }

    /// A new reply: none of its calls has started.
    pub(super) fn new_reply(&mut self) {
        self.started.clear();
    }

    /// Marks are kept from now on.
    pub(super) fn enable(&mut self) {
        self.enabled = true;
    }

    /// The calls of the latest reply known to have started.
    pub(super) fn restore(&mut self, started: BTreeSet<String>) {
        self.started = started;
    }

    /// The calls started so far and `call_ids`.
    pub(super) fn with(&self, call_ids: &[&str]) -> BTreeSet<String> {
        let mut started = self.started.clone();
        started.extend(call_ids.iter().map(|id| (*id).to_owned()));
        started
    }
}

/// Each user message's id and its position in the history, so that a repeated key finds
/// its message (and its answer) without a scan.
#[derive(Debug, Default)]
pub(super) struct UserIds(HashMap<MessageId, usize>);

impl UserIds {
    /// The user messages of a record read back.
    pub(super) fn of(entries: &[Entry]) -> Self {
        Self(
            entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.message.role() == Role::User)
                .map(|(position, e)| (e.id, position))
                .collect(),
        )
    }

    /// A user message recorded at `position`.
    pub(super) fn insert(&mut self, id: MessageId, position: usize) {
        self.0.insert(id, position);
    }

    pub(super) fn position(&self, id: MessageId) -> Option<usize> {
        self.0.get(&id).copied()
    }
}

/// The redactor every message goes through before it is recorded, if any.
#[derive(Clone, Debug, Default)]
pub(super) struct Redaction(Option<Redactor>);

impl Redaction {
    pub(super) fn new(redactor: Redactor) -> Self {
        Self(Some(redactor))
    }

    /// `message` as it is recorded.
    pub(super) fn apply(&self, message: Message) -> Message {
        match &self.0 {
            Some(redactor) => redactor.redact_message(&message).unwrap_or(message),
            None => message,
        }
    }

    /// Whether messages are redacted before they are recorded.
    pub(super) fn is_on(&self) -> bool {
        self.0.is_some()
    }
}
