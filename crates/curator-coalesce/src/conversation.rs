//! `CoalescedConversation`: a session [`Conversation`] for a code-executing agent, whose
//! requests are built from the turns by a [`Compression`].

use curator_model::{BoxError, Message, Role};
use curator_session::{Action, Conversation, Driver, Outcome, SessionStore, drive};

use crate::compression::{Compression, execution_report};
use crate::error::{Error, Result};
use crate::namespace::Run;
use crate::render::{mission_and_namespaces, turns_left};
use crate::turn::{Turn, TurnDraft, Turns};

/// The checkpoint name prefix under which a [`CoalescedConversation`] keeps its turns (the
/// evaluation id follows it).
pub const TURNS_CHECKPOINT: &str = "curator.coalesce.turns";

/// What the caller's executor made of a program: the turn, and whether the run goes on.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Executed {
    /// The program ran (or failed); the model gets another turn.
    Continue(TurnDraft),
    /// The program gave the run's answer: no further turn.
    Finished(TurnDraft),
}

/// How a [`CoalescedConversation`] loop ended: the session's [`Outcome`], carrying the turn
/// after which the executor said the run is finished ([`Outcome::Finished`]), or
/// [`Outcome::MaxTurns`] when every turn of the run's budget was taken.
pub type CoalescedOutcome = Outcome<Box<Turn>>;

/// A [`Conversation`] for an agent that answers with programs: each reply is recorded, the
/// caller runs its program and hands back the [`TurnDraft`], and every request is built from
/// the turns by a [`Compression`] (by default
/// [`SingleUserCoalesced`](crate::SingleUserCoalesced): the static SYSTEM message and one
/// USER message).
///
/// **The record** reads like the full history: the system message, a user message with the
/// mission and the `tool/` and `data/` namespaces, then per turn the model's reply as it
/// came and a user message with what its program did (`Result:` or `Error:`, the tool calls,
/// the output). **The request** is never the record: it is
/// [`Compression::to_messages`] of the run and the turns.
///
/// **Crash and resume.** The turns (values, memory, tool calls, and whether the executor
/// said the run is finished after one: [`Turn::ends_run`]) are saved as a checkpoint of
/// the store, named after the evaluation, *before* the execution is recorded; reopening
/// reads them back, records an execution the crash left unrecorded, and hands back a reply
/// whose program had not run yet ([`pending_program`](CoalescedConversation::pending_program)).
/// A run reopened after it finished is finished: [`run_blocking`](Self::run_blocking)
/// returns its last turn at once, without calling the model.
///
/// # Examples
///
/// ```
/// use curator::coalesce::{CoalescedConversation, Run, SingleUserCoalesced, Value};
/// use curator::model::{Message, PromptRef};
/// use curator::session::{Conversation, MemoryStore};
///
/// let run = Run::new("You write PTC-Lisp.", "Add 1 and 2");
/// let conversation = Conversation::open(MemoryStore::new(), "job-1", PromptRef::new("demo", "lisp"), Message::system(run.system.as_str()))?;
/// let mut agent = CoalescedConversation::open(conversation, run, SingleUserCoalesced::default())?;
/// assert_eq!(agent.request()[1].text(), "Add 1 and 2\n\nTurns left: 5");
/// let mut draft = agent.record_reply(Message::assistant("```clojure\n(+ 1 2)\n```"))?;
/// assert_eq!(draft.program, "(+ 1 2)");
/// draft.result = Some(curator::coalesce::TurnResult::Returned(Value::from(3)));
/// agent.record_execution(draft)?;
/// assert_eq!(agent.request()[1].text(), "Add 1 and 2\n\nTurns left: 4");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct CoalescedConversation<S> {
    conversation: Conversation<S>,
    run: Run,
    turns: Turns,
    compression: Box<dyn Compression>,
    checkpoint: String,
}

impl<S: SessionStore> CoalescedConversation<S> {
    /// Attaches a run to `conversation` (whose system message should be `run.system`):
    /// reads back the turns saved for its evaluation, or starts the run by recording the
    /// mission and namespaces as the first user message.
    ///
    /// # Errors
    ///
    /// [`Error::Checkpoint`] when the saved turns cannot be read; [`Error::TurnsBehindRecord`]
    /// when the record holds executions the checkpoint lacks, [`Error::TurnsAheadOfRecord`]
    /// when the checkpoint holds turns the record cannot account for (more than the one a
    /// crash can leave); [`Error::Conversation`] when recording fails.
    pub fn open(
        conversation: Conversation<S>,
        run: Run,
        compression: impl Compression + 'static,
    ) -> Result<Self> {
        let checkpoint = format!("{TURNS_CHECKPOINT}/{}", conversation.evaluation_id());
        let saved = conversation.store().checkpoint(&checkpoint).map_err(|source| {
            Error::Checkpoint { name: checkpoint.clone(), action: "read", source: Box::new(source) }
        })?;
        let turns = match saved {
            Some(saved) => serde_json::from_value::<Turns>(saved.document).map_err(|source| {
                Error::Checkpoint {
                    name: checkpoint.clone(),
                    action: "read",
                    source: Box::new(source),
                }
            })?,
            None => Turns::new(),
        };
        let mut adapter =
            Self { conversation, run, turns, compression: Box::new(compression), checkpoint };
        if adapter.conversation.next_step() == Action::WaitForUser {
            let opening = mission_and_namespaces(&adapter.run);
            adapter.conversation.add_user(opening.trim_end())?;
        }
        adapter.repair()?;
        Ok(adapter)
    }

    /// The same conversation rendering with another compression.
    #[must_use]
    pub fn with_compression(mut self, compression: impl Compression + 'static) -> Self {
        self.compression = Box::new(compression);
        self
    }

    /// Records an execution the checkpoint holds and the record lacks (a crash between the
    /// two writes).
    fn repair(&mut self) -> Result<()> {
        let recorded = self.recorded_executions();
        match self.turns.len() {
            saved if saved == recorded => Ok(()),
            saved if saved == recorded + 1 && self.pending_reply().is_some() => {
                if let Some(turn) = self.turns.last() {
                    self.conversation.add_user(execution_report(turn))?;
                }
                Ok(())
            }
            saved if saved < recorded => {
                Err(Error::TurnsBehindRecord { name: self.checkpoint.clone(), recorded, saved })
            }
            saved => {
                Err(Error::TurnsAheadOfRecord { name: self.checkpoint.clone(), recorded, saved })
            }
        }
    }

    /// User messages after the opening one: one per recorded execution.
    fn recorded_executions(&self) -> usize {
        let users = self
            .conversation
            .history()
            .messages()
            .iter()
            .filter(|message| message.role() == Role::User)
            .count();
        users.saturating_sub(1)
    }

    /// The latest reply when its program has not been executed yet.
    fn pending_reply(&self) -> Option<&Message> {
        self.conversation
            .history()
            .messages()
            .last()
            .filter(|message| message.role() == Role::Assistant)
    }

    /// The run.
    pub fn run(&self) -> &Run {
        &self.run
    }

    /// The turns so far.
    pub fn turns(&self) -> &Turns {
        &self.turns
    }

    /// The conversation underneath (its record, key, evaluation).
    pub fn conversation(&self) -> &Conversation<S> {
        &self.conversation
    }

    /// How many turns the run has left.
    pub fn turns_left(&self) -> u64 {
        turns_left(&self.run, &self.turns)
    }

    /// The messages of the next provider call, built by the compression from the run and
    /// the turns.
    pub fn request(&self) -> Vec<Message> {
        self.compression.to_messages(&self.run, &self.turns)
    }

    /// Records the model's reply and returns the draft of its turn: the whole reply as the
    /// raw response and the program extracted from it ([`extract_program`]). The caller
    /// runs the program, fills in the result, prints, tool calls and memory, and hands the
    /// draft to [`record_execution`](CoalescedConversation::record_execution).
    ///
    /// # Errors
    ///
    /// [`Error::ToolCallsInReply`] for a reply that calls provider tools;
    /// [`Error::ReplyPending`] while the previous reply's program has not been executed
    /// (its execution comes first; see [`pending_program`](Self::pending_program));
    /// [`Error::Conversation`] when recording fails. A refused reply is not recorded.
    pub fn record_reply(&mut self, reply: Message) -> Result<TurnDraft> {
        if !reply.tool_calls().is_empty() {
            return Err(Error::ToolCallsInReply { calls: reply.tool_calls().len() });
        }
        if self.pending_reply().is_some() {
            return Err(Error::ReplyPending { turn: self.turns.len() + 1 });
        }
        let text = reply.text().into_owned();
        self.conversation.record_assistant(reply)?;
        Ok(draft_of(&text))
    }

    /// The draft of a recorded reply whose program has not been executed (after a crash).
    pub fn pending_program(&self) -> Option<TurnDraft> {
        self.pending_reply().map(|reply| draft_of(&reply.text()))
    }

    /// Records what a program did: the turn joins the run's turns (saved first), then the
    /// execution report is recorded as the next user message.
    ///
    /// # Errors
    ///
    /// [`Error::NoPendingReply`] when no recorded reply waits for its execution (record the
    /// reply with [`record_reply`](Self::record_reply) first; nothing is saved);
    /// [`Error::Checkpoint`] when the turns cannot be saved; [`Error::Conversation`] when
    /// recording fails.
    pub fn record_execution(&mut self, draft: TurnDraft) -> Result<&Turn> {
        self.record_turn(draft, false)
    }

    /// [`record_execution`](Self::record_execution), the turn marked as the run's last when
    /// `ends_run`: the mark is saved with the turns, so a run reopened after it finished
    /// says so at once.
    fn record_turn(&mut self, draft: TurnDraft, ends_run: bool) -> Result<&Turn> {
        // Checked before anything is written: a refused execution leaves no trace.
        let executions = self.recorded_executions();
        if self.pending_reply().is_none() {
            return Err(Error::NoPendingReply { executions });
        }
        if self.turns.len() != executions {
            // `open` repairs the one gap a crash can leave; any other is not ours to fill.
            return Err(if self.turns.len() < executions {
                Error::TurnsBehindRecord {
                    name: self.checkpoint.clone(),
                    recorded: executions,
                    saved: self.turns.len(),
                }
            } else {
                Error::TurnsAheadOfRecord {
                    name: self.checkpoint.clone(),
                    recorded: executions,
                    saved: self.turns.len(),
                }
            });
        }
        let mut turns = self.turns.clone();
        turns.push(draft);
        if ends_run {
            turns.end_run();
        }
        let document = serde_json::to_value(&turns).map_err(|source| Error::Checkpoint {
            name: self.checkpoint.clone(),
            action: "written",
            source: Box::new(source),
        })?;
        self.conversation.store().put_checkpoint(&self.checkpoint, &document).map_err(
            |source| Error::Checkpoint {
                name: self.checkpoint.clone(),
                action: "written",
                source: Box::new(source),
            },
        )?;
        self.turns = turns;
        let turn = self.turns.last().ok_or(Error::NoPendingReply { executions })?;
        self.conversation.add_user(execution_report(turn))?;
        Ok(turn)
    }

    /// Runs the agent until the executor says it is finished or the turns run out: a
    /// pending program (after a crash) is executed first; then each turn `provider` gets the
    /// [`request`](CoalescedConversation::request), its reply is recorded, and `execute`
    /// runs the program.
    ///
    /// # Errors
    ///
    /// [`Error::Provider`] and [`Error::Execution`] when the closures fail (what was
    /// recorded stays recorded), and the adapter's own errors.
    pub fn run_blocking<P, X>(&mut self, provider: P, mut execute: X) -> Result<CoalescedOutcome>
    where
        P: FnMut(&[Message]) -> std::result::Result<Message, BoxError>,
        X: FnMut(TurnDraft) -> std::result::Result<Executed, BoxError>,
    {
        drive(self, (), provider, |draft: &TurnDraft| execute(draft.clone()), u32::MAX)
    }
}

/// The coalesced conversation as a [`Driver`]: its work is the program of the model's
/// latest reply, run by the caller's executor, and a finished run carries the turn after
/// which the executor said so; the run's own budget of turns bounds it.
impl<S: SessionStore> Driver for CoalescedConversation<S> {
    type Work = TurnDraft;
    type WorkResult = std::result::Result<Executed, BoxError>;
    type Output = Box<Turn>;
    type Reply = Message;
    type Error = Error;
    type Curation<'c> = ();

    fn action(&self) -> Action<TurnDraft, Box<Turn>> {
        if let Some(draft) = self.pending_program() {
            Action::Run(vec![draft])
        } else if let Some(turn) = self.turns.finished() {
            Action::Finished(Box::new(turn.clone()))
        } else if self.turns_left() == 0 {
            Action::OutOfTurns
        } else {
            Action::CallModel
        }
    }

    fn build_request(&self, (): ()) -> Result<Vec<Message>> {
        Ok(CoalescedConversation::request(self))
    }

    fn record_reply(&mut self, reply: Message) -> Result<()> {
        CoalescedConversation::record_reply(self, reply).map(drop)
    }

    fn record_work(
        &mut self,
        _draft: TurnDraft,
        result: std::result::Result<Executed, BoxError>,
    ) -> Result<()> {
        let turn = u32::try_from(self.turns.len() + 1).unwrap_or(u32::MAX);
        match result.map_err(|source| Error::Execution { turn, source })? {
            Executed::Continue(done) => self.record_turn(done, false).map(drop),
            Executed::Finished(done) => self.record_turn(done, true).map(drop),
        }
    }

    fn provider_failed(source: BoxError) -> Error {
        Error::Provider { source }
    }
}

#[cfg(feature = "tokio")]
impl<S: SessionStore + 'static> CoalescedConversation<S> {
    /// [`open`](CoalescedConversation::open) for async code: opens on a blocking thread and
    /// returns the adapter in an [`AsyncDriver`](curator_session::AsyncDriver), whose
    /// [`call`](curator_session::AsyncDriver::call) runs each record on blocking threads too.
    ///
    /// # Errors
    ///
    /// As [`Conversation::open`] and [`open`](CoalescedConversation::open).
    pub async fn open_async(
        store: S,
        key: impl Into<curator_session::SessionKey>,
        prompt: curator_model::PromptRef,
        run: Run,
        compression: impl Compression + 'static,
    ) -> Result<curator_session::AsyncDriver<Self>> {
        let key = key.into();
        curator_session::AsyncDriver::open(move || {
            let system = Message::system(run.system.as_str());
            Self::open(Conversation::open(store, key, prompt, system)?, run, compression)
        })
        .await
    }

    /// [`run_blocking`](CoalescedConversation::run_blocking) for async code: the provider
    /// and the executor are awaited, every record runs on blocking threads.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::coalesce::{CoalescedConversation, CoalescedOutcome, Executed, Run, SingleUserCoalesced, TurnDraft};
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::MemoryStore;
    ///
    /// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
    /// let run = Run::new("You write PTC-Lisp.", "Add 1 and 2");
    /// let agent = CoalescedConversation::open_async(MemoryStore::new(), "job-1", PromptRef::new("d", "lisp"), run, SingleUserCoalesced::default()).await?;
    /// let outcome = CoalescedConversation::run_async(
    ///     &agent,
    ///     async |_request: &[Message]| Ok(Message::assistant("(+ 1 2)")),
    ///     async |draft: TurnDraft| Ok(Executed::Finished(draft)),
    /// ).await?;
    /// assert!(matches!(outcome, CoalescedOutcome::Finished(turn) if turn.program() == "(+ 1 2)"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`run_blocking`](CoalescedConversation::run_blocking).
    pub async fn run_async<P, X>(
        agent: &curator_session::AsyncDriver<Self>,
        provider: P,
        mut execute: X,
    ) -> Result<CoalescedOutcome>
    where
        P: AsyncFnMut(&[Message]) -> std::result::Result<Message, BoxError>,
        X: AsyncFnMut(TurnDraft) -> std::result::Result<Executed, BoxError>,
    {
        let execute = async |draft: &TurnDraft| execute(draft.clone()).await;
        curator_session::drive_async(agent, (), provider, execute, u32::MAX).await
    }
}

/// The draft of a reply: the whole text as the raw response, the program extracted.
fn draft_of(text: &str) -> TurnDraft {
    TurnDraft {
        raw_response: text.to_owned(),
        program: extract_program(text).to_owned(),
        ..TurnDraft::default()
    }
}

/// The program in a model's reply: the first fenced code block (```` ```clojure ````,
/// ```` ```lisp ```` or unlabelled), else the whole reply, trimmed.
///
/// # Examples
///
/// ```
/// use curator::coalesce::extract_program;
///
/// assert_eq!(extract_program("I will add them.\n```clojure\n(+ 1 2)\n```\nDone."), "(+ 1 2)");
/// assert_eq!(extract_program("(+ 1 2)\n"), "(+ 1 2)");
/// ```
pub fn extract_program(reply: &str) -> &str {
    let Some(start) = reply.find("```") else { return reply.trim() };
    let after = &reply[start + 3..];
    // The info string runs to the end of the fence's line.
    let Some((_, body)) = after.split_once('\n') else { return reply.trim() };
    match body.find("```") {
        Some(end) => body[..end].trim(),
        None => body.trim(),
    }
}

impl<S> std::fmt::Debug for CoalescedConversation<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoalescedConversation")
            .field("conversation", &self.conversation)
            .field("compression", &self.compression)
            .field("turns", &self.turns.len())
            .field("checkpoint", &self.checkpoint)
            .finish_non_exhaustive()
    }
}
