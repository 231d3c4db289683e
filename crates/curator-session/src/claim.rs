//! Claims: the exclusive right of one worker to drive a session, so that two workers that
//! resume one session at once never both re-run its pending tool calls.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::{Error, Result, SessionKey};

/// A store that grants claims on sessions: at most one live [`Claim`] per [`SessionKey`] at a
/// time, across every process that shares the store.
///
/// A worker claims a session before it opens it and holds the claim while it drives it. The
/// claim ends when it is dropped or [released](Claim::release), and when its worker dies:
/// how soon depends on the store (see each store's documentation).
///
/// | store | across | a dead worker's claim ends |
/// |---|---|---|
/// | `MemoryStore` | threads of one process | when its lease runs out |
/// | `SqliteStore` | processes on one machine (a file lock per key) | at once (the OS drops the lock) |
/// | `PgStore` | processes on many machines (a lease row and the holder's lock) | at once (the server drops the holder's lock with its connection) |
///
/// A claim whose lease may run out is kept by [`Claim::renew`], which also tells a worker
/// that lost its claim (another worker took it over after the lease ran out, or after its
/// connection to the store was lost) to stop.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use curator::session::{ClaimStore, Error, MemoryStore, SessionKey};
///
/// let store = MemoryStore::new();
/// let key = SessionKey::new("job-1");
/// let claim = store.claim(&key, Duration::from_secs(30))?;
/// assert!(matches!(store.claim(&key, Duration::from_secs(30)), Err(Error::Claimed { .. })));
/// drop(claim);
/// assert!(store.claim(&key, Duration::from_secs(30)).is_ok());
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait ClaimStore: Send + Sync {
    /// Claims `key` for `lease` (renewable), or fails at once when another claim holds it.
    ///
    /// # Errors
    ///
    /// [`Error::Claimed`] when another live claim holds the key; a store error.
    fn claim(&self, key: &SessionKey, lease: Duration) -> Result<Claim>;

    /// Claims `key`, waiting up to `wait` for another claim to end (to be released, or its
    /// lease to run out).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use curator::session::{ClaimStore, MemoryStore, SessionKey};
    ///
    /// let store = MemoryStore::new();
    /// let key = SessionKey::new("job-1");
    /// let abandoned = store.claim(&key, Duration::from_millis(50))?;
    /// std::mem::forget(abandoned); // a worker that died without releasing it
    /// let taken_over = store.claim_within(&key, Duration::from_secs(5), Duration::from_secs(1))?;
    /// assert_eq!(taken_over.key(), &key);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Claimed`] when the key is still claimed after `wait`; a store error (a busy
    /// one, such as a lock a stalled worker holds, is tried again while `wait` lasts, so the
    /// call returns within `wait` and the store's lock timeout).
    fn claim_within(&self, key: &SessionKey, lease: Duration, wait: Duration) -> Result<Claim> {
        let started = Instant::now();
        loop {
            match self.claim(key, lease) {
                Err(Error::Claimed { expires_in, .. }) if started.elapsed() < wait => {
                    let left = wait.saturating_sub(started.elapsed());
                    let pause = expires_in
                        .unwrap_or(Duration::from_millis(50))
                        .clamp(Duration::from_millis(5), Duration::from_millis(100));
                    std::thread::sleep(pause.min(left));
                }
                // A store whose claim row is locked by a worker stalled in a write gives up
                // waiting for the lock (busy): tried again while the wait lasts.
                Err(e) if e.is_retryable() && started.elapsed() < wait => {
                    let left = wait.saturating_sub(started.elapsed());
                    std::thread::sleep(Duration::from_millis(50).min(left));
                }
                other => return other,
            }
        }
    }
}

/// What a store keeps alive for one claim: implemented by stores, used through [`Claim`].
pub trait Lease: Send + Sync + std::fmt::Debug {
    /// Extends the claim by its lease from now.
    ///
    /// # Errors
    ///
    /// [`Error::ClaimLost`] when another worker holds the key now; a store error.
    fn renew(&self) -> Result<()>;

    /// Ends the claim (nothing happens when it was lost already).
    ///
    /// # Errors
    ///
    /// A store error; the claim then ends when its lease runs out.
    fn release(&self) -> Result<()>;
}

/// A worker's exclusive right to drive one session, from [`ClaimStore::claim`]; released when
/// dropped.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use curator::model::{Message, PromptRef};
/// use curator::session::{ClaimStore, Conversation, MemoryStore, SessionKey};
///
/// let store = MemoryStore::new();
/// let key = SessionKey::new("ticket-7");
/// let claim = store.claim(&key, Duration::from_secs(60))?;
/// let mut conversation = Conversation::open(&store, key.clone(), PromptRef::new("d", "a"), Message::system("s"))?;
/// for call in conversation.tool_contexts() {
///     claim.renew()?; // still ours: run the call
///     conversation.record_tool_result(call.call_id(), Ok::<_, String>("done"))?;
/// }
/// claim.release()?;
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Claim {
    key: SessionKey,
    lease: Duration,
    handle: Option<Arc<dyn Lease>>,
    token: Option<u64>,
}

/// A claim's fencing token with its session key: appends made under the claim carry it, and
/// a store that fences refuses them, in the same transaction, once another worker has
/// claimed the session since ([`Error::Fenced`]). See
/// [`SessionStore::append_batch_fenced`](crate::SessionStore::append_batch_fenced).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Fence {
    /// The session claimed.
    pub key: SessionKey,
    /// The claim's token: larger than every token given for the key before.
    pub token: u64,
}

impl Fence {
    /// The fence of the claim with `token` on `key`.
    pub fn new(key: SessionKey, token: u64) -> Self {
        Self { key, token }
    }
}

impl Claim {
    /// A claim on `key` kept by `handle` (for store implementations).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use curator::session::{Claim, Lease, SessionKey};
    ///
    /// #[derive(Debug)]
    /// struct Nothing;
    /// impl Lease for Nothing {
    ///     fn renew(&self) -> curator::session::Result<()> { Ok(()) }
    ///     fn release(&self) -> curator::session::Result<()> { Ok(()) }
    /// }
    /// let claim = Claim::new(SessionKey::new("k"), Duration::from_secs(1), Box::new(Nothing));
    /// assert_eq!(claim.lease(), Duration::from_secs(1));
    /// ```
    pub fn new(key: SessionKey, lease: Duration, handle: Box<dyn Lease>) -> Self {
        Self { key, lease, handle: Some(Arc::from(handle)), token: None }
    }

    /// The claim with its fencing token (for stores that fence appends: each claim on a key
    /// gets a token larger than the ones before).
    #[must_use]
    pub fn with_token(mut self, token: u64) -> Self {
        self.token = Some(token);
        self
    }

    /// The fence to append under, for stores whose claims carry tokens (PostgreSQL, memory);
    /// `None` for claims that cannot be taken over while their holder lives (SQLite's file
    /// locks), whose appends need no fence.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use curator::session::{ClaimStore, MemoryStore, SessionKey};
    ///
    /// let store = MemoryStore::new();
    /// let first = store.claim(&SessionKey::new("k"), Duration::from_millis(1))?;
    /// std::thread::sleep(Duration::from_millis(5));
    /// let second = store.claim(&SessionKey::new("k"), Duration::from_secs(60))?;
    /// assert!(second.fence().unwrap().token > first.fence().unwrap().token);
    /// # Ok::<(), curator::session::Error>(())
    /// ```
    pub fn fence(&self) -> Option<Fence> {
        self.token.map(|token| Fence::new(self.key.clone(), token))
    }

    /// The session key claimed.
    pub fn key(&self) -> &SessionKey {
        &self.key
    }

    /// How long the claim lasts after each renewal when its worker stops renewing it.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// Extends the claim by its lease from now, confirming it is still this worker's: call it
    /// before each step that must not run twice (a tool call).
    ///
    /// # Errors
    ///
    /// [`Error::ClaimLost`] when the lease ran out and another worker claimed the key: stop
    /// driving the session. A store error (retryable when the store was briefly unavailable).
    pub fn renew(&self) -> Result<()> {
        match &self.handle {
            Some(handle) => handle.renew(),
            None => Err(Error::ClaimLost { key: self.key.clone() }),
        }
    }

    /// Ends the claim now, reporting a failure that dropping it would ignore.
    ///
    /// # Errors
    ///
    /// A store error; the claim then ends when its lease runs out.
    pub fn release(mut self) -> Result<()> {
        match self.handle.take() {
            Some(handle) => handle.release(),
            None => Ok(()),
        }
    }
}

/// The async face of claims (feature `tokio`): the store calls run on tokio's blocking
/// threads, as [`AsyncConversation`](crate::AsyncConversation)'s do.
#[cfg(feature = "tokio")]
impl Claim {
    /// [`ClaimStore::claim`] on a blocking thread: `store` is owned (an `Arc` of the store).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use curator::session::{Claim, Error, MemoryStore, SessionKey};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
    /// let store = Arc::new(MemoryStore::new());
    /// let key = SessionKey::new("job-1");
    /// let claim = Claim::take_async(store.clone(), key.clone(), Duration::from_secs(30)).await?;
    /// let racer = Claim::take_async(store.clone(), key.clone(), Duration::from_secs(30)).await;
    /// assert!(matches!(racer, Err(Error::Claimed { .. })));
    /// claim.renew_async().await?; // before each tool call
    /// claim.release_async().await?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`ClaimStore::claim`].
    pub async fn take_async<C: ClaimStore + 'static>(
        store: C,
        key: SessionKey,
        lease: Duration,
    ) -> Result<Claim> {
        crate::async_driver::blocking(move || store.claim(&key, lease)).await
    }

    /// [`ClaimStore::claim_within`] on a blocking thread (the waiting too).
    ///
    /// # Errors
    ///
    /// As [`ClaimStore::claim_within`].
    pub async fn take_within_async<C: ClaimStore + 'static>(
        store: C,
        key: SessionKey,
        lease: Duration,
        wait: Duration,
    ) -> Result<Claim> {
        crate::async_driver::blocking(move || store.claim_within(&key, lease, wait)).await
    }

    /// [`renew`](Claim::renew) on a blocking thread.
    ///
    /// # Errors
    ///
    /// As [`renew`](Claim::renew).
    pub async fn renew_async(&self) -> Result<()> {
        let Some(handle) = self.handle.clone() else {
            return Err(Error::ClaimLost { key: self.key.clone() });
        };
        crate::async_driver::blocking(move || handle.renew()).await
    }

    /// [`release`](Claim::release) on a blocking thread. (Dropping a claim inside a tokio
    /// runtime releases it on a short-lived thread of its own, waited for, so that a store
    /// with a blocking client never runs it on the runtime's thread.)
    ///
    /// # Errors
    ///
    /// As [`release`](Claim::release).
    pub async fn release_async(mut self) -> Result<()> {
        match self.handle.take() {
            Some(handle) => crate::async_driver::blocking(move || handle.release()).await,
            None => Ok(()),
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            // A failed release only delays the end of the claim to the end of its lease.
            #[cfg(feature = "tokio")]
            if tokio::runtime::Handle::try_current().is_ok() {
                // A blocking client (PostgreSQL's) must not run on a runtime's thread; the
                // release is still done before `drop` returns, so the key is free at once.
                std::thread::scope(|scope| {
                    scope.spawn(|| {
                        let _ = handle.release();
                    });
                });
                return;
            }
            let _ = handle.release();
        }
    }
}

macro_rules! forward_claims {
    ($($ty:ty),*) => {$(
        impl<S: ClaimStore + ?Sized> ClaimStore for $ty {
            fn claim(&self, key: &SessionKey, lease: Duration) -> Result<Claim> { (**self).claim(key, lease) }
            fn claim_within(&self, key: &SessionKey, lease: Duration, wait: Duration) -> Result<Claim> { (**self).claim_within(key, lease, wait) }
        }
    )*};
}

forward_claims!(&S, Box<S>, Arc<S>);
