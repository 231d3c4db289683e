//! `AsyncConversation` and `run_async` (feature `tokio`): the plain conversation for async
//! callers, on the one async wrapper `AsyncDriver`, its store I/O on tokio's blocking
//! threads, never on the runtime's own.

use curator_model::{BoxError, Content, EvaluationId, Message, MessageId, PromptRef, ToolCall};
use curator_strategies::{CurationContext, HistoryManager};

use crate::async_driver::{AsyncDriver, drive_async};
use crate::{
    Action, Appended, Conversation, Curation, Result, ResumePolicy, RunOutcome, SessionKey,
    SessionStore, ToolContext, ToolOutcome,
};

/// A [`Conversation`] for async code: every call that reaches the store (opening, resuming,
/// each record call) runs on tokio's blocking threads (`spawn_blocking`), so a store that
/// waits (SQLite behind another process's write lock, a slow disk) never stalls the
/// runtime's threads, even on a current-thread runtime. Curation runs in place (it does no
/// I/O).
///
/// The driver sits behind an async mutex: a call whose future is dropped (a timeout, a
/// cancelled task) still finishes its store call on the blocking thread and leaves the
/// driver consistent for the next call. Record calls keep their idempotency: retrying one
/// after an error re-sends the same entry.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, PromptRef, ToolCall};
/// use curator::session::{AsyncConversation, MemoryStore, Action};
///
/// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
/// let store = MemoryStore::new();
/// let mut conversation = AsyncConversation::open(store, "user-42", PromptRef::new("demo", "agent"), Message::system("Be useful.")).await?;
/// conversation.add_user("List the files.").await?;
/// let calls = conversation.record_assistant(Message::assistant_with_calls(None, vec![ToolCall::new("c1", "ls", "{}")])).await?;
/// conversation.record_tool_result(calls[0].id(), Ok::<_, String>("a.txt")).await?;
/// assert_eq!(conversation.next_step().await, Action::CallModel);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct AsyncConversation<S> {
    driver: AsyncDriver<Conversation<S>>,
}

impl<S: SessionStore + 'static> AsyncConversation<S> {
    /// Wraps a conversation that was opened synchronously.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{AsyncConversation, Conversation, MemoryStore};
    ///
    /// let conversation = Conversation::open(MemoryStore::new(), "k", PromptRef::new("d", "a"), Message::system("s"))?;
    /// let id = conversation.evaluation_id();
    /// let conversation = AsyncConversation::new(conversation);
    /// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
    /// assert_eq!(conversation.with(|c| c.evaluation_id()).await, id);
    /// # });
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(conversation: Conversation<S>) -> Self {
        Self { driver: AsyncDriver::new(conversation) }
    }

    /// The [`AsyncDriver`] it is: for [`drive_async`](crate::drive_async), and for any call
    /// of the conversation not forwarded here ([`call`](AsyncDriver::call)).
    pub fn driver(&self) -> &AsyncDriver<Conversation<S>> {
        &self.driver
    }

    /// [`Conversation::open`] on a blocking thread: resumes the latest evaluation of `key`
    /// for `prompt`, or starts one.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{AsyncConversation, MemoryStore, Action};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
    /// let c = AsyncConversation::open(MemoryStore::new(), "k", PromptRef::new("d", "a"), Message::system("s")).await?;
    /// assert_eq!(c.next_step().await, Action::WaitForUser);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Conversation::open`].
    pub async fn open(
        store: S,
        key: impl Into<SessionKey>,
        prompt: PromptRef,
        system: Message,
    ) -> Result<Self> {
        let key = key.into();
        let open = move || Conversation::open(store, key, prompt, system);
        AsyncDriver::open(open).await.map(|driver| Self { driver })
    }

    /// [`Conversation::start`] on a blocking thread.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{AsyncConversation, MemoryStore, Action};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
    /// let c = AsyncConversation::start(MemoryStore::new(), "k", PromptRef::new("d", "a"), Message::system("s")).await?;
    /// assert_eq!(c.next_step().await, Action::WaitForUser);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Conversation::start`].
    pub async fn start(
        store: S,
        key: impl Into<SessionKey>,
        prompt: PromptRef,
        system: Message,
    ) -> Result<Self> {
        let key = key.into();
        let start = move || Conversation::start(store, key, prompt, system);
        AsyncDriver::open(start).await.map(|driver| Self { driver })
    }

    /// [`Conversation::resume`] on a blocking thread.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{AsyncConversation, MemoryStore};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
    /// let store = Arc::new(MemoryStore::new());
    /// let prompt = PromptRef::new("d", "a");
    /// AsyncConversation::start(Arc::clone(&store), "k", prompt.clone(), Message::system("s")).await?;
    /// assert!(AsyncConversation::resume(Arc::clone(&store), "k", prompt.clone()).await.is_ok());
    /// assert!(AsyncConversation::resume(store, "other", prompt).await.is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Conversation::resume`].
    pub async fn resume(store: S, key: impl Into<SessionKey>, prompt: PromptRef) -> Result<Self> {
        let key = key.into();
        let resume = move || Conversation::resume(store, key, &prompt);
        AsyncDriver::open(resume).await.map(|driver| Self { driver })
    }

    /// [`Conversation::resume_evaluation`] on a blocking thread.
    ///
    /// # Errors
    ///
    /// As [`Conversation::resume_evaluation`].
    pub async fn resume_evaluation(
        store: S,
        key: impl Into<SessionKey>,
        evaluation: EvaluationId,
        prompt: PromptRef,
    ) -> Result<Self> {
        let key = key.into();
        let resume = move || Conversation::resume_evaluation(store, key, evaluation, &prompt);
        AsyncDriver::open(resume).await.map(|driver| Self { driver })
    }

    /// Runs `f` on the driver, on a blocking thread (for calls that reach the store).
    async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Conversation<S>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.driver.call(f).await
    }

    /// Reads the driver in place (no store call): its history, evaluation, pending calls.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{AsyncConversation, MemoryStore};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
    /// let c = AsyncConversation::open(MemoryStore::new(), "k", PromptRef::new("d", "a"), Message::system("s")).await?;
    /// assert_eq!(c.with(|c| c.history().len()).await, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn with<T>(&self, f: impl FnOnce(&Conversation<S>) -> T) -> T {
        self.driver.with(f).await
    }

    /// [`Conversation::next_step`].
    pub async fn next_step(&self) -> Action<ToolContext, Message> {
        self.with(Conversation::next_step).await
    }

    /// The curated request for the next provider call ([`Conversation::request`]), as owned
    /// messages.
    ///
    /// # Errors
    ///
    /// The manager's error.
    pub async fn request_messages(
        &self,
        manager: &dyn HistoryManager,
        ctx: &CurationContext<'_>,
    ) -> Result<Vec<Message>> {
        self.driver.with(|c| Ok(c.request(manager, ctx)?.to_messages())).await
    }

    /// [`Conversation::add_user`] on a blocking thread.
    ///
    /// # Errors
    ///
    /// As [`Conversation::add_user`].
    pub async fn add_user(&mut self, content: impl Into<Content>) -> Result<Appended> {
        let content = content.into();
        self.call(move |c| c.add_user(content)).await
    }

    /// [`Conversation::add_user_with_id`] on a blocking thread: the call to retry when a
    /// first try may have been recorded (its future dropped by a timeout, say), with the same
    /// id, so that the message is recorded once.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use curator::model::{Message, MessageId, PromptRef};
    /// use curator::session::{AsyncConversation, MemoryStore};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build()?.block_on(async {
    /// let mut c = AsyncConversation::open(MemoryStore::new(), "k", PromptRef::new("d", "a"), Message::system("s")).await?;
    /// let id = MessageId::new();
    /// if tokio::time::timeout(Duration::from_secs(5), c.add_user_with_id(id, "hi")).await.is_err() {
    ///     c.add_user_with_id(id, "hi").await?; // recorded once, whatever the first try did
    /// }
    /// assert_eq!(c.with(|c| c.history().len()).await, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Conversation::add_user_with_id`].
    pub async fn add_user_with_id(
        &mut self,
        id: MessageId,
        content: impl Into<Content>,
    ) -> Result<Appended> {
        let content = content.into();
        self.call(move |c| c.add_user_with_id(id, content)).await
    }

    /// [`Conversation::record_assistant`] on a blocking thread.
    ///
    /// # Errors
    ///
    /// As [`Conversation::record_assistant`].
    pub async fn record_assistant(&mut self, reply: Message) -> Result<Vec<ToolCall>> {
        self.call(move |c| c.record_assistant(reply)).await
    }

    /// [`Conversation::record_tool_result`] on a blocking thread.
    ///
    /// # Errors
    ///
    /// As [`Conversation::record_tool_result`].
    pub async fn record_tool_result<O, E>(
        &mut self,
        call_id: &str,
        outcome: std::result::Result<O, E>,
    ) -> Result<Appended>
    where
        O: Into<Content>,
        E: Into<Content>,
    {
        let outcome: ToolOutcome = outcome.map(Into::into).map_err(Into::into);
        let call_id = call_id.to_owned();
        self.call(move |c| c.record_tool_result(&call_id, outcome)).await
    }

    /// [`Conversation::repair`] on a blocking thread.
    ///
    /// # Errors
    ///
    /// As [`Conversation::repair`].
    pub async fn repair(&mut self, policy: ResumePolicy) -> Result<Vec<ToolContext>> {
        self.call(move |c| c.repair(policy)).await
    }
}

impl<S> std::fmt::Debug for AsyncConversation<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.driver.inner.try_lock() {
            Ok(conversation) => f.debug_tuple("AsyncConversation").field(&*conversation).finish(),
            Err(_) => f.debug_tuple("AsyncConversation").field(&"<busy>").finish(),
        }
    }
}

/// The async twin of [`run_blocking`](crate::run_blocking): runs an agent loop on
/// `conversation` until the assistant answers without calling a tool, or for at most
/// `max_turns` replies, with async provider and tool closures. Store I/O runs on blocking
/// threads.
///
/// Like `run_blocking`, it does what [`Conversation::next_step`] says: runs only the calls
/// still waiting for a result (after a resume with `is_resume: true`), awaits `provider` with
/// the curated record only when the model must answer, returns [`RunOutcome::Finished`] with
/// the recorded answer without calling the provider when the conversation has finished, and
/// [`RunOutcome::WaitingForUser`] at once when only the system message is recorded.
///
/// # Errors
///
/// [`Error::Provider`](crate::Error::Provider) when `provider` fails (what was recorded so far stays recorded), and
/// the conversation's own errors.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, PromptRef, Role, ToolCall};
/// use curator::session::{AsyncConversation, MemoryStore, RunOutcome, run_async};
/// use curator::strategies::{CurationContext, SlidingWindow};
///
/// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
/// let mut conversation = AsyncConversation::open(MemoryStore::new(), "calc-1", PromptRef::new("demo", "calc"), Message::system("Add.")).await?;
/// conversation.add_user("2 + 2?").await?;
/// let outcome = run_async(
///     &mut conversation,
///     &SlidingWindow::new(10),
///     &CurationContext::default(),
///     async |messages: &[Message]| Ok(if messages.last().map(Message::role) == Some(Role::Tool) {
///         Message::assistant("It is 4.")
///     } else {
///         Message::assistant_with_calls(None, vec![ToolCall::new("c1", "add", r#"{"a":2,"b":2}"#)])
///     }),
///     async |_call: &curator::session::ToolContext| Ok("4".into()),
///     5,
/// ).await?;
/// assert_eq!(outcome, RunOutcome::Finished(Message::assistant("It is 4.")));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn run_async<S, P, T>(
    conversation: &mut AsyncConversation<S>,
    manager: &dyn HistoryManager,
    ctx: &CurationContext<'_>,
    provider: P,
    tool: T,
    max_turns: u32,
) -> Result<RunOutcome>
where
    S: SessionStore + 'static,
    P: AsyncFnMut(&[Message]) -> std::result::Result<Message, BoxError>,
    T: AsyncFnMut(&ToolContext) -> ToolOutcome,
{
    drive_async(&conversation.driver, Curation::new(manager, ctx), provider, tool, max_turns).await
}
