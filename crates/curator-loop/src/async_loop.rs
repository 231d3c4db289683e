//! The loop for tokio users (feature `tokio`): each run on a blocking thread.

use curator_session::AsyncDriver;

use crate::driver::{ConversationLoop, LoopOutcome};
use crate::error::Result;
use crate::turn::ConversationTurn;

/// A [`ConversationLoop`] for async code. Steps are blocking (HTTP calls, store writes), so
/// each `run` and `resume` runs on tokio's blocking threads (`spawn_blocking`), never on the
/// runtime's own; the loop sits behind an async mutex, so a call whose future is dropped
/// still finishes its iteration and checkpoint and leaves the loop consistent.
///
/// # Examples
///
/// ```
/// use curator::conversation_loop::{AsyncLoop, Hitl, LoopBuilder, LoopConfig};
///
/// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
/// let l = AsyncLoop::new(LoopBuilder::new("ask", LoopConfig::conversational()).step("human", Hitl::default()).build()?);
/// assert!(l.run("hello").await?.is_paused());
/// assert!(l.resume("hi").await?.is_paused());
/// assert_eq!(l.turns().await.len(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct AsyncLoop {
    driver: AsyncDriver<ConversationLoop>,
}

impl AsyncLoop {
    /// Wraps a built loop.
    pub fn new(inner: ConversationLoop) -> Self {
        Self { driver: AsyncDriver::new(inner) }
    }

    /// The session's one async wrapper it is: [`call`](AsyncDriver::call) runs any call of
    /// the loop on a blocking thread.
    pub fn driver(&self) -> &AsyncDriver<ConversationLoop> {
        &self.driver
    }

    async fn blocking(
        &self,
        f: impl FnOnce(&mut ConversationLoop) -> Result<LoopOutcome> + Send + 'static,
    ) -> Result<LoopOutcome> {
        self.driver.call(f).await
    }

    /// [`ConversationLoop::run`] on a blocking thread.
    ///
    /// # Errors
    ///
    /// As [`ConversationLoop::run`]; [`Error::Join`](crate::Error::Join) when the blocking task panicked.
    pub async fn run(&self, input: impl Into<String>) -> Result<LoopOutcome> {
        let input = input.into();
        self.blocking(move |l| l.run(&input)).await
    }

    /// [`ConversationLoop::resume`] on a blocking thread.
    ///
    /// # Errors
    ///
    /// As [`ConversationLoop::resume`]; [`Error::Join`](crate::Error::Join) when the blocking task panicked.
    pub async fn resume(&self, human_input: impl Into<String>) -> Result<LoopOutcome> {
        let input = human_input.into();
        self.blocking(move |l| l.resume(&input)).await
    }

    /// The turns so far.
    pub async fn turns(&self) -> Vec<ConversationTurn> {
        self.driver.with(ConversationLoop::turns).await
    }

    /// Reads the loop in place.
    pub async fn with<R>(&self, f: impl FnOnce(&ConversationLoop) -> R) -> R {
        self.driver.with(f).await
    }
}
