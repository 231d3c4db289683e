//! Building a [`ConversationLoop`]: its body, configuration, store and hooks.

use std::collections::BTreeMap;
use std::sync::Arc;

use std::time::Duration;

use curator_session::{ClaimStore, SessionKey, SessionStore, SessionSummaries};
use curator_strategies::{MemorySummaryStore, Redactor, Summarizer, SummaryStore};

use crate::config::{Defaults, LoopConfig};
use crate::driver::{ConversationLoop, ExitCondition, Progress};
use crate::error::{Error, Result};
use crate::persist::Persister;
use crate::quota::{Account, Quota};
use crate::step::Step;
use crate::template::HistoryTemplate;
use crate::trace::TraceSink;

/// Builds a [`ConversationLoop`].
///
/// # Examples
///
/// ```
/// use curator::conversation_loop::{AiTurnSource, FnStep, Hitl, Injection, LoopBuilder, LoopConfig, StepOutcome};
///
/// let mut config = LoopConfig::conversational();
/// config.ai_turn_source = AiTurnSource::AllAgents; // the final step is the human's
/// let mut chat = LoopBuilder::new("support", config)
///     .step("agent", FnStep::agent(Injection::Messages, |call| {
///         Ok(StepOutcome::text(format!("I have seen {} messages", call.messages.len())))
///     }))
///     .step("human", Hitl::new("Anything else?"))
///     .build()?;
/// assert!(chat.run("My parcel is late.")?.is_paused());
/// let texts: Vec<String> = chat.turns().into_iter().map(|t| t.content).collect();
/// assert_eq!(texts, ["My parcel is late.", "I have seen 1 messages"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct LoopBuilder {
    name: String,
    config: LoopConfig,
    defaults: Defaults,
    steps: Vec<(String, Box<dyn Step>)>,
    summarizers: BTreeMap<String, Arc<dyn Summarizer>>,
    store: Option<LoopStore>,
    claim_lease: Duration,
    claim_wait: Duration,
    trace: Option<Arc<dyn TraceSink>>,
    exit: Option<ExitCondition>,
    quota: Option<Quota>,
}

impl std::fmt::Debug for LoopBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopBuilder")
            .field("name", &self.name)
            .field("config", &self.config)
            .field("steps", &self.steps.iter().map(|(n, _)| n).collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// Where a loop is checkpointed: the store, its claims (the same object), the key.
type LoopStore = (Arc<dyn SessionStore>, Arc<dyn ClaimStore>, SessionKey);

/// How long a loop's claim on its session lasts between saves, by default.
pub const DEFAULT_CLAIM_LEASE: Duration = Duration::from_mins(5);

impl LoopBuilder {
    /// A loop named `name` (the name keys its checkpoint) with `config`.
    pub fn new(name: impl Into<String>, config: LoopConfig) -> Self {
        Self {
            name: name.into(),
            config,
            defaults: Defaults::default(),
            steps: Vec::new(),
            summarizers: BTreeMap::new(),
            store: None,
            claim_lease: DEFAULT_CLAIM_LEASE,
            claim_wait: Duration::ZERO,
            trace: None,
            exit: None,
            quota: None,
        }
    }

    /// Appends a step named `name` to the body.
    #[must_use]
    pub fn step(mut self, name: impl Into<String>, step: impl Step + 'static) -> Self {
        self.steps.push((name.into(), Box::new(step)));
        self
    }

    /// Lays the loop's history settings over application defaults.
    #[must_use]
    pub fn defaults(mut self, defaults: Defaults) -> Self {
        self.defaults = defaults;
        self
    }

    /// Registers a summarizer under `name`, for `history_management.summarizer`.
    #[must_use]
    pub fn summarizer(
        mut self,
        name: impl Into<String>,
        summarizer: impl Summarizer + 'static,
    ) -> Self {
        self.summarizers.insert(name.into(), Arc::new(summarizer));
        self
    }

    /// Checkpoints the loop in `store` under `key` after every iteration and at every pause
    /// (one transaction each), and resumes from what is saved there when built.
    ///
    /// The loop claims its session (the key and the loop's name) when built and holds the
    /// claim while it lives, as a conversation does ([`ClaimStore`]): a second process (or
    /// a second loop in this one) that builds the same loop is refused with
    /// [`Error::Claim`] instead of overwriting the first one's checkpoints. Every save
    /// renews the claim; a loop whose claim was lost (another process took the session over
    /// after its lease ran out) saves nothing and fails with [`Error::Claim`].
    #[must_use]
    pub fn store(
        mut self,
        store: impl SessionStore + ClaimStore + 'static,
        key: impl Into<SessionKey>,
    ) -> Self {
        let store = Arc::new(store);
        self.store = Some((Arc::clone(&store) as Arc<dyn SessionStore>, store, key.into()));
        self
    }

    /// How long the loop's claim on its session lasts between saves before another process
    /// may take it over, in the stores whose claims are leases (memory, PostgreSQL; a SQLite
    /// claim lasts as long as the process). Default 5 minutes: a loop paused for a human
    /// longer than that may lose its session to another process, and then saves nothing.
    #[must_use]
    pub fn claim_lease(mut self, lease: Duration) -> Self {
        self.claim_lease = lease;
        self
    }

    /// How long `build` waits for another process's claim on the session to end (default 0:
    /// refused at once).
    #[must_use]
    pub fn claim_wait(mut self, wait: Duration) -> Self {
        self.claim_wait = wait;
        self
    }

    /// Sends a redacted [`PromptTrace`](crate::PromptTrace) of each agent call to `sink`.
    #[must_use]
    pub fn trace(mut self, sink: impl TraceSink + 'static) -> Self {
        self.trace = Some(Arc::new(sink));
        self
    }

    /// Puts every run under `quota`: each iteration reserves its tokens before it starts and
    /// is charged what its model calls reported (the summarizers' included) when it ends;
    /// a run with too little left stops with
    /// [`Error::QuotaExhausted`](crate::Error::QuotaExhausted). See [`Quota`].
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::client::Usage;
    /// use curator::conversation_loop::{Error, FnStep, Injection, LoopBuilder, LoopConfig, Output, Quota, StepOutcome};
    ///
    /// let config = LoopConfig::from_toml("conversation = true\nmax_iterations = 10")?;
    /// // A model step that reports 2,000 tokens a call.
    /// let agent = FnStep::agent(Injection::Messages, |_call| {
    ///     Ok(StepOutcome::Output(Output::text("ok").with_usage(Usage::new(1_900, 100))))
    /// });
    /// let mut chat = LoopBuilder::new("chat", config).step("agent", agent).quota(Quota::new(5_000, 2_000)).build()?;
    /// // Two iterations take 4,000 tokens; the third cannot reserve 2,000 of the 1,000 left.
    /// let err = chat.run("hello").unwrap_err();
    /// assert!(matches!(err, Error::QuotaExhausted { used: 4_000, .. }));
    /// assert_eq!(chat.iteration(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn quota(mut self, quota: Quota) -> Self {
        self.quota = Some(quota);
        self
    }

    /// Ends the loop after an iteration for which `condition` is true.
    #[must_use]
    pub fn exit_when(
        mut self,
        condition: impl FnMut(&Progress<'_>) -> bool + Send + 'static,
    ) -> Self {
        self.exit = Some(Box::new(condition));
        self
    }

    /// Checks the body against the configuration and builds the loop, restoring its saved
    /// state when a store holds one.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] naming the key: a body without steps or with two steps of
    /// one name, a quota whose reserve is over its limit, `lens = true` without a store, a
    /// `named_steps`, `user_named_steps` or `steps` entry naming no step, an unknown
    /// summarizer or tokenizer; [`Error::Template`]; [`Error::Store`] or
    /// [`Error::BadCheckpoint`] when the saved state cannot be read.
    pub fn build(self) -> Result<ConversationLoop> {
        let LoopBuilder {
            name,
            config,
            defaults,
            steps,
            summarizers,
            store,
            claim_lease,
            claim_wait,
            trace,
            exit,
            quota,
        } = self;
        config.validate()?;
        if steps.is_empty() {
            return Err(Error::invalid("body", "a loop needs at least one step"));
        }
        for (name, step) in &steps {
            step.check().map_err(|e| Error::invalid("body", format!("step `{name}`: {e}")))?;
        }
        check_lens_and_quota(&config, store.is_some(), quota)?;
        let names: Vec<&str> = steps.iter().map(|(n, _)| n.as_str()).collect();
        for (i, n) in names.iter().enumerate() {
            if names[..i].contains(n) {
                return Err(Error::invalid("body", format!("two steps are named `{n}`")));
            }
        }
        let check = |key: &str, listed: &[String]| -> Result<()> {
            match listed.iter().find(|l| !names.contains(&l.as_str())) {
                Some(l) => Err(Error::invalid(
                    key,
                    format!("`{l}` is not a step of the body ({})", names.join(", ")),
                )),
                None => Ok(()),
            }
        };
        check("named_steps", &config.named_steps)?;
        check("user_named_steps", &config.user_named_steps)?;
        let configured: Vec<String> = config.steps.keys().cloned().collect();
        check("steps", &configured)?;
        let roles = crate::roles::roles(&steps, &config);
        crate::roles::check_roles(&steps, &config, &roles)?;
        let history = config.effective_history(&defaults)?;
        if let Some((_, _, key)) = &store {
            key.check().map_err(|source| Error::Store {
                checkpoint: crate::persist::head_name(key, &name),
                source,
            })?;
        }
        let persister = store
            .map(|(store, claims, key)| {
                Persister::claim(store, &*claims, &key, &name, claim_lease, claim_wait)
            })
            .transpose()?;
        let summaries: Arc<dyn SummaryStore> = match &persister {
            Some(p) => {
                Arc::new(SessionSummaries::open(Arc::clone(p.store())).map_err(|source| {
                    Error::Store {
                        checkpoint: curator_session::SUMMARIES_CHECKPOINT.to_owned(),
                        source,
                    }
                })?)
            }
            None => Arc::new(MemorySummaryStore::default()),
        };
        let bound = crate::bound::build(&history, &summarizers, summaries)?;
        let account = Account::new(quota, summarizers.values().cloned().collect());
        let history_config = history;
        let template = match &config.history_template {
            Some(source) => HistoryTemplate::new(source)?,
            None => HistoryTemplate::default_template(),
        };
        let needs_redactor =
            trace.is_some() || config.lens || config.redact.sent || config.redact.persisted;
        let redactor = needs_redactor.then(Redactor::new);
        let mut built = ConversationLoop::new(crate::driver::Parts {
            name,
            config,
            steps,
            bound,
            template,
            redactor,
            trace,
            exit,
            persister,
            history: history_config,
            account,
        });
        built.restore()?;
        Ok(built)
    }
}

/// `lens = true` needs a store; a quota's reservation must fit its limit.
fn check_lens_and_quota(config: &LoopConfig, has_store: bool, quota: Option<Quota>) -> Result<()> {
    if config.lens && !has_store {
        return Err(Error::invalid(
            "lens",
            "`lens = true` saves what each step was sent with the loop session: give the loop a store (`LoopBuilder::store`)",
        ));
    }
    if let Some(quota) = quota
        && quota.reserve() > quota.limit()
    {
        return Err(Error::invalid(
            "quota",
            format!(
                "an iteration reserves {} tokens of a quota of {}: no iteration could start",
                quota.reserve(),
                quota.limit()
            ),
        ));
    }
    Ok(())
}
