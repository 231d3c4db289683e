//! The error type of the session layer.

use curator_model::{BoxError, EvaluationId, MessageId, PromptRef};

use crate::SessionKey;

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What kind of failure a [`SessionStore`](crate::SessionStore) met: the cases a caller acts on
/// differently.
///
/// # Examples
///
/// ```
/// use curator::session::{Error, StoreErrorKind};
///
/// let e = Error::store("sqlite", StoreErrorKind::Busy, "appending an entry", None);
/// assert!(e.is_retryable());
/// assert_eq!(e.to_string(), "session store (sqlite): appending an entry: busy or locked by another writer");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// Another writer holds the lock, or the backend is briefly unavailable: retrying later
    /// may succeed.
    Busy,
    /// The disk or the database is full.
    Full,
    /// The store's server cannot be reached: the connection was lost or refused (a server
    /// restarting, a network failure). Retrying later may succeed; whether a write that was
    /// under way when the connection was lost committed is unknown, so retry it with the same
    /// entry (the driver does: appends are idempotent by message id).
    Unavailable,
    /// The stored data is damaged.
    Corrupt,
    /// The file, database or record asked for does not exist.
    NotFound,
    /// The store cannot be written (a read-only file, directory or connection, or missing
    /// permissions).
    ReadOnly,
    /// The operating system reported an I/O error.
    Io,
    /// Any other failure.
    Other,
}

impl StoreErrorKind {
    /// Whether an operation that failed this way may succeed when tried again unchanged.
    pub fn is_retryable(self) -> bool {
        matches!(self, StoreErrorKind::Busy | StoreErrorKind::Unavailable)
    }
}

impl std::fmt::Display for StoreErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StoreErrorKind::Busy => "busy or locked by another writer",
            StoreErrorKind::Full => "the disk or database is full",
            StoreErrorKind::Unavailable => "the server is unavailable (connection lost or refused)",
            StoreErrorKind::Corrupt => "the stored data is damaged",
            StoreErrorKind::NotFound => "not found",
            StoreErrorKind::ReadOnly => "read-only",
            StoreErrorKind::Io => "I/O error",
            StoreErrorKind::Other => "failed",
        })
    }
}

/// Why a snapshot could not be read or restored.
///
/// # Examples
///
/// ```
/// use curator::session::{Error, Snapshot, SnapshotErrorKind};
///
/// let newer = r#"{"format": "curator.session.snapshot", "version": 99, "entries": [], "checkpoints": []}"#;
/// assert!(matches!(Snapshot::from_json(newer), Err(Error::SnapshotRestore { kind: SnapshotErrorKind::NewerVersion, .. })));
/// assert!(matches!(Snapshot::from_json("{,}"), Err(Error::SnapshotRestore { kind: SnapshotErrorKind::Malformed, .. })));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SnapshotErrorKind {
    /// Not JSON, not a curator snapshot, or not the shape of one.
    Malformed,
    /// A version newer than this build reads.
    NewerVersion,
    /// Well formed, but holding a record the driver could never have written (two entries at
    /// one place, a gap in the sequences, a result that answers no call, ...).
    InvariantBroken,
}

impl std::fmt::Display for SnapshotErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SnapshotErrorKind::Malformed => "malformed",
            SnapshotErrorKind::NewerVersion => "newer version",
            SnapshotErrorKind::InvariantBroken => "invariant broken",
        })
    }
}

/// Everything that can go wrong while recording, reading, resuming or restoring.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// There is no conversation to resume (or not the one asked for).
    #[error("no conversation of session `{key}` to resume{}", .evaluation.map(|e| format!(" with evaluation id {e}")).unwrap_or_default())]
    ConversationNotFound {
        /// The session key asked for.
        key: SessionKey,
        /// The evaluation asked for, if one was.
        evaluation: Option<EvaluationId>,
    },
    /// The evaluation belongs to another session key: it is never resumed or appended to
    /// under this one.
    #[error("evaluation {evaluation} belongs to session `{found}`, not `{expected}`")]
    KeyMismatch {
        /// The evaluation.
        evaluation: EvaluationId,
        /// The key the caller gave.
        expected: SessionKey,
        /// The key the evaluation belongs to.
        found: SessionKey,
    },
    /// The recorded conversation was started by another prompt.
    #[error("cannot resume: the conversation was recorded for prompt {}, not {expected}", .found.as_ref().map_or_else(|| "(none)".to_owned(), ToString::to_string))]
    PromptMismatch {
        /// The prompt the caller resumes with.
        expected: PromptRef,
        /// The prompt the record names.
        found: Option<PromptRef>,
    },
    /// A snapshot that cannot be restored; the store was left unchanged.
    #[error("cannot restore snapshot ({kind}): {reason}")]
    SnapshotRestore {
        /// What kind of problem: malformed, a newer version, or a broken invariant.
        kind: SnapshotErrorKind,
        /// Why.
        reason: String,
        /// The parser's error, when the text could not be read.
        #[source]
        source: Option<BoxError>,
    },

    /// A session key that breaks the rule every store applies (see
    /// [`SessionKey::check`](crate::SessionKey::check)).
    #[error("session key `{key}`: {rule}")]
    BadKey {
        /// The key, shortened to one short line.
        key: String,
        /// The rule it breaks.
        rule: String,
    },

    /// An append or a checkpoint under a claim
    /// ([`SessionStore::append_batch_fenced`](crate::SessionStore::append_batch_fenced),
    /// [`SessionStore::put_checkpoint_fenced`](crate::SessionStore::put_checkpoint_fenced))
    /// whose token is no longer the session's: another worker claimed the session since
    /// (this one stalled past its lease), or the claim ended and none holds the session
    /// (`current` is `None`). Nothing was written, in the same transaction as the check:
    /// stop driving the session.
    #[error("session `{key}`: this worker's claim (token {token}) {}; nothing was written", .current.map_or_else(|| "ended (no claim holds the session)".to_owned(), |c| format!("was taken over (the session's token is {c})")))]
    Fenced {
        /// The session.
        key: SessionKey,
        /// The token the write carried.
        token: u64,
        /// The session's current token, when a claim holds it.
        current: Option<u64>,
    },
    /// Another worker holds a live claim on the session (see
    /// [`ClaimStore`](crate::ClaimStore)): it is driving it now.
    #[error("session `{key}` is claimed by another worker{}", .expires_in.map(|d| format!(" (its lease runs out in {:.1} s unless renewed)", d.as_secs_f64())).unwrap_or_default())]
    Claimed {
        /// The session key.
        key: SessionKey,
        /// How long the other claim's lease still runs, when the store knows.
        expires_in: Option<std::time::Duration>,
    },
    /// A claim's lease ran out and another worker claimed the session: this worker must stop
    /// driving it.
    #[error(
        "the claim on session `{key}` was lost: its lease ran out and another worker claimed it"
    )]
    ClaimLost {
        /// The session key.
        key: SessionKey,
    },
    /// A different message claims a sequence number that is taken: most likely another
    /// writer (a second process or driver on the same session key) recorded into this
    /// conversation since this driver read it. One process may drive a key at a time: a
    /// [`ClaimStore`](crate::ClaimStore) claim makes sure of it.
    #[error(
        "evaluation {evaluation}: sequence {sequence} is already taken by message {existing}: another writer is recording this conversation (one process may drive a session key at a time: claim the key)"
    )]
    SequenceTaken {
        /// The evaluation.
        evaluation: EvaluationId,
        /// The sequence number.
        sequence: u64,
        /// The message that holds it.
        existing: MessageId,
    },
    /// An assistant reply that makes two calls with one id: no result could say which it
    /// answers, and providers refuse such a request, so it is not recorded.
    #[error("the reply makes two tool calls with id `{call_id}`")]
    DuplicateToolCallId {
        /// The repeated id.
        call_id: String,
    },
    /// A tool result for a call that the record does not hold.
    #[error("no tool call with id `{call_id}` is waiting for a result")]
    UnknownToolCall {
        /// The id given.
        call_id: String,
    },
    /// A tool result for a call whose result is recorded already, and differs from it (the
    /// same result again is a retry, reported as a duplicate).
    #[error("tool call `{call_id}` already has a different result recorded")]
    AlreadyAnswered {
        /// The id of the answered call.
        call_id: String,
    },
    /// A message that cannot be recorded while tool calls wait for their results: the record
    /// would no longer be accepted by providers.
    #[error("tool calls {} are still waiting for results", .calls.join(", "))]
    PendingToolCalls {
        /// The ids of the waiting calls.
        calls: Vec<String>,
    },
    /// A message of the wrong kind for the record call (a user message given as the
    /// assistant's reply, say).
    #[error("{call}: expected {} message, got {} message", with_article(expected), with_article(&found.to_string()))]
    WrongRole {
        /// The call that was made.
        call: &'static str,
        /// The role it takes.
        expected: &'static str,
        /// The role it was given.
        found: curator_model::Role,
    },
    /// The provider closure of [`run_blocking`](crate::run_blocking) (or of any
    /// [`drive`](crate::drive) of a conversation) failed.
    #[error("the provider call failed")]
    Provider(#[source] BoxError),
    /// The storage backend failed; [`kind`](StoreErrorKind) says how, the source why.
    #[error("session store ({backend}): {message}: {kind}")]
    Store {
        /// Which backend.
        backend: &'static str,
        /// What kind of failure.
        kind: StoreErrorKind,
        /// What was being done, or what is wrong.
        message: String,
        /// What the backend reported, when it reported an error.
        #[source]
        source: Option<BoxError>,
    },
    /// The stored data is not what this build can read (a file of another application, a
    /// newer schema); the source says what.
    #[error("session store ({backend}): the stored data is not what this build can read")]
    Incompatible {
        /// Which backend.
        backend: &'static str,
        /// What is wrong.
        #[source]
        source: BoxError,
    },
    /// A blocking task of the async face ([`AsyncDriver`](crate::AsyncDriver), feature
    /// `tokio`) ended without an answer: it panicked, or the runtime shut down. Whether its
    /// store call took effect is unknown; retry it (record calls are idempotent).
    #[error("the blocking task did not finish")]
    Join(#[source] BoxError),
    /// A [`Driver`](crate::Driver) said [`Action::Run`](crate::Action::Run) with nothing to
    /// run: recording nothing cannot change what it says next, so a loop would ask it again
    /// forever. [`drive`](crate::drive) and `drive_async` refuse it at once, having called
    /// and recorded nothing for it.
    #[error(
        "the driver `{driver}` asked to run an empty list of work: a driver with nothing to run says what comes next instead"
    )]
    EmptyRun {
        /// The driver's type.
        driver: &'static str,
    },
    /// `drive_async` was called on an [`AsyncDriver`](crate::AsyncDriver) (or a clone of it)
    /// whose previous `drive_async` has not ended: both would call the model and run the
    /// same work. Nothing was called or recorded; run it again once the other run ended.
    #[error(
        "the driver `{driver}` is already being driven by another drive_async: one run at a time"
    )]
    AlreadyRunning {
        /// The driver's type.
        driver: &'static str,
    },
    /// A user message under a new caller's key ([`add_user_keyed`](crate::Conversation::add_user_keyed))
    /// while the turn of an earlier message has not ended: nothing was recorded. Finish
    /// that turn (run the conversation), then record it.
    #[error(
        "message `{key}` was not recorded: the turn of an earlier message is still running (the record waits for {waiting}); finish it, then record this one"
    )]
    TurnInProgress {
        /// The caller's key of the refused message.
        key: String,
        /// What the running turn waits for.
        waiting: &'static str,
    },
    /// A caller's message id ([`add_user_keyed`](crate::Conversation::add_user_keyed)) that
    /// breaks the rule of session keys (empty, blank, a control character, longer than
    /// [`SessionKey::MAX_LEN`](crate::SessionKey::MAX_LEN)), or that was recorded before with
    /// another text: nothing was recorded.
    #[error("message id `{key}`: {rule}")]
    BadMessageId {
        /// The id, shortened to one short line.
        key: String,
        /// What is wrong with it.
        rule: String,
    },
    /// A user message with nothing in it: providers refuse an empty message, so a session
    /// that recorded one could never be sent again. Nothing was recorded.
    #[error("an empty user message is not recorded: providers refuse empty messages")]
    EmptyMessage,
    /// The model replied with no text and no tool call. An empty reply is no answer and
    /// providers refuse to be sent one back, so nothing was recorded: the turn still waits
    /// for the model (ask again to call it again).
    #[error("the model replied with nothing (no text, no tool call); nothing was recorded")]
    EmptyReply,
    /// A `curator_agent::Agent` run made its `max_turns` model
    /// calls without an answer. Everything it did is recorded; the next run continues it (an
    /// `ask` with the same message id, or a new message, which is recorded after it).
    #[error(
        "no answer within the turn limit: {model_calls} model calls made (max_turns is {max_turns}); everything is recorded, and the next ask continues"
    )]
    TurnLimit {
        /// The agent's limit of model calls per `ask`.
        max_turns: u32,
        /// The model calls this `ask` made.
        model_calls: u32,
        /// What they took, as their clients reported it.
        usage: curator_client::Usage,
    },
    /// Curation failed while building a request.
    #[error(transparent)]
    Curation(#[from] curator_strategies::Error),
    /// A message or entry could not be built.
    #[error(transparent)]
    Model(#[from] curator_model::Error),
}

/// `an assistant`, `a user`: a role's name with its indefinite article (by sound: the `u` of
/// `user` takes `a`).
fn with_article(word: &str) -> String {
    let article = if word.starts_with(['a', 'e', 'i', 'o']) { "an" } else { "a" };
    format!("{article} {word}")
}

impl Error {
    /// A [`Store`](Error::Store) error.
    pub fn store(
        backend: &'static str,
        kind: StoreErrorKind,
        message: impl Into<String>,
        source: Option<BoxError>,
    ) -> Self {
        Error::Store { backend, kind, message: message.into(), source }
    }

    /// Whether the operation may succeed when tried again unchanged (a busy store).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::session::Error;
    ///
    /// assert!(!Error::UnknownToolCall { call_id: "c1".into() }.is_retryable());
    /// ```
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Store { kind, .. } if kind.is_retryable())
    }
}

impl From<curator_client::ClientError> for Error {
    fn from(error: curator_client::ClientError) -> Self {
        Error::Provider(Box::new(error))
    }
}
