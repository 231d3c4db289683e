//! Redaction before recording: secrets never reach the store.

use curator_model::Message;
use curator_strategies::Redactor;

use super::parts::Redaction;
use crate::{Conversation, SessionStore};

impl<S: SessionStore> Conversation<S> {
    /// Redacts every message before it is recorded (user messages, the assistant's replies
    /// and their tool calls' arguments, tool results), so that no secret the redactor finds
    /// is ever written to the store. The default, without it, records what was said and
    /// redacts only what is sent (a [`Redactor`] in the pipeline): the record stays whole,
    /// for audits and replays.
    ///
    /// With it, the record and the requests built from it hold the redacted text. The tool
    /// calls of a reply run in this process with their arguments as the model wrote them;
    /// calls resumed after a crash run with the recorded (redacted) arguments. The system
    /// message recorded at the start is recorded as given: redact it yourself if it holds a
    /// secret.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{Conversation, MemoryStore, SessionStore};
    /// use curator::strategies::Redactor;
    ///
    /// let store = MemoryStore::new();
    /// let mut c = Conversation::open(&store, "k", PromptRef::new("d", "a"), Message::system("s"))?
    ///     .with_redaction(Redactor::new());
    /// c.add_user("my key is sk-proj-abcdefghijklmnopqrstuvwx")?;
    /// let recorded = store.entries(c.evaluation_id())?;
    /// assert_eq!(recorded[1].message.text(), "my key is [REDACTED:openai_key]");
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_redaction(mut self, redactor: Redactor) -> Self {
        self.redaction = Redaction::new(redactor);
        self
    }

    /// `message` as it is recorded: redacted when the conversation redacts before recording.
    pub(crate) fn recorded_form(&self, message: Message) -> Message {
        self.redaction.apply(message)
    }
}
