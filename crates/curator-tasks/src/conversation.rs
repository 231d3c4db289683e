//! `TaskConversation`: a session [`Conversation`] whose requests carry the task history in
//! place of the raw turns it covers.

use std::sync::Arc;

use curator_model::{BoxError, Content, Message, Role, ToolCall};
use curator_session::{
    Action, Conversation, Driver, Outcome, SessionStore, ToolContext, ToolOutcome, drive,
};
use curator_strategies::{CharEstimate, TokenCounter, cut_to_fit};
use serde::{Deserialize, Serialize};

use crate::compact::{Budget, DEFAULT_COMPACTION_THRESHOLD, check_and_compact};
use crate::error::{Error, Result};
use crate::event::TaskEvent;
use crate::history::{StepId, StepTurn, TaskHistory, TurnRole, Visibility};
use crate::names::{CONTEXT_PRESSURE, EXPAND_STEP, SHOW_STEP, SUMMARIZE_STEP, is_task_tool};
use crate::persist::TASK_HISTORY_CHECKPOINT;
use crate::plan::{Plan, PlanSync, sync_plan};
use crate::render::HistorySection;
use crate::tools::{
    Expansion, ToolDefinition, context_pressure, expand_step, show_step, summarize_step,
};

/// The window [`TaskConversation`] measures against until told otherwise, in tokens.
pub const DEFAULT_WINDOW: u64 = 128_000;

/// What a [`TaskConversation`] keeps in its checkpoint: the history, and where the record
/// stands against it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct TaskState {
    history: TaskHistory,
    /// Messages before this sequence are the head, sent as recorded.
    head: u64,
    /// The next sequence to fold into the history.
    synced: u64,
}

/// How a [`TaskConversation`] loop ended: the session's [`Outcome`], carrying the
/// assistant's answer.
pub type TaskOutcome = Outcome<Message>;

/// A [`Conversation`] that keeps a [`TaskHistory`] up to date from what it records, answers
/// the model's `summarize_step`, `expand_step` and `context_pressure` calls itself, and
/// builds each request with the task history in place of the raw turns it covers.
///
/// **What it records.** Everything goes through the conversation's record first, as it
/// would without task history. Each recorded message then becomes turns of the step that
/// receives them (the active step; with none active, the step of the latest turn): a user
/// message a user turn, an assistant reply an assistant turn for its text and a tool-call
/// turn for each call with its arguments, a tool result a tool turn of the step that holds
/// its call.
///
/// **What it sends.** [`request`](TaskConversation::request) is the *head* (the messages
/// recorded before the task history was attached: the system message, and a task message
/// if the caller recorded one first) followed by **one user message** holding the
/// [`HistorySection`] Markdown. The section goes in a user message rather than the system
/// message so that the system message stays byte for byte the same on every call (the
/// provider's prompt cache keeps it), and the section itself puts finished steps first so
/// that only its tail changes between calls. The raw turns after the head are never sent:
/// the section shows them, summarized or in full.
///
/// **The model's tools.** [`tool_definitions`](TaskConversation::tool_definitions) lists
/// the four tools to offer the model. Their calls are answered by the adapter as soon as
/// the reply that makes them is recorded (the answer, or the error's text, is recorded as
/// the result), so [`record_assistant`](TaskConversation::record_assistant),
/// [`tool_contexts`](TaskConversation::tool_contexts) and
/// [`next_step`](TaskConversation::next_step) only ever hand the caller its own tools.
///
/// **Compaction.** Before each request, while the request uses more than the threshold
/// (0.8 of the window by default) the oldest completed step is summarized
/// ([`check_and_compact`]); a step no summary can shorten is left as it is. When the active
/// step alone is too large for the window (a huge tool result), its tool results are cut in
/// the request (largest first, their beginning and end kept with a note of what was cut);
/// the record keeps them whole.
///
/// **Crash and resume.** The history is saved as a checkpoint of the store (named after the
/// evaluation) when it is attached, when the plan changes and after a compaction; every
/// other change is folded again from the record on [`open`](TaskConversation::open), so a
/// resumed conversation renders exactly as it did before the crash.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, PromptRef, ToolCall};
/// use curator::session::{Conversation, MemoryStore};
/// use curator::tasks::{Plan, StepStatus, TaskConversation};
///
/// let store = MemoryStore::new();
/// let conversation = Conversation::open(&store, "job-1", PromptRef::new("demo", "agent"), Message::system("Fix bugs."))?;
/// let plan = Plan::new("Fix the flaky test", [(1, "Reproduce"), (2, "Fix")]).with_status(1, StepStatus::InProgress);
/// let mut agent = TaskConversation::open(conversation, &plan)?;
/// agent.add_user("The parser test fails one run in ten.")?;
/// let calls = agent.record_assistant(Message::assistant_with_calls(None, vec![ToolCall::new("c1", "cargo_test", "{}")]))?;
/// agent.record_tool_result(calls[0].id(), Ok::<_, String>("5 of 50 runs failed"))?;
/// let request = agent.request()?;
/// assert_eq!(request.len(), 2);
/// assert!(request[1].text().ends_with("**Call [cargo_test]**: {}\n**[cargo_test]**: 5 of 50 runs failed"));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TaskConversation<S> {
    conversation: Conversation<S>,
    state: TaskState,
    checkpoint: String,
    section: HistorySection,
    counter: Arc<dyn TokenCounter>,
    max_tokens: u64,
    threshold: Option<f64>,
}

impl<S: SessionStore> TaskConversation<S> {
    /// Attaches a task history to `conversation`: resumes the one saved for its evaluation
    /// (brought up to date with the record, then with `plan`), or starts one from `plan`
    /// (the messages recorded so far become the head, sent as they are). Tool calls of the
    /// four task tools left unanswered by a crash are answered first, against the history
    /// they were made on.
    ///
    /// **`plan` is applied on a resume** as [`sync_plan`](TaskConversation::sync_plan)
    /// applies it: pass the plan as it stands now (the step in progress becomes the active
    /// step, new steps are added, renamed ones renamed; a revised objective is taken and the
    /// turns stay). A plan unchanged since the last sync changes nothing.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPlan`] for a plan that lists a step twice or has two steps in
    /// progress; [`Error::Store`] or [`Error::Document`] when the checkpoint cannot be read or
    /// written; [`Error::Conversation`] when recording an answer fails; the reducer's errors
    /// for a saved history that breaks its rules.
    pub fn open(conversation: Conversation<S>, plan: &Plan) -> Result<Self> {
        let checkpoint = format!("{TASK_HISTORY_CHECKPOINT}/{}", conversation.evaluation_id());
        let saved = conversation
            .store()
            .checkpoint(&checkpoint)
            .map_err(|source| Error::Store { name: checkpoint.clone(), source })?;
        let mut adapter = if let Some(saved) = saved {
            let state: TaskState = serde_json::from_value(saved.document)
                .map_err(|source| Error::Document { name: checkpoint.clone(), source })?;
            state.history.check()?;
            Self::with_state(conversation, state, checkpoint)
        } else {
            let head = conversation.next_sequence();
            let history = seeded(plan)?;
            let state = TaskState { history, head, synced: head };
            let adapter = Self::with_state(conversation, state, checkpoint);
            adapter.save()?;
            adapter
        };
        adapter.fold_new()?;
        adapter.answer_task_tools()?;
        adapter.sync_plan(plan)?;
        Ok(adapter)
    }

    fn with_state(conversation: Conversation<S>, state: TaskState, checkpoint: String) -> Self {
        Self {
            conversation,
            state,
            checkpoint,
            section: HistorySection::new(),
            counter: Arc::new(CharEstimate::default()),
            max_tokens: DEFAULT_WINDOW,
            threshold: Some(DEFAULT_COMPACTION_THRESHOLD),
        }
    }

    /// The same adapter counting tokens with `counter` against a window of `max_tokens`
    /// (for `context_pressure` and compaction; default: [`CharEstimate`] and
    /// [`DEFAULT_WINDOW`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{Conversation, MemoryStore};
    /// use curator::strategies::CharEstimate;
    /// use curator::tasks::{Plan, TaskConversation};
    ///
    /// let conversation = Conversation::open(MemoryStore::new(), "k", PromptRef::new("d", "a"), Message::system("s"))?;
    /// let agent = TaskConversation::open(conversation, &Plan::new("Ship", [(1, "Test")]))?
    ///     .with_window(Arc::new(CharEstimate::default()), 8_000);
    /// assert_eq!(agent.max_tokens(), 8_000);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_window(mut self, counter: Arc<dyn TokenCounter>, max_tokens: u64) -> Self {
        self.counter = counter;
        self.max_tokens = max_tokens;
        self
    }

    /// The same adapter compacting above `threshold` of the window, or never with `None`
    /// (default: [`DEFAULT_COMPACTION_THRESHOLD`]).
    #[must_use]
    pub fn with_compaction(mut self, threshold: Option<f64>) -> Self {
        self.threshold = threshold;
        self
    }

    /// The same adapter rendering with `section` (title, heading level, overrides).
    #[must_use]
    pub fn with_section(mut self, section: HistorySection) -> Self {
        self.section = section;
        self
    }

    /// The window in tokens.
    pub fn max_tokens(&self) -> u64 {
        self.max_tokens
    }

    /// The task history as it stands.
    pub fn history(&self) -> &TaskHistory {
        &self.state.history
    }

    /// The conversation underneath (its record, key, evaluation).
    pub fn conversation(&self) -> &Conversation<S> {
        &self.conversation
    }

    /// The definitions of the four task tools, to offer the model beside the caller's own
    /// (`to_openai`, `to_openai_strict` or `to_anthropic` on each).
    pub fn tool_definitions(&self) -> [ToolDefinition; 4] {
        ToolDefinition::all()
    }

    /// Brings the history in line with a changed plan (see [`sync_plan`]) and saves it.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{Conversation, MemoryStore};
    /// use curator::tasks::{Plan, StepStatus, TaskConversation};
    ///
    /// let conversation = Conversation::open(MemoryStore::new(), "k", PromptRef::new("d", "a"), Message::system("s"))?;
    /// let plan = Plan::new("Ship", [(1, "Test"), (2, "Tag")]).with_status(1, StepStatus::InProgress);
    /// let mut agent = TaskConversation::open(conversation, &plan)?;
    /// agent.sync_plan(&plan.with_status(1, StepStatus::Done).with_status(2, StepStatus::InProgress))?;
    /// assert_eq!(agent.history().active_step_id(), Some(2));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidPlan`] (see [`sync_plan`]); the reducer's errors; [`Error::Store`]
    /// when saving fails.
    pub fn sync_plan(&mut self, plan: &Plan) -> Result<PlanSync> {
        let sync = sync_plan(Some(&self.state.history), plan)?;
        if sync.events.is_empty() {
            return Ok(sync);
        }
        let mut history = self.state.history.clone();
        for event in &sync.events {
            history = history.apply(event)?;
        }
        self.state.history = history;
        self.save()?;
        Ok(sync)
    }

    /// Records a user message; it becomes a user turn.
    ///
    /// # Errors
    ///
    /// [`Error::Conversation`] as [`Conversation::add_user`].
    pub fn add_user(&mut self, content: impl Into<Content>) -> Result<()> {
        self.conversation.add_user(content)?;
        self.fold_new()
    }

    /// Records the assistant's reply, answers its calls of the task tools, and returns the
    /// calls left for the caller to run.
    ///
    /// # Errors
    ///
    /// [`Error::Conversation`] as [`Conversation::record_assistant`] and
    /// [`Conversation::record_tool_result`].
    pub fn record_assistant(&mut self, reply: Message) -> Result<Vec<ToolCall>> {
        let calls = self.conversation.record_assistant(reply)?;
        self.fold_new()?;
        self.answer_task_tools()?;
        Ok(calls.into_iter().filter(|call| !is_task_tool(call.name())).collect())
    }

    /// Records the result of one of the caller's tool calls; it becomes a tool turn of the
    /// step that holds the call.
    ///
    /// # Errors
    ///
    /// [`Error::Conversation`] as [`Conversation::record_tool_result`].
    pub fn record_tool_result<O, E>(
        &mut self,
        call_id: &str,
        outcome: std::result::Result<O, E>,
    ) -> Result<()>
    where
        O: Into<Content>,
        E: Into<Content>,
    {
        self.conversation.record_tool_result(call_id, outcome)?;
        self.fold_new()
    }

    /// The caller's calls waiting for results (the task tools' are answered already).
    pub fn tool_contexts(&self) -> Vec<ToolContext> {
        let mut contexts = self.conversation.tool_contexts();
        contexts.retain(|context| !is_task_tool(context.call.name()));
        contexts
    }

    /// What the caller should do next ([`Conversation::next_step`], the task tools' calls
    /// left out).
    pub fn next_step(&self) -> Action<ToolContext, Message> {
        match self.conversation.next_step() {
            Action::Run(_) => Action::Run(self.tool_contexts()),
            other => other,
        }
    }

    /// The messages of the next provider call: the head, then one user message with the
    /// task history. Compacts first when the request is over the threshold.
    ///
    /// # Errors
    ///
    /// [`Error::WindowExceeded`] when the request is still over the window after
    /// compaction (it is never cut); [`Error::Summarizer`] from compaction; [`Error::Store`]
    /// when saving a compacted history fails.
    pub fn request(&mut self) -> Result<Vec<Message>> {
        self.compact()?;
        self.checked_messages()
    }

    /// The request, fitted to the window: compaction summarizes done steps first; when the
    /// active step alone still makes the request too large, its tool results are cut in
    /// the request (largest first, to their beginning and end with a note of what was cut,
    /// as the never-lost rule cuts the newest unit; the record keeps them whole). Refused
    /// when not even that fits.
    fn checked_messages(&self) -> Result<Vec<Message>> {
        let messages = self.messages();
        let tokens = self.request_tokens(&messages);
        if tokens <= self.max_tokens {
            return Ok(messages);
        }
        if let Some(fitted) = self.fitted_active_step(tokens) {
            return Ok(fitted);
        }
        let history = &self.state.history;
        let active_step = history.active_step_id();
        let active_tokens = active_step.and_then(|id| history.step(id)).map_or(0, |step| {
            self.counter.count_text(&self.section.step_markdown(step, Visibility::Full))
        });
        Err(Error::WindowExceeded {
            tokens,
            max_tokens: self.max_tokens,
            active_step,
            active_tokens,
        })
    }

    /// The request as it stands, without compacting.
    fn messages(&self) -> Vec<Message> {
        self.messages_of(&self.state.history)
    }

    /// The request with `history` as its task history.
    fn messages_of(&self, history: &TaskHistory) -> Vec<Message> {
        let mut messages = self.head().to_vec();
        messages.push(Message::user(self.section.markdown(history)));
        messages
    }

    /// What `messages` cost as a request.
    fn request_tokens(&self, messages: &[Message]) -> u64 {
        messages.iter().map(|m| self.counter.count_message(m)).sum::<u64>()
            + self.counter.reply_priming()
    }

    /// The request with the active step's tool results cut, largest first, until it fits
    /// the window (`tokens` is its size uncut); `None` when cutting them all to their note
    /// does not make it fit.
    fn fitted_active_step(&self, mut tokens: u64) -> Option<Vec<Message>> {
        let mut history = self.state.history.clone();
        let active = history.active_step_id()?;
        let step = history.step(active)?;
        let mut results: Vec<usize> =
            (0..step.turns.len()).filter(|&i| step.turns[i].role == TurnRole::Tool).collect();
        results
            .sort_by_key(|&i| std::cmp::Reverse(self.counter.count_text(&step.turns[i].content)));
        for index in results {
            // A few rounds on one result: the rendering's own tokens move with the cut.
            for _ in 0..4 {
                let over = tokens.saturating_sub(self.max_tokens);
                let step = history.steps.iter_mut().find(|step| step.step_id == active)?;
                let step = Arc::make_mut(step);
                let turn = &mut step.turns[index];
                let own = self.counter.count_text(&turn.content);
                let cut =
                    cut_to_fit(&turn.content, own.saturating_sub(over + 16), self.counter.as_ref());
                if cut.len() >= turn.content.len() {
                    break; // cut as far as it goes: the next result
                }
                turn.content = cut;
                step.plain = std::sync::OnceLock::new();
                let messages = self.messages_of(&history);
                tokens = self.request_tokens(&messages);
                if tokens <= self.max_tokens {
                    return Some(messages);
                }
            }
        }
        None
    }

    fn head(&self) -> &[Message] {
        let messages = self.conversation.history().messages();
        let head = usize::try_from(self.state.head).unwrap_or(usize::MAX).min(messages.len());
        &messages[..head]
    }

    fn head_tokens(&self) -> u64 {
        self.head().iter().map(|message| self.counter.count_text(&message.text())).sum()
    }

    /// Summarizes completed steps while the request is over the threshold.
    fn compact(&mut self) -> Result<()> {
        let (history, summarized) = self.compaction(self.state.history.clone())?;
        if !summarized.is_empty() {
            self.state.history = history;
            self.save()?;
        }
        Ok(())
    }

    /// `history` after automatic compaction, with each step it summarized and the tokens
    /// the request used just before.
    fn compaction(&self, mut history: TaskHistory) -> Result<(TaskHistory, Vec<(StepId, u64)>)> {
        let mut summarized = Vec::new();
        let Some(threshold) = self.threshold else { return Ok((history, summarized)) };
        let other = self.head_tokens();
        loop {
            let budget = Budget::new(self.counter.as_ref(), self.max_tokens)
                .with_threshold(threshold)
                .with_other_tokens(other)
                .with_section(&self.section);
            let event = match check_and_compact(&history, &budget) {
                Ok(Some(event)) => event,
                // Nothing left that a summary would shorten: the request stays as it is.
                Ok(None) | Err(Error::SummaryNotShorter { .. }) => break,
                Err(error) => return Err(error),
            };
            if let TaskEvent::SummarizeStep { step_id, .. } = &event {
                summarized.push((*step_id, budget.used_tokens(&history)));
            }
            history = history.apply(&event)?;
        }
        Ok((history, summarized))
    }

    /// `expansion` when the step it shows in full stays so at the next request (its answer
    /// recorded, automatic compaction done): else [`Error::ExpandOverWindow`], so that the
    /// model is never told a step shows in full that compaction summarizes again first.
    fn stays_expanded(&self, call: &ToolCall, expansion: Expansion) -> Result<Expansion> {
        let step_id = expansion.step.step_id();
        let expanded = self.state.history.apply(&expansion.event)?;
        let answer =
            Message::tool_result(call.id(), expansion.message.as_str()).with_name(EXPAND_STEP);
        let answered = fold(expanded, &answer)?;
        let (_, summarized) = self.compaction(answered)?;
        match summarized.iter().find(|(id, _)| *id == step_id) {
            None => Ok(expansion),
            Some(&(_, needed)) => {
                Err(Error::ExpandOverWindow { step_id, needed, max_tokens: self.max_tokens })
            }
        }
    }

    /// Answers every pending call of a task tool, recording each answer.
    fn answer_task_tools(&mut self) -> Result<()> {
        let calls: Vec<ToolCall> = self
            .conversation
            .pending_tool_calls()
            .iter()
            .filter(|call| is_task_tool(call.name()))
            .cloned()
            .collect();
        for call in calls {
            let outcome = self.answer(&call);
            self.conversation.record_tool_result(call.id(), outcome)?;
            self.fold_new()?;
        }
        Ok(())
    }

    /// A task tool's answer, or its error's text (written for the model).
    fn answer(&self, call: &ToolCall) -> ToolOutcome {
        let history = &self.state.history;
        let answer = match call.name() {
            SUMMARIZE_STEP => summarize_step(history, call.arguments()).map(|done| done.message),
            SHOW_STEP => show_step(history, call.arguments()).map(|shown| shown.message),
            EXPAND_STEP => expand_step(history, call.arguments())
                .and_then(|expansion| self.stays_expanded(call, expansion))
                .map(|expansion| expansion.message),
            _ => {
                let context: Vec<String> =
                    self.messages().iter().map(|message| message.text().into_owned()).collect();
                context_pressure(
                    self.counter.as_ref(),
                    call.arguments(),
                    &context.join("\n\n"),
                    self.max_tokens,
                )
                .and_then(|pressure| {
                    serde_json::to_string(&pressure).map_err(|source| Error::Document {
                        name: CONTEXT_PRESSURE.to_owned(),
                        source,
                    })
                })
            }
        };
        answer.map(Content::from).map_err(|error| Content::from(error.to_string()))
    }

    /// Folds every recorded message not yet in the history into it.
    fn fold_new(&mut self) -> Result<()> {
        let messages = self.conversation.history().messages();
        let start = usize::try_from(self.state.synced).unwrap_or(usize::MAX);
        let mut history = self.state.history.clone();
        for message in messages.iter().skip(start) {
            history = fold(history, message)?;
        }
        self.state.history = history;
        self.state.synced = messages.len() as u64;
        Ok(())
    }

    /// Saves the state as a new version of the checkpoint.
    fn save(&self) -> Result<()> {
        let document = serde_json::to_value(&self.state)
            .map_err(|source| Error::Document { name: self.checkpoint.clone(), source })?;
        self.conversation
            .store()
            .put_checkpoint(&self.checkpoint, &document)
            .map_err(|source| Error::Store { name: self.checkpoint.clone(), source })?;
        Ok(())
    }

    /// Runs an agent loop until the assistant answers without calling a tool, or for at
    /// most `max_turns` replies: the task-history twin of
    /// [`run_blocking`](curator_session::run_blocking). Calls left waiting by a crash are
    /// run first (with `is_resume: true`); then each turn `provider` gets the
    /// [`request`](TaskConversation::request), its reply is recorded, the task tools are
    /// answered and `tool` runs each of the caller's calls. It is the session's one loop
    /// ([`drive`](curator_session::drive)) over this adapter: while only the system message
    /// is recorded it returns [`Outcome::WaitingForUser`] without calling `provider`, and a
    /// task that has finished returns its recorded answer without being sent again.
    ///
    /// # Errors
    ///
    /// [`Error::Provider`] when `provider` fails (what was recorded stays recorded), and the
    /// adapter's own errors.
    pub fn run_blocking<P, T>(
        &mut self,
        provider: P,
        tool: T,
        max_turns: u32,
    ) -> Result<TaskOutcome>
    where
        P: FnMut(&[Message]) -> std::result::Result<Message, BoxError>,
        T: FnMut(&ToolContext) -> ToolOutcome,
    {
        drive(self, (), provider, tool, max_turns)
    }
}

/// Task history as a [`Driver`]: its work is the caller's tool calls (the task tools are
/// answered as their reply is recorded), compaction is its [`prepare`](Driver::prepare), and
/// its request the head and the task history's section.
impl<S: SessionStore> Driver for TaskConversation<S> {
    type Work = ToolContext;
    type WorkResult = ToolOutcome;
    type Output = Message;
    type Reply = Message;
    type Error = Error;
    type Curation<'c> = ();
    const PREPARES: bool = true;

    fn action(&self) -> Action<ToolContext, Message> {
        match self.next_step() {
            Action::Run(contexts) if !contexts.is_empty() => Action::Run(contexts),
            Action::WaitForUser => Action::WaitForUser,
            Action::Finished(answer) => Action::Finished(answer),
            // `CallModel`, or only task tools pending: they are answered as soon as their
            // reply is recorded.
            _ => Action::CallModel,
        }
    }

    fn prepare(&mut self) -> Result<()> {
        self.compact()
    }

    fn build_request(&self, (): ()) -> Result<Vec<Message>> {
        self.checked_messages()
    }

    fn record_reply(&mut self, reply: Message) -> Result<()> {
        self.record_assistant(reply).map(drop)
    }

    fn record_work(&mut self, work: ToolContext, result: ToolOutcome) -> Result<()> {
        self.record_tool_result(work.call_id(), result)
    }

    fn provider_failed(source: BoxError) -> Error {
        Error::Provider { source }
    }
}

#[cfg(feature = "tokio")]
impl<S: SessionStore + 'static> TaskConversation<S> {
    /// [`open`](TaskConversation::open) for async code: opens on a blocking thread and
    /// returns the adapter in an [`AsyncDriver`](curator_session::AsyncDriver), whose
    /// [`call`](curator_session::AsyncDriver::call) runs each step (recording, answering the
    /// task tools, saving) on blocking threads too.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{Conversation, MemoryStore};
    /// use curator::tasks::{Plan, StepStatus, TaskConversation};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
    /// let plan = Plan::new("Ship", [(1, "Test")]).with_status(1, StepStatus::InProgress);
    /// let agent = TaskConversation::open_async(MemoryStore::new(), "job-1", PromptRef::new("d", "a"), Message::system("s"), plan).await?;
    /// agent.call(|a| a.add_user("Run the tests.")).await?;
    /// assert_eq!(agent.with(|a| a.history().next_turn_id()).await, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Conversation::open`] and [`open`](TaskConversation::open).
    pub async fn open_async(
        store: S,
        key: impl Into<curator_session::SessionKey>,
        prompt: curator_model::PromptRef,
        system: Message,
        plan: Plan,
    ) -> Result<curator_session::AsyncDriver<Self>> {
        let key = key.into();
        curator_session::AsyncDriver::open(move || {
            Self::open(Conversation::open(store, key, prompt, system)?, &plan)
        })
        .await
    }

    /// [`run_blocking`](TaskConversation::run_blocking) for async code: the provider and the
    /// tools are awaited, every step that reaches the store runs on blocking threads.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::MemoryStore;
    /// use curator::tasks::{Plan, StepStatus, TaskConversation, TaskOutcome};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
    /// let plan = Plan::new("Ship", [(1, "Test")]).with_status(1, StepStatus::InProgress);
    /// let agent = TaskConversation::open_async(MemoryStore::new(), "job-1", PromptRef::new("d", "a"), Message::system("s"), plan).await?;
    /// agent.call(|a| a.add_user("Run the tests.")).await?;
    /// let outcome = TaskConversation::run_async(
    ///     &agent,
    ///     async |_request: &[Message]| Ok(Message::assistant("Nothing to do.")),
    ///     async |_call: &curator::session::ToolContext| Ok("unused".into()),
    ///     3,
    /// ).await?;
    /// assert!(matches!(outcome, TaskOutcome::Finished(_)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`run_blocking`](TaskConversation::run_blocking).
    pub async fn run_async<P, T>(
        agent: &curator_session::AsyncDriver<Self>,
        provider: P,
        tool: T,
        max_turns: u32,
    ) -> Result<TaskOutcome>
    where
        P: AsyncFnMut(&[Message]) -> std::result::Result<Message, BoxError>,
        T: AsyncFnMut(&ToolContext) -> ToolOutcome,
    {
        curator_session::drive_async(agent, (), provider, tool, max_turns).await
    }
}

/// The history a plan starts.
fn seeded(plan: &Plan) -> Result<TaskHistory> {
    match sync_plan(None, plan)?.events.into_iter().next() {
        Some(TaskEvent::Seed { history }) => Ok(history),
        // `sync_plan` without a history always seeds; an empty history is its equivalent.
        _ => TaskHistory::new(plan.objective.clone(), Vec::<(StepId, String)>::new()),
    }
}

/// The step a new turn goes to: the active step, else the step of the latest turn, else the
/// first step.
fn target(history: &TaskHistory) -> Option<StepId> {
    history.active_step_id().or_else(|| {
        history
            .steps()
            .filter_map(|step| step.turns().last().map(|turn| (turn.turn_id, step.step_id())))
            .max()
            .map(|(_, step_id)| step_id)
            .or_else(|| history.steps().next().map(crate::history::StepHistory::step_id))
    })
}

/// The step holding the tool-call turn of `call_id` (the latest, ids being reusable).
fn step_of_call(history: &TaskHistory, call_id: &str) -> Option<StepId> {
    history
        .steps()
        .filter_map(|step| {
            step.turns()
                .iter()
                .rev()
                .find(|turn| {
                    turn.role == TurnRole::ToolCall && turn.tool_call_id.as_deref() == Some(call_id)
                })
                .map(|turn| (turn.turn_id, step.step_id()))
        })
        .max()
        .map(|(_, step_id)| step_id)
}

/// The history after one recorded message. A task tool's successful answer applies its
/// event first (the handler runs on the history the live answer saw, so a fold from the
/// record repeats exactly what happened).
fn fold(history: TaskHistory, message: &Message) -> Result<TaskHistory> {
    // `None` while the plan has no step: the turn is kept before the plan.
    let step_id = target(&history);
    let append = |history: &TaskHistory, step_id: Option<StepId>, turn: StepTurn| {
        history.apply(&TaskEvent::AppendTurn { step_id, turn })
    };
    match message.role() {
        Role::System => Ok(history),
        Role::User => {
            let turn = StepTurn::new(history.next_turn_id(), TurnRole::User, message.text());
            append(&history, step_id, turn)
        }
        Role::Assistant => {
            let mut history = history;
            let text = message.text();
            if !text.trim().is_empty() {
                let turn = StepTurn::new(history.next_turn_id(), TurnRole::Assistant, text);
                history = append(&history, step_id, turn)?;
            }
            for call in message.tool_calls() {
                let turn = StepTurn::tool_call(
                    history.next_turn_id(),
                    call.name(),
                    call.id(),
                    call.arguments(),
                );
                history = append(&history, step_id, turn)?;
            }
            Ok(history)
        }
        Role::Tool => {
            let call_id = message.tool_call_id().unwrap_or_default();
            let name = message.name().unwrap_or("tool");
            let mut history = history;
            if !message.is_error()
                && let Some(event) = replayed_event(&history, name, call_id)
            {
                history = history.apply(&event)?;
            }
            let step_id = step_of_call(&history, call_id).or(step_id);
            let turn = StepTurn::new(history.next_turn_id(), TurnRole::Tool, message.text())
                .with_tool(name, call_id);
            append(&history, step_id, turn)
        }
    }
}

/// The event a task tool's successful answer stands for, found again from its call's
/// arguments (kept in the history as the tool-call turn).
fn replayed_event(history: &TaskHistory, name: &str, call_id: &str) -> Option<TaskEvent> {
    if !matches!(name, SUMMARIZE_STEP | EXPAND_STEP | SHOW_STEP) {
        return None;
    }
    let step_id = step_of_call(history, call_id)?;
    let arguments = history
        .step(step_id)?
        .turns()
        .iter()
        .rev()
        .find(|turn| {
            turn.role == TurnRole::ToolCall && turn.tool_call_id.as_deref() == Some(call_id)
        })?
        .content
        .clone();
    match name {
        SUMMARIZE_STEP => summarize_step(history, &arguments).ok().map(|done| done.event),
        SHOW_STEP => show_step(history, &arguments).ok().map(|shown| shown.event),
        _ => expand_step(history, &arguments).ok().map(|expansion| expansion.event),
    }
}

impl<S> std::fmt::Debug for TaskConversation<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskConversation")
            .field("conversation", &self.conversation)
            .field("checkpoint", &self.checkpoint)
            .field("head", &self.state.head)
            .field("synced", &self.state.synced)
            .field("active_step", &self.state.history.active_step_id())
            .field("max_tokens", &self.max_tokens)
            .field("threshold", &self.threshold)
            .finish_non_exhaustive()
    }
}
