//! The compaction policy: summarize the oldest completed step when the context fills up.

use curator_model::{Message, ToolCall};
use curator_strategies::{Extractive, Summarizer, TokenCounter};

use crate::error::{Error, Result};
use crate::event::{MAX_SUMMARY_CHARS, TaskEvent, checked_summary};
use crate::history::{StepHistory, TaskHistory, TurnRole, Visibility};
use crate::render::HistorySection;

/// The default utilisation above which [`check_and_compact`] summarizes a step.
pub const DEFAULT_COMPACTION_THRESHOLD: f64 = 0.8;

/// The context budget [`check_and_compact`] measures against.
///
/// # Examples
///
/// ```
/// use curator_strategies::CharEstimate;
/// use curator_tasks::Budget;
///
/// let counter = CharEstimate::default();
/// let budget = Budget::new(&counter, 8_000).with_threshold(0.75).with_other_tokens(1_200);
/// assert_eq!(budget.threshold(), 0.75);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy)]
pub struct Budget<'a> {
    counter: &'a dyn TokenCounter,
    max_tokens: u64,
    other_tokens: u64,
    threshold: f64,
    summarizer: Option<&'a dyn Summarizer>,
    section: Option<&'a HistorySection>,
}

impl std::fmt::Debug for Budget<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Budget")
            .field("max_tokens", &self.max_tokens)
            .field("other_tokens", &self.other_tokens)
            .field("threshold", &self.threshold)
            .field(
                "summarizer",
                &self.summarizer.map_or(std::borrow::Cow::Borrowed("extractive"), |s| s.name()),
            )
            .finish_non_exhaustive()
    }
}

impl<'a> Budget<'a> {
    /// A window of `max_tokens` counted by `counter`, threshold 0.8, extractive summaries.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator_strategies::CharEstimate;
    /// use curator_tasks::Budget;
    ///
    /// let counter = CharEstimate::default();
    /// assert_eq!(Budget::new(&counter, 8_000).threshold(), 0.8);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(counter: &'a dyn TokenCounter, max_tokens: u64) -> Self {
        Self {
            counter,
            max_tokens,
            other_tokens: 0,
            threshold: DEFAULT_COMPACTION_THRESHOLD,
            summarizer: None,
            section: None,
        }
    }

    /// The same budget compacting above `threshold` (a fraction of the window).
    #[must_use]
    pub fn with_threshold(mut self, threshold: f64) -> Self {
        self.threshold = threshold;
        self
    }

    /// The same budget counting `tokens` for the rest of the prompt (system, tools, …).
    #[must_use]
    pub fn with_other_tokens(mut self, tokens: u64) -> Self {
        self.other_tokens = tokens;
        self
    }

    /// The same budget summarizing with `summarizer` instead of the extractive one.
    #[must_use]
    pub fn with_summarizer(mut self, summarizer: &'a dyn Summarizer) -> Self {
        self.summarizer = Some(summarizer);
        self
    }

    /// The same budget measuring the history as `section` renders it (default: Markdown of
    /// [`HistorySection::new`]).
    #[must_use]
    pub fn with_section(mut self, section: &'a HistorySection) -> Self {
        self.section = Some(section);
        self
    }

    /// The threshold.
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// Tokens of the prompt with `history` rendered in it.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator_strategies::CharEstimate;
    /// use curator_tasks::{Budget, TaskHistory};
    ///
    /// let counter = CharEstimate::default();
    /// let history = TaskHistory::new("Ship", [(1, "Test")])?;
    /// let budget = Budget::new(&counter, 8_000);
    /// assert_eq!(budget.with_other_tokens(100).used_tokens(&history), budget.used_tokens(&history) + 100);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn used_tokens(&self, history: &TaskHistory) -> u64 {
        let markdown = match self.section {
            Some(section) => section.markdown(history),
            None => HistorySection::new().markdown(history),
        };
        self.counter.count_text(&markdown) + self.other_tokens
    }
}

/// A step's turns as provider messages (for summarizers). Task turns do not record tool
/// arguments, so each tool result is preceded by a call with `{}` as its arguments.
///
/// # Examples
///
/// ```
/// use curator_tasks::{StepHistory, StepTurn, TurnRole, step_messages};
///
/// let messages = step_messages(&StepHistory::new(1, "Test"));
/// assert!(messages.is_empty());
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn step_messages(step: &StepHistory) -> Vec<Message> {
    let mut messages = Vec::with_capacity(step.turns().len());
    for turn in step.turns() {
        match (turn.role, &turn.tool_call_id) {
            (TurnRole::User, _) => messages.push(Message::user(turn.content.as_str())),
            (TurnRole::Assistant, _) => messages.push(Message::assistant(turn.content.as_str())),
            (TurnRole::Tool, Some(call_id)) => {
                let name = turn.tool_name.as_deref().unwrap_or("tool");
                messages.push(Message::assistant_with_calls(
                    None,
                    vec![ToolCall::new(call_id, name, "{}")],
                ));
                messages.push(Message::tool_result(call_id.as_str(), turn.content.as_str()));
            }
            (TurnRole::Tool, None) => {
                let name = turn.tool_name.as_deref().unwrap_or("tool");
                messages.push(Message::user(format!("[tool:{name}] {}", turn.content)));
            }
        }
    }
    messages
}

/// When the prompt uses more than the budget's threshold, summarizes the oldest completed
/// step still shown in full and returns the event that records the summary; `None` when
/// under the threshold or nothing is left to summarize.
///
/// A completed step is one before the active step's place in the plan, or any step but the
/// active one when none is active, that has turns.
///
/// # Examples
///
/// ```
/// use curator_strategies::CharEstimate;
/// use curator_tasks::{
///     Budget, StepTurn, TaskEvent, TaskHistory, TurnRole, Visibility, check_and_compact,
/// };
///
/// let mut history = TaskHistory::new("Ship", [(1, "Test"), (2, "Tag")])?.apply(&TaskEvent::SetActiveStep { step_id: 1 })?;
/// for id in 1..=40 {
///     history = history.apply(&TaskEvent::append(StepTurn::new(id, TurnRole::Assistant, "ran the suite again, 3 failures left")))?;
/// }
/// history = history.apply(&TaskEvent::SetActiveStep { step_id: 2 })?;
/// let counter = CharEstimate::default();
/// let event = check_and_compact(&history, &Budget::new(&counter, 500))?.ok_or("expected compaction")?;
/// let history = history.apply(&event)?;
/// assert_eq!(history.step(1).map(|step| step.visibility()), Some(Visibility::Summary));
/// assert!(check_and_compact(&history, &Budget::new(&counter, 100_000))?.is_none());
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`Error::Summarizer`] when the summarizer fails; [`Error::EmptySummary`] when it returns
/// nothing.
pub fn check_and_compact(history: &TaskHistory, budget: &Budget<'_>) -> Result<Option<TaskEvent>> {
    #[expect(clippy::cast_precision_loss, reason = "token counts are far below 2^52")]
    let over = budget.used_tokens(history) as f64 > budget.threshold * budget.max_tokens as f64;
    if !over {
        return Ok(None);
    }
    let active = history.active_step_id();
    let active_index = active.and_then(|id| history.steps().position(|step| step.step_id() == id));
    let candidate = history.steps().enumerate().find(|(index, step)| {
        Some(step.step_id()) != active
            && active_index.is_none_or(|active_index| *index < active_index)
            && step.visibility() == Visibility::Full
            && !step.turns().is_empty()
    });
    let Some((_, step)) = candidate else { return Ok(None) };
    let messages = step_messages(step);
    let refs: Vec<&Message> = messages.iter().collect();
    let extractive = Extractive::new(MAX_SUMMARY_CHARS);
    let summarizer = budget.summarizer.unwrap_or(&extractive);
    let summary = summarizer
        .summarize(None, &refs)
        .map_err(|source| Error::Summarizer { step_id: step.step_id(), source })?;
    // Keep within the limit whatever the summarizer wrote.
    let summary: String = summary.trim().chars().take(MAX_SUMMARY_CHARS).collect();
    Ok(Some(TaskEvent::SummarizeStep {
        step_id: step.step_id(),
        summary: checked_summary(&summary)?,
    }))
}
