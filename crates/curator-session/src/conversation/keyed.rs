//! User messages under the caller's own idempotency key (a job id, a message id): a repeated
//! key is recognised, and answered with its own answer.

use curator_model::{Content, Message, MessageId, Role};
use uuid::Uuid;

use crate::{Action, Conversation, Error, Result, SessionStore};

/// The namespace of the message ids derived from callers' keys.
const KEYED_NAMESPACE: Uuid = Uuid::from_u128(0x6375_7261_746f_7200_6b65_7965_645f_6d73);

/// What [`Conversation::add_user_keyed`] found for a caller's key.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Keyed {
    /// The message was recorded now: run the conversation to get its answer.
    New,
    /// The key was recorded before and its turn is still running (a crash or a redelivery
    /// came before the answer): nothing was recorded; run the conversation to finish it.
    InProgress,
    /// The key was recorded before and answered: nothing was recorded and nothing needs to
    /// run. The answer is the assistant's reply that ended the key's turn.
    Answered(Message),
}

impl<S: SessionStore> Conversation<S> {
    /// The message id that the caller's `key` stands for in this evaluation: derived from
    /// the evaluation and the key (a name-based UUID), so the same key always finds the
    /// same message, and a key reused in another evaluation is another message.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{Conversation, MemoryStore};
    ///
    /// let c = Conversation::open(MemoryStore::new(), "user-42", PromptRef::new("d", "a"), Message::system("s"))?;
    /// assert_eq!(c.message_id_for("job-7"), c.message_id_for("job-7"));
    /// assert_ne!(c.message_id_for("job-7"), c.message_id_for("job-8"));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn message_id_for(&self, key: &str) -> MessageId {
        let evaluation = self.evaluation_id();
        let mut name = Vec::with_capacity(16 + key.len());
        name.extend_from_slice(evaluation.as_uuid().as_bytes());
        name.extend_from_slice(key.as_bytes());
        MessageId::from_uuid(Uuid::new_v5(&KEYED_NAMESPACE, &name))
    }

    /// Records a user message under the caller's own idempotency `key` (any string: a job
    /// id, a chat message id), or says what became of it when the key was recorded before:
    /// still running ([`Keyed::InProgress`]) or answered ([`Keyed::Answered`], with its own
    /// answer, not the latest one). A redelivered job therefore never records its message
    /// twice and never gets another message's answer.
    ///
    /// A new key while an earlier message's turn is still running is refused
    /// ([`Error::TurnInProgress`]): finish that turn (run the conversation) first, then
    /// record it. Nothing is ever dropped silently. (`Agent::ask` does this for you: it
    /// finishes an interrupted turn, then records the new message.)
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{Conversation, Error, Keyed, MemoryStore};
    ///
    /// let store = MemoryStore::new();
    /// let mut c = Conversation::open(&store, "user-42", PromptRef::new("d", "a"), Message::system("s"))?;
    /// assert_eq!(c.add_user_keyed("job-1", "2 + 2?")?, Keyed::New);
    /// // The same job delivered again before it was answered: nothing new is recorded.
    /// assert_eq!(c.add_user_keyed("job-1", "2 + 2?")?, Keyed::InProgress);
    /// // Another job must wait for job-1's turn to end.
    /// assert!(matches!(c.add_user_keyed("job-2", "3 + 3?"), Err(Error::TurnInProgress { .. })));
    /// c.record_assistant(Message::assistant("4"))?;
    /// assert_eq!(c.add_user_keyed("job-2", "3 + 3?")?, Keyed::New);
    /// c.record_assistant(Message::assistant("6"))?;
    /// // Each job gets its own answer, however late it comes back.
    /// assert_eq!(c.add_user_keyed("job-1", "2 + 2?")?, Keyed::Answered(Message::assistant("4")));
    /// assert_eq!(c.answer_to("job-2"), Some(&Message::assistant("6")));
    /// assert_eq!(c.history().len(), 5);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::TurnInProgress`] as above; a store error (the entry is kept: calling again
    /// with the same key and content re-sends it).
    pub fn add_user_keyed(&mut self, key: &str, content: impl Into<Content>) -> Result<Keyed> {
        self.keyed(key, Message::user(content), false)
    }

    /// As [`add_user_keyed`](Conversation::add_user_keyed), but a new key is recorded even
    /// while the turn of an earlier message waits for the model: that turn is given up (its
    /// message stays recorded, unanswered) and the model answers from everything, this
    /// message last. For an agent whose earlier turn ran out of turns. Still refused while
    /// tool calls wait for results ([`Error::PendingToolCalls`]): providers need each call's
    /// result before the next message.
    ///
    /// # Errors
    ///
    /// As [`add_user_keyed`](Conversation::add_user_keyed), with
    /// [`Error::PendingToolCalls`] in place of [`Error::TurnInProgress`].
    pub fn add_user_keyed_after_unanswered(
        &mut self,
        key: &str,
        content: impl Into<Content>,
    ) -> Result<Keyed> {
        self.keyed(key, Message::user(content), true)
    }

    fn keyed(&mut self, key: &str, message: Message, after_unanswered: bool) -> Result<Keyed> {
        check_message_id(key)?;
        let recorded = self.recorded_form(message.clone());
        if is_empty(&recorded) {
            return Err(Error::EmptyMessage);
        }
        let id = self.message_id_for(key);
        if let Some(position) = self.user_ids.position(id) {
            if self.history().messages().get(position).map(Message::content)
                != Some(recorded.content())
            {
                return Err(Error::BadMessageId {
                    key: shortened(key),
                    rule: "was recorded before with another text (an id names one message)"
                        .to_owned(),
                });
            }
            return Ok(match self.answer_at(position) {
                Some(answer) => Keyed::Answered(answer.clone()),
                None => Keyed::InProgress,
            });
        }
        match self.next_step() {
            Action::WaitForUser | Action::Finished(_) | Action::OutOfTurns => {}
            Action::CallModel if after_unanswered => {}
            Action::CallModel | Action::Run(_) if !after_unanswered => {
                return Err(Error::TurnInProgress {
                    key: key.to_owned(),
                    waiting: if self.pending_tool_calls().is_empty() {
                        "the model's reply"
                    } else {
                        "tool results"
                    },
                });
            }
            Action::CallModel | Action::Run(_) => {
                return Err(Error::PendingToolCalls {
                    calls: self.pending_tool_calls().iter().map(|c| c.id().to_owned()).collect(),
                });
            }
        }
        self.add_user_message(message, Some(id))?;
        Ok(Keyed::New)
    }

    /// The answer to the user message recorded under the caller's `key`: the assistant's
    /// reply that ended its turn (the first reply after it that calls no tool, before the
    /// next user message); `None` while its turn runs, or when no message has this key.
    ///
    /// # Examples
    ///
    /// See [`add_user_keyed`](Conversation::add_user_keyed).
    pub fn answer_to(&self, key: &str) -> Option<&Message> {
        let position = self.user_ids.position(self.message_id_for(key))?;
        self.answer_at(position)
    }

    /// The reply that ended the turn of the user message at `position`.
    fn answer_at(&self, position: usize) -> Option<&Message> {
        self.history()
            .messages()
            .iter()
            .skip(position + 1)
            .take_while(|m| m.role() != Role::User)
            .find(|m| m.role() == Role::Assistant && m.tool_calls().is_empty())
    }
}

/// `key` shortened to one short line, for an error.
fn shortened(key: &str) -> String {
    crate::SessionKey::new(key).shortened(40)
}

/// Whether a message holds nothing a provider would take: no text but white space, no part.
fn is_empty(message: &Message) -> bool {
    match message.content() {
        None => true,
        Some(Content::Text(text)) => text.trim().is_empty(),
        Some(Content::Parts(parts)) => parts.is_empty(),
    }
}

/// The rule of session keys, applied to a caller's message id.
fn check_message_id(key: &str) -> Result<()> {
    match crate::SessionKey::new(key).check() {
        Err(Error::BadKey { key, rule }) => Err(Error::BadMessageId { key, rule }),
        other => other,
    }
}
