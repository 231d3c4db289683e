//! `Agent`: a model client, tools, the default pipeline and exactly-once resume around the
//! plain conversation, so that a whole agent is a few lines.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use curator_model::{BoxError, Message, PromptRef, Role};
use curator_strategies::{CurationContext, HistoryManager, Redactor, StrategyConfig};

use curator_session::{
    Claim, ClaimStore, Conversation, Curation, Error, Keyed, Outcome, Result, ResumePolicy,
    SessionKey, SessionStore, ToolContext, drive_parallel,
};

use crate::Tools;
use crate::run::{AgentEnd, AgentOutcome, AgentRun, Tally};
use curator_client::{Delta, DeltaFn, ModelClient, ModelRequest};

/// The history budget of an agent that names none, in tokens.
pub const DEFAULT_AGENT_MAX_TOKENS: u64 = StrategyConfig::DEFAULT_BUDGET;

/// How long [`Agent::ask_claimed`] holds its claim between renewals, unless set: longer
/// than a model call or a tool batch may take.
pub const DEFAULT_AGENT_LEASE: Duration = Duration::from_mins(5);

/// The model calls one [`Agent::ask`] makes at most, unless set.
pub const DEFAULT_AGENT_MAX_TURNS: u32 = 25;

/// The prompt-cache key of a session (OpenAI's `prompt_cache_key`): `curator-` and a hash
/// of the prompt and the session key, so that every call of a session shares one cache and
/// the key itself (a user id, say) is not sent.
fn cache_key(prompt: &PromptRef, key: &SessionKey) -> String {
    // FNV-1a, 64 bits: stable across processes and builds (the standard hasher is not
    // promised to be).
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in prompt.to_string().bytes().chain([0]).chain(key.as_str().bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("curator-{hash:016x}")
}

#[derive(Clone)]
struct Parts {
    model: Arc<dyn ModelClient>,
    tools: Tools,
    system: String,
    prompt: PromptRef,
    pipeline: StrategyConfig,
    built: OnceLock<Arc<dyn HistoryManager>>,
    max_turns: u32,
    policy: ResumePolicy,
    redactor: Option<Redactor>,
    claim_lease: Duration,
    claim_wait: Duration,
    /// Where a streamed reply's pieces go, when the model is asked to stream.
    on_delta: Option<Arc<DeltaFn>>,
    /// One lock per session key, shared by every clone: one run at a time per session in
    /// this process.
    locks: Arc<Mutex<HashMap<SessionKey, Weak<Mutex<()>>>>>,
}

/// A tool-using agent: a [`ModelClient`], [`Tools`], a system prompt and a curation
/// pipeline (the default one, [`StrategyConfig::default_pipeline`], with the tools' schemas
/// counted into the budget), driving a [`Conversation`] per session key in any
/// [`SessionStore`].
///
/// [`ask`](Agent::ask) records the user's message under the caller's own id, runs the
/// model and the tools until the model answers, and returns the answer. Every step is
/// recorded before the next one runs, so an agent killed at any point answers the same
/// `ask` again exactly where it stopped:
///
/// - the message is recorded once per id: asked again (a redelivered job), it returns its
///   own recorded answer without calling the model, or finishes its turn if it was cut
///   short; a new message while an earlier one's turn was cut short waits for that turn to
///   finish first (nothing is dropped);
/// - each tool call is marked started, durably, before it runs, and its result is recorded
///   the moment it comes: a call that never started is run on resume; one interrupted while
///   it ran is run again (the default, [`ResumePolicy::Rerun`]: the tool sees
///   [`ToolContext::started`] and can check its idempotency key, the call id) or answered as
///   interrupted ([`ResumePolicy::AnswerInterrupted`]); no call whose result is recorded runs
///   again;
/// - the calls of one reply run at once, one thread each, and each result is recorded the
///   moment its tool returns;
/// - runs on one session key take turns (in this process: across processes, use
///   [`ask_claimed`](Agent::ask_claimed)).
///
/// Cloning is cheap (the parts are shared), and an `Agent` is `Send + Sync`: one per
/// program, shared by its threads and tasks.
///
/// # Examples
///
/// A stand-in model that calls the tool once, then answers with its result:
///
/// ```
/// use curator::model::{Message, Role, ToolCall};
/// use curator::client::{ClientError, ModelClient, ModelReply, ModelRequest};
/// use curator::agent::{Agent, Tools};
/// use curator::session::MemoryStore;
/// use serde_json::json;
///
/// struct Model;
/// impl ModelClient for Model {
///     fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelReply, ClientError> {
///         let last = request.messages.last().map(|m| (m.role(), m.text().into_owned()));
///         Ok(ModelReply::new(match last {
///             Some((Role::Tool, result)) => Message::assistant(format!("It is {result}.")),
///             _ => Message::assistant_with_calls(None, vec![ToolCall::new("c1", "add", r#"{"a": 2, "b": 2}"#)]),
///         }))
///     }
/// }
///
/// let tools = Tools::new().add("add", "Adds a and b.", json!({"type": "object"}), |args| {
///     Ok((args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0)).to_string())
/// });
/// let agent = Agent::new(Model, tools).system("You add numbers.");
/// let store = MemoryStore::new();
/// let outcome = agent.ask(&store, "user-42", "msg-1", "What is 2 + 2?")?;
/// assert_eq!(outcome.text(), "It is 4.");
/// // The same message again (a redelivery): its recorded answer, no model call.
/// assert_eq!(agent.ask(&store, "user-42", "msg-1", "What is 2 + 2?")?.text(), "It is 4.");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Agent {
    parts: Arc<Parts>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("tools", &self.parts.tools)
            .field("prompt", &self.parts.prompt)
            .field("max_turns", &self.parts.max_turns)
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// An agent asking `model`, with `tools`, an empty system prompt, the default pipeline at
    /// [`DEFAULT_AGENT_MAX_TOKENS`], at most [`DEFAULT_AGENT_MAX_TURNS`] model calls per
    /// run, recorded under the prompt `agent/default`.
    pub fn new(model: impl ModelClient + 'static, tools: Tools) -> Self {
        Self {
            parts: Arc::new(Parts {
                model: Arc::new(model),
                tools,
                system: String::new(),
                prompt: PromptRef::new("agent", "default"),
                pipeline: StrategyConfig::default_pipeline(DEFAULT_AGENT_MAX_TOKENS),
                built: OnceLock::new(),
                max_turns: DEFAULT_AGENT_MAX_TURNS,
                policy: ResumePolicy::Rerun,
                redactor: Some(Redactor::new()),
                claim_lease: DEFAULT_AGENT_LEASE,
                claim_wait: Duration::from_secs(30),
                on_delta: None,
                locks: Arc::default(),
            }),
        }
    }

    fn with(self, change: impl FnOnce(&mut Parts)) -> Self {
        // A clone's parts are copied (the model and the per-key locks stay shared).
        let mut parts = Arc::unwrap_or_clone(self.parts);
        change(&mut parts);
        parts.built = OnceLock::new();
        Self { parts: Arc::new(parts) }
    }

    /// The system prompt, recorded when a session starts (a resumed session keeps the one
    /// it started with).
    #[must_use]
    pub fn system(self, system: impl Into<String>) -> Self {
        let system = system.into();
        self.with(|parts| parts.system = system)
    }

    /// The default pipeline with a history budget of `max_tokens` (the tools' schemas
    /// counted into it), in place of any pipeline set before.
    #[must_use]
    pub fn max_tokens(self, max_tokens: u64) -> Self {
        self.with(|parts| parts.pipeline = StrategyConfig::default_pipeline(max_tokens))
    }

    /// Another pipeline (the tools' schemas are counted into its budgets).
    #[must_use]
    pub fn pipeline(self, pipeline: StrategyConfig) -> Self {
        self.with(|parts| parts.pipeline = pipeline)
    }

    /// The prompt identity sessions are recorded under: a key's conversation with another
    /// prompt is another conversation.
    #[must_use]
    pub fn prompt(self, prompt: PromptRef) -> Self {
        self.with(|parts| parts.prompt = prompt)
    }

    /// The most model calls one `ask` makes, an earlier message's unfinished turn it
    /// finishes first included ([`Error::TurnLimit`] after them: everything is recorded, and
    /// the next `ask` continues).
    #[must_use]
    pub fn max_turns(self, max_turns: u32) -> Self {
        self.with(|parts| parts.max_turns = max_turns)
    }

    /// Asks the model to stream its replies, and hands each piece to `on_delta` as it
    /// arrives (text, thinking, tool-call pieces: see [`ModelClient::stream`]). A reply is
    /// recorded once, whole, when its stream has ended; a stream that breaks off records
    /// nothing and ends the `ask` with [`Error::Provider`] (its source a
    /// `ClientError::StreamCut`), and the next `ask` with the same id calls the model again.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use curator::client::{ClientError, Delta, ModelClient, ModelReply, ModelRequest};
    /// use curator::model::Message;
    /// use curator::agent::{Agent, AgentEnd, Tools};
    /// use curator::session::MemoryStore;
    ///
    /// struct Hello;
    ///
    /// impl ModelClient for Hello {
    ///     fn complete(&self, _: &ModelRequest<'_>) -> Result<ModelReply, ClientError> {
    ///         Ok(ModelReply::new(Message::assistant("Hello!")))
    ///     }
    /// }
    ///
    /// let shown = Arc::new(Mutex::new(String::new()));
    /// let screen = Arc::clone(&shown);
    /// let agent = Agent::new(Hello, Tools::new()).stream_to(move |delta| {
    ///     if let Delta::Text(text) = delta {
    ///         screen.lock().unwrap().push_str(text);
    ///     }
    /// });
    /// let outcome = agent.ask(&MemoryStore::new(), "user-1", "m1", "Hi")?;
    /// assert_eq!(outcome.end, AgentEnd::Answered(Message::assistant("Hello!")));
    /// assert_eq!(*shown.lock().unwrap(), "Hello!");
    /// # Ok::<(), curator::session::Error>(())
    /// ```
    #[must_use]
    pub fn stream_to(self, on_delta: impl Fn(&Delta) + Send + Sync + 'static) -> Self {
        let on_delta: Arc<DeltaFn> = Arc::new(on_delta);
        self.with(|parts| parts.on_delta = Some(on_delta))
    }

    /// What a resumed run does with a call that was interrupted while it ran.
    #[must_use]
    pub fn resume_policy(self, policy: ResumePolicy) -> Self {
        self.with(|parts| parts.policy = policy)
    }

    /// Redacts every message with `redactor` before it is recorded, instead of the default
    /// [`Redactor::new`]: secrets never reach the store (see
    /// [`Conversation::with_redaction`]).
    #[must_use]
    pub fn redact_before_recording(self, redactor: Redactor) -> Self {
        self.with(|parts| parts.redactor = Some(redactor))
    }

    /// Records every message as it was said, secrets included (by default they are redacted
    /// before recording): for a record that must keep them, in a store you protect as
    /// such. The default pipeline still redacts what the model is sent.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Message;
    /// use curator::client::{ClientError, ModelClient, ModelReply, ModelRequest};
    /// use curator::agent::{Agent, Tools};
    /// use curator::session::{MemoryStore, SessionStore};
    ///
    /// struct Noted;
    /// impl ModelClient for Noted {
    ///     fn complete(&self, _: &ModelRequest<'_>) -> Result<ModelReply, ClientError> {
    ///         Ok(ModelReply::new(Message::assistant("noted")))
    ///     }
    /// }
    ///
    /// let store = MemoryStore::new();
    /// let key = "sk-proj-4f9Qx7LmN2pR8sT1vW3yZ6bC0dE5gH";
    /// let holds_key = |store: &MemoryStore| -> Result<bool, curator::session::Error> {
    ///     let latest = store.latest_evaluation()?.expect("recorded");
    ///     Ok(store.entries(latest)?.iter().any(|e| e.message.text().contains(key)))
    /// };
    /// Agent::new(Noted, Tools::new()).ask(&store, "u", "m1", &format!("my key is {key}"))?;
    /// assert!(!holds_key(&store)?);
    /// Agent::new(Noted, Tools::new()).record_unredacted().ask(&store, "v", "m1", &format!("my key is {key}"))?;
    /// assert!(holds_key(&store)?);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn record_unredacted(self) -> Self {
        self.with(|parts| parts.redactor = None)
    }

    /// How long [`ask_claimed`](Agent::ask_claimed) holds its claim between renewals, and
    /// how long it waits for a claim another worker holds.
    #[must_use]
    pub fn claim(self, lease: Duration, wait: Duration) -> Self {
        self.with(|parts| {
            parts.claim_lease = lease;
            parts.claim_wait = wait;
        })
    }

    /// The tools.
    pub fn tools(&self) -> &Tools {
        &self.parts.tools
    }

    /// Records the user's `text` under the caller's `message_id` in the session `session`
    /// of `store`, runs the model and the tools until the model answers, and returns how the
    /// run ended. See [`Agent`] for what happens after a crash and when a message is asked
    /// again.
    ///
    /// # Errors
    ///
    /// [`Error::Provider`] when the model call fails (after its client's retries), holding
    /// the client's error; [`Error::BadKey`] for a session key every store refuses;
    /// [`Error::Curation`] when the pipeline cannot be built or cannot keep what it must;
    /// a store error. What was recorded stays recorded: ask again to continue.
    pub fn ask<S: SessionStore>(
        &self,
        store: S,
        session: impl Into<SessionKey>,
        message_id: &str,
        text: &str,
    ) -> Result<AgentOutcome> {
        let key = session.into();
        key.check()?;
        let lock = self.lock(&key);
        let _running = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut conversation = self.open(store, key)?;
        self.ask_in(&mut conversation, message_id, text, None)
    }

    /// The lock of a session key: a run of this agent (or a clone) on the key holds it.
    fn lock(&self, key: &SessionKey) -> Arc<Mutex<()>> {
        let mut locks = self.parts.locks.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(lock) = locks.get(key).and_then(Weak::upgrade) {
            return lock;
        }
        if locks.len() >= 1_024 {
            locks.retain(|_, lock| lock.strong_count() > 0);
        }
        let lock = Arc::new(Mutex::new(()));
        locks.insert(key.clone(), Arc::downgrade(&lock));
        lock
    }

    /// As [`ask`](Agent::ask), holding a claim on the session for the run, so that two
    /// workers never drive one session at once (PostgreSQL's store, for workers on many
    /// machines): waits for a claim another worker holds (up to the wait of
    /// [`claim`](Agent::claim)), renews it before every model call and tool batch, and
    /// releases it at the end.
    ///
    /// # Errors
    ///
    /// As [`ask`](Agent::ask); [`Error::Claimed`] when the session stays claimed by another
    /// worker; [`Error::ClaimLost`] when the claim ran out and another worker took it (this
    /// worker stops before its next step: nothing of it is recorded after that).
    pub fn ask_claimed<S: SessionStore + ClaimStore>(
        &self,
        store: S,
        session: impl Into<SessionKey>,
        message_id: &str,
        text: &str,
    ) -> Result<AgentOutcome> {
        let key = session.into();
        key.check()?;
        let lock = self.lock(&key);
        let _running = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let claim = store.claim_within(&key, self.parts.claim_lease, self.parts.claim_wait)?;
        let outcome = self.open(&store, key).and_then(|conversation| {
            // Fenced where the claims carry tokens: a worker that stalled past its lease and
            // lost the session appends nothing more.
            let mut conversation = match claim.fence() {
                Some(fence) => conversation.with_fence(fence),
                None => conversation,
            };
            self.ask_in(&mut conversation, message_id, text, Some(&claim))
        });
        let released = claim.release();
        let outcome = outcome?;
        released?;
        Ok(outcome)
    }

    /// Answers a call a tool stopped ([`AgentEnd::Stopped`]: a person had to decide, a
    /// payment needed approval) with `result` (`Err`: a failed call, which the model reads as
    /// such), then runs the turn on to its answer, as [`ask`](Agent::ask) would.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, Role, ToolCall};
    /// use curator::client::{ClientError, ModelClient, ModelReply, ModelRequest};
    /// use curator::agent::{Agent, AgentEnd, ToolError, Tools};
    /// use curator::session::MemoryStore;
    /// use serde_json::json;
    ///
    /// struct Model;
    /// impl ModelClient for Model {
    ///     fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelReply, ClientError> {
    ///         Ok(ModelReply::new(match request.messages.last() {
    ///             Some(m) if m.role() == Role::Tool => Message::assistant(format!("Refund: {}.", m.text())),
    ///             _ => Message::assistant_with_calls(None, vec![ToolCall::new("c1", "refund", "{}")]),
    ///         }))
    ///     }
    /// }
    ///
    /// let tools = Tools::new().add("refund", "Refunds the order.", json!({"type": "object"}), |_| {
    ///     Err(ToolError::stop("a person approves refunds"))
    /// });
    /// let agent = Agent::new(Model, tools);
    /// let store = MemoryStore::new();
    /// let outcome = agent.ask(&store, "customer-7", "m1", "Refund order 42")?;
    /// let AgentEnd::Stopped { call_id, .. } = outcome.end else { panic!("stopped") };
    /// // Later, once a person approved it:
    /// let outcome = agent.answer_call(&store, "customer-7", &call_id, Ok("approved, 30 EUR".into()))?;
    /// assert_eq!(outcome.text(), "Refund: approved, 30 EUR.");
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::UnknownToolCall`] when the session has no such call,
    /// [`Error::AlreadyAnswered`] when it has another result; then as [`ask`](Agent::ask).
    pub fn answer_call<S: SessionStore>(
        &self,
        store: S,
        session: impl Into<SessionKey>,
        call_id: &str,
        result: Result<String, String>,
    ) -> Result<AgentOutcome> {
        let key = session.into();
        key.check()?;
        let lock = self.lock(&key);
        let _running = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut conversation = self.open(&store, key)?;
        conversation.record_tool_result(call_id, result)?;
        let mut tally = Tally::default();
        let end = self.run(&mut conversation, None, &mut tally)?;
        Ok(tally.outcome(end))
    }

    /// As [`ask`](Agent::ask), on tokio: the run (store I/O, model calls, tools) goes to
    /// the runtime's blocking threads. The future owns what it needs (it does not borrow the
    /// agent), so it is `Send + 'static`: hand it to `tokio::spawn` on the multi-threaded
    /// runtime as it is.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Message;
    /// use curator::client::{ClientError, ModelClient, ModelReply, ModelRequest};
    /// use curator::agent::{Agent, Tools};
    /// use curator::session::MemoryStore;
    /// use std::sync::Arc;
    ///
    /// struct Model;
    /// impl ModelClient for Model {
    ///     fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelReply, ClientError> {
    ///         let question = request.messages.last().map(|m| m.text().into_owned()).unwrap_or_default();
    ///         Ok(ModelReply::new(Message::assistant(format!("You asked: {question}"))))
    ///     }
    /// }
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    /// runtime.block_on(async {
    ///     let agent = Agent::new(Model, Tools::new());
    ///     let store = Arc::new(MemoryStore::new());
    ///     let tasks: Vec<_> = ["ann", "bob"]
    ///         .into_iter()
    ///         .map(|user| tokio::spawn(agent.ask_async(Arc::clone(&store), user, "m1", format!("{user}'s question"))))
    ///         .collect();
    ///     for task in tasks {
    ///         let outcome = task.await??;
    ///         assert!(outcome.text().starts_with("You asked: "));
    ///     }
    ///     Ok::<(), Box<dyn std::error::Error>>(())
    /// })
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`ask`](Agent::ask); [`Error::Join`] when the blocking task panicked or the
    /// runtime shut down.
    #[cfg(feature = "tokio")]
    pub fn ask_async<S: SessionStore + Send + 'static>(
        &self,
        store: S,
        session: impl Into<SessionKey>,
        message_id: impl Into<String>,
        text: impl Into<String>,
    ) -> impl Future<Output = Result<AgentOutcome>> + Send + 'static {
        let (agent, key, id, text) = (self.clone(), session.into(), message_id.into(), text.into());
        async move {
            tokio::task::spawn_blocking(move || agent.ask(store, key, &id, &text))
                .await
                .map_err(|e| Error::Join(Box::new(e)))?
        }
    }

    /// As [`ask_claimed`](Agent::ask_claimed), on tokio (see [`ask_async`](Agent::ask_async)).
    ///
    /// # Errors
    ///
    /// As [`ask_claimed`](Agent::ask_claimed); [`Error::Join`].
    #[cfg(feature = "tokio")]
    pub fn ask_claimed_async<S: SessionStore + ClaimStore + Send + 'static>(
        &self,
        store: S,
        session: impl Into<SessionKey>,
        message_id: impl Into<String>,
        text: impl Into<String>,
    ) -> impl Future<Output = Result<AgentOutcome>> + Send + 'static {
        let (agent, key, id, text) = (self.clone(), session.into(), message_id.into(), text.into());
        async move {
            tokio::task::spawn_blocking(move || agent.ask_claimed(store, key, &id, &text))
                .await
                .map_err(|e| Error::Join(Box::new(e)))?
        }
    }

    fn open<S: SessionStore>(&self, store: S, key: SessionKey) -> Result<Conversation<S>> {
        let parts = &self.parts;
        let system = Message::system(parts.system.clone());
        let system = match &parts.redactor {
            Some(redactor) => redactor.redact_message(&system).unwrap_or(system),
            None => system,
        };
        let conversation = Conversation::open(store, key, parts.prompt.clone(), system)?;
        let conversation = match &parts.redactor {
            Some(redactor) => conversation.with_redaction(redactor.clone()),
            None => conversation,
        };
        conversation.with_start_marks()
    }

    fn ask_in<S: SessionStore>(
        &self,
        conversation: &mut Conversation<S>,
        message_id: &str,
        text: &str,
        claim: Option<&Claim>,
    ) -> Result<AgentOutcome> {
        let mut tally = Tally::default();
        let keyed = match conversation.add_user_keyed(message_id, text) {
            // An earlier message's turn was cut short (a crash, a failed model call): it
            // runs to its end first, within this ask's turns.
            Err(Error::TurnInProgress { .. }) => match self.run(conversation, claim, &mut tally) {
                Ok(AgentEnd::Answered(_)) => conversation.add_user_keyed(message_id, text)?,
                // It ran out of turns: given up, and this message is recorded after it (and
                // answered with the turns left, if any).
                Err(Error::TurnLimit { .. }) => {
                    conversation.add_user_keyed_after_unanswered(message_id, text)?
                }
                // A tool stopped it: its call needs a result before any new message.
                Ok(AgentEnd::Stopped { .. }) => {
                    return Err(Error::TurnInProgress {
                        key: message_id.to_owned(),
                        waiting: STOPPED_WAITING,
                    });
                }
                Err(e) => return Err(e),
            },
            other => other?,
        };
        if let Keyed::Answered(answer) = keyed {
            return Ok(tally.outcome(AgentEnd::Answered(answer)));
        }
        // New, or in progress (a crash or a redelivery came before the answer).
        let end = self.run(conversation, claim, &mut tally)?;
        Ok(tally.outcome(end))
    }

    /// The pipeline, built the first time a run needs it (the tools' schemas counted into
    /// its budgets); a pipeline that cannot be built is an error of every run.
    fn built_pipeline(&self) -> Result<Arc<dyn HistoryManager>> {
        let parts = &self.parts;
        if let Some(built) = parts.built.get() {
            return Ok(Arc::clone(built));
        }
        let config = if parts.tools.is_empty() {
            parts.pipeline.clone()
        } else {
            parts.pipeline.clone().with_tools(&parts.tools.definitions())?.0
        };
        let built: Arc<dyn HistoryManager> = Arc::from(config.build()?);
        Ok(Arc::clone(parts.built.get_or_init(|| built)))
    }

    /// Runs the conversation on [`drive`] until the model answers, a tool stops the run, or
    /// the ask's turns are spent ([`Error::TurnLimit`]): the reply's calls run at once
    /// ([`drive_parallel`]), each result recorded as its tool returns.
    fn run<S: SessionStore>(
        &self,
        conversation: &mut Conversation<S>,
        claim: Option<&Claim>,
        tally: &mut Tally,
    ) -> Result<AgentEnd> {
        let parts = &self.parts;
        let pipeline = self.built_pipeline()?;
        let definitions = parts.tools.definitions();
        let cache_key = cache_key(&parts.prompt, conversation.key());
        let ctx = CurationContext::default();
        let provider = |request: &[Message]| {
            let mut model_request = ModelRequest::new(request).with_cache_key(&cache_key);
            if !parts.tools.is_empty() {
                model_request = model_request.with_tools(&definitions);
            }
            match &parts.on_delta {
                Some(on_delta) => parts.model.stream(&model_request, &mut |d| on_delta(d)),
                None => parts.model.complete(&model_request),
            }
            .map_err(|e| -> BoxError { Box::new(e) })
        };
        let tools = &parts.tools;
        // The turns are the ask's: an earlier turn finished first took its share.
        let turns_left = parts.max_turns.saturating_sub(tally.calls);
        let mut run = AgentRun::new(conversation, parts.policy, claim, tally);
        let outcome = drive_parallel(
            &mut run,
            Curation::new(&*pipeline, &ctx),
            provider,
            |context: &ToolContext| tools.run_one(context),
            turns_left,
        )?;
        match outcome {
            Outcome::Finished(end) => Ok(end),
            Outcome::MaxTurns => Err(Error::TurnLimit {
                max_turns: parts.max_turns,
                model_calls: tally.calls,
                usage: tally.usage,
            }),
            // Only the system message is recorded: there is nothing to answer (a run starts
            // after a user message is recorded, so this says the record changed under the
            // agent).
            _ => Err(Error::WrongRole {
                call: "Agent::ask",
                expected: "a user message to answer",
                found: Role::System,
            }),
        }
    }
}

/// What a new message waits for when the earlier turn was stopped by a tool.
const STOPPED_WAITING: &str =
    "the result of a call a tool stopped (ask again with the earlier message's id to resume it)";
