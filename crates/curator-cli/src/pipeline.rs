//! The curation pipeline the commands share: from a configuration file or from flags.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use curator::strategies::CurationContext;
use curator::strategies::{RelevanceBudget, StableBudget, StrategyConfig, TokenCounter, Tokenizer};
use serde_json::Value;

/// How tokens are counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum TokenizerArg {
    /// About four characters a token (fast, and can be far off: up to several times under
    /// for CJK text or emoji).
    Estimate,
    /// OpenAI `o200k_base` (GPT-4o and later), exact.
    #[default]
    O200k,
    /// OpenAI `cl100k_base` (GPT-4, GPT-3.5), exact.
    Cl100k,
}

impl From<TokenizerArg> for Tokenizer {
    fn from(t: TokenizerArg) -> Self {
        match t {
            TokenizerArg::Estimate => Tokenizer::Estimate,
            TokenizerArg::O200k => Tokenizer::O200k,
            TokenizerArg::Cl100k => Tokenizer::Cl100k,
        }
    }
}

/// A summarizer the command line can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SummarizerArg {
    /// No model: the user's requests, tool calls, errors and the last assistant note.
    Extractive,
}

/// The default pipeline's `--max-tokens`.
const DEFAULT_MAX_TOKENS: u64 = StrategyConfig::DEFAULT_BUDGET;

/// What runs with no pipeline flag and no `--config`, for `--help`.
pub(crate) fn default_pipeline_help() -> String {
    format!(
        "With no pipeline flag and no --config, the pipeline is the default one at \
         {DEFAULT_MAX_TOKENS} tokens, --budget {DEFAULT_MAX_TOKENS}: --redact --max-tokens \
         {DEFAULT_MAX_TOKENS} --stable (each view the previous one plus what was appended, so \
         that the provider's prompt cache serves it; when the budget is reached, one compaction \
         by relevance down to half the room: long tool results cut to their beginning and end, \
         the older messages that matter most kept, a note of what was left out)."
    )
}

/// Pipeline options. Flags compose in this order, whatever order they are given in:
/// redact, truncate tool results, summarize, window, turns, token budget. With no flag and no
/// `--config`, the default pipeline is `--redact --max-tokens 32000 --stable` (`--budget N`
/// is the same at N tokens).
/// Every token budget reserves `--reserve N` tokens plus the tokens of the input's `tools`
/// schemas, when it has them (counted with the same counter, see [`Pipelines`]).
#[derive(clap::Args, Debug, Clone, Default)]
#[expect(clippy::struct_excessive_bools, reason = "each is a command-line flag")]
pub(crate) struct PipelineArgs {
    /// A strategy configuration (TOML or JSON), instead of the flags below.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Fold old history into a summary.
    #[arg(long, value_enum, value_name = "SUMMARIZER")]
    pub(crate) summarize: Option<SummarizerArg>,
    /// The share of the threshold folded at a time (with --summarize).
    #[arg(long = "summarize-ratio", value_name = "R", default_value_t = 0.5)]
    pub(crate) summarize_ratio: f64,
    /// Fold once the history passes N tokens (with --summarize).
    #[arg(long = "summarize-after", value_name = "N", default_value_t = 16_000)]
    pub(crate) summarize_after: u64,
    /// Keep the system message, the task and the last N messages.
    #[arg(long, value_name = "N")]
    pub(crate) window: Option<usize>,
    /// Cut tool results to N characters.
    #[arg(long = "truncate-tools", value_name = "N")]
    pub(crate) truncate_tools: Option<usize>,
    /// Fit the view into N tokens.
    #[arg(long = "max-tokens", value_name = "N")]
    pub(crate) max_tokens: Option<u64>,
    /// With --max-tokens: besides the newest messages, keep the older ones most relevant
    /// to the task and the newest (BM25 over distinctive terms), and leave a note of what was
    /// left out (the `relevance_budget` strategy).
    #[arg(long, requires = "max_tokens")]
    pub(crate) relevance: bool,
    /// With --max-tokens: views that keep the provider's prompt cache (each the previous
    /// one plus what was appended; when the budget is reached, one compaction by relevance
    /// down to the low-water mark): the `stable_budget` strategy.
    #[arg(long, requires = "max_tokens", conflicts_with = "relevance")]
    pub(crate) stable: bool,
    /// With --stable or --budget: the share of the room (past the system messages and the
    /// task) a compaction keeps.
    #[arg(long = "low-water", value_name = "R", allow_negative_numbers = true)]
    pub(crate) low_water: Option<f64>,
    /// With --stable or --budget: the share of a compaction's room kept for the opening
    /// (the oldest messages after the task, which every compaction keeps the same, so the
    /// cache serves them): cheaper compactions, less room for what relevance selects.
    #[arg(long = "opening-share", value_name = "R", allow_negative_numbers = true)]
    pub(crate) opening_share: Option<f64>,
    /// With --stable or --budget: the share of the first compaction's room kept for the
    /// opening (1 by default: the first compaction keeps the oldest messages, which the
    /// cache holds, and the newest, and cuts the middle).
    #[arg(long = "first-opening-share", value_name = "R", allow_negative_numbers = true)]
    pub(crate) first_opening_share: Option<f64>,
    /// The default pipeline at N tokens: --redact --max-tokens N --stable.
    #[arg(long, value_name = "N", conflicts_with_all = [
        "config", "window", "truncate_tools", "max_tokens", "max_turns", "redact", "summarize",
    ])]
    pub(crate) budget: Option<u64>,
    /// Keep the last N provider round-trips.
    #[arg(long = "max-turns", value_name = "N")]
    pub(crate) max_turns: Option<usize>,
    /// Replace secrets (API keys, tokens, private keys, passwords in URLs).
    #[arg(long)]
    pub(crate) redact: bool,
    /// Tokens every budget leaves free (for the reply), besides the input's `tools` schemas.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(crate) reserve: u64,
    /// How tokens are counted (budgets and reports).
    #[arg(long, value_enum, default_value = "o200k")]
    pub(crate) tokenizer: TokenizerArg,
    /// Let budgets shorten system messages that do not fit (keeping their beginning and
    /// end). By default system messages are sent whole and unchanged, and a budget that
    /// cannot hold them is refused, naming the sizes.
    #[arg(long = "shorten-system")]
    pub(crate) shorten_system: bool,
}

/// A built pipeline with its description and the counter reports use.
pub(crate) struct Pipeline {
    pub(crate) manager: Box<dyn curator::strategies::HistoryManager>,
    pub(crate) config: StrategyConfig,
    pub(crate) counter: Arc<dyn TokenCounter>,
    /// Tokens of the `tools` schemas this pipeline's budgets reserve.
    pub(crate) tools_tokens: u64,
    /// Whether budgets may shorten system messages (`--shorten-system`).
    pub(crate) shorten_system: bool,
}

impl Pipeline {
    /// The context every curation of this pipeline runs with.
    pub(crate) fn context(&self) -> CurationContext<'static> {
        CurationContext::default().with_shorten_system(self.shorten_system)
    }
}

impl PipelineArgs {
    fn any_flag(&self) -> bool {
        self.window.is_some()
            || self.truncate_tools.is_some()
            || self.max_tokens.is_some()
            || self.max_turns.is_some()
            || self.redact
            || self.summarize.is_some()
    }

    /// The configuration these options describe.
    pub(crate) fn config(&self) -> Result<StrategyConfig> {
        if let Some(path) = &self.config {
            if self.any_flag() {
                bail!("use either --config or the pipeline flags, not both");
            }
            return read_config(path);
        }
        let tokenizer = self.tokenizer.into();
        if !self.any_flag() {
            let defaults = PipelineArgs {
                redact: true,
                max_tokens: Some(self.budget.unwrap_or(DEFAULT_MAX_TOKENS)),
                stable: true,
                budget: None,
                ..self.clone()
            };
            return defaults.config();
        }
        if self.low_water.is_some() && !self.stable {
            bail!("--low-water needs --stable or --budget");
        }
        if self.opening_share.is_some() && !self.stable {
            bail!("--opening-share needs --stable or --budget");
        }
        if self.first_opening_share.is_some() && !self.stable {
            bail!("--first-opening-share needs --stable or --budget");
        }
        let mut steps = Vec::new();
        if self.redact {
            steps.push(StrategyConfig::Redactor {
                builtin: true,
                patterns: std::collections::BTreeMap::default(),
            });
        }
        if let Some(max_length) = self.truncate_tools {
            steps.push(StrategyConfig::ToolResultTruncator { max_length, suffix: None });
        }
        if let Some(SummarizerArg::Extractive) = self.summarize {
            steps.push(StrategyConfig::Summarize {
                summarizer: curator::strategies::SummarizerConfig::Extractive,
                threshold_messages: None,
                threshold_tokens: Some(self.summarize_after),
                tokenizer: Tokenizer::Estimate,
                keep_recent: 10,
                summarize_ratio: self.summarize_ratio,
                max_summary_chars: 4_000,
                on_error: curator::strategies::OnError::Fallback,
                then: None,
            });
        }
        if let Some(window_size) = self.window {
            steps.push(StrategyConfig::SlidingWindow { window_size });
        }
        if let Some(max_turns) = self.max_turns {
            steps.push(StrategyConfig::TurnLimit { max_turns });
        }
        if let Some(max_tokens) = self.max_tokens {
            steps.push(if self.stable {
                StrategyConfig::StableBudget {
                    max_tokens,
                    reserve: self.reserve,
                    tokenizer,
                    head_share: RelevanceBudget::DEFAULT_HEAD_SHARE,
                    recent_share: RelevanceBudget::DEFAULT_RECENT_SHARE,
                    fold_note: true,
                    note_terms: false,
                    cut_tool_results: true,
                    low_water: self.low_water.unwrap_or(StableBudget::DEFAULT_LOW_WATER),
                    min_free: 0,
                    opening_share: self
                        .opening_share
                        .unwrap_or(StableBudget::DEFAULT_OPENING_SHARE),
                    first_opening_share: self
                        .first_opening_share
                        .unwrap_or(StableBudget::DEFAULT_FIRST_OPENING_SHARE),
                }
            } else if self.relevance {
                StrategyConfig::RelevanceBudget {
                    max_tokens,
                    reserve: self.reserve,
                    tokenizer,
                    head_share: RelevanceBudget::DEFAULT_HEAD_SHARE,
                    recent_share: RelevanceBudget::DEFAULT_RECENT_SHARE,
                    fold_note: true,
                    note_terms: true,
                    cut_tool_results: true,
                }
            } else {
                StrategyConfig::TokenBudget {
                    max_tokens,
                    reserve: self.reserve,
                    tokenizer,
                    head_share: 0.5,
                    shorten: true,
                }
            });
        }
        Ok(StrategyConfig::Compose { steps })
    }

    /// Builds the pipeline for conversations without `tools`.
    pub(crate) fn build(&self) -> Result<Pipeline> {
        let config = self.config()?;
        let manager = config.build().context("cannot build the pipeline")?;
        let counter = Tokenizer::from(self.tokenizer).counter()?;
        Ok(Pipeline {
            manager,
            config,
            counter,
            tools_tokens: 0,
            shorten_system: self.shorten_system,
        })
    }

    /// The pipelines for conversations of any `tools`.
    pub(crate) fn pipelines(&self) -> Result<Pipelines> {
        Ok(Pipelines { plain: self.build()?, with_tools: HashMap::new() })
    }
}

/// The pipeline of each conversation: the one the options describe, with every token
/// budget's reserve raised by the tokens of the conversation's `tools` schemas.
///
/// The schemas are sent with every call and take room in the context window like messages
/// do; they are counted as their compact JSON text with the pipeline's counter (providers
/// render them in their own way, so this is close, not exact). Pipelines are built once per
/// distinct count, so a file whose conversations share their tools builds one.
pub(crate) struct Pipelines {
    plain: Pipeline,
    with_tools: HashMap<u64, Pipeline>,
}

impl Pipelines {
    /// The pipeline without tools: its description and counter are the same for all.
    pub(crate) fn plain(&self) -> &Pipeline {
        &self.plain
    }

    /// The pipeline for a conversation with these `tools` (or none).
    pub(crate) fn for_tools(&mut self, tools: Option<&Value>) -> Result<&Pipeline> {
        let tokens = match tools {
            Some(tools) => self.plain.counter.count_text(&tools.to_string()),
            None => 0,
        };
        if tokens == 0 {
            return Ok(&self.plain);
        }
        if !self.with_tools.contains_key(&tokens) {
            let config = self.plain.config.clone().with_reserve(tokens);
            let manager = config.build().context("cannot build the pipeline")?;
            let pipeline = Pipeline {
                manager,
                config,
                counter: Arc::clone(&self.plain.counter),
                tools_tokens: tokens,
                shorten_system: self.plain.shorten_system,
            };
            self.with_tools.insert(tokens, pipeline);
        }
        self.with_tools.get(&tokens).ok_or_else(|| anyhow::anyhow!("no pipeline built"))
    }
}

/// Reads a `StrategyConfig` from TOML or JSON (by extension; otherwise JSON, then TOML).
fn read_config(path: &std::path::Path) -> Result<StrategyConfig> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read config {}", path.display()))?;
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or_default();
    let parsed = match extension {
        "toml" => toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}", e.to_string().trim())),
        "json" => StrategyConfig::from_json(&text).map_err(anyhow::Error::from),
        _ => StrategyConfig::from_json(&text).map_err(anyhow::Error::from).or_else(|_| {
            toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}", e.to_string().trim()))
        }),
    };
    parsed.with_context(|| format!("bad config {}", path.display()))
}

/// A one-line description of a pipeline, for reports.
pub(crate) fn describe(config: &StrategyConfig) -> String {
    serde_json::to_string(config).unwrap_or_default()
}

/// A curation error in the command line's terms: the CLI adds the input's `tools` schemas to
/// every budget's reserve, so a budget too small for what must be sent names the schemas'
/// tokens apart from the rest of the reserve (`tools_tokens`, when the conversation has any).
pub(crate) fn explain(error: anyhow::Error, tools_tokens: u64) -> anyhow::Error {
    let too_small = error.chain().find_map(|cause| match cause.downcast_ref() {
        Some(curator::strategies::Error::BudgetTooSmall(shortfall)) => Some(shortfall.clone()),
        _ => None,
    });
    match too_small {
        Some(mut shortfall) if tools_tokens > 0 => {
            let tools = tools_tokens.min(shortfall.reserve);
            shortfall.reserve -= tools;
            shortfall.tools += tools;
            anyhow::anyhow!("{shortfall}")
        }
        _ => error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_pipeline_is_the_librarys() {
        let args = PipelineArgs {
            config: None,
            window: None,
            truncate_tools: None,
            max_tokens: None,
            max_turns: None,
            redact: false,
            relevance: false,
            summarize: None,
            summarize_after: 0,
            summarize_ratio: 0.5,
            reserve: 0,
            tokenizer: TokenizerArg::O200k,
            shorten_system: false,
            stable: false,
            low_water: None,
            opening_share: None,
            first_opening_share: None,
            budget: None,
        };
        assert_eq!(args.config().ok(), Some(StrategyConfig::default_pipeline(DEFAULT_MAX_TOKENS)));
        let at = PipelineArgs { budget: Some(8_000), ..args.clone() };
        assert_eq!(at.config().ok(), Some(StrategyConfig::default_pipeline(8_000)));
        let low = PipelineArgs { low_water: Some(0.3), max_tokens: Some(8_000), ..args.clone() };
        let err = low.config().unwrap_err();
        assert!(err.to_string().contains("--low-water needs --stable or --budget"), "{err}");
        let first = PipelineArgs {
            first_opening_share: Some(0.0),
            max_tokens: Some(8_000),
            ..args.clone()
        };
        let err = first.config().unwrap_err();
        assert!(err.to_string().contains("--first-opening-share needs --stable"), "{err}");
        let first =
            PipelineArgs { first_opening_share: Some(0.25), budget: Some(8_000), ..args.clone() };
        let Some(StrategyConfig::Compose { steps }) = first.config().ok() else {
            panic!("not the default pipeline")
        };
        assert!(
            matches!(steps[1], StrategyConfig::StableBudget { first_opening_share, .. } if (first_opening_share - 0.25).abs() < 1e-12)
        );
        let opening = PipelineArgs { opening_share: Some(0.5), budget: Some(8_000), ..args };
        let Some(StrategyConfig::Compose { steps }) = opening.config().ok() else {
            panic!("not the default pipeline")
        };
        assert!(
            matches!(steps[1], StrategyConfig::StableBudget { opening_share, .. } if (opening_share - 0.5).abs() < 1e-12)
        );
    }
}
