//! Loop configuration: what a loop captures, how it bounds and injects history, read from
//! TOML or JSON and checked when it is loaded.

use std::collections::BTreeMap;

use curator_strategies::Tokenizer;
use curator_strategies::bill::Prices;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::template::HistoryTemplate;

/// The token budget when none is configured.
pub const DEFAULT_MAX_TOKENS: u64 = 4_096;
/// The smallest token budget other than 0: below it not even one turn, shortened as far as
/// it goes, fits with its framing.
pub const MIN_MAX_TOKENS: u64 = 64;
/// The turn limit when none is configured.
pub const DEFAULT_MAX_TURNS: usize = 20;
/// The share of the threshold folded at a time by `summarize` when none is configured.
pub const DEFAULT_SUMMARIZE_RATIO: f64 = 0.5;

/// How a loop bounds the history it injects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum HistoryStrategy {
    /// The newest turns within `max_tokens` (exact counts by default); the newest turn is
    /// shortened, and marked, when it alone is over the budget.
    #[default]
    TruncateTokens,
    /// The newest `max_turns` turns.
    TruncateTurns,
    /// Old turns folded into a summary (computed once per folded range), then bounded by
    /// `max_tokens` when given, else by `max_turns`.
    Summarize,
}

/// Which agent outputs become assistant turns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AiTurnSource {
    /// The body's final step, when it is an agent step (a non-agent final step adds none).
    #[default]
    Last,
    /// Every agent step, each as it finishes.
    AllAgents,
    /// The steps listed in `named_steps`.
    NamedSteps,
}

/// Which step outputs become user turns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum UserTurnSource {
    /// Every human-in-the-loop step.
    Hitl,
    /// The steps listed in `user_named_steps`.
    NamedSteps,
}

/// The history management options. Every field is optional so that a loop's settings can
/// be laid over application defaults ([`Defaults`]): a value given explicitly, even `0` or
/// `false`, is kept; only an absent one is filled.
///
/// # Examples
///
/// ```
/// use curator::conversation_loop::{HistoryConfig, HistoryStrategy};
///
/// let app: HistoryConfig = toml::from_str("strategy = \"truncate_turns\"\nmax_turns = 12")?;
/// let mine: HistoryConfig = toml::from_str("max_turns = 0")?;
/// let effective = mine.over(&app);
/// assert_eq!(effective.strategy, Some(HistoryStrategy::TruncateTurns));
/// assert_eq!(effective.max_turns, Some(0)); // kept: explicit, though falsy
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct HistoryConfig {
    /// `truncate_tokens` (default), `truncate_turns` or `summarize`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<HistoryStrategy>,
    /// The token budget of the injected history with `truncate_tokens` and `summarize`, a
    /// hard cap counting each message's framing (default: half the context window of
    /// `model` when it is given, else 4,096; at least 64; 0 injects none).
    /// `truncate_turns` bounds by `max_turns` alone and does not read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// The model the agent steps call, as providers name it (`gpt-4o`,
    /// `claude-sonnet-4-5`): without `max_tokens`, the budget is half its context window,
    /// read from the price data bundled with curator (the other half is left to the step's
    /// own messages and the reply). A model the data does not know is refused at build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The turn limit (default 20; 0 injects none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<usize>,
    /// The summarizer's name (`extractive`, or one registered with
    /// [`LoopBuilder::summarizer`](crate::LoopBuilder::summarizer)); required by `summarize`.
    /// The specification's `summarizer_agent` is read as this.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "summarizer_agent")]
    pub summarizer: Option<String>,
    /// The share of the threshold folded at a time, 0 to 1 (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarize_ratio: Option<f64>,
    /// How tokens are counted: `o200k` (default, exact), `cl100k` or `estimate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<Tokenizer>,
    /// Whether the current message (the newest user turn, which the agent step is handed as
    /// its input) may be shortened to fit `max_tokens` (default `false`: it is sent whole, or
    /// the step fails with [`Error::MessageTooLong`] naming its size and the budget; only
    /// older turns are cut).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_current_message: Option<bool>,
}

impl HistoryConfig {
    /// These settings laid over `defaults`: each field given here wins, even when falsy.
    #[must_use]
    pub fn over(&self, defaults: &HistoryConfig) -> HistoryConfig {
        HistoryConfig {
            strategy: self.strategy.or(defaults.strategy),
            max_tokens: self.max_tokens.or(defaults.max_tokens),
            model: self.model.clone().or_else(|| defaults.model.clone()),
            max_turns: self.max_turns.or(defaults.max_turns),
            summarizer: self.summarizer.clone().or_else(|| defaults.summarizer.clone()),
            summarize_ratio: self.summarize_ratio.or(defaults.summarize_ratio),
            tokenizer: self.tokenizer.or(defaults.tokenizer),
            cut_current_message: self.cut_current_message.or(defaults.cut_current_message),
        }
    }

    /// Checks the settings as an effective configuration; `prefix` names the table in
    /// errors (`history_management`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] naming the key: `summarize` without a summarizer, a ratio
    /// outside 0 to 1, a summarizer named with another strategy.
    pub fn validate(&self, prefix: &str) -> Result<()> {
        let key = |k: &str| format!("{prefix}.{k}");
        if let Some(ratio) = self.summarize_ratio
            && !(0.0..=1.0).contains(&ratio)
        {
            return Err(Error::invalid(
                key("summarize_ratio"),
                format!("{ratio} is not between 0 and 1"),
            ));
        }
        if let Some(max) = self.max_tokens
            && max != 0
            && max < MIN_MAX_TOKENS
        {
            return Err(Error::invalid(
                key("max_tokens"),
                format!(
                    "{max} is below {MIN_MAX_TOKENS}, the least that holds a shortened turn (0 sends no history)"
                ),
            ));
        }
        match self.strategy.unwrap_or_default() {
            HistoryStrategy::Summarize => match &self.summarizer {
                None => Err(Error::invalid(
                    key("summarizer"),
                    "the `summarize` strategy needs a summarizer (`extractive` or a registered name)",
                )),
                Some(name) if name.trim().is_empty() => {
                    Err(Error::invalid(key("summarizer"), "the summarizer's name is empty"))
                }
                Some(_) => Ok(()),
            },
            _ => Ok(()),
        }
    }
}

/// Where the first user turn comes from.
///
/// The specification's nested form, `init.history.start_with.{from_initial_input, prefix}`,
/// is read as well (giving a key both ways is an error naming it).
///
/// # Examples
///
/// ```
/// use curator::conversation_loop::LoopConfig;
///
/// let spec = LoopConfig::from_toml("[init.history.start_with]\nfrom_initial_input = true\nprefix = \"User: \"")?;
/// let flat = LoopConfig::from_toml("[init]\nfrom_initial_input = true\nprefix = \"User: \"")?;
/// assert_eq!(spec.init, flat.init);
/// assert!(LoopConfig::from_toml("[init]\nprefix = \"a\"\n[init.history.start_with]\nprefix = \"b\"").is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, try_from = "InitRepr")]
#[non_exhaustive]
pub struct InitConfig {
    /// Seed the first user turn from the loop's initial input (default `true`; an empty
    /// input seeds nothing).
    pub from_initial_input: bool,
    /// Text put before the seeded turn (a formatting hint for prompt-only models).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
}

/// What `init` may hold: the flat keys, or the specification's `history.start_with` table.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InitRepr {
    #[serde(default)]
    from_initial_input: Option<bool>,
    #[serde(default)]
    prefix: Option<String>,
    #[serde(default)]
    history: Option<InitHistoryRepr>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InitHistoryRepr {
    start_with: StartWithRepr,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StartWithRepr {
    #[serde(default)]
    from_initial_input: Option<bool>,
    #[serde(default)]
    prefix: Option<String>,
}

impl TryFrom<InitRepr> for InitConfig {
    type Error = String;

    fn try_from(repr: InitRepr) -> std::result::Result<Self, String> {
        let (nested_input, nested_prefix) = match repr.history {
            Some(InitHistoryRepr { start_with }) => {
                (start_with.from_initial_input, start_with.prefix)
            }
            None => (None, None),
        };
        let both = |key: &str| {
            format!("`init.{key}` and `init.history.start_with.{key}` are both given: give one")
        };
        if repr.from_initial_input.is_some() && nested_input.is_some() {
            return Err(both("from_initial_input"));
        }
        if repr.prefix.is_some() && nested_prefix.is_some() {
            return Err(both("prefix"));
        }
        Ok(Self {
            from_initial_input: repr.from_initial_input.or(nested_input).unwrap_or(true),
            prefix: repr.prefix.or(nested_prefix),
        })
    }
}

impl Default for InitConfig {
    fn default() -> Self {
        Self { from_initial_input: true, prefix: None }
    }
}

/// Per-step settings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct StepConfig {
    /// Whether this agent step is sent the history (default: `true` when `conversation` is
    /// on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_history: Option<bool>,
}

/// Redaction beyond traces (which are always redacted).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RedactConfig {
    /// Redact what agents are sent, not only what is traced.
    #[serde(default)]
    pub sent: bool,
    /// Redact turns before they are kept and checkpointed.
    #[serde(default)]
    pub persisted: bool,
}

/// A loop's configuration.
///
/// Read with [`LoopConfig::from_toml`] or [`LoopConfig::from_json`], which check it; unknown
/// keys and impossible combinations are errors naming the key.
///
/// # Examples
///
/// ```
/// use curator::conversation_loop::{AiTurnSource, LoopConfig};
///
/// let config = LoopConfig::from_toml(r#"
///     conversation = true
///     ai_turn_source = "named_steps"
///     named_steps = ["clarify"]
///     [history_management]
///     strategy = "truncate_turns"
///     max_turns = 8
///     [steps.extract]
///     use_history = false
/// "#)?;
/// assert_eq!(config.ai_turn_source, AiTurnSource::NamedSteps);
/// assert!(LoopConfig::from_toml("conversation = true\nai_turn_source = \"named_steps\"").is_err());
/// assert!(LoopConfig::from_json(r#"{"conversaton": true}"#).is_err());
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct LoopConfig {
    /// Capture turns and inject history in this loop's body (default `false`).
    #[serde(default)]
    pub conversation: bool,
    /// How the injected history is bounded; laid over the application [`Defaults`].
    #[serde(default)]
    pub history_management: HistoryConfig,
    /// Which agent outputs become assistant turns.
    #[serde(default)]
    pub ai_turn_source: AiTurnSource,
    /// The steps whose outputs become assistant turns with `ai_turn_source = "named_steps"`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub named_steps: Vec<String>,
    /// Which steps contribute user turns (default `["hitl"]`).
    #[serde(default = "hitl_only")]
    pub user_turn_sources: Vec<UserTurnSource>,
    /// The steps whose outputs become user turns with `user_turn_sources` holding
    /// `named_steps`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_named_steps: Vec<String>,
    /// A minijinja template rendering the history for prompt-only agents (see
    /// [`HistoryTemplate`]); the default one when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_template: Option<String>,
    /// Seeding of the first user turn.
    #[serde(default)]
    pub init: InitConfig,
    /// Per-step settings, by step name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub steps: BTreeMap<String, StepConfig>,
    /// The most iterations a run makes (default 100; 0 runs none), counted from the run's
    /// start (a run goes on across pauses and resumes, and across a crash, until it
    /// finishes): the next `run` makes as many again.
    #[serde(default = "hundred")]
    pub max_iterations: u64,
    /// Redaction of what is sent and kept.
    #[serde(default)]
    pub redact: RedactConfig,
    /// Keep tool and function-call artifacts in turns (default `false`: natural language
    /// only).
    #[serde(default)]
    pub include_tool_artifacts: bool,
    /// Save what each agent step of each iteration was sent (the rendered request after
    /// injection, redacted as traces are) with the loop session, for `curator trace` and
    /// [`saved_lens`](crate::saved_lens) (default `false`: a request per step per iteration
    /// takes room). Needs a store.
    #[serde(default)]
    pub lens: bool,
}

fn hundred() -> u64 {
    100
}

fn hitl_only() -> Vec<UserTurnSource> {
    vec![UserTurnSource::Hitl]
}

impl Default for LoopConfig {
    fn default() -> Self {
        Self {
            conversation: false,
            history_management: HistoryConfig::default(),
            ai_turn_source: AiTurnSource::default(),
            named_steps: Vec::new(),
            user_turn_sources: hitl_only(),
            user_named_steps: Vec::new(),
            history_template: None,
            init: InitConfig::default(),
            steps: BTreeMap::new(),
            max_iterations: hundred(),
            redact: RedactConfig::default(),
            include_tool_artifacts: false,
            lens: false,
        }
    }
}

impl LoopConfig {
    /// A conversational loop (`conversation = true`) with every other setting at its
    /// default.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(curator::conversation_loop::LoopConfig::conversational().conversation);
    /// ```
    pub fn conversational() -> Self {
        Self { conversation: true, ..Self::default() }
    }

    /// Reads and checks a TOML document.
    ///
    /// # Errors
    ///
    /// [`Error::ConfigSyntax`] (an unknown key, a wrong type: the source names it) or what
    /// [`validate`](Self::validate) reports.
    pub fn from_toml(text: &str) -> Result<Self> {
        let config: Self = toml::from_str(text)
            .map_err(|e| Error::ConfigSyntax { format: "toml", source: Box::new(e) })?;
        config.validate()?;
        Ok(config)
    }

    /// Reads and checks a JSON document.
    ///
    /// # Errors
    ///
    /// As [`from_toml`](Self::from_toml).
    pub fn from_json(text: &str) -> Result<Self> {
        let config: Self = serde_json::from_str(text)
            .map_err(|e| Error::ConfigSyntax { format: "json", source: Box::new(e) })?;
        config.validate()?;
        Ok(config)
    }

    /// Checks the combinations a parser cannot: `named_steps` sources without names,
    /// `summarize` without a summarizer, a template that does not compile.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::conversation_loop::{Error, LoopConfig};
    ///
    /// let err = LoopConfig::from_toml("[history_management]\nstrategy = \"summarize\"").unwrap_err();
    /// assert!(matches!(err, Error::InvalidConfig { ref key, .. } if key == "history_management.summarizer"));
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] naming the key; [`Error::Template`] for a template that does
    /// not compile.
    pub fn validate(&self) -> Result<()> {
        self.history_management.validate("history_management")?;
        if self.ai_turn_source == AiTurnSource::NamedSteps && self.named_steps.is_empty() {
            return Err(Error::invalid(
                "named_steps",
                "`ai_turn_source = \"named_steps\"` needs the steps listed in `named_steps`",
            ));
        }
        if self.user_turn_sources.contains(&UserTurnSource::NamedSteps)
            && self.user_named_steps.is_empty()
        {
            return Err(Error::invalid(
                "user_named_steps",
                "`user_turn_sources` holds `named_steps`, which needs the steps listed in `user_named_steps`",
            ));
        }
        if let Some(source) = &self.history_template {
            HistoryTemplate::new(source)?;
        }
        Ok(())
    }

    /// The effective history settings: this loop's laid over `defaults`, checked again.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] when the combination is impossible (a `summarize` strategy
    /// from one level with no summarizer at either).
    ///
    /// With a `model` and no `max_tokens`, `max_tokens` is half the model's context window;
    /// [`Error::InvalidConfig`] naming `history_management.model` when the price data does
    /// not know the model.
    pub fn effective_history(&self, defaults: &Defaults) -> Result<HistoryConfig> {
        let mut effective = self.history_management.over(&defaults.history_management);
        if effective.max_tokens.is_none()
            && let Some(model) = &effective.model
        {
            let window = Prices::context_window(model).map_err(|e| {
                Error::invalid("history_management.model", format!("{e}; set `max_tokens`"))
            })?;
            effective.max_tokens = Some(window / 2);
        }
        effective.validate("history_management")?;
        Ok(effective)
    }
}

/// Application-wide defaults: the `[conversation.history_management]` table of an
/// application's configuration file, below every loop's own settings.
///
/// # Examples
///
/// ```
/// use curator::conversation_loop::{Defaults, HistoryStrategy, LoopConfig};
///
/// let defaults = Defaults::from_toml(r#"
///     [server]                      # the application's own tables are left alone
///     port = 8080
///     [conversation.history_management]
///     strategy = "truncate_turns"
///     max_turns = 30
/// "#)?;
/// let config = LoopConfig::from_toml("conversation = true\n[history_management]\nmax_turns = 6")?;
/// let effective = config.effective_history(&defaults)?;
/// assert_eq!((effective.strategy, effective.max_turns), (Some(HistoryStrategy::TruncateTurns), Some(6)));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Defaults {
    /// The default history management.
    #[serde(default)]
    pub history_management: HistoryConfig,
}

impl Defaults {
    /// Reads the `conversation` table of an application's TOML configuration (other
    /// top-level tables are the application's and are not read), and checks it.
    ///
    /// # Errors
    ///
    /// [`Error::ConfigSyntax`] for a document that is not TOML or an unknown key inside
    /// `conversation`; [`Error::InvalidConfig`] as [`HistoryConfig::validate`], the key
    /// prefixed with `conversation.`.
    pub fn from_toml(text: &str) -> Result<Self> {
        let mut table: toml::Table = toml::from_str(text)
            .map_err(|e| Error::ConfigSyntax { format: "toml", source: Box::new(e) })?;
        let Some(section) = table.remove("conversation") else { return Ok(Self::default()) };
        let defaults: Self = section
            .try_into()
            .map_err(|e| Error::ConfigSyntax { format: "toml", source: Box::new(e) })?;
        defaults.history_management.validate("conversation.history_management")?;
        Ok(defaults)
    }
}
