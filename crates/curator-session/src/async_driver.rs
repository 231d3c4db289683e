//! `AsyncDriver` (feature `tokio`): the one async wrapper of any driver, its store I/O on
//! tokio's blocking threads, and `drive_async`, the one async loop over it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use curator_model::{BoxError, Message};
use tokio::sync::Mutex;

use crate::Error;
use crate::driver::{Action, Driver, Outcome, empty_run};

/// Runs `f` on a blocking thread: the one place a blocking task's failure (a panic, a
/// runtime shutting down) becomes an error, [`Error::Join`].
pub(crate) async fn blocking<T: Send + 'static, E: From<Error> + Send + 'static>(
    f: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, E> {
    match tokio::task::spawn_blocking(f).await {
        Ok(result) => result,
        Err(e) => Err(E::from(Error::Join(Box::new(e)))),
    }
}

/// The one async wrapper: any driver whose calls reach a store (a
/// [`Conversation`](crate::Conversation), `curator_tasks::TaskConversation`,
/// `curator_coalesce::CoalescedConversation`, the loop's `ConversationLoop`) for async code:
/// [`call`](AsyncDriver::call) runs a closure on the driver on tokio's blocking threads, so
/// the store's I/O never stalls the runtime's own, and [`with`](AsyncDriver::with) reads it
/// in place. [`drive_async`] runs a [`Driver`] held by one.
///
/// The driver sits behind an async mutex: a call whose future is dropped still finishes on
/// its blocking thread and leaves the driver consistent for the next call.
///
/// **One run at a time.** A clone drives the same driver, so two [`drive_async`] on clones
/// of one `AsyncDriver` would both call the model and both run its work (a card charged
/// twice). The second is refused with [`Error::AlreadyRunning`] while the first runs; the
/// driver is free again when the first ends, fails or its future is dropped. This holds
/// within one process: across processes, claim the session key first
/// ([`ClaimStore`](crate::ClaimStore)).
///
/// # Examples
///
/// ```
/// use curator::model::{Message, PromptRef};
/// use curator::session::{AsyncDriver, Conversation, MemoryStore, Action};
///
/// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
/// let conversation = Conversation::open(MemoryStore::new(), "k", PromptRef::new("d", "a"), Message::system("s"))?;
/// let driver = AsyncDriver::new(conversation);
/// driver.call(|c| c.add_user("hi")).await?;
/// assert_eq!(driver.with(Conversation::next_step).await, Action::CallModel);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct AsyncDriver<D> {
    pub(crate) inner: Arc<Mutex<D>>,
    /// Whether a [`drive_async`] of this driver (or of a clone) is under way.
    running: Arc<AtomicBool>,
}

impl<D: Send + 'static> AsyncDriver<D> {
    /// Wraps a driver.
    pub fn new(driver: D) -> Self {
        Self { inner: Arc::new(Mutex::new(driver)), running: Arc::new(AtomicBool::new(false)) }
    }

    /// Builds the driver on a blocking thread (opening reads the store) and wraps it.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::session::{AsyncDriver, Conversation, Error, MemoryStore};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
    /// let driver = AsyncDriver::open(|| Conversation::open(MemoryStore::new(), "k", PromptRef::new("d", "a"), Message::system("s"))).await?;
    /// assert_eq!(driver.with(|c| c.history().len()).await, 1);
    /// # Ok::<(), Error>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// `open`'s error; [`Error::Join`] (turned into `E`) when the blocking task fails.
    pub async fn open<E>(open: impl FnOnce() -> Result<D, E> + Send + 'static) -> Result<Self, E>
    where
        E: From<Error> + Send + 'static,
    {
        blocking(open).await.map(Self::new)
    }

    /// Runs `f` on the driver on a blocking thread, for calls that reach the store.
    ///
    /// # Errors
    ///
    /// `f`'s error; [`Error::Join`] (turned into `E`) when the blocking task itself fails.
    pub async fn call<T, E>(
        &self,
        f: impl FnOnce(&mut D) -> Result<T, E> + Send + 'static,
    ) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<Error> + Send + 'static,
    {
        let mut guard = Arc::clone(&self.inner).lock_owned().await;
        blocking(move || f(&mut guard)).await
    }

    /// Reads the driver in place (no store call).
    pub async fn with<T>(&self, f: impl FnOnce(&D) -> T) -> T {
        f(&*self.inner.lock().await)
    }
}

/// A clone drives the same driver, behind the same mutex.
impl<D> Clone for AsyncDriver<D> {
    fn clone(&self) -> Self {
        Self { inner: Arc::clone(&self.inner), running: Arc::clone(&self.running) }
    }
}

impl<D> AsyncDriver<D> {
    /// Marks the driver as driven until the returned guard is dropped, or says
    /// [`Error::AlreadyRunning`] when another run holds it.
    fn start_run(&self) -> Result<Running<'_>, Error> {
        self.running
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .map(|_| Running(&self.running))
            .map_err(|_| Error::AlreadyRunning { driver: std::any::type_name::<D>() })
    }
}

/// A [`drive_async`] under way: dropping it (the run ended, failed, or its future was
/// dropped) frees the driver for the next run.
struct Running<'a>(&'a AtomicBool);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl<D> std::fmt::Debug for AsyncDriver<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncDriver").finish_non_exhaustive()
    }
}

/// [`drive`](crate::drive) for async code: `provider` and `work` are awaited; every record
/// call runs on tokio's blocking threads through the [`AsyncDriver`], and so does
/// [`prepare`](Driver::prepare) for a driver that sets [`PREPARES`](Driver::PREPARES) (in
/// place otherwise); reading the next action and building the request run in place.
///
/// One run of a driver at a time: a `drive_async` on an `AsyncDriver` (or a clone of it)
/// that is being driven is refused with [`Error::AlreadyRunning`].
///
/// # Cancel safety
///
/// Dropping the future (a timeout, `select!`, an aborted task) stops the run at its next
/// `await`. A record call already handed to its blocking thread still completes, and the
/// driver is left consistent and free for the next run. But a model reply or a work result
/// that was awaited and not yet recorded is lost: the next run calls the model again, or
/// runs that work again, as the record says. `is_resume`
/// ([`ToolContext::is_resume`](crate::ToolContext::is_resume)) does not mark such work: it
/// covers only work found pending when a driver was opened (a process restart). Work with
/// side effects should be idempotent (keyed by its call id), or the future should not be
/// dropped while it runs: put a timeout inside the `work` closure rather than around the run.
///
/// # Errors
///
/// As [`drive`](crate::drive); [`Error::Join`] (converted) when a blocking task did not
/// finish; [`Error::AlreadyRunning`] (converted) when another `drive_async` of the driver has
/// not ended.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, PromptRef, Role, ToolCall};
/// use curator::session::{AsyncDriver, Conversation, Curation, MemoryStore, Outcome, ToolContext, drive_async};
/// use curator::strategies::{CurationContext, SlidingWindow};
///
/// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
/// let mut conversation = Conversation::open(MemoryStore::new(), "calc-1", PromptRef::new("demo", "calc"), Message::system("Add."))?;
/// conversation.add_user("2 + 2?")?;
/// let driver = AsyncDriver::new(conversation);
/// let outcome = drive_async(
///     &driver,
///     Curation::new(&SlidingWindow::new(10), &CurationContext::default()),
///     async |messages: &[Message]| Ok(match messages.last().map(Message::role) {
///         Some(Role::Tool) => Message::assistant("It is 4."),
///         _ => Message::assistant_with_calls(None, vec![ToolCall::new("c1", "add", r#"{"a":2,"b":2}"#)]),
///     }),
///     async |_call: &ToolContext| Ok("4".into()),
///     5,
/// ).await?;
/// assert_eq!(outcome, Outcome::Finished(Message::assistant("It is 4.")));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn drive_async<D, P, W>(
    driver: &AsyncDriver<D>,
    curation: D::Curation<'_>,
    mut provider: P,
    mut work: W,
    max_turns: u32,
) -> Result<Outcome<D::Output>, D::Error>
where
    D: Driver + Send + 'static,
    D::Error: Send + 'static,
    P: AsyncFnMut(&[Message]) -> Result<D::Reply, BoxError>,
    W: AsyncFnMut(&D::Work) -> D::WorkResult,
{
    let _running = driver.start_run()?;
    let mut turns = 0;
    loop {
        match driver.with(D::action).await {
            Action::Run(items) if items.is_empty() => return Err(empty_run::<D>().into()),
            Action::Run(items) => {
                let items = driver.call(move |d| d.start_work(items)).await?;
                for item in items {
                    let result = work(&item).await;
                    driver.call(move |d| d.record_work(item, result)).await?;
                }
            }
            Action::CallModel if turns < max_turns => {
                turns += 1;
                if D::PREPARES {
                    driver.call(D::prepare).await?;
                } else {
                    D::prepare(&mut *driver.inner.lock().await)?;
                }
                let request = driver.with(|d| d.build_request(curation)).await?;
                let reply = provider(&request).await.map_err(D::provider_failed)?;
                driver.call(move |d| d.record_reply(reply)).await?;
            }
            Action::CallModel | Action::OutOfTurns => return Ok(Outcome::MaxTurns),
            Action::Finished(output) => return Ok(Outcome::Finished(output)),
            Action::WaitForUser => return Ok(Outcome::WaitingForUser),
        }
    }
}
