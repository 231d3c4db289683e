//! `Conversation`: a sans-IO driver that records every message the moment it exists.

use std::sync::Arc;

use curator_model::{Content, Entry, EvaluationId, Message, MessageId, PromptRef, Role, ToolCall};
use curator_strategies::{
    ConversationRecorded, CurationContext, Event, EventSink, History, HistoryManager,
    HistoryManagerExt, View,
};

mod keyed;
mod parts;
mod redaction;
mod run;
mod started;
mod usage;

pub use keyed::Keyed;
pub use run::{Curation, RunOutcome, run_blocking};
pub(crate) use usage::usage_checkpoint;
pub use usage::{CallUsage, recorded_usage};

use parts::{Redaction, StartMarks, UserIds};

use crate::step::{ResumePolicy, ToolContext, next_turn};
use crate::{Appended, Error, Result, SessionKey, SessionStore};

/// Drives one evaluation of an agent loop and records each message in a [`SessionStore`]
/// the moment it exists, before the call that records it returns.
///
/// It never calls a provider or a tool itself (sans-IO): the caller asks what to do next
/// ([`next_step`](Conversation::next_step)), asks for the next request
/// ([`request`](Conversation::request): the record curated by a [`HistoryManager`]; the
/// record itself never changes), hands over the assistant's reply
/// ([`record_assistant`](Conversation::record_assistant), which reports its tool calls), then
/// each tool result as soon as that tool finishes
/// ([`record_tool_result`](Conversation::record_tool_result)). Sync callers use it directly;
/// async callers use `AsyncConversation` (feature `tokio`), which runs the store's I/O off
/// the runtime's threads.
///
/// Every evaluation belongs to a [`SessionKey`] (a thread, user or job id) chosen by the
/// caller: [`open`](Conversation::open) resumes the key's latest evaluation for a prompt or
/// starts one, and resuming never touches another key's evaluations.
///
/// Numbering: the system message is sequence 0, turn 0; each further message takes the next
/// sequence; an assistant reply starts the next turn, and its tool results share it; a user
/// message takes the current turn.
///
/// Records are idempotent: each record call builds its entry (message id and sequence) once
/// and keeps it until the store acknowledges it. When the store fails with an unknown
/// outcome (it may have committed), calling the same record call again with the same
/// message re-sends the same entry: if it was committed after all the store reports
/// [`Appended::Duplicate`] and the driver moves on. A different record call instead first
/// asks the store whether the kept entry landed, and continues after it if it did.
///
/// A record call retried although it succeeded (its answer was lost: an async caller's
/// future dropped by a timeout) records nothing twice either: the same reply again right
/// after it, or the same result for a call already answered, is [`Appended::Duplicate`] (a
/// different result is [`Error::AlreadyAnswered`]). A user message may be sent twice on
/// purpose, so its retries are recognised by id: give it one with
/// [`add_user_with_id`](Conversation::add_user_with_id) and retry with the same id.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, PromptRef, ToolCall};
/// use curator::session::{Conversation, MemoryStore, Action, SessionStore};
/// use curator::strategies::{CurationContext, SlidingWindow};
///
/// let store = MemoryStore::new();
/// let mut conversation = Conversation::open(&store, "user-42", PromptRef::new("demo", "agent"), Message::system("Be useful."))?;
/// assert_eq!(conversation.next_step(), Action::WaitForUser);
/// conversation.add_user("List the files.")?;
/// assert_eq!(conversation.next_step(), Action::CallModel);
///
/// let request = conversation.request(&SlidingWindow::new(20), &CurationContext::default())?.to_messages();
/// assert_eq!(request.len(), 2);
///
/// let calls = conversation.record_assistant(Message::assistant_with_calls(None, vec![ToolCall::new("c1", "ls", "{}")]))?;
/// assert!(matches!(conversation.next_step(), Action::Run(contexts) if contexts.len() == 1));
/// for call in calls {
///     conversation.record_tool_result(call.id(), Ok::<_, String>("a.txt"))?;
/// }
/// conversation.record_assistant(Message::assistant("There is one file: a.txt."))?;
/// assert!(matches!(conversation.next_step(), Action::Finished(_)));
///
/// let record = store.entries(conversation.evaluation_id())?;
/// let numbering: Vec<(u64, u32)> = record.iter().map(|e| (e.sequence, e.turn)).collect();
/// assert_eq!(numbering, [(0, 0), (1, 0), (2, 1), (3, 1), (4, 2)]);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Conversation<S> {
    store: S,
    key: SessionKey,
    evaluation: EvaluationId,
    prompt: PromptRef,
    history: History<'static>,
    next_sequence: u64,
    turn: u32,
    /// Calls of the latest assistant message still waiting for a result, in call order.
    pending: Vec<ToolCall>,
    /// Whether the pending calls were recorded before a resume.
    pending_from_resume: bool,
    /// The entry of a record call the store has not acknowledged (it failed, and may or may
    /// not have committed): re-sent as is when the same call is made again.
    staged: Option<Entry>,
    /// What the store said about the latest acknowledged record call.
    last_appended: Option<Appended>,
    /// Whether this conversation was reopened from the record.
    resumed: bool,
    events: Option<Arc<dyn EventSink>>,
    /// The sequence of the latest assistant reply.
    reply_sequence: Option<u64>,
    /// The claim every append is made under, when the store fences.
    fence: Option<crate::Fence>,
    /// Which calls of the latest reply started (`started.rs`).
    marks: StartMarks,
    /// Where each user message is (`keyed.rs`).
    user_ids: UserIds,
    /// Applied to every message before it is recorded (`redaction.rs`).
    redaction: Redaction,
}

impl<S: SessionStore> Conversation<S> {
    /// Starts a new evaluation under `key`: records `system` at sequence 0, turn 0, under
    /// `prompt`.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{Conversation, MemoryStore, SessionKey, SessionStore};
    ///
    /// let store = MemoryStore::new();
    /// let conversation = Conversation::start(&store, SessionKey::default(), PromptRef::new("demo", "agent"), Message::system("s"))?;
    /// assert_eq!(store.evaluations_of(&SessionKey::default())?.len(), 1);
    /// assert!(!conversation.is_resumed());
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::WrongRole`] when `system` is not a system message; a store error.
    pub fn start(
        store: S,
        key: impl Into<SessionKey>,
        prompt: PromptRef,
        system: Message,
    ) -> Result<Self> {
        if system.role() != Role::System {
            return Err(Error::WrongRole {
                call: "start",
                expected: "system",
                found: system.role(),
            });
        }
        let mut conversation = Self::empty(store, key.into(), EvaluationId::new(), prompt);
        conversation.commit(system, None)?;
        Ok(conversation)
    }

    /// Resumes the latest evaluation of `key` recorded for `prompt`, or starts one with
    /// `system` when there is none: the one call a worker makes at start-up, whether or not it
    /// crashed before. Finding the evaluation is an index lookup in persistent stores. When
    /// an evaluation is resumed, `system` is not recorded again (the recorded one stays).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef, ToolCall};
    /// use curator::session::{Conversation, MemoryStore, Action};
    ///
    /// let store = MemoryStore::new();
    /// let prompt = PromptRef::new("demo", "agent");
    /// let mut first = Conversation::open(&store, "job-1", prompt.clone(), Message::system("s"))?;
    /// first.add_user("go")?;
    /// first.record_assistant(Message::assistant_with_calls(None, vec![ToolCall::new("c1", "run", "{}")]))?;
    /// drop(first); // the worker dies mid-tool-call
    ///
    /// let again = Conversation::open(&store, "job-1", prompt.clone(), Message::system("s"))?;
    /// assert!(again.is_resumed());
    /// assert!(matches!(again.next_step(), Action::Run(calls) if calls[0].is_resume));
    /// // Another key never sees job-1's conversation.
    /// let other = Conversation::open(&store, "job-2", prompt, Message::system("s"))?;
    /// assert_eq!(other.next_step(), Action::WaitForUser);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::BadKey`] for a key every store refuses ([`SessionKey::check`]); otherwise as
    /// [`start`](Conversation::start) and [`resume`](Conversation::resume).
    pub fn open(
        store: S,
        key: impl Into<SessionKey>,
        prompt: PromptRef,
        system: Message,
    ) -> Result<Self> {
        let key = key.into();
        key.check()?;
        match store.latest_evaluation_of(&key, &prompt)? {
            Some(evaluation) => Self::reopen(store, key, evaluation, prompt),
            None => Self::start(store, key, prompt, system),
        }
    }

    /// Reports a [`ConversationRecorded`] event for every message recorded from now on.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{Conversation, MemoryStore};
    /// use curator::strategies::{Event, EventSink};
    ///
    /// #[derive(Default)]
    /// struct Count(Mutex<usize>);
    /// impl EventSink for Count {
    ///     fn emit(&self, _event: &Event) { *self.0.lock().unwrap() += 1; }
    /// }
    /// let count = Arc::new(Count::default());
    /// let store = MemoryStore::new();
    /// let mut c = Conversation::open(&store, "k", PromptRef::new("d", "a"), Message::system("s"))?.with_events(count.clone());
    /// c.add_user("hi")?;
    /// assert_eq!(*count.0.lock().unwrap(), 1);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_events(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.events = Some(sink);
        self
    }

    /// Makes every append from now on under the claim `fence` names
    /// ([`SessionStore::append_batch_fenced`]): once another worker has claimed the session
    /// (this one stalled past its lease), every record call fails with [`Error::Fenced`] and
    /// appends nothing. Use it with stores whose claims carry tokens ([`Claim::fence`](crate::Claim::fence)).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{ClaimStore, Conversation, Error, MemoryStore, SessionKey};
    ///
    /// let store = MemoryStore::new();
    /// let key = SessionKey::new("ticket-7");
    /// let stalled = store.claim(&key, Duration::from_millis(1))?;
    /// let c = Conversation::open(&store, key.clone(), PromptRef::new("d", "a"), Message::system("s"))?;
    /// let mut c = c.with_fence(stalled.fence().unwrap());
    /// c.add_user("first")?;
    /// std::thread::sleep(Duration::from_millis(5)); // the lease runs out: another worker claims
    /// let _taken = store.claim(&key, Duration::from_secs(60))?;
    /// assert!(matches!(c.add_user("second"), Err(Error::Fenced { .. })));
    /// assert_eq!(Conversation::open(&store, key, PromptRef::new("d", "a"), Message::system("s"))?.history().len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_fence(mut self, fence: crate::Fence) -> Self {
        self.fence = Some(fence);
        self
    }

    /// Reopens the latest evaluation of `key` recorded for `prompt` to continue it.
    ///
    /// The messages are rebuilt from the record, sequence and turn numbers continue where
    /// they stopped, and the calls of the last assistant message that have no result are
    /// pending again: run them ([`tool_contexts`](Conversation::tool_contexts) marks them
    /// `is_resume`) or answer them ([`repair`](Conversation::repair)). Evaluations of other
    /// keys, or of other prompts, are never touched.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{Conversation, Error, MemoryStore};
    ///
    /// let store = MemoryStore::new();
    /// let prompt = PromptRef::new("demo", "agent");
    /// Conversation::start(&store, "a", prompt.clone(), Message::system("s"))?;
    /// assert!(Conversation::resume(&store, "a", &prompt).is_ok());
    /// assert!(matches!(Conversation::resume(&store, "b", &prompt), Err(Error::ConversationNotFound { .. })));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::ConversationNotFound`] when the key has no evaluation for the prompt; a store
    /// error.
    pub fn resume(store: S, key: impl Into<SessionKey>, prompt: &PromptRef) -> Result<Self> {
        let key = key.into();
        match store.latest_evaluation_of(&key, prompt)? {
            Some(evaluation) => Self::reopen(store, key, evaluation, prompt.clone()),
            None => Err(Error::ConversationNotFound { key, evaluation: None }),
        }
    }

    /// Reopens a given evaluation of `key`; see [`resume`](Conversation::resume).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{Conversation, Error, MemoryStore};
    ///
    /// let store = MemoryStore::new();
    /// let prompt = PromptRef::new("demo", "agent");
    /// let id = Conversation::start(&store, "a", prompt.clone(), Message::system("s"))?.evaluation_id();
    /// assert!(Conversation::resume_evaluation(&store, "a", id, &prompt).is_ok());
    /// assert!(matches!(Conversation::resume_evaluation(&store, "b", id, &prompt), Err(Error::KeyMismatch { .. })));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::ConversationNotFound`] when the store holds no entry of the evaluation;
    /// [`Error::KeyMismatch`] when it belongs to another key; [`Error::PromptMismatch`] when
    /// it was recorded for another prompt; a store error.
    pub fn resume_evaluation(
        store: S,
        key: impl Into<SessionKey>,
        evaluation: EvaluationId,
        prompt: &PromptRef,
    ) -> Result<Self> {
        let key = key.into();
        let Some(summary) = store.evaluation(evaluation)? else {
            return Err(Error::ConversationNotFound { key, evaluation: Some(evaluation) });
        };
        if summary.key != key {
            return Err(Error::KeyMismatch { evaluation, expected: key, found: summary.key });
        }
        Self::reopen(store, key, evaluation, prompt.clone())
    }

    fn empty(store: S, key: SessionKey, evaluation: EvaluationId, prompt: PromptRef) -> Self {
        Self {
            store,
            key,
            evaluation,
            prompt,
            history: History::new(),
            next_sequence: 0,
            turn: 0,
            pending: Vec::new(),
            pending_from_resume: false,
            staged: None,
            last_appended: None,
            resumed: false,
            events: None,
            reply_sequence: None,
            fence: None,
            marks: StartMarks::default(),
            user_ids: UserIds::default(),
            redaction: Redaction::default(),
        }
    }

    /// Rebuilds the driver from the record of an evaluation known to belong to `key`.
    fn reopen(
        store: S,
        key: SessionKey,
        evaluation: EvaluationId,
        prompt: PromptRef,
    ) -> Result<Self> {
        let entries = store.entries(evaluation)?;
        if entries.is_empty() {
            return Err(Error::ConversationNotFound { key, evaluation: Some(evaluation) });
        }
        let found = entries.iter().find_map(|e| e.prompt.clone());
        if found.as_ref() != Some(&prompt) {
            return Err(Error::PromptMismatch { expected: prompt, found });
        }
        let next_sequence = entries.last().map_or(0, |e| e.sequence + 1);
        let turn = entries.iter().map(|e| e.turn).max().unwrap_or(0);
        let reply_sequence =
            entries.iter().rev().find(|e| e.message.role() == Role::Assistant).map(|e| e.sequence);
        let user_ids = UserIds::of(&entries);
        let history = History::from(entries.into_iter().map(|e| e.message).collect::<Vec<_>>());
        let pending = waiting_calls(history.messages());
        let mut conversation = Self::empty(store, key, evaluation, prompt);
        conversation.history = history;
        conversation.next_sequence = next_sequence;
        conversation.turn = turn;
        conversation.pending_from_resume = !pending.is_empty();
        conversation.pending = pending;
        conversation.resumed = true;
        conversation.reply_sequence = reply_sequence;
        conversation.user_ids = user_ids;
        Ok(conversation)
    }

    /// Records a user message.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{Appended, Conversation, MemoryStore};
    ///
    /// let store = MemoryStore::new();
    /// let mut c = Conversation::open(&store, "k", PromptRef::new("d", "a"), Message::system("s"))?;
    /// assert_eq!(c.add_user("hi")?, Appended::New);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::PendingToolCalls`] while calls wait for results; a store error (the entry is
    /// kept: calling again with the same content re-sends it). A call that succeeded but
    /// whose answer was lost (a dropped future) cannot be told from a second message with
    /// the same text: to retry such calls, use [`add_user_with_id`](Conversation::add_user_with_id).
    pub fn add_user(&mut self, content: impl Into<Content>) -> Result<Appended> {
        self.add_user_message(Message::user(content), None)
    }

    /// Records a user message under a message id the caller chose, so that a retry is
    /// recognised whatever happened to the first try: when the id is already recorded (the
    /// first try succeeded, even if its answer was lost, or was recorded before a crash),
    /// nothing is recorded and the call returns [`Appended::Duplicate`].
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, MessageId, PromptRef};
    /// use curator::session::{Appended, Conversation, MemoryStore};
    ///
    /// let store = MemoryStore::new();
    /// let mut c = Conversation::open(&store, "k", PromptRef::new("d", "a"), Message::system("s"))?;
    /// let id = MessageId::new(); // kept by the caller until the call is acknowledged
    /// assert_eq!(c.add_user_with_id(id, "hi")?, Appended::New);
    /// assert_eq!(c.add_user_with_id(id, "hi")?, Appended::Duplicate); // a retry
    /// assert_eq!(c.history().len(), 2);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`add_user`](Conversation::add_user).
    pub fn add_user_with_id(
        &mut self,
        id: MessageId,
        content: impl Into<Content>,
    ) -> Result<Appended> {
        self.add_user_message(Message::user(content), Some(id))
    }

    pub(crate) fn add_user_message(
        &mut self,
        message: Message,
        id: Option<MessageId>,
    ) -> Result<Appended> {
        let message = self.recorded_form(message);
        if let Some(appended) = self.retry(&message)? {
            return Ok(appended);
        }
        self.require_no_pending()?;
        self.commit(message, id)
    }

    /// The curated view of the record for the next provider call. The record is unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{Conversation, MemoryStore};
    /// use curator::strategies::{CurationContext, Passthrough};
    ///
    /// let store = MemoryStore::new();
    /// let mut c = Conversation::open(&store, "k", PromptRef::new("d", "a"), Message::system("s"))?;
    /// c.add_user("hi")?;
    /// assert_eq!(c.request(&Passthrough, &CurationContext::default())?.len(), 2);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The manager's error.
    pub fn request(
        &self,
        manager: &dyn HistoryManager,
        ctx: &CurationContext<'_>,
    ) -> Result<View<'_>> {
        Ok(manager.curate_history(&self.history, ctx)?)
    }

    /// Records the assistant's reply (the next turn) and returns its tool calls, which are
    /// now pending.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef, ToolCall};
    /// use curator::session::{Conversation, Error, MemoryStore};
    ///
    /// let store = MemoryStore::new();
    /// let mut c = Conversation::open(&store, "k", PromptRef::new("d", "a"), Message::system("s"))?;
    /// let twice = Message::assistant_with_calls(None, vec![ToolCall::new("x", "a", "{}"), ToolCall::new("x", "b", "{}")]);
    /// assert!(matches!(c.record_assistant(twice), Err(Error::DuplicateToolCallId { .. })));
    /// let calls = c.record_assistant(Message::assistant_with_calls(None, vec![ToolCall::new("x", "a", "{}")]))?;
    /// assert_eq!(calls.len(), 1);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::WrongRole`] for a message that is not the assistant's;
    /// [`Error::PendingToolCalls`] while earlier calls wait for results;
    /// [`Error::DuplicateToolCallId`] for a reply that makes two calls with one id (nothing
    /// is recorded); a store error (the entry is kept: calling again with the same reply
    /// re-sends it). The reply recorded last, given again while nothing but results to its
    /// calls follows it, is a retry: nothing is recorded, its calls are returned again and
    /// [`last_appended`](Conversation::last_appended) is [`Appended::Duplicate`].
    pub fn record_assistant(&mut self, reply: Message) -> Result<Vec<ToolCall>> {
        if reply.role() != Role::Assistant {
            return Err(Error::WrongRole {
                call: "record_assistant",
                expected: "assistant",
                found: reply.role(),
            });
        }
        // The calls as the model made them: this process runs them so, whatever redaction
        // before recording keeps of their arguments.
        let calls = reply.tool_calls().to_vec();
        let reply = self.recorded_form(reply);
        if self.retry(&reply)?.is_some() {
            return Ok(calls);
        }
        if self.history.messages().iter().rev().find(|m| m.role() != Role::Tool) == Some(&reply) {
            self.last_appended = Some(Appended::Duplicate);
            return Ok(calls);
        }
        self.require_no_pending()?;
        for (i, call) in calls.iter().enumerate() {
            if calls[..i].iter().any(|earlier| earlier.id() == call.id()) {
                return Err(Error::DuplicateToolCallId { call_id: call.id().to_owned() });
            }
        }
        self.commit(reply, None)?;
        if self.redaction.is_on() {
            self.pending.clone_from(&calls);
        }
        Ok(calls)
    }

    /// Records the result of one tool call the moment the caller has it: any `Result` whose
    /// sides turn into [`Content`] (a `Result<String, String>`, a [`ToolOutcome`](crate::ToolOutcome), ...); an
    /// `Err` is recorded as a failed result.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef, ToolCall};
    /// use curator::session::{Conversation, MemoryStore};
    ///
    /// fn lookup(id: u32) -> Result<String, String> {
    ///     if id == 42 { Ok("paid".into()) } else { Err(format!("no order {id}")) }
    /// }
    /// let store = MemoryStore::new();
    /// let mut c = Conversation::open(&store, "k", PromptRef::new("d", "a"), Message::system("s"))?;
    /// c.record_assistant(Message::assistant_with_calls(None, vec![ToolCall::new("c1", "lookup", "{}"), ToolCall::new("c2", "lookup", "{}")]))?;
    /// c.record_tool_result("c1", lookup(42))?;
    /// c.record_tool_result("c2", lookup(7))?;
    /// assert!(c.history().messages()[3].is_error());
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::UnknownToolCall`] when no call has this id; for a call already answered,
    /// the same result again is a retry (nothing recorded, [`Appended::Duplicate`]) and a
    /// different one is [`Error::AlreadyAnswered`]; a store error (the entry is kept: calling
    /// again with the same outcome re-sends it).
    pub fn record_tool_result<O, E>(
        &mut self,
        call_id: &str,
        outcome: std::result::Result<O, E>,
    ) -> Result<Appended>
    where
        O: Into<Content>,
        E: Into<Content>,
    {
        let message = self.recorded_form(match outcome {
            Ok(content) => Message::tool_result(call_id, content),
            Err(content) => Message::tool_error(call_id, content),
        });
        let Some(call) = self.pending.iter().find(|c| c.id() == call_id) else {
            return self.answered_again(call_id, message);
        };
        let message = message.with_name(call.name().to_owned());
        if let Some(appended) = self.retry(&message)? {
            return Ok(appended);
        }
        // A kept entry that did land may have answered the call meanwhile.
        if !self.pending.iter().any(|c| c.id() == call_id) {
            return self.answered_again(call_id, message);
        }
        self.commit(message, None)
    }

    /// A result for a call that is not pending: a retry when the call's recorded result is
    /// the same, else [`Error::AlreadyAnswered`], or [`Error::UnknownToolCall`] when no
    /// result for it is recorded.
    fn answered_again(&mut self, call_id: &str, message: Message) -> Result<Appended> {
        let recorded = self
            .history
            .messages()
            .iter()
            .rev()
            .find(|m| m.role() == Role::Tool && m.tool_call_id() == Some(call_id));
        let Some(recorded) = recorded else {
            return Err(Error::UnknownToolCall { call_id: call_id.to_owned() });
        };
        let message = match recorded.name() {
            Some(name) => message.with_name(name.to_owned()),
            None => message,
        };
        if *recorded == message {
            self.last_appended = Some(Appended::Duplicate);
            Ok(Appended::Duplicate)
        } else {
            Err(Error::AlreadyAnswered { call_id: call_id.to_owned() })
        }
    }

    /// The calls waiting for results, as contexts to run them with.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef, ToolCall};
    /// use curator::session::{Conversation, MemoryStore};
    ///
    /// let store = MemoryStore::new();
    /// let mut c = Conversation::open(&store, "k", PromptRef::new("d", "a"), Message::system("s"))?;
    /// c.record_assistant(Message::assistant_with_calls(None, vec![ToolCall::new("c1", "ls", "{}")]))?;
    /// assert_eq!(c.tool_contexts()[0].call_id(), "c1");
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn tool_contexts(&self) -> Vec<ToolContext> {
        self.pending
            .iter()
            .map(|call| ToolContext {
                call: call.clone(),
                is_resume: self.pending_from_resume,
                started: self.pending_from_resume && self.marks.may_have_started(call.id()),
            })
            .collect()
    }

    /// Applies a [`ResumePolicy`] to the calls waiting for results: returns them to be run
    /// again, or records an error result for each saying it was interrupted (and returns
    /// none).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef, ToolCall};
    /// use curator::session::{Conversation, MemoryStore, Action, ResumePolicy};
    ///
    /// let store = MemoryStore::new();
    /// let prompt = PromptRef::new("d", "a");
    /// let mut c = Conversation::open(&store, "k", prompt.clone(), Message::system("s"))?;
    /// c.record_assistant(Message::assistant_with_calls(None, vec![ToolCall::new("c1", "pay", "{}")]))?;
    /// let mut resumed = Conversation::resume(&store, "k", &prompt)?;
    /// assert!(resumed.repair(ResumePolicy::AnswerInterrupted)?.is_empty());
    /// assert_eq!(resumed.next_step(), Action::CallModel);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// A store error.
    pub fn repair(&mut self, policy: ResumePolicy) -> Result<Vec<ToolContext>> {
        match policy {
            ResumePolicy::Rerun => Ok(self.tool_contexts()),
            ResumePolicy::AnswerInterrupted => {
                for context in self.tool_contexts().into_iter().filter(|c| c.started) {
                    let text = format!(
                        "The call to `{}` was interrupted before it finished and was not run again; its effects, if any, are unknown.",
                        context.call.name()
                    );
                    self.record_tool_result(context.call_id(), Err::<Content, _>(text))?;
                }
                Ok(self.tool_contexts())
            }
        }
    }

    /// The calls waiting for results.
    pub fn pending_tool_calls(&self) -> &[ToolCall] {
        &self.pending
    }

    /// The session key the evaluation belongs to.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{Conversation, MemoryStore};
    ///
    /// let store = MemoryStore::new();
    /// let c = Conversation::open(&store, "user-42", PromptRef::new("d", "a"), Message::system("s"))?;
    /// assert_eq!(c.key().as_str(), "user-42");
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn key(&self) -> &SessionKey {
        &self.key
    }

    /// The evaluation being recorded.
    pub fn evaluation_id(&self) -> EvaluationId {
        self.evaluation
    }

    /// The prompt identity every entry of the evaluation carries.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{Conversation, MemoryStore};
    ///
    /// let c = Conversation::open(MemoryStore::new(), "k", PromptRef::new("d", "a"), Message::system("s"))?;
    /// assert_eq!(c.prompt(), &PromptRef::new("d", "a"));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn prompt(&self) -> &PromptRef {
        &self.prompt
    }

    /// Whether this conversation was reopened from the record (by
    /// [`open`](Conversation::open) or a `resume`) rather than started.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{Conversation, MemoryStore};
    ///
    /// let store = MemoryStore::new();
    /// let prompt = PromptRef::new("d", "a");
    /// assert!(!Conversation::open(&store, "k", prompt.clone(), Message::system("s"))?.is_resumed());
    /// assert!(Conversation::open(&store, "k", prompt, Message::system("s"))?.is_resumed());
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_resumed(&self) -> bool {
        self.resumed
    }

    /// What the store reported for the latest acknowledged record call:
    /// [`Appended::Duplicate`] when a retried entry had been committed already.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{Appended, Conversation, MemoryStore};
    ///
    /// let store = MemoryStore::new();
    /// let c = Conversation::open(&store, "k", PromptRef::new("d", "a"), Message::system("s"))?;
    /// assert_eq!(c.last_appended(), Some(Appended::New));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn last_appended(&self) -> Option<Appended> {
        self.last_appended
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

    /// The sequence of the latest assistant reply, if any.
    fn reply_sequence(&self) -> Option<u64> {
        self.reply_sequence
    }

    /// Writes one of this conversation's checkpoints (its start marks, its usage): under a
    /// fence, with [`SessionStore::put_checkpoint_fenced`], so that a worker whose claim was
    /// taken over writes nothing.
    ///
    /// # Errors
    ///
    /// [`Error::Fenced`] when the claim was taken over or ended, or the fence names another
    /// session (nothing is written); a store error.
    fn put_own_checkpoint(&self, name: &str, document: &serde_json::Value) -> Result<u64> {
        match &self.fence {
            // The check and the write are one transaction: no claim can be taken between
            // them, so a worker taken over never overwrites the new holder's checkpoint, and
            // one whose checkpoint is written wrote it before a new holder could read it.
            Some(fence) => {
                // The store checks the claim on the fence's key, so a fence of another
                // session would guard nothing here: refused, as every fenced append of this
                // conversation is.
                if fence.key != *self.key() {
                    return Err(Error::Fenced {
                        key: self.key().clone(),
                        token: fence.token,
                        current: None,
                    });
                }
                self.store().put_checkpoint_fenced(name, document, fence)
            }
            None => self.store().put_checkpoint(name, document),
        }
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

    /// Settles an entry kept from a failed record call before the next one. The same
    /// message again is a retry: the kept entry is re-sent as is, and `Some` says what the
    /// store did. Any other message first asks the store whether the kept entry landed: if it
    /// did the driver moves past it, if not it is dropped; then `None` lets the caller record
    /// its message.
    fn retry(&mut self, message: &Message) -> Result<Option<Appended>> {
        let Some(staged) = self.staged.take() else { return Ok(None) };
        if &staged.message == message {
            return self.send(staged, true).map(Some);
        }
        let recorded = match self.store.entries(self.evaluation) {
            Ok(entries) => entries.iter().any(|e| e.id == staged.id),
            Err(e) => {
                self.staged = Some(staged);
                return Err(e);
            }
        };
        if recorded {
            self.last_appended = Some(Appended::Duplicate);
            self.apply(staged);
        }
        Ok(None)
    }

    /// Builds the entry of a new message (the next sequence; the turn by [`next_turn`]; the caller's message id, if it gave one) and sends it.
    fn commit(&mut self, message: Message, id: Option<MessageId>) -> Result<Appended> {
        let previous = self.history.messages().last().map(Message::role);
        let turn = next_turn(self.turn, previous, message.role());
        let mut builder = Entry::builder(self.evaluation, message)
            .sequence(self.next_sequence)
            .turn(turn)
            .prompt(self.prompt.clone());
        if let Some(id) = id {
            builder = builder.id(id);
        }
        self.send(builder.build()?, false)
    }

    /// Appends an entry to the store, then (only once it is stored) applies it; on error the
    /// entry is kept for a retry. A duplicate is applied only when it is a kept entry sent
    /// again (`staged`: the failed call had committed it); a new entry whose caller-given id is
    /// recorded already was applied when that id was first recorded (or read on resume).
    fn send(&mut self, entry: Entry, staged: bool) -> Result<Appended> {
        let appended = match &self.fence {
            Some(fence) => self
                .store
                .append_batch_fenced(&self.key, std::slice::from_ref(&entry), fence)
                .map(|outcomes| outcomes.first().copied().unwrap_or(Appended::Duplicate)),
            None => self.store.append(&self.key, &entry),
        };
        match appended {
            Ok(appended) => {
                self.last_appended = Some(appended);
                if appended == Appended::New || staged {
                    self.apply(entry);
                }
                Ok(appended)
            }
            Err(e) => {
                self.staged = Some(entry);
                Err(e)
            }
        }
    }

    /// Moves the driver past an entry the store holds.
    fn apply(&mut self, entry: Entry) {
        match entry.message.role() {
            Role::Assistant => {
                self.pending = entry.message.tool_calls().to_vec();
                self.pending_from_resume = false;
                self.reply_sequence = Some(entry.sequence);
                self.marks.new_reply();
            }
            Role::Tool => {
                if let Some(id) = entry.message.tool_call_id()
                    && let Some(index) = self.pending.iter().position(|c| c.id() == id)
                {
                    self.pending.remove(index);
                }
                if self.pending.is_empty() {
                    self.pending_from_resume = false;
                }
            }
            Role::User => {
                self.user_ids.insert(entry.id, self.history.len());
            }
            Role::System => {}
        }
        if let Some(sink) = &self.events {
            sink.emit(&Event::ConversationRecorded(ConversationRecorded::from_entry(&entry)));
        }
        self.turn = entry.turn;
        self.next_sequence = entry.sequence + 1;
        self.history.push(entry.message);
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
            .field("key", &self.key)
            .field("evaluation", &self.evaluation)
            .field("prompt", &self.prompt)
            .field("messages", &self.history.len())
            .field("next_sequence", &self.next_sequence)
            .field("turn", &self.turn)
            .field("pending", &self.pending)
            .field("staged", &self.staged.as_ref().map(|e| e.sequence))
            .finish_non_exhaustive()
    }
}
