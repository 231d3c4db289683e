//! The tools the model manages its context with: `summarize_step`, `expand_step`,
//! `show_step` and `context_pressure`, with their OpenAI function definitions and argument
//! validation.

use serde_json::{Value, json};

use curator_model::json_kind;
use curator_strategies::TokenCounter;

use crate::error::{Error, Result};
use crate::escape::unfenced;
use crate::event::{MAX_SUMMARY_CHARS, TaskEvent, checked_summary};
use crate::history::{StepHistory, StepId, StepTurn, TaskHistory, TurnRole, Visibility};
use crate::names::{CONTEXT_PRESSURE, EXPAND_STEP, SHOW_STEP, SUMMARIZE_STEP};
use crate::render::{HistorySection, StepVisibilityResolver, shorter, turns_markdown};

/// A tool as the model is told about it: name, description and a JSON Schema of its parameters.
///
/// # Examples
///
/// ```
/// use curator::tasks::ToolDefinition;
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
    /// The four tools: `summarize_step`, `expand_step`, `show_step`, `context_pressure`.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::tasks::ToolDefinition;
    ///
    /// let names: Vec<_> = ToolDefinition::all().iter().map(|tool| tool.name).collect();
    /// assert_eq!(names, ["summarize_step", "expand_step", "show_step", "context_pressure"]);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn all() -> [Self; 4] {
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
                name: SHOW_STEP,
                description: "Choose how a finished step shows in the task history: `condensed` (what \
                              was asked, the newest tool results and how it ended), `summary` (its summary; \
                              summarize it first) or `title` (its heading alone). expand_step shows it in \
                              full again.",
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "step_id": {"type": "integer", "minimum": 0, "description": "ID of the step."},
                        "visibility": {
                            "type": "string",
                            "enum": ["condensed", "summary", "title"],
                            "description": "How the step shows."
                        }
                    },
                    "required": ["step_id", "visibility"],
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
    /// use curator::tasks::ToolDefinition;
    ///
    /// let [_, expand, _, _] = ToolDefinition::all();
    /// assert_eq!(expand.to_openai()["function"]["parameters"]["required"][0], "step_id");
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_openai(&self) -> Value {
        json!({
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters}
        })
    }

    /// The definition as an OpenAI function tool in strict mode (`"strict": true`): the
    /// provider then constrains the model's arguments to the schema. Strict mode takes a
    /// subset of JSON Schema (every property required, `additionalProperties: false` on
    /// every object, no length or range keywords), so the schema drops `minimum`,
    /// `minLength` and `maxLength`; the handlers still check them and answer the model when
    /// they are broken.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::tasks::ToolDefinition;
    ///
    /// let [summarize, _, _, _] = ToolDefinition::all();
    /// let tool = summarize.to_openai_strict();
    /// assert_eq!(tool["function"]["strict"], true);
    /// assert!(tool["function"]["parameters"]["properties"]["summary"].get("maxLength").is_none());
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_openai_strict(&self) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": strict_schema(&self.parameters),
                "strict": true
            }
        })
    }

    /// The definition as an Anthropic tool: `{name, description, input_schema}`.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::tasks::ToolDefinition;
    ///
    /// let [_, expand, _, _] = ToolDefinition::all();
    /// let tool = expand.to_anthropic();
    /// assert_eq!(tool["name"], "expand_step");
    /// assert_eq!(tool["input_schema"]["type"], "object");
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_anthropic(&self) -> Value {
        json!({"name": self.name, "description": self.description, "input_schema": self.parameters})
    }
}

/// The keywords OpenAI's strict mode does not take, dropped from a schema at every depth.
const UNSUPPORTED_IN_STRICT: [&str; 8] = [
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
];

/// `schema` without the keywords strict mode refuses, every property required.
fn strict_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut out = serde_json::Map::with_capacity(map.len());
            for (key, value) in map {
                if UNSUPPORTED_IN_STRICT.contains(&key.as_str()) {
                    continue;
                }
                let value = if key == "properties" {
                    match value {
                        Value::Object(properties) => Value::Object(
                            properties
                                .iter()
                                .map(|(name, schema)| (name.clone(), strict_schema(schema)))
                                .collect(),
                        ),
                        other => other.clone(),
                    }
                } else {
                    strict_schema(value)
                };
                out.insert(key.clone(), value);
            }
            if out.get("type").and_then(Value::as_str) == Some("object") {
                let names: Vec<Value> = out
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|properties| properties.keys().cloned().map(Value::String).collect())
                    .unwrap_or_default();
                out.insert("required".to_owned(), Value::Array(names));
                out.insert("additionalProperties".to_owned(), Value::Bool(false));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(strict_schema).collect()),
        other => other.clone(),
    }
}

/// A tool's arguments read as the JSON object its schema asks for. An empty string counts
/// as `{}`, and arguments wrapped in a Markdown code fence (```` ```json ... ``` ````, as
/// models sometimes write them) are read inside the fence. Every error is worded for the
/// model, in the schema's terms.
struct Arguments {
    tool: &'static str,
    fields: serde_json::Map<String, Value>,
}

impl Arguments {
    fn parse(tool: &'static str, raw: &str, expected: &[&str]) -> Result<Self> {
        let text = unfenced(raw);
        let text = if text.trim().is_empty() { "{}" } else { text };
        let value: Value = serde_json::from_str(text).map_err(|error| Error::InvalidArguments {
            tool,
            reason: format!("the arguments are not valid JSON ({error})"),
            source: Some(error),
        })?;
        let Value::Object(fields) = value else {
            return Err(invalid(
                tool,
                format!(
                    "the arguments must be a JSON object with {}, not {}",
                    field_list(expected),
                    json_kind(&value)
                ),
            ));
        };
        if let Some(unknown) = fields.keys().find(|key| !expected.contains(&key.as_str())) {
            return Err(invalid(
                tool,
                if expected.is_empty() {
                    format!("unknown field `{unknown}`; this tool takes no arguments")
                } else {
                    format!("unknown field `{unknown}`; the fields are {}", field_list(expected))
                },
            ));
        }
        if let Some(missing) = expected.iter().find(|name| !fields.contains_key(**name)) {
            return Err(invalid(tool, format!("missing field `{missing}`")));
        }
        Ok(Self { tool, fields })
    }

    fn step_id(&self, name: &str) -> Result<StepId> {
        let value = &self.fields[name];
        value.as_u64().and_then(|id| StepId::try_from(id).ok()).ok_or_else(|| {
            invalid(
                self.tool,
                format!(
                    "`{name}` must be a whole number from 0 to {}, not {}",
                    StepId::MAX,
                    shown(value)
                ),
            )
        })
    }

    fn text(&self, name: &str) -> Result<&str> {
        let value = &self.fields[name];
        value.as_str().ok_or_else(|| {
            invalid(self.tool, format!("`{name}` must be a string, not {}", shown(value)))
        })
    }
}

fn invalid(tool: &'static str, reason: String) -> Error {
    Error::InvalidArguments { tool, reason, source: None }
}

fn field_list(names: &[&str]) -> String {
    if names.is_empty() {
        return "no fields".to_owned();
    }
    names.iter().map(|name| format!("`{name}`")).collect::<Vec<_>>().join(" and ")
}

/// A value as the error quotes it: short JSON, or its kind when long.
fn shown(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 40 { text } else { json_kind(value).to_owned() }
}

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
/// use curator::tasks::{StepTurn, TaskEvent, TaskHistory, TurnRole, summarize_step};
///
/// let history = TaskHistory::new("Ship", [(1, "Test"), (2, "Tag")])?
///     .apply(&TaskEvent::SetActiveStep { step_id: 1 })?
///     .apply(&TaskEvent::append(StepTurn::new(1, TurnRole::Tool, "   Compiling auth v0.1.0 (/work/auth)\n    Finished `test` profile\nrunning 212 tests\ntest result: ok. 212 passed; 0 failed; finished in 3.1s").with_tool("cargo_test", "c1")))?
///     .apply(&TaskEvent::append(StepTurn::new(2, TurnRole::Assistant, "All 212 tests pass: the release can be tagged.")))?
///     .apply(&TaskEvent::SetActiveStep { step_id: 2 })?;
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
/// [`Error::UnknownStep`], [`Error::EmptySummary`], [`Error::SummaryTooLong`];
/// [`Error::ActiveStep`] for the step still receiving turns; [`Error::SummaryNotShorter`]
/// when the section would not get fewer characters: the step rendered with the summary,
/// plus the call and its answer as the section shows them (`**Call [summarize_step]**:
/// {"step_id":1}` and `**[summarize_step]**: Step 1 summarized.`), against the step in full.
/// Each message is meant to be returned to the model as the tool's answer.
pub fn summarize_step(history: &TaskHistory, raw_arguments: &str) -> Result<Summarized> {
    let args = Arguments::parse(SUMMARIZE_STEP, raw_arguments, &["step_id", "summary"])?;
    let step_id = args.step_id("step_id")?;
    let summary = checked_summary(args.text("summary")?)?;
    let step = history.step(step_id).ok_or_else(|| history.unknown(step_id))?;
    if history.active_step_id() == Some(step_id) {
        return Err(Error::ActiveStep { step_id });
    }
    let message = format!("Step {step_id} summarized.");
    // The call and its answer join the section too (compactly: the summary shows once, as
    // the step's): the summary must pay for them, and for the blank line that opens the
    // turns of a step that had none.
    let exchange = "\n".to_owned()
        + &turns_markdown(&[
            StepTurn::tool_call(1, SUMMARIZE_STEP, "", format!("{{\"step_id\":{step_id}}}")),
            StepTurn::new(2, TurnRole::Tool, message.as_str()).with_tool(SUMMARIZE_STEP, ""),
        ]);
    let size = |text: &str| text.chars().count() as u64;
    shorter(&HistorySection::new(), step, &summary, &exchange, "characters", size)?;
    Ok(Summarized { message, event: TaskEvent::SummarizeStep { step_id, summary } })
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
    /// The tool's answer for the model: which step now shows in full.
    pub message: String,
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
/// use curator::tasks::{TaskEvent, TaskHistory, Visibility, expand_step};
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
/// [`Error::UnknownStep`]; [`Error::NotSummarized`] for a step that already shows in full.
pub fn expand_step(history: &TaskHistory, raw_arguments: &str) -> Result<Expansion> {
    let args = Arguments::parse(EXPAND_STEP, raw_arguments, &["step_id", "reason"])?;
    let step_id = args.step_id("step_id")?;
    let reason = args.text("reason")?.to_owned();
    let step = history.step(step_id).ok_or_else(|| history.unknown(step_id))?;
    let full = step.visibility() == Visibility::Full
        || (step.visibility() == Visibility::Summary && step.summary().is_none());
    if full {
        return Err(Error::NotSummarized { step_id });
    }
    let turns = step.turns().len();
    Ok(Expansion {
        message: format!(
            "Step {step_id} ({}) expanded: its {turns} turn{} show{} in full in the task history \
             until it is summarized again.",
            step.step_title(),
            if turns == 1 { "" } else { "s" },
            if turns == 1 { "s" } else { "" },
        ),
        step: step.clone(),
        reason,
        event: TaskEvent::ExpandStep { step_id },
    })
}

/// What a valid `show_step` call asks for: the event to apply and the answer for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Showing {
    /// `ShowStep` with the chosen visibility.
    pub event: TaskEvent,
    /// The tool's answer: how the step now shows.
    pub message: String,
}

/// Handles `show_step` from its raw JSON arguments: the model chooses how a finished step
/// shows (`condensed`, `summary` or `title`).
///
/// # Examples
///
/// ```
/// use curator::tasks::{StepTurn, TaskEvent, TaskHistory, TurnRole, Visibility, show_step};
///
/// let history = TaskHistory::new("Ship", [(1, "Test"), (2, "Tag")])?
///     .apply(&TaskEvent::SetActiveStep { step_id: 1 })?
///     .apply(&TaskEvent::append(StepTurn::new(1, TurnRole::Assistant, "All 212 tests pass.")))?
///     .apply(&TaskEvent::SetActiveStep { step_id: 2 })?;
/// let shown = show_step(&history, r#"{"step_id": 1, "visibility": "title"}"#)?;
/// let history = history.apply(&shown.event)?;
/// assert_eq!(history.step(1).map(|step| step.visibility()), Some(Visibility::Title));
///
/// // A summary must be written first; the active step shows in full.
/// assert!(show_step(&history, r#"{"step_id": 1, "visibility": "summary"}"#).is_err());
/// assert!(show_step(&history, r#"{"step_id": 2, "visibility": "condensed"}"#).is_err());
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`Error::InvalidArguments`] for arguments that are not `{step_id, visibility}` with one
/// of the three visibilities; [`Error::UnknownStep`]; [`Error::ActiveStepShown`] for the
/// active step; [`Error::NoSummary`] for `summary` on a step without one. Each message is
/// meant to be returned to the model as the tool's answer.
pub fn show_step(history: &TaskHistory, raw_arguments: &str) -> Result<Showing> {
    let args = Arguments::parse(SHOW_STEP, raw_arguments, &["step_id", "visibility"])?;
    let step_id = args.step_id("step_id")?;
    let (visibility, how) = match args.text("visibility")? {
        "condensed" => (
            Visibility::Condensed,
            "condensed: what was asked, the newest tool results and how it ended",
        ),
        "summary" => (Visibility::Summary, "as its summary"),
        "title" => (Visibility::Title, "as its title alone"),
        other => {
            return Err(invalid(
                SHOW_STEP,
                format!(
                    "`visibility` must be \"condensed\", \"summary\" or \"title\", not {}",
                    shown(&Value::from(other))
                ),
            ));
        }
    };
    let event = TaskEvent::ShowStep { step_id, visibility };
    // The reducer's own checks (an unknown step, the active one, no summary).
    history.apply(&event)?;
    let message = format!("Step {step_id} now shows {how}; expand_step shows it in full again.");
    Ok(Showing { event, message })
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
    /// use curator::tasks::{ContextPressure, Recommendation};
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
/// use curator::strategies::CharEstimate;
/// use curator::tasks::{Recommendation, context_pressure};
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
    Arguments::parse(CONTEXT_PRESSURE, raw_arguments, &[])?;
    Ok(ContextPressure::new(counter.count_text(context), max_tokens))
}
