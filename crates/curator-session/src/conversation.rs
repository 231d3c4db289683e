//! `Conversation`: a sans-IO driver that records every message the moment it exists.

use std::sync::Arc;

use curator_model::{Content, Entry, EvaluationId, Message, PromptRef, Role, ToolCall};
use curator_strategies::{
    ConversationRecorded, CurationContext, Event, EventSink, History, HistoryManager, View,
};

use crate::{Error, Result, SessionStore};

/// What a tool returned: its output, or the error it reported (recorded as a failed result).
pub type ToolOutcome = std::result::Result<Content, Content>;

/// A tool call handed to the caller to run, with whether it is being re-run after a resume
/// (so that tools that must not run twice can check their own idempotency keys).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolContext {
    /// The call.
    pub call: ToolCall,
    /// Whether the call was recorded before the process that resumed it.
    pub is_resume: bool,
}

impl ToolContext {
    /// The call's id, usable as an idempotency key.
    pub fn call_id(&self) -> &str {
        self.call.id()
    }
}

/// What [`Conversation::repair`] does with the calls a crash left unanswered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResumePolicy {
    /// Hand them back to be run again, with `is_resume: true` (the default).
    #[default]
    Rerun,
    /// Answer each with a recorded error result saying the call was interrupted, for tools
    /// that must not run twice.
    AnswerInterrupted,
}

/// Drives one evaluation of an agent loop and records each message in a [`SessionStore`]
/// the moment it exists, before the call that records it returns.
///
/// It never calls a provider or a tool itself (sans-IO): the caller asks for the next
/// request ([`request`](Conversation::request): the record curated by a
/// [`HistoryManager`]; the record itself never changes), hands over the assistant's reply
/// ([`record_assistant`](Conversation::record_assistant), which reports its tool calls), then
/// each tool result as soon as that tool finishes
/// ([`record_tool_result`](Conversation::record_tool_result)). Sync and async callers use the
/// same driver.
///
/// Numbering: the system message is sequence 0, turn 0; each further message takes the next
/// sequence; an assistant reply starts the next turn, and its tool results share it; a user
/// message takes the current turn.
///
/// # Examples
///
/// ```
/// use curator_model::{Message, PromptRef, ToolCall};
/// use curator_session::{Conversation, MemoryStore, SessionStore};
/// use curator_strategies::{CurationContext, SlidingWindow};
///
/// let store = MemoryStore::new();
/// let mut conversation = Conversation::start(&store, PromptRef::new("demo", "agent"), Message::system("Be useful."))?;
/// conversation.add_user("List the files.")?;
///
/// let request = conversation.request(&SlidingWindow::new(20), &CurationContext::default())?.to_messages();
/// assert_eq!(request.len(), 2);
///
/// let calls = conversation.record_assistant(Message::assistant_with_calls(None, vec![ToolCall::new("c1", "ls", "{}")]))?;
/// for call in calls {
///     conversation.record_tool_result(call.id(), Ok("a.txt".into()))?;
/// }
/// conversation.record_assistant(Message::assistant("There is one file: a.txt."))?;
///
/// let record = store.entries(conversation.evaluation_id())?;
/// let numbering: Vec<(u64, u32)> = record.iter().map(|e| (e.sequence, e.turn)).collect();
/// assert_eq!(numbering, [(0, 0), (1, 0), (2, 1), (3, 1), (4, 2)]);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Conversation<S> {
    store: S,
    evaluation: EvaluationId,
    prompt: Option<PromptRef>,
    history: History<'static>,
    next_sequence: u64,
    turn: u32,
    /// Calls of the latest assistant message still waiting for a result, in call order.
    pending: Vec<ToolCall>,
    /// Whether the pending calls were recorded before a resume.
    pending_from_resume: bool,
    events: Option<Arc<dyn EventSink>>,
}

impl<S: SessionStore> Conversation<S> {
    /// Starts a new evaluation: records `system` at sequence 0, turn 0, under `prompt`.
    ///
    /// # Errors
    ///
    /// [`Error::WrongRole`] when `system` is not a system message; a store error.
    pub fn start(store: S, prompt: PromptRef, system: Message) -> Result<Self> {
        if system.role() != Role::System {
            return Err(Error::WrongRole {
                call: "start",
                expected: "system",
                found: system.role(),
            });
        }
        let mut conversation = Self {
            store,
            evaluation: EvaluationId::new(),
            prompt: Some(prompt),
            history: History::new(),
            next_sequence: 0,
            turn: 0,
            pending: Vec::new(),
            pending_from_resume: false,
            events: None,
        };
        conversation.record(system)?;
        Ok(conversation)
    }

    /// Reports a [`ConversationRecorded`] event for every message recorded from now on.
    #[must_use]
    pub fn with_events(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.events = Some(sink);
        self
    }

    /// Reopens the latest evaluation in `store` to continue it.
    ///
    /// The messages are rebuilt from the record, sequence and turn numbers continue where
    /// they stopped, and the calls of the last assistant message that have no result are
    /// pending again: run them ([`tool_contexts`](Conversation::tool_contexts) marks them
    /// `is_resume`) or answer them ([`repair`](Conversation::repair)).
    ///
    /// # Errors
    ///
    /// [`Error::ConversationNotFound`] when the store holds no evaluation;
    /// [`Error::PromptMismatch`] when the record was made for another prompt; a store error.
    pub fn resume(store: S, prompt: &PromptRef) -> Result<Self> {
        let evaluation =
            store.latest_evaluation()?.ok_or(Error::ConversationNotFound { evaluation: None })?;
        Self::resume_evaluation(store, evaluation, prompt)
    }

    /// Reopens a given evaluation; see [`resume`](Conversation::resume).
    ///
    /// # Errors
    ///
    /// As [`resume`](Conversation::resume).
    pub fn resume_evaluation(
        store: S,
        evaluation: EvaluationId,
        prompt: &PromptRef,
    ) -> Result<Self> {
        let entries = store.entries(evaluation)?;
        if entries.is_empty() {
            return Err(Error::ConversationNotFound { evaluation: Some(evaluation) });
        }
        let found = entries.iter().find_map(|e| e.prompt.clone());
        if found.as_ref() != Some(prompt) {
            return Err(Error::PromptMismatch { expected: prompt.clone(), found });
        }
        let next_sequence = entries.last().map_or(0, |e| e.sequence + 1);
        let turn = entries.iter().map(|e| e.turn).max().unwrap_or(0);
        let history = History::from(entries.into_iter().map(|e| e.message).collect::<Vec<_>>());
        let pending = waiting_calls(history.messages());
        Ok(Self {
            store,
            evaluation,
            prompt: Some(prompt.clone()),
            history,
            next_sequence,
            turn,
            pending_from_resume: !pending.is_empty(),
            pending,
            events: None,
        })
    }

    /// Records a user message.
    ///
    /// # Errors
    ///
    /// [`Error::PendingToolCalls`] while calls wait for results; a store error.
    pub fn add_user(&mut self, content: impl Into<Content>) -> Result<()> {
        self.require_no_pending()?;
        self.record(Message::user(content))
    }

    /// The curated view of the record for the next provider call. The record is unchanged.
    ///
    /// # Errors
    ///
    /// The manager's error.
    pub fn request(
        &self,
        manager: &dyn HistoryManager,
        ctx: &CurationContext<'_>,
    ) -> Result<View<'_>> {
        Ok(manager.curate(View::full(&self.history), ctx)?)
    }

    /// Records the assistant's reply (the next turn) and returns its tool calls, which are
    /// now pending.
    ///
    /// # Errors
    ///
    /// [`Error::WrongRole`] for a message that is not the assistant's;
    /// [`Error::PendingToolCalls`] while earlier calls wait for results;
    /// [`Error::DuplicateToolCallId`] for a reply that makes two calls with one id (nothing
    /// is recorded); a store error.
    pub fn record_assistant(&mut self, reply: Message) -> Result<Vec<ToolCall>> {
        if reply.role() != Role::Assistant {
            return Err(Error::WrongRole {
                call: "record_assistant",
                expected: "assistant",
                found: reply.role(),
            });
        }
        self.require_no_pending()?;
        let calls = reply.tool_calls().to_vec();
        for (i, call) in calls.iter().enumerate() {
            if calls[..i].iter().any(|earlier| earlier.id() == call.id()) {
                return Err(Error::DuplicateToolCallId { call_id: call.id().to_owned() });
            }
        }
        self.turn += 1;
        if let Err(e) = self.record(reply) {
            self.turn -= 1;
            return Err(e);
        }
        self.pending.clone_from(&calls);
        self.pending_from_resume = false;
        Ok(calls)
    }

    /// Records the result of one tool call the moment the caller has it; an `Err` outcome is
    /// recorded as a failed result.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownToolCall`] when no pending call has this id; a store error.
    pub fn record_tool_result(&mut self, call_id: &str, outcome: ToolOutcome) -> Result<()> {
        let index = self
            .pending
            .iter()
            .position(|c| c.id() == call_id)
            .ok_or_else(|| Error::UnknownToolCall { call_id: call_id.to_owned() })?;
        let name = self.pending[index].name().to_owned();
        let message = match outcome {
            Ok(content) => Message::tool_result(call_id, content),
            Err(content) => Message::tool_error(call_id, content),
        };
        self.record(message.with_name(name))?;
        self.pending.remove(index);
        if self.pending.is_empty() {
            self.pending_from_resume = false;
        }
        Ok(())
    }

    /// The calls waiting for results, as contexts to run them with.
    pub fn tool_contexts(&self) -> Vec<ToolContext> {
        self.pending
            .iter()
            .map(|call| ToolContext { call: call.clone(), is_resume: self.pending_from_resume })
            .collect()
    }

    /// Applies a [`ResumePolicy`] to the calls waiting for results: returns them to be run
    /// again, or records an error result for each saying it was interrupted (and returns
    /// none).
    ///
    /// # Errors
    ///
    /// A store error.
    pub fn repair(&mut self, policy: ResumePolicy) -> Result<Vec<ToolContext>> {
        match policy {
            ResumePolicy::Rerun => Ok(self.tool_contexts()),
            ResumePolicy::AnswerInterrupted => {
                for call in self.pending.clone() {
                    let text = format!(
                        "The call to `{}` was interrupted before it finished and was not run again; its effects, if any, are unknown.",
                        call.name()
                    );
                    self.record_tool_result(call.id(), Err(text.into()))?;
                }
                Ok(Vec::new())
            }
        }
    }

    /// The calls waiting for results.
    pub fn pending_tool_calls(&self) -> &[ToolCall] {
        &self.pending
    }

    /// The evaluation being recorded.
    pub fn evaluation_id(&self) -> EvaluationId {
        self.evaluation
    }

    /// The prompt identity.
    pub fn prompt(&self) -> Option<&PromptRef> {
        self.prompt.as_ref()
    }

    /// The record's messages (the full history, uncurated).
    pub fn history(&self) -> &History<'static> {
        &self.history
    }

    /// The sequence number the next message will get.
    pub fn next_sequence(&self) -> u64 {
        self.next_sequence
    }

    /// The current turn.
    pub fn turn(&self) -> u32 {
        self.turn
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    fn require_no_pending(&self) -> Result<()> {
        if self.pending.is_empty() {
            Ok(())
        } else {
            Err(Error::PendingToolCalls {
                calls: self.pending.iter().map(|c| c.id().to_owned()).collect(),
            })
        }
    }

    /// Appends one message to the store, then (only once it is stored) to the history.
    fn record(&mut self, message: Message) -> Result<()> {
        let mut builder =
            Entry::builder(self.evaluation, message).sequence(self.next_sequence).turn(self.turn);
        if let Some(prompt) = &self.prompt {
            builder = builder.prompt(prompt.clone());
        }
        let entry = builder.build()?;
        self.store.append(&entry)?;
        if let Some(sink) = &self.events {
            sink.emit(&Event::ConversationRecorded(ConversationRecorded::from_entry(&entry)));
        }
        self.next_sequence += 1;
        self.history.push(entry.message);
        Ok(())
    }
}

/// The calls still open at the end of the record (see [`pairing`](curator_model::pairing)):
/// the ones a crash left without a result.
fn waiting_calls(messages: &[Message]) -> Vec<ToolCall> {
    curator_model::pending_tool_calls(messages).into_iter().cloned().collect()
}

impl<S> std::fmt::Debug for Conversation<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversation")
            .field("evaluation", &self.evaluation)
            .field("prompt", &self.prompt)
            .field("messages", &self.history.len())
            .field("next_sequence", &self.next_sequence)
            .field("turn", &self.turn)
            .field("pending", &self.pending)
            .finish_non_exhaustive()
    }
}
