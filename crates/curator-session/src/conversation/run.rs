//! The plain conversation as a [`Driver`]: what it says comes next (`next_step`), and
//! `run_blocking`, which drives it with a provider closure and a tool closure.

use curator_model::{BoxError, Message, Role};
use curator_strategies::{CurationContext, HistoryManager};

use crate::driver::{Action, Driver, Outcome, drive};
use crate::{Conversation, Error, Result, SessionStore, ToolContext, ToolOutcome};

/// How a [`run_blocking`] loop ended: the [`Outcome`] of a plain conversation, which
/// carries the assistant's answer.
pub type RunOutcome = Outcome<Message>;

/// What the plain [`Conversation`] needs to build a request besides its record: the
/// curation pipeline and its context ([`Driver::Curation`]).
///
/// # Examples
///
/// ```
/// use curator::session::Curation;
/// use curator::strategies::{CurationContext, SlidingWindow};
///
/// let window = SlidingWindow::new(10);
/// let ctx = CurationContext::default();
/// let curation = Curation::new(&window, &ctx);
/// let again = curation; // it is `Copy`: one per run, handed to every request
/// # let _ = (curation, again);
/// ```
#[derive(Clone, Copy)]
pub struct Curation<'c> {
    manager: &'c dyn HistoryManager,
    ctx: &'c CurationContext<'c>,
}

impl<'c> Curation<'c> {
    /// Curates with `manager` in `ctx`.
    pub fn new(manager: &'c dyn HistoryManager, ctx: &'c CurationContext<'c>) -> Self {
        Self { manager, ctx }
    }
}

impl std::fmt::Debug for Curation<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Curation").field("manager", &self.manager.name()).finish_non_exhaustive()
    }
}

impl<S: SessionStore> Conversation<S> {
    /// What to do next, from the record: run the pending tool calls ([`Action::Run`], after
    /// a resume marked [`is_resume`](ToolContext::is_resume)), call the model
    /// ([`Action::CallModel`]: the record ends with a user message or a reply's last tool
    /// result), wait for the user's first message ([`Action::WaitForUser`]: only the system
    /// message is recorded), or nothing ([`Action::Finished`] with the answer: the
    /// assistant's latest reply calls no tool). The one answer [`drive`](crate::drive) and
    /// the agent read; a conversation never says [`Action::OutOfTurns`].
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{Action, Conversation, MemoryStore};
    ///
    /// let store = MemoryStore::new();
    /// let mut c = Conversation::open(&store, "k", PromptRef::new("d", "a"), Message::system("s"))?;
    /// assert_eq!(c.next_step(), Action::WaitForUser);
    /// c.add_user("hi")?;
    /// assert_eq!(c.next_step(), Action::CallModel);
    /// c.record_assistant(Message::assistant("hello"))?;
    /// assert_eq!(c.next_step(), Action::Finished(Message::assistant("hello")));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn next_step(&self) -> Action<ToolContext, Message> {
        if !self.pending_tool_calls().is_empty() {
            return Action::Run(self.tool_contexts());
        }
        match self.history().messages().last() {
            Some(last) => match last.role() {
                Role::User | Role::Tool => Action::CallModel,
                Role::Assistant => Action::Finished(last.clone()),
                Role::System => Action::WaitForUser,
            },
            None => Action::WaitForUser,
        }
    }
}

/// The plain conversation as a [`Driver`]: its work is the tool calls of the assistant's
/// latest reply, and a finished run carries the assistant's answer. It waits for the user
/// ([`Action::WaitForUser`], a run's [`Outcome::WaitingForUser`]) while only the system
/// message is recorded: record the user's message with
/// [`add_user`](Conversation::add_user) and run again.
impl<S: SessionStore> Driver for Conversation<S> {
    type Work = ToolContext;
    type WorkResult = ToolOutcome;
    type Output = Message;
    type Reply = Message;
    type Error = Error;
    type Curation<'c> = Curation<'c>;

    fn action(&self) -> Action<ToolContext, Message> {
        self.next_step()
    }

    fn build_request(&self, curation: Curation<'_>) -> Result<Vec<Message>> {
        Ok(Conversation::request(self, curation.manager, curation.ctx)?.to_messages())
    }

    fn record_reply(&mut self, reply: Message) -> Result<()> {
        self.record_assistant(reply).map(drop)
    }

    fn record_work(&mut self, work: ToolContext, result: ToolOutcome) -> Result<()> {
        self.record_tool_result(work.call_id(), result).map(drop)
    }

    fn provider_failed(source: BoxError) -> Error {
        Error::Provider(source)
    }
}

/// Runs an agent loop on `conversation` until the assistant answers without calling a tool,
/// or for at most `max_turns` replies.
///
/// It does what [`Conversation::next_step`] says, so it can be called on a conversation in
/// any state, freshly opened after a crash or not:
///
/// - [`Action::Run`]: runs the calls still waiting for a result (only those; after a
///   resume with `is_resume: true`) and records each result at once;
/// - [`Action::CallModel`]: curates the record with `manager`, calls `provider` with the
///   view and records its reply (at most `max_turns` times);
/// - [`Action::Finished`]: returns [`RunOutcome::Finished`] with the recorded answer,
///   without calling the provider (a conversation reopened after it finished is not sent
///   again);
/// - [`Action::WaitForUser`]: returns [`RunOutcome::WaitingForUser`] at once.
///
/// To run a reply's parallel calls at once, use [`drive_parallel`](crate::drive_parallel); for a model client, tools and streaming, use
/// `curator_agent::Agent`, which runs on the same loop.
///
/// # Errors
///
/// [`Error::Provider`] when `provider` fails (what was recorded so far stays recorded, so the
/// loop can be resumed), and the conversation's own errors.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, PromptRef, ToolCall};
/// use curator::session::{Conversation, MemoryStore, RunOutcome, run_blocking};
/// use curator::strategies::{CurationContext, SlidingWindow};
///
/// let store = MemoryStore::new();
/// let mut conversation = Conversation::open(&store, "calc-1", PromptRef::new("demo", "calc"), Message::system("Add."))?;
/// conversation.add_user("2 + 2?")?;
/// let outcome = run_blocking(
///     &mut conversation,
///     &SlidingWindow::new(10),
///     &CurationContext::default(),
///     |messages| Ok(if messages.last().map(|m| m.role()) == Some(curator::model::Role::Tool) {
///         Message::assistant(format!("It is {}.", messages.last().map(|m| m.text().into_owned()).unwrap_or_default()))
///     } else {
///         Message::assistant_with_calls(None, vec![ToolCall::new("c1", "add", r#"{"a":2,"b":2}"#)])
///     }),
///     |_ctx| Ok("4".into()),
///     5,
/// )?;
/// assert_eq!(outcome, RunOutcome::Finished(Message::assistant("It is 4.")));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn run_blocking<S, P, T>(
    conversation: &mut Conversation<S>,
    manager: &dyn HistoryManager,
    ctx: &CurationContext<'_>,
    provider: P,
    tool: T,
    max_turns: u32,
) -> Result<RunOutcome>
where
    S: SessionStore,
    P: FnMut(&[Message]) -> std::result::Result<Message, BoxError>,
    T: FnMut(&ToolContext) -> ToolOutcome,
{
    drive(conversation, Curation::new(manager, ctx), provider, tool, max_turns)
}
