//! The tools the model manages its context with: `summarize_step`, `expand_step` and
//! `context_pressure`, with their OpenAI function definitions and argument validation.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use curator_strategies::TokenCounter;

use crate::error::{Error, Result};
use crate::event::{MAX_SUMMARY_CHARS, TaskEvent, checked_summary};
use crate::history::{StepHistory, StepId, TaskHistory, Visibility};
use crate::render::StepVisibilityResolver;

/// A tool as the model is told about it: name, description and a JSON Schema of its parameters.
///
/// # Examples
///
/// ```
/// use curator_tasks::ToolDefinition;
///
/// let tools: Vec<_> = ToolDefinition::all().iter().map(ToolDefinition::to_openai).collect();
/// assert_eq!(tools[0]["function"]["name"], "summarize_step");
/// assert_eq!(tools[0]["function"]["parameters"]["required"][1], "summary");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    /// The tool's name.
    pub name: &'static str,
    /// What it does and when to use it, for the model.
    pub description: &'static str,
    /// A JSON Schema of the arguments object.
    pub parameters: Value,
}

impl ToolDefinition {
    /// The three tools: `summarize_step`, `expand_step`, `context_pressure`.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator_tasks::ToolDefinition;
    ///
    /// let names: Vec<_> = ToolDefinition::all().iter().map(|tool| tool.name).collect();
    /// assert_eq!(names, ["summarize_step", "expand_step", "context_pressure"]);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn all() -> [Self; 3] {
        [
            Self {
                name: SUMMARIZE_STEP,
                description: "Compress a step's conversation history into a summary. Use this to free \
                              context space after completing a step or when the full history is no longer needed.",
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "step_id": {"type": "integer", "minimum": 0, "description": "ID of the step to summarize."},
                        "summary": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": MAX_SUMMARY_CHARS,
                            "description": "Concise summary of the step's conversation (1-3 sentences)."
                        }
                    },
                    "required": ["step_id", "summary"],
                    "additionalProperties": false
                }),
            },
            Self {
                name: EXPAND_STEP,
                description: "Restore full conversation history for a summarized step. Use when you need \
                              to review details that were compressed.",
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "step_id": {"type": "integer", "minimum": 0, "description": "ID of the step to expand."},
                        "reason": {"type": "string", "description": "Why the full history is needed."}
                    },
                    "required": ["step_id", "reason"],
                    "additionalProperties": false
                }),
            },
            Self {
                name: CONTEXT_PRESSURE,
                description: "Check current context utilization to decide if summarization is needed.",
                parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
            },
        ]
    }

    /// The definition in the OpenAI function-tool format.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator_tasks::ToolDefinition;
    ///
    /// let [_, expand, _] = ToolDefinition::all();
    /// assert_eq!(expand.to_openai()["function"]["parameters"]["required"][0], "step_id");
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_openai(&self) -> Value {
        json!({
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters}
        })
    }
}

const SUMMARIZE_STEP: &str = "summarize_step";
const EXPAND_STEP: &str = "expand_step";
const CONTEXT_PRESSURE: &str = "context_pressure";

/// Parses a tool's raw JSON arguments; an empty string counts as `{}`.
fn arguments<T: DeserializeOwned>(tool: &'static str, raw: &str) -> Result<T> {
    let raw = if raw.trim().is_empty() { "{}" } else { raw };
    serde_json::from_str(raw).map_err(|error| Error::InvalidArguments {
        tool,
        reason: error.to_string(),
        source: Some(error),
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SummarizeArgs {
    step_id: StepId,
    summary: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpandArgs {
    step_id: StepId,
    reason: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

/// What a valid `summarize_step` call asks for: the event to apply and the answer for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summarized {
    /// `SummarizeStep` with the trimmed summary.
    pub event: TaskEvent,
    /// The tool's answer: `Step N summarized.`
    pub message: String,
}

/// Handles `summarize_step` from its raw JSON arguments.
///
/// # Examples
///
/// ```
/// use curator_tasks::{TaskHistory, summarize_step};
///
/// let history = TaskHistory::new("Ship", [(1, "Test")])?;
/// let done = summarize_step(&history, r#"{"step_id": 1, "summary": " Tests pass. "}"#)?;
/// let history = history.apply(&done.event)?;
/// assert_eq!(history.step(1).and_then(|step| step.summary()), Some("Tests pass."));
///
/// let error = summarize_step(&history, r#"{"step_id": 1}"#).unwrap_err();
/// assert!(error.to_string().contains("missing field `summary`"));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`Error::InvalidArguments`] for arguments that are not `{step_id, summary}`;
/// [`Error::UnknownStep`], [`Error::EmptySummary`], [`Error::SummaryTooLong`]. Each message is
/// meant to be returned to the model as the tool's answer.
pub fn summarize_step(history: &TaskHistory, raw_arguments: &str) -> Result<Summarized> {
    let args: SummarizeArgs = arguments(SUMMARIZE_STEP, raw_arguments)?;
    history.position(args.step_id)?;
    let summary = checked_summary(&args.summary)?;
    Ok(Summarized {
        message: format!("Step {} summarized.", args.step_id),
        event: TaskEvent::SummarizeStep { step_id: args.step_id, summary },
    })
}

/// What a valid `expand_step` call asks for. Holding one is the signal that the prompt must
/// be re-rendered: apply [`Expansion::event`] (or use [`Expansion::resolver`]) and render again.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "an expansion means the prompt must be re-rendered"]
pub struct Expansion {
    /// The step in full, turns included.
    pub step: StepHistory,
    /// Why the model asked.
    pub reason: String,
    /// `ExpandStep`, to apply to the history.
    pub event: TaskEvent,
}

impl Expansion {
    /// `resolver` with this step forced to full visibility, for callers that keep the stored
    /// visibility and expand for one render only.
    pub fn resolver(&self, resolver: StepVisibilityResolver) -> StepVisibilityResolver {
        resolver.with_override(self.step.step_id(), Visibility::Full)
    }
}

/// Handles `expand_step` from its raw JSON arguments.
///
/// # Examples
///
/// ```
/// use curator_tasks::{TaskEvent, TaskHistory, Visibility, expand_step};
///
/// let history = TaskHistory::new("Ship", [(1, "Test")])?
///     .apply(&TaskEvent::SummarizeStep { step_id: 1, summary: "Tests pass.".into() })?;
/// let expansion = expand_step(&history, r#"{"step_id": 1, "reason": "need the failing seed"}"#)?;
/// let history = history.apply(&expansion.event)?;
/// assert_eq!(history.step(1).map(|step| step.visibility()), Some(Visibility::Full));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`Error::InvalidArguments`] for arguments that are not `{step_id, reason}`;
/// [`Error::UnknownStep`].
pub fn expand_step(history: &TaskHistory, raw_arguments: &str) -> Result<Expansion> {
    let args: ExpandArgs = arguments(EXPAND_STEP, raw_arguments)?;
    let step = history.step(args.step_id).ok_or_else(|| history.unknown(args.step_id))?;
    Ok(Expansion {
        step: step.clone(),
        reason: args.reason,
        event: TaskEvent::ExpandStep { step_id: args.step_id },
    })
}

/// Below this utilisation the answer is [`Recommendation::Ok`].
pub const CONSIDER_SUMMARIZING_AT: f64 = 0.7;
/// From this utilisation on the answer is [`Recommendation::Urgent`].
pub const URGENT_AT: f64 = 0.9;

/// What `context_pressure` advises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Recommendation {
    /// Under 70 % of the window.
    Ok,
    /// From 70 % up to 90 %: summarize completed steps soon.
    ConsiderSummarizing,
    /// 90 % and above: summarize now.
    Urgent,
}

/// The answer of `context_pressure`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ContextPressure {
    /// Tokens the context uses.
    pub used_tokens: u64,
    /// The window.
    pub max_tokens: u64,
    /// `used / max`, from 0.0 (1.0 when the window is 0).
    pub utilization: f64,
    /// What to do about it.
    pub recommendation: Recommendation,
}

impl ContextPressure {
    /// The pressure of `used_tokens` in a window of `max_tokens`.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator_tasks::{ContextPressure, Recommendation};
    ///
    /// assert_eq!(ContextPressure::new(690, 1_000).recommendation, Recommendation::Ok);
    /// assert_eq!(ContextPressure::new(700, 1_000).recommendation, Recommendation::ConsiderSummarizing);
    /// assert_eq!(ContextPressure::new(900, 1_000).recommendation, Recommendation::Urgent);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[expect(clippy::cast_precision_loss, reason = "token counts are far below 2^52")]
    pub fn new(used_tokens: u64, max_tokens: u64) -> Self {
        let utilization =
            if max_tokens == 0 { 1.0 } else { used_tokens as f64 / max_tokens as f64 };
        let recommendation = if utilization >= URGENT_AT {
            Recommendation::Urgent
        } else if utilization >= CONSIDER_SUMMARIZING_AT {
            Recommendation::ConsiderSummarizing
        } else {
            Recommendation::Ok
        };
        Self { used_tokens, max_tokens, utilization, recommendation }
    }
}

/// Handles `context_pressure`: counts `context` (the prompt as it will be sent) under
/// `counter` against a window of `max_tokens`.
///
/// # Examples
///
/// ```
/// use curator_strategies::CharEstimate;
/// use curator_tasks::{Recommendation, context_pressure};
///
/// let pressure = context_pressure(&CharEstimate::default(), "{}", &"word ".repeat(1_000), 1_000)?;
/// assert_eq!(pressure.recommendation, Recommendation::Urgent);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`Error::InvalidArguments`] when the arguments are anything but `{}` (or empty).
pub fn context_pressure(
    counter: &dyn TokenCounter,
    raw_arguments: &str,
    context: &str,
    max_tokens: u64,
) -> Result<ContextPressure> {
    let NoArgs {} = arguments(CONTEXT_PRESSURE, raw_arguments)?;
    Ok(ContextPressure::new(counter.count_text(context), max_tokens))
}
