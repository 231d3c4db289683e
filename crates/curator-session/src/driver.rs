//! The driver protocol: the one description of an agent loop's steps, and the one loop that
//! runs any driver ([`drive`]; `drive_async` with the feature `tokio`).

use curator_model::{BoxError, Message};

use crate::Error;
use crate::work::{Parallel, RunWork};

/// What an agent loop does next, as its [`Driver`] reads it from the record.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Action<W, T> {
    /// Build the request and call the model.
    CallModel,
    /// Run these pieces of work (tool calls, a program) and record what each gave. Never
    /// empty: a driver with nothing to run says what comes next instead ([`drive`] refuses
    /// an empty one with [`Error::EmptyRun`]).
    Run(Vec<W>),
    /// Nothing to send the model yet: the loop waits for the user's message.
    WaitForUser,
    /// The loop is done, with what it produced.
    Finished(T),
    /// The driver's own budget of turns is spent.
    OutOfTurns,
}

/// How a run of a [`Driver`] ended, generic over what a finished run carries (the
/// assistant's answer, a program's turn).
///
/// # Examples
///
/// ```
/// use curator::model::Message;
/// use curator::session::{Outcome, RunOutcome};
///
/// let outcome: RunOutcome = Outcome::Finished(Message::assistant("4"));
/// assert_eq!(outcome.finished().map(|m| m.text().into_owned()), Some("4".to_owned()));
/// assert_eq!(RunOutcome::MaxTurns.finished(), None);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Outcome<T> {
    /// The driver said the run is done ([`Action::Finished`]), with what it produced (the
    /// plain conversation's answer without a tool call, the coalesced conversation's last
    /// turn).
    Finished(T),
    /// `max_turns` model calls were made and the driver asked for another, or the driver's
    /// own budget of turns is spent ([`Action::OutOfTurns`]).
    MaxTurns,
    /// The driver waits for what only the caller can give ([`Action::WaitForUser`]): give
    /// it (the plain conversation: record the user's message) and run again. The model was
    /// not called for it.
    WaitingForUser,
}

impl<T> Outcome<T> {
    /// What a finished run produced; `None` for the other outcomes.
    pub fn finished(self) -> Option<T> {
        match self {
            Outcome::Finished(output) => Some(output),
            _ => None,
        }
    }
}

/// An agent loop's steps, read from its record: what comes next ([`action`](Driver::action)),
/// the request to send ([`build_request`](Driver::build_request)), and how the model's reply and the
/// caller's work are recorded. Implemented by the plain [`Conversation`](crate::Conversation),
/// task history (`curator_tasks::TaskConversation`) and the coalesced conversation
/// (`curator_coalesce::CoalescedConversation`); [`drive`] and `drive_async` (feature `tokio`) run any of
/// them, so an agent loop is written once.
///
/// **Recording is the driver's.** A driver holds its store and appends what it is given
/// before it answers, so that what it says next is always what the record says: a process
/// killed between two calls resumes from the record alone, and a retried record call is
/// recognised (the stores' appends are idempotent). The async face runs each record call on
/// a blocking thread ([`AsyncDriver`](crate::AsyncDriver)); building the request runs in
/// place, and [`prepare`](Driver::prepare) where [`PREPARES`](Driver::PREPARES) says.
///
/// # Writing your own driver
///
/// The loops rely on these rules; a driver that breaks them makes them loop or stop early:
///
/// - **`action` is read from the state alone**: it does no I/O and says the same until a
///   record call (or the caller) changes the state.
/// - **Every record call changes what `action` says next.** [`record_reply`](Driver::record_reply)
///   moves on from [`Action::CallModel`] (to the reply's work, to finished, to the next
///   call); [`record_work`](Driver::record_work) takes the piece of work it records out of
///   the next [`Action::Run`]. A driver whose answer does not move is asked again and again.
/// - **`Run` is never empty**: with nothing to run, say what comes next. The loops refuse an
///   empty `Run` at once with [`Error::EmptyRun`].
/// - **Work results**: the loop hands each piece of a `Run`, with what it gave, to
///   `record_work` the moment it is done: [`drive`] runs the pieces in order, each recorded
///   before the next starts, so a crash loses at most the piece that was running;
///   [`drive_parallel`] runs them at once, each recorded as it returns. After a
///   resume, `action` lists only the work the record still waits for.
/// - [`Curation<'c>`](Driver::Curation) is what the caller hands to every request; `()` for
///   a driver that builds its requests from its own state.
/// - [`provider_failed`](Driver::provider_failed) turns the provider closure's error into
///   the driver's (a variant that keeps it as its source).
///
/// # Examples
///
/// A driver kept in memory (a real one appends to its store in each record call): the model
/// asks for one tool call, then answers.
///
/// ```
/// use curator::model::{BoxError, Message, Role, ToolCall};
/// use curator::session::{Action, Driver, Error, Outcome, drive};
///
/// #[derive(Default)]
/// struct Agent {
///     log: Vec<Message>,
///     pending: Vec<ToolCall>,
/// }
///
/// impl Driver for Agent {
///     type Work = ToolCall;
///     type WorkResult = String;
///     type Output = String;
///     type Reply = Message;
///     type Error = Error;
///     type Curation<'c> = ();
///
///     fn action(&self) -> Action<ToolCall, String> {
///         if !self.pending.is_empty() {
///             return Action::Run(self.pending.clone());
///         }
///         match self.log.last() {
///             None => Action::WaitForUser,
///             Some(last) if last.role() == Role::Assistant => Action::Finished(last.text().into_owned()),
///             Some(_) => Action::CallModel,
///         }
///     }
///
///     fn build_request(&self, (): ()) -> Result<Vec<Message>, Error> {
///         Ok(self.log.clone())
///     }
///
///     fn record_reply(&mut self, reply: Message) -> Result<(), Error> {
///         self.pending = reply.tool_calls().to_vec();
///         self.log.push(reply);
///         Ok(())
///     }
///
///     fn record_work(&mut self, call: ToolCall, result: String) -> Result<(), Error> {
///         self.pending.retain(|pending| pending.id() != call.id());
///         self.log.push(Message::tool_result(call.id(), result));
///         Ok(())
///     }
///
///     fn provider_failed(source: BoxError) -> Error {
///         Error::Provider(source)
///     }
/// }
///
/// let mut agent = Agent { log: vec![Message::user("2 + 2?")], ..Agent::default() };
/// let outcome = drive(
///     &mut agent,
///     (),
///     |request| Ok(match request.last().map(Message::role) {
///         Some(Role::Tool) => Message::assistant("4"),
///         _ => Message::assistant_with_calls(None, vec![ToolCall::new("c1", "add", "[2, 2]")]),
///     }),
///     |call: &ToolCall| format!("{} gave 4", call.name()),
///     5,
/// )?;
/// assert_eq!(outcome, Outcome::Finished("4".to_owned()));
/// assert_eq!(agent.log.len(), 4); // question, call, result, answer
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Driver {
    /// A piece of work the caller runs between model calls: a tool call, a program.
    type Work: Send + 'static;
    /// What running a piece of work gave, handed to [`record_work`](Driver::record_work).
    type WorkResult: Send + 'static;
    /// What a finished run carries.
    type Output;
    /// What the provider closure gives back for one model call: a [`Message`] for most
    /// drivers; the agent's is the client's whole reply, its usage recorded beside it.
    type Reply: Send + 'static;
    /// The driver's error: the session's errors convert into it.
    type Error: From<Error>;
    /// What building a request needs from the caller besides the record (the plain
    /// conversation's curation pipeline and context; `()` for drivers that own theirs).
    type Curation<'c>: Copy;
    /// Where `drive_async` runs [`prepare`](Driver::prepare): `false` (the default) in
    /// place, on the runtime's thread, for a `prepare` that does no I/O; `true` on tokio's
    /// blocking threads, for one that writes to the store (task history's compaction) or
    /// otherwise blocks. It does not decide *whether* `prepare` runs: [`drive`] and
    /// `drive_async` call it before every model call either way.
    const PREPARES: bool = false;

    /// What comes next, from the record: read from the driver's state alone, with no I/O,
    /// and the same answer until a record call changes the state. Never an empty
    /// [`Action::Run`].
    fn action(&self) -> Action<Self::Work, Self::Output>;

    /// Brings the driver's own state up to date before a request (task history compacts
    /// and saves); called before every model call, where [`PREPARES`](Driver::PREPARES)
    /// says. Nothing by default.
    ///
    /// # Errors
    ///
    /// The driver's errors.
    fn prepare(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }

    /// Takes the pieces of an [`Action::Run`] before any of them runs, and gives back those
    /// the loop should run: a driver marks them started here, or answers some itself (the
    /// agent answers a call a crash interrupted, when its tools must not run twice). With
    /// none given back the loop asks [`action`](Driver::action) again, so a driver that
    /// keeps none must have recorded what moves it on. All of them, by default.
    ///
    /// # Errors
    ///
    /// The driver's errors; nothing has run.
    fn start_work(&mut self, work: Vec<Self::Work>) -> Result<Vec<Self::Work>, Self::Error> {
        Ok(work)
    }

    /// The messages of the next model call. Reads only: it does no I/O.
    ///
    /// # Errors
    ///
    /// The driver's errors (curation's).
    fn build_request(&self, curation: Self::Curation<'_>) -> Result<Vec<Message>, Self::Error>;

    /// Records the model's reply; what [`action`](Driver::action) says next must move on
    /// from [`Action::CallModel`].
    ///
    /// # Errors
    ///
    /// The driver's errors; what was recorded before stays recorded.
    fn record_reply(&mut self, reply: Self::Reply) -> Result<(), Self::Error>;

    /// Records what a piece of work gave; the next [`Action::Run`] no longer lists it.
    ///
    /// # Errors
    ///
    /// The driver's errors (a failed work result the driver cannot record is one).
    fn record_work(
        &mut self,
        work: Self::Work,
        result: Self::WorkResult,
    ) -> Result<(), Self::Error>;

    /// The driver's error for a failed model call, keeping the provider's error as its
    /// source.
    fn provider_failed(source: BoxError) -> Self::Error;
}

/// Runs `driver` until it is done, waits for the user, or `max_turns` model calls were made:
/// each [`Action`] as it says, work first (after a resume, only what the record still waits
/// for), then the model, its reply recorded before anything else happens. Can be called on
/// a driver in any state, freshly reopened after a crash or not: a finished driver returns
/// at once without calling the model.
///
/// `work` runs the pieces of each [`Action::Run`] one after the other, each recorded before
/// the next starts; [`drive_parallel`] runs them at once.
///
/// `max_turns` bounds the model calls only: work the record waits for still runs and is
/// recorded (with `max_turns` 0, a resumed conversation's pending tool calls run, then the
/// run returns [`Outcome::MaxTurns`]).
///
/// # Errors
///
/// The driver's own errors, and its [`provider_failed`](Driver::provider_failed) error when
/// `provider` fails; what was recorded so far stays recorded, so the run can be resumed.
/// [`Error::EmptyRun`] (converted) when the driver says [`Action::Run`] with nothing to run.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, PromptRef, Role, ToolCall};
/// use curator::session::{Conversation, Curation, MemoryStore, Outcome, drive};
/// use curator::strategies::{CurationContext, SlidingWindow};
///
/// let mut conversation = Conversation::open(MemoryStore::new(), "calc-1", PromptRef::new("demo", "calc"), Message::system("Add."))?;
/// conversation.add_user("2 + 2?")?;
/// let outcome = drive(
///     &mut conversation,
///     Curation::new(&SlidingWindow::new(10), &CurationContext::default()),
///     |messages| Ok(match messages.last().map(Message::role) {
///         Some(Role::Tool) => Message::assistant("It is 4."),
///         _ => Message::assistant_with_calls(None, vec![ToolCall::new("c1", "add", r#"{"a":2,"b":2}"#)]),
///     }),
///     |_call| Ok("4".into()),
///     5,
/// )?;
/// assert_eq!(outcome, Outcome::Finished(Message::assistant("It is 4.")));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn drive<D, P, W>(
    driver: &mut D,
    curation: D::Curation<'_>,
    provider: P,
    work: W,
    max_turns: u32,
) -> Result<Outcome<D::Output>, D::Error>
where
    D: Driver,
    P: FnMut(&[Message]) -> Result<D::Reply, BoxError>,
    W: FnMut(&D::Work) -> D::WorkResult,
{
    drive_with(driver, curation, provider, work, max_turns)
}

/// [`drive`] with the pieces of each [`Action::Run`] run at once, one thread each, and
/// each recorded the moment it returns (in the order they finish): a reply's parallel tool
/// calls take as long as the slowest instead of their sum. The threads are scoped (none
/// outlives its batch), so `work` may borrow. A crash loses at most the pieces still
/// running; the record says which, and a resume runs only those.
///
/// # Errors
///
/// As [`drive`]; when recording a result fails, the pieces still running finish and
/// what they gave is not recorded.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, PromptRef, Role, ToolCall};
/// use curator::session::{Conversation, Curation, MemoryStore, Outcome, drive_parallel};
/// use curator::strategies::{CurationContext, SlidingWindow};
///
/// let mut conversation = Conversation::open(MemoryStore::new(), "weather-1", PromptRef::new("demo", "weather"), Message::system("Answer."))?;
/// conversation.add_user("Weather in Oslo and Rome?")?;
/// let outcome = drive_parallel(
///     &mut conversation,
///     Curation::new(&SlidingWindow::new(10), &CurationContext::default()),
///     |messages| Ok(match messages.last().map(Message::role) {
///         Some(Role::Tool) => Message::assistant("Oslo 3°, Rome 18°."),
///         _ => Message::assistant_with_calls(None, vec![
///             ToolCall::new("oslo", "weather", r#"{"city":"Oslo"}"#),
///             ToolCall::new("rome", "weather", r#"{"city":"Rome"}"#),
///         ]),
///     }),
///     |call| Ok(if call.call_id() == "oslo" { "3°" } else { "18°" }.into()),
///     5,
/// )?;
/// assert_eq!(outcome, Outcome::Finished(Message::assistant("Oslo 3°, Rome 18°.")));
/// assert_eq!(conversation.history().messages().len(), 6);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn drive_parallel<D, P, W>(
    driver: &mut D,
    curation: D::Curation<'_>,
    provider: P,
    work: W,
    max_turns: u32,
) -> Result<Outcome<D::Output>, D::Error>
where
    D: Driver,
    D::Work: Send,
    D::WorkResult: Send,
    P: FnMut(&[Message]) -> Result<D::Reply, BoxError>,
    W: Fn(&D::Work) -> D::WorkResult + Sync,
{
    drive_with(driver, curation, provider, Parallel(work), max_turns)
}

/// The one synchronous loop: [`drive`] and [`drive_parallel`] differ only in how a
/// batch of work runs.
fn drive_with<D, P, W>(
    driver: &mut D,
    curation: D::Curation<'_>,
    mut provider: P,
    mut work: W,
    max_turns: u32,
) -> Result<Outcome<D::Output>, D::Error>
where
    D: Driver,
    P: FnMut(&[Message]) -> Result<D::Reply, BoxError>,
    W: RunWork<D::Work, D::WorkResult>,
{
    let mut turns = 0;
    loop {
        match driver.action() {
            Action::Run(items) if items.is_empty() => return Err(empty_run::<D>().into()),
            Action::Run(items) => {
                let items = driver.start_work(items)?;
                work.run_batch(items, &mut |item, result| driver.record_work(item, result))?;
            }
            Action::CallModel if turns < max_turns => {
                turns += 1;
                driver.prepare()?;
                let request = driver.build_request(curation)?;
                let reply = provider(&request).map_err(D::provider_failed)?;
                driver.record_reply(reply)?;
            }
            Action::CallModel | Action::OutOfTurns => return Ok(Outcome::MaxTurns),
            Action::Finished(output) => return Ok(Outcome::Finished(output)),
            Action::WaitForUser => return Ok(Outcome::WaitingForUser),
        }
    }
}

/// The error of a driver that asked to run nothing ([`Error::EmptyRun`]), naming it.
pub(crate) fn empty_run<D>() -> Error {
    Error::EmptyRun { driver: std::any::type_name::<D>() }
}
