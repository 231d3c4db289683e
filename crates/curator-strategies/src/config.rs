//! Declarative configuration: build a pipeline from JSON, TOML or any serde format.

use std::collections::BTreeMap;

use crate::{
    CharEstimate, ClearOldToolResults, Error, HistoryManager, HistoryManagerExt, OnError,
    Passthrough, Redactor, RelevanceBudget, Result, SlidingWindow, StableBudget, TokenBudget,
    TokenCounter, ToolFilter, ToolResultTruncator, TurnLimit,
};

/// A strategy (or a pipeline of them) described as data, tagged by `strategy`.
///
/// | `strategy` | options |
/// |---|---|
/// | `passthrough` | |
/// | `sliding_window` | `window_size` |
/// | `tool_result_truncator` | `max_length`, `suffix` (optional) |
/// | `token_budget` | `max_tokens`, `reserve` (0), `tokenizer` (`estimate`, `o200k`, `cl100k`), `head_share` (0.5), `shorten` (true) |
/// | `relevance_budget` | as `token_budget` but `head_share` (0.25), and `recent_share` (0.85), `fold_note` (true), `note_terms` (true), `cut_tool_results` (true) |
/// | `stable_budget` | as `relevance_budget` (but `note_terms` false), and `low_water` (0.5), `min_free` (0), `opening_share` (0), `first_opening_share` (1) |
/// | `turn_limit` | `max_turns` |
/// | `tool_filter` | `tools` |
/// | `clear_old_tool_results` | `keep_last`, `placeholder` (optional), `exclude` (\[\]), `essentials` (200) |
/// | `redactor` | `builtin` (true), `patterns` (kind → regex) |
/// | `summarize` | `summarizer` (`extractive` or a name [registered](Registry), required), `threshold_messages` or `threshold_tokens` (counted by `tokenizer`, `estimate`), `keep_recent` (10), `summarize_ratio` (0.5), `max_summary_chars` (4000), `on_error` (`fallback`), `then` (a bound) |
/// | `compose` | `steps`: a list of the above, run in order |
///
/// Each strategy is named as its type is (`TokenBudget` is `token_budget`). The names of
/// earlier releases are still accepted as aliases: `truncate_tool_results`,
/// `truncate_tokens`, `truncate_turns`, `filter_tools` and `redact`; a configuration is
/// always written back with the current names.
///
/// # Examples
///
/// ```
/// use curator::strategies::StrategyConfig;
///
/// let config = StrategyConfig::from_json(r#"{
///     "strategy": "compose",
///     "steps": [
///         {"strategy": "tool_result_truncator", "max_length": 2000},
///         {"strategy": "truncate_tokens", "max_tokens": 8000, "reserve": 1000}
///     ]
/// }"#)?;
/// let manager = config.build()?;
/// assert_eq!(manager.name(), "tool_result_truncator -> token_budget");
///
/// let err = StrategyConfig::from_json(r#"{"strategy": "magic"}"#).unwrap_err();
/// let cause = std::error::Error::source(&err).map(ToString::to_string).unwrap_or_default();
/// assert!(cause.contains("unknown variant `magic`"));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "strategy", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum StrategyConfig {
    /// [`Passthrough`].
    Passthrough,
    /// [`SlidingWindow`].
    SlidingWindow {
        /// Messages kept after the system messages and the task.
        window_size: usize,
    },
    /// [`ToolResultTruncator`]; also accepted as `truncate_tool_results`.
    #[serde(alias = "truncate_tool_results")]
    ToolResultTruncator {
        /// Maximum characters per tool result, suffix included.
        max_length: usize,
        /// The suffix, with an optional `{cut}` placeholder.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        suffix: Option<String>,
    },
    /// [`TokenBudget`]; also accepted as `truncate_tokens`.
    #[serde(alias = "truncate_tokens")]
    TokenBudget {
        /// The budget.
        max_tokens: u64,
        /// Tokens held back for tool schemas and the reply.
        #[serde(default)]
        reserve: u64,
        /// How tokens are counted.
        #[serde(default)]
        tokenizer: Tokenizer,
        /// The most the head (system messages and task) may take, as a share of the budget.
        #[serde(default = "half")]
        head_share: f64,
        /// Whether text is cut to fit (`false`: messages are kept whole or left out; see
        /// [`TokenBudget::keeping_messages_whole`]).
        #[serde(default = "yes", skip_serializing_if = "is_yes")]
        shorten: bool,
    },
    /// [`RelevanceBudget`].
    RelevanceBudget {
        /// The budget.
        max_tokens: u64,
        /// Tokens held back for tool schemas and the reply.
        #[serde(default)]
        reserve: u64,
        /// How tokens are counted.
        #[serde(default)]
        tokenizer: Tokenizer,
        /// The most the head (system messages and task) may take, as a share of the budget.
        #[serde(default = "relevance_head_share")]
        head_share: f64,
        /// The share of the body's room for the newest units.
        #[serde(default = "relevance_recent_share")]
        recent_share: f64,
        /// Whether to leave the folded-history note.
        #[serde(default = "yes")]
        fold_note: bool,
        /// Whether the note lists the terms of what it left out, besides its calls (see
        /// [`RelevanceBudget::with_note_terms`]).
        #[serde(default = "yes")]
        note_terms: bool,
        /// Whether long tool results are cut to their beginning and end when the view does
        /// not fit (see [`RelevanceBudget::with_tool_result_cut`]).
        #[serde(default = "yes")]
        cut_tool_results: bool,
    },
    /// [`StableBudget`]: views that keep the provider's prompt cache, compacting with a
    /// [`RelevanceBudget`] of the options it shares with it.
    StableBudget {
        /// The budget.
        max_tokens: u64,
        /// Tokens held back for tool schemas and the reply.
        #[serde(default)]
        reserve: u64,
        /// How tokens are counted.
        #[serde(default)]
        tokenizer: Tokenizer,
        /// The most the head (system messages and task) may take, as a share of the budget.
        #[serde(default = "relevance_head_share")]
        head_share: f64,
        /// The share of the body's room for the newest units at a compaction.
        #[serde(default = "relevance_recent_share")]
        recent_share: f64,
        /// Whether a compaction leaves the folded-history note.
        #[serde(default = "yes")]
        fold_note: bool,
        /// Whether the note lists the terms of what it left out, besides its calls (off:
        /// see [`StableBudget::new`]).
        #[serde(default)]
        note_terms: bool,
        /// Whether a compaction cuts long tool results to their beginning and end.
        #[serde(default = "yes")]
        cut_tool_results: bool,
        /// The share of the body's room a compaction keeps.
        #[serde(default = "stable_low_water")]
        low_water: f64,
        /// The least a compaction frees, in tokens.
        #[serde(default)]
        min_free: u64,
        /// The share of a compaction's body room kept for the opening (the oldest units,
        /// which every compaction after the first keeps the same).
        #[serde(default)]
        opening_share: f64,
        /// The share of the first compaction's body room kept for the opening (see
        /// [`StableBudget::with_first_opening_share`]).
        #[serde(default = "stable_first_opening_share")]
        first_opening_share: f64,
    },
    /// [`TurnLimit`]; also accepted as `truncate_turns`.
    #[serde(alias = "truncate_turns")]
    TurnLimit {
        /// Round-trips kept.
        max_turns: usize,
    },
    /// [`ToolFilter`] by names; also accepted as `filter_tools`.
    #[serde(alias = "filter_tools")]
    ToolFilter {
        /// Names of the tools whose calls and results are dropped.
        tools: Vec<String>,
    },
    /// [`ClearOldToolResults`].
    ClearOldToolResults {
        /// Newest results left intact.
        keep_last: usize,
        /// Placeholder text with `{tool}`, `{chars}` and `{essentials}`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        placeholder: Option<String>,
        /// Tools never cleared.
        #[serde(default)]
        exclude: Vec<String>,
        /// The most characters of a cleared result's essentials kept (0: none).
        #[serde(default = "essentials")]
        essentials: usize,
    },
    /// [`Redactor`]; also accepted as `redact`.
    #[serde(alias = "redact")]
    Redactor {
        /// Use the built-in secret patterns.
        #[serde(default = "yes")]
        builtin: bool,
        /// Extra patterns: kind → regular expression.
        #[serde(default)]
        patterns: BTreeMap<String, String>,
    },
    /// [`Summarize`](crate::Summarize).
    Summarize {
        /// The summarizer (required: there is no default model).
        summarizer: SummarizerConfig,
        /// Fold past this many messages (give this or `threshold_tokens`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        threshold_messages: Option<usize>,
        /// Fold past this many tokens, counted by `tokenizer`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        threshold_tokens: Option<u64>,
        /// How `threshold_tokens` counts (`estimate` by default).
        #[serde(default)]
        tokenizer: Tokenizer,
        /// Newest messages never folded.
        #[serde(default = "ten")]
        keep_recent: usize,
        /// Chunks of `summarize_ratio × threshold` are folded.
        #[serde(default = "half")]
        summarize_ratio: f64,
        /// Summaries are cut to this many characters.
        #[serde(default = "four_thousand")]
        max_summary_chars: usize,
        /// `fallback` (skip folding) or `propagate` on a summarizer error.
        #[serde(default)]
        on_error: OnError,
        /// The final bound applied after folding.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        then: Option<Box<StrategyConfig>>,
    },
    /// Several strategies in order.
    Compose {
        /// The strategies.
        steps: Vec<StrategyConfig>,
    },
}

fn yes() -> bool {
    true
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if takes a reference"
)]
fn is_yes(value: &bool) -> bool {
    *value
}

fn ten() -> usize {
    10
}

fn essentials() -> usize {
    200
}

fn relevance_head_share() -> f64 {
    RelevanceBudget::DEFAULT_HEAD_SHARE
}

/// The relevance budget a configuration describes (also the one a stable budget compacts
/// with): the head's and the newest units' shares, the fold note and the tool-result cut.
fn relevance(
    max_tokens: u64,
    reserve: u64,
    tokenizer: Tokenizer,
    (head_share, recent_share): (f64, f64),
    (fold_note, note_terms, cut_tool_results): (bool, bool, bool),
) -> Result<RelevanceBudget> {
    Ok(RelevanceBudget::new(max_tokens)
        .with_reserve(reserve)
        .with_head_share(head_share)?
        .with_recent_share(recent_share)?
        .with_fold_note(fold_note)
        .with_note_terms(note_terms)
        .with_tool_result_cut(cut_tool_results)
        .with_counter(tokenizer.counter()?))
}

fn stable_first_opening_share() -> f64 {
    StableBudget::DEFAULT_FIRST_OPENING_SHARE
}

fn stable_low_water() -> f64 {
    StableBudget::DEFAULT_LOW_WATER
}

fn relevance_recent_share() -> f64 {
    RelevanceBudget::DEFAULT_RECENT_SHARE
}

fn half() -> f64 {
    0.5
}

fn four_thousand() -> usize {
    4_000
}

/// A summarizer, in configuration: `"extractive"`, or the name of one registered with
/// [`Registry::with_summarizer`] (a model behind an endpoint, say).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SummarizerConfig {
    /// [`Extractive`](crate::Extractive), within `max_summary_chars`.
    Extractive,
    /// A summarizer registered under this name.
    #[serde(untagged)]
    Named(String),
}

/// What a configuration can name but not describe as data: summarizers registered by name,
/// and the store that keeps summaries (shared with a session, say). See
/// [`StrategyConfig::build_with`].
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use curator::strategies::{FnSummarizer, Registry, StrategyConfig};
///
/// let registry = Registry::new().with_summarizer(
///     "short",
///     Arc::new(FnSummarizer::new("short", 1, |_previous, messages| Ok(format!("{} messages", messages.len())))),
/// );
/// let config = StrategyConfig::from_json(r#"{"strategy": "summarize", "summarizer": "short", "threshold_messages": 20}"#)?;
/// assert_eq!(config.build_with(&registry)?.name(), "summarize");
/// assert!(config.build().is_err()); // `short` is known to the registry only
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Default)]
pub struct Registry {
    summarizers: BTreeMap<String, std::sync::Arc<dyn crate::Summarizer>>,
    summary_store: Option<std::sync::Arc<dyn crate::SummaryStore>>,
}

impl Registry {
    /// Nothing registered: only `extractive` can be named, summaries kept in memory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `summarizer` under `name` (replacing one of that name).
    #[must_use]
    pub fn with_summarizer(
        mut self,
        name: impl Into<String>,
        summarizer: std::sync::Arc<dyn crate::Summarizer>,
    ) -> Self {
        self.summarizers.insert(name.into(), summarizer);
        self
    }

    /// Keeps the summaries of every `summarize` it builds in `store`.
    #[must_use]
    pub fn with_summary_store(mut self, store: std::sync::Arc<dyn crate::SummaryStore>) -> Self {
        self.summary_store = Some(store);
        self
    }

    /// The names a configuration can give as its summarizer: `extractive` and the registered.
    pub fn summarizer_names(&self) -> Vec<&str> {
        std::iter::once("extractive").chain(self.summarizers.keys().map(String::as_str)).collect()
    }

    fn summarizer(&self, name: &str) -> Result<std::sync::Arc<dyn crate::Summarizer>> {
        self.summarizers.get(name).cloned().ok_or_else(|| {
            Error::config(format!(
                "summarize: no summarizer named `{name}` (known: {})",
                self.summarizer_names().join(", ")
            ))
        })
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("summarizers", &self.summarizers.keys().collect::<Vec<_>>())
            .field("summary_store", &self.summary_store.is_some())
            .finish()
    }
}

/// How a configured token budget counts tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Tokenizer {
    /// [`CharEstimate`] with its defaults.
    #[default]
    Estimate,
    /// OpenAI's `o200k_base` (GPT-4o and later), feature `tiktoken`.
    O200k,
    /// OpenAI's `cl100k_base` (GPT-4, GPT-3.5), feature `tiktoken`.
    Cl100k,
}

impl Tokenizer {
    /// `O200k` when the crate is built with the `tiktoken` feature, else `Estimate`.
    pub fn exact_or_estimate() -> Self {
        if cfg!(feature = "tiktoken") { Tokenizer::O200k } else { Tokenizer::Estimate }
    }

    /// The counter this tokenizer names.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for an exact encoding when the crate was built without the
    /// `tiktoken` feature.
    pub fn counter(self) -> Result<std::sync::Arc<dyn TokenCounter>> {
        match self {
            Tokenizer::Estimate => Ok(std::sync::Arc::new(CharEstimate::default())),
            #[cfg(feature = "tiktoken")]
            Tokenizer::O200k => {
                Ok(std::sync::Arc::new(crate::Bpe::new(crate::Encoding::O200kBase)?))
            }
            #[cfg(feature = "tiktoken")]
            Tokenizer::Cl100k => {
                Ok(std::sync::Arc::new(crate::Bpe::new(crate::Encoding::Cl100kBase)?))
            }
            #[cfg(not(feature = "tiktoken"))]
            other => Err(Error::config(format!(
                "tokenizer `{}` needs curator-strategies built with the `tiktoken` feature",
                serde_json::to_value(other)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            ))),
        }
    }
}

impl StrategyConfig {
    /// The budget of the default pipeline when none is named, in tokens: what `curator
    /// replay` and `curator curate` run without options, and what an `Agent` curates to
    /// unless told otherwise.
    pub const DEFAULT_BUDGET: u64 = 32_000;

    /// The default pipeline, the one `curator replay` and `curator curate` run without
    /// options: secrets redacted (the built-in rules), then a token budget of `max_tokens`
    /// whose views keep the provider's prompt cache ([`StableBudget`]): each view is the
    /// previous one plus what was appended until the budget is reached, then one compaction
    /// by relevance ([`RelevanceBudget`]: the system messages, the task and the newest unit
    /// kept, long tool results cut to their beginning and end, the most relevant older
    /// units, a note of what was left out) down to half the body's room. Tokens are counted
    /// exactly (`o200k_base`) when the crate is built with the `tiktoken` feature (the
    /// facade's default), else estimated.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::Message;
    /// use curator::strategies::{CurationContext, History, HistoryManagerExt, StrategyConfig};
    ///
    /// let pipeline = StrategyConfig::default_pipeline(8_000).build()?;
    /// let history = History::from(vec![
    ///     Message::system("You are an agent."),
    ///     Message::user("My key is sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3i."),
    /// ]);
    /// let view = pipeline.curate_history(&history, &CurationContext::default())?;
    /// assert!(!view.message(1).text().contains("sk-proj-"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn default_pipeline(max_tokens: u64) -> Self {
        StrategyConfig::Compose {
            steps: vec![
                StrategyConfig::Redactor { builtin: true, patterns: BTreeMap::default() },
                StrategyConfig::StableBudget {
                    max_tokens,
                    reserve: 0,
                    tokenizer: Tokenizer::exact_or_estimate(),
                    head_share: RelevanceBudget::DEFAULT_HEAD_SHARE,
                    recent_share: RelevanceBudget::DEFAULT_RECENT_SHARE,
                    fold_note: true,
                    note_terms: false,
                    cut_tool_results: true,
                    low_water: StableBudget::DEFAULT_LOW_WATER,
                    min_free: 0,
                    opening_share: StableBudget::DEFAULT_OPENING_SHARE,
                    first_opening_share: StableBudget::DEFAULT_FIRST_OPENING_SHARE,
                },
            ],
        }
    }

    /// The same configuration with every token budget in it reserving `extra` more tokens
    /// (room for what is sent beside the messages).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::strategies::StrategyConfig;
    ///
    /// let config = StrategyConfig::default_pipeline(8_000).with_reserve(500);
    /// assert!(serde_json::to_string(&config)?.contains(r#""reserve":500"#));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_reserve(mut self, extra: u64) -> Self {
        self.add_reserve(extra);
        self
    }

    fn add_reserve(&mut self, extra: u64) {
        match self {
            StrategyConfig::TokenBudget { reserve, .. }
            | StrategyConfig::RelevanceBudget { reserve, .. }
            | StrategyConfig::StableBudget { reserve, .. } => {
                *reserve = reserve.saturating_add(extra);
            }
            StrategyConfig::Compose { steps } => {
                for step in steps {
                    step.add_reserve(extra);
                }
            }
            StrategyConfig::Summarize { then: Some(then), .. } => then.add_reserve(extra),
            _ => {}
        }
    }

    /// The same configuration reserving room for the tool definitions sent with every call
    /// (`tools`, in any provider's shape): their compact JSON text counted with the
    /// configuration's own tokenizer ([`tokenizer`](Self::tokenizer)), which is close to,
    /// not exactly, what a provider charges for them. Returns the configuration and the
    /// tokens reserved.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::strategies::StrategyConfig;
    /// use serde_json::json;
    ///
    /// let tools = json!([{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}]);
    /// let (config, tokens) = StrategyConfig::default_pipeline(8_000).with_tools(&tools)?;
    /// assert!(tokens > 10);
    /// assert!(serde_json::to_string(&config)?.contains(&format!(r#""reserve":{tokens}"#)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the configuration's tokenizer is not built in.
    pub fn with_tools(self, tools: &serde_json::Value) -> Result<(Self, u64)> {
        let counter = self.tokenizer().unwrap_or_default().counter()?;
        let tokens = match tools {
            serde_json::Value::Null => 0,
            serde_json::Value::Array(items) if items.is_empty() => 0,
            tools => counter.count_text(&tools.to_string()),
        };
        Ok((self.with_reserve(tokens), tokens))
    }

    /// The tokenizer of the configuration's first token budget, if it has one.
    pub fn tokenizer(&self) -> Option<Tokenizer> {
        match self {
            StrategyConfig::TokenBudget { tokenizer, .. }
            | StrategyConfig::RelevanceBudget { tokenizer, .. }
            | StrategyConfig::StableBudget { tokenizer, .. } => Some(*tokenizer),
            StrategyConfig::Compose { steps } => steps.iter().find_map(StrategyConfig::tokenizer),
            StrategyConfig::Summarize { then: Some(then), .. } => then.tokenizer(),
            _ => None,
        }
    }

    /// Reads a configuration from JSON text.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] naming the unknown strategy, the unknown or missing option, or the
    /// bad value, with the line and column.
    pub fn from_json(json: &str) -> Result<Self> {
        serde_json::from_str(json).map_err(|e| {
            // Inside a tagged enum serde reports no position (`line 0, column 0`): leave it out.
            let what = e.to_string();
            let what = what.split(" at line 0").next().unwrap_or(&what).to_owned();
            Error::Config { message: format!("cannot read it: {what}"), source: Some(Box::new(e)) }
        })
    }

    /// Builds the manager the configuration describes.
    ///
    /// # Errors
    ///
    /// The strategies' construction errors ([`Error::InvalidOption`], [`Error::Pattern`],
    /// [`Error::Config`]).
    pub fn build(&self) -> Result<Box<dyn HistoryManager>> {
        self.build_with(&Registry::default())
    }

    /// Builds the manager the configuration describes, with the summarizers and the summary
    /// store of `registry` (see [`Registry`]).
    ///
    /// # Errors
    ///
    /// As [`build`](StrategyConfig::build); [`Error::Config`] for a summarizer the registry
    /// does not know, naming those it knows.
    pub fn build_with(&self, registry: &Registry) -> Result<Box<dyn HistoryManager>> {
        Ok(match self {
            StrategyConfig::Passthrough => Box::new(Passthrough),
            StrategyConfig::SlidingWindow { window_size } => {
                Box::new(SlidingWindow::new(*window_size))
            }
            StrategyConfig::ToolResultTruncator { max_length, suffix } => Box::new(match suffix {
                Some(suffix) => ToolResultTruncator::with_suffix(*max_length, suffix.clone())?,
                None => ToolResultTruncator::new(*max_length)?,
            }),
            StrategyConfig::TokenBudget { max_tokens, reserve, tokenizer, head_share, shorten } => {
                let budget = TokenBudget::new(*max_tokens)
                    .with_reserve(*reserve)
                    .with_head_share(*head_share)?
                    .with_counter(tokenizer.counter()?);
                Box::new(if *shorten { budget } else { budget.keeping_messages_whole() })
            }
            StrategyConfig::RelevanceBudget {
                max_tokens,
                reserve,
                tokenizer,
                head_share,
                recent_share,
                fold_note,
                note_terms,
                cut_tool_results,
            } => Box::new(relevance(
                *max_tokens,
                *reserve,
                *tokenizer,
                (*head_share, *recent_share),
                (*fold_note, *note_terms, *cut_tool_results),
            )?),
            StrategyConfig::StableBudget {
                max_tokens,
                reserve,
                tokenizer,
                head_share,
                recent_share,
                fold_note,
                note_terms,
                cut_tool_results,
                low_water,
                min_free,
                opening_share,
                first_opening_share,
            } => Box::new(
                StableBudget::over(relevance(
                    *max_tokens,
                    *reserve,
                    *tokenizer,
                    (*head_share, *recent_share),
                    (*fold_note, *note_terms, *cut_tool_results),
                )?)
                .with_low_water(*low_water)?
                .with_min_free(*min_free)
                .with_opening_share(*opening_share)?
                .with_first_opening_share(*first_opening_share)?,
            ),
            StrategyConfig::TurnLimit { max_turns } => Box::new(TurnLimit::new(*max_turns)),
            StrategyConfig::ToolFilter { tools } => {
                Box::new(ToolFilter::names(tools.iter().cloned()))
            }
            StrategyConfig::ClearOldToolResults { keep_last, placeholder, exclude, essentials } => {
                let mut clear = ClearOldToolResults::new(*keep_last)
                    .with_exclude(exclude.iter().cloned())
                    .with_essentials(*essentials);
                if let Some(placeholder) = placeholder {
                    clear = clear.with_placeholder(placeholder.clone());
                }
                Box::new(clear)
            }
            StrategyConfig::Redactor { builtin, patterns } => {
                let mut redactor = if *builtin { Redactor::new() } else { Redactor::empty() };
                for (kind, pattern) in patterns {
                    redactor = redactor.with_pattern(kind.clone(), pattern)?;
                }
                Box::new(redactor)
            }
            StrategyConfig::Summarize { .. } => self.summarize(registry)?,
            StrategyConfig::Compose { steps } => Box::new(
                steps.iter().map(|step| step.build_with(registry)).collect::<Result<Vec<_>>>()?,
            ),
        })
    }

    /// Builds a `summarize` configuration.
    fn summarize(&self, registry: &Registry) -> Result<Box<dyn HistoryManager>> {
        let StrategyConfig::Summarize {
            summarizer,
            threshold_messages,
            threshold_tokens,
            tokenizer,
            keep_recent,
            summarize_ratio,
            max_summary_chars,
            on_error,
            then,
        } = self
        else {
            return Err(Error::config("not a summarize configuration"));
        };
        let threshold = match (threshold_messages, threshold_tokens) {
            (Some(n), None) => crate::Threshold::Messages(*n),
            (None, Some(n)) => crate::Threshold::Tokens(*n),
            _ => {
                return Err(Error::config(
                    "summarize: give exactly one of `threshold_messages` and `threshold_tokens`",
                ));
            }
        };
        let summarize = match summarizer {
            SummarizerConfig::Extractive => {
                crate::Summarize::new(crate::Extractive::new(*max_summary_chars))
            }
            SummarizerConfig::Named(name) => crate::Summarize::new(registry.summarizer(name)?),
        };
        let summarize = match &registry.summary_store {
            Some(store) => summarize.with_store(std::sync::Arc::clone(store)),
            None => summarize,
        };
        let summarize = summarize
            .with_threshold(threshold)
            .with_counter(tokenizer.counter()?)
            .with_keep_recent(*keep_recent)
            .with_ratio(*summarize_ratio)?
            .with_max_summary_chars(*max_summary_chars)
            .with_on_error(*on_error);
        Ok(match then {
            Some(then) => Box::new(summarize.then(then.build_with(registry)?)),
            None => Box::new(summarize),
        })
    }
}
