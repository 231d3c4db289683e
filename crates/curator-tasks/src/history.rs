//! The task history: steps of a plan, each with its turns, summary and visibility.

use std::fmt;
use std::sync::{Arc, OnceLock};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A plan step's id, as the plan and the model's tools name it.
pub type StepId = u32;

/// Who produced a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnRole {
    /// The user, or the harness speaking for them.
    User,
    /// The model.
    Assistant,
    /// A tool's result.
    Tool,
    /// A tool call the model made: `tool_name` names the tool, `tool_call_id` the call, and
    /// `content` holds the arguments as the provider sent them.
    ToolCall,
}

impl TurnRole {
    /// The role as text: `user`, `assistant`, `tool`, `tool_call`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
            Self::ToolCall => "tool_call",
        }
    }
}

impl fmt::Display for TurnRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One turn of conversation within a step.
///
/// # Examples
///
/// ```
/// use curator::tasks::{StepTurn, TurnRole};
///
/// let turn = StepTurn::new(3, TurnRole::Tool, "12 files").with_tool("ls", "call_1");
/// assert_eq!(turn.tool_name.as_deref(), Some("ls"));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepTurn {
    /// The turn's id; increasing within a step.
    pub turn_id: u64,
    /// Who produced it.
    pub role: TurnRole,
    /// Its text.
    pub content: String,
    /// For a tool turn, the tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// For a tool turn, the id of the call it answers, so the step can be rebuilt into
    /// provider messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// When it was recorded.
    pub created_at: DateTime<Utc>,
}

impl StepTurn {
    /// A turn recorded now.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::tasks::{StepTurn, TurnRole};
    ///
    /// assert_eq!(StepTurn::new(1, TurnRole::User, "Fix the build").content, "Fix the build");
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(turn_id: u64, role: TurnRole, content: impl Into<String>) -> Self {
        Self {
            turn_id,
            role,
            content: content.into(),
            tool_name: None,
            tool_call_id: None,
            created_at: Utc::now(),
        }
    }

    /// A tool call the model made, with its arguments as the provider sent them.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::tasks::{StepTurn, TurnRole};
    ///
    /// let call = StepTurn::tool_call(4, "cargo_test", "call_9", r#"{"package":"auth"}"#);
    /// assert_eq!((call.role, call.content.as_str()), (TurnRole::ToolCall, r#"{"package":"auth"}"#));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn tool_call(
        turn_id: u64,
        name: impl Into<String>,
        call_id: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self::new(turn_id, TurnRole::ToolCall, arguments).with_tool(name, call_id)
    }

    /// The same turn as the result of a tool call.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::tasks::{StepTurn, TurnRole};
    ///
    /// let turn = StepTurn::new(2, TurnRole::Tool, "ok").with_tool("cargo_test", "call_9");
    /// assert_eq!(turn.tool_call_id.as_deref(), Some("call_9"));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_tool(mut self, name: impl Into<String>, call_id: impl Into<String>) -> Self {
        self.tool_name = Some(name.into());
        self.tool_call_id = Some(call_id.into());
        self
    }

    /// Whether the turn is a call of one of the task tools (`summarize_step`,
    /// `expand_step`, `context_pressure`) or its answer: an exchange that manages the
    /// context and says nothing about the task.
    pub(crate) fn is_task_tool(&self) -> bool {
        matches!(self.role, TurnRole::Tool | TurnRole::ToolCall)
            && self.tool_name.as_deref().is_some_and(crate::names::is_task_tool)
    }

    /// The same turn with another time (for replays and tests).
    ///
    /// # Examples
    ///
    /// ```
    /// use chrono::DateTime;
    /// use curator::tasks::{StepTurn, TurnRole};
    ///
    /// let turn = StepTurn::new(1, TurnRole::User, "hi").at(DateTime::UNIX_EPOCH);
    /// assert_eq!(turn.created_at, DateTime::UNIX_EPOCH);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn at(mut self, created_at: DateTime<Utc>) -> Self {
        self.created_at = created_at;
        self
    }
}

/// How much of a step a rendering shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    /// Every turn.
    #[default]
    Full,
    /// Key turns only, at most three: the first and the last, and between them the newest
    /// tool results.
    Condensed,
    /// The summary and a hint to expand (every turn while there is no summary).
    Summary,
    /// The heading alone.
    Title,
}

/// The conversation of one plan step.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepHistory {
    pub(crate) step_id: StepId,
    pub(crate) step_title: String,
    pub(crate) turns: Vec<StepTurn>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) summary: Option<String>,
    /// How many of the turns the summary covers, when turns came after it; `None` when it
    /// covers them all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) summarized_turns: Option<usize>,
    #[serde(default)]
    pub(crate) visibility: Visibility,
    /// Whether the step renders as written (see [`StepHistory::is_plain`]: no Markdown
    /// hazard, no task tool's exchange), found on the first render. A step is shared
    /// between history versions and replaced when it changes, so a finished step is
    /// scanned once; the reducer resets it on every change.
    #[serde(skip)]
    pub(crate) plain: OnceLock<bool>,
}

// By hand: the rendering cache is not part of a step's value.
impl PartialEq for StepHistory {
    fn eq(&self, other: &Self) -> bool {
        self.step_id == other.step_id
            && self.step_title == other.step_title
            && self.turns == other.turns
            && self.summary == other.summary
            && self.summarized_turns == other.summarized_turns
            && self.visibility == other.visibility
    }
}

impl Eq for StepHistory {}

impl StepHistory {
    /// An empty step.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::tasks::{StepHistory, Visibility};
    ///
    /// let step = StepHistory::new(1, "Reproduce the bug");
    /// assert!(step.turns().is_empty());
    /// assert_eq!(step.visibility(), Visibility::Full);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(step_id: StepId, step_title: impl Into<String>) -> Self {
        Self {
            step_id,
            step_title: step_title.into(),
            turns: Vec::new(),
            summary: None,
            summarized_turns: None,
            visibility: Visibility::Full,
            plain: OnceLock::new(),
        }
    }

    /// The step's id.
    pub fn step_id(&self) -> StepId {
        self.step_id
    }

    /// The step's title.
    pub fn step_title(&self) -> &str {
        &self.step_title
    }

    /// The turns, in order.
    pub fn turns(&self) -> &[StepTurn] {
        &self.turns
    }

    /// The summary, once the step was summarized (kept after an expand).
    pub fn summary(&self) -> Option<&str> {
        self.summary.as_deref()
    }

    /// The turns recorded after the summary was written, which it does not cover: a
    /// summarized step shows them after its summary. Empty without a summary, or when the
    /// summary covers every turn.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::tasks::{StepTurn, TaskEvent, TaskHistory, TurnRole, Visibility};
    ///
    /// let history = TaskHistory::new("Ship", [(1, "Test"), (2, "Tag")])?
    ///     .apply(&TaskEvent::SetActiveStep { step_id: 1 })?
    ///     .apply(&TaskEvent::append(StepTurn::new(1, TurnRole::Assistant, "3 tests fail")))?
    ///     .apply(&TaskEvent::SetActiveStep { step_id: 2 })?
    ///     .apply(&TaskEvent::SummarizeStep { step_id: 1, summary: "Three failures.".into() })?
    ///     .apply(&TaskEvent::AppendTurn { step_id: Some(1), turn: StepTurn::new(2, TurnRole::Assistant, "fixed") })?;
    /// let step = history.step(1).ok_or("no step")?;
    /// assert_eq!((step.summary(), step.visibility()), (Some("Three failures."), Visibility::Summary));
    /// assert_eq!(step.turns_after_summary().len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn turns_after_summary(&self) -> &[StepTurn] {
        match (&self.summary, self.summarized_turns) {
            (Some(_), Some(covered)) => self.turns.get(covered..).unwrap_or_default(),
            _ => &[],
        }
    }

    /// The stored visibility: [`Visibility::Summary`] after a summarize, [`Visibility::Full`]
    /// after an expand.
    pub fn visibility(&self) -> Visibility {
        self.visibility
    }

    /// Whether the step renders as written: none of its summary and turns holds a `#`, a
    /// fence character or a line starting with `=` or `-` (so no line of it can read as a
    /// Markdown heading or open a code block), and none of its turns is a task tool's
    /// exchange (which the section shows reduced or not at all). Computed once per step
    /// value.
    pub(crate) fn is_plain(&self) -> bool {
        let plain = |text: &str| !crate::escape::may_need_escaping(text);
        *self.plain.get_or_init(|| {
            self.summary.as_deref().is_none_or(plain)
                && self.turns.iter().all(|turn| plain(&turn.content) && !turn.is_task_tool())
        })
    }
}

/// The history of a task, organised by the steps of its plan.
///
/// An immutable value: [`TaskHistory::apply`] returns the next version and leaves this one
/// as it was. Versions share the steps they did not change.
///
/// # Examples
///
/// ```
/// use curator::tasks::{StepTurn, TaskEvent, TaskHistory, TurnRole};
///
/// let history = TaskHistory::new("Ship the release", [(1, "Run the tests"), (2, "Tag")])?;
/// let history = history.apply(&TaskEvent::SetActiveStep { step_id: 1 })?;
/// let history = history.apply(&TaskEvent::append(StepTurn::new(1, TurnRole::Assistant, "Running cargo test")))?;
/// assert_eq!(history.step(1).map(|step| step.turns().len()), Some(1));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskHistory {
    pub(crate) objective: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) active_step_id: Option<StepId>,
    pub(crate) steps: Vec<Arc<StepHistory>>,
    /// Turns recorded while the plan had no step (the user's first message, say).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) unplanned: Vec<StepTurn>,
}

impl TaskHistory {
    /// The task's objective.
    pub fn objective(&self) -> &str {
        &self.objective
    }

    /// The step receiving turns, if one is active.
    pub fn active_step_id(&self) -> Option<StepId> {
        self.active_step_id
    }

    /// The steps, in plan order.
    pub fn steps(&self) -> impl ExactSizeIterator<Item = &StepHistory> + '_ {
        self.steps.iter().map(AsRef::as_ref)
    }

    /// The turns recorded while the plan had no step yet, oldest first: they are rendered
    /// before the steps, so that nothing said before the plan is lost.
    pub fn unplanned(&self) -> &[StepTurn] {
        &self.unplanned
    }

    /// The step with this id.
    pub fn step(&self, step_id: StepId) -> Option<&StepHistory> {
        self.steps.iter().find(|step| step.step_id == step_id).map(AsRef::as_ref)
    }

    /// The id to give the next turn: one more than the largest so far (1 for the first).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::tasks::TaskHistory;
    ///
    /// assert_eq!(TaskHistory::new("Ship", [(1, "Test")])?.next_turn_id(), 1);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn next_turn_id(&self) -> u64 {
        self.steps
            .iter()
            .filter_map(|step| step.turns.last())
            .chain(self.unplanned.last())
            .map(|turn| turn.turn_id)
            .max()
            .map_or(1, |id| id + 1)
    }
}
