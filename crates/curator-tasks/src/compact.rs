//! The compaction policy: summarize the oldest completed step when the context fills up.

use curator_model::{Message, ToolCall};
use curator_strategies::{Summarizer, TokenCounter};

use crate::error::{Error, Result};
use crate::event::{MAX_SUMMARY_CHARS, TaskEvent, checked_summary};
use crate::history::{StepHistory, TaskHistory, TurnRole, Visibility};
use crate::names::is_task_tool;
use crate::render::{HistorySection, shorter};

/// The default utilisation above which [`check_and_compact`] summarizes a step.
pub const DEFAULT_COMPACTION_THRESHOLD: f64 = 0.8;

/// The context budget [`check_and_compact`] measures against.
///
/// # Examples
///
/// ```
/// use curator::strategies::CharEstimate;
/// use curator::tasks::Budget;
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
                &self.summarizer.map_or(std::borrow::Cow::Borrowed("essentials"), |s| s.name()),
            )
            .finish_non_exhaustive()
    }
}

impl<'a> Budget<'a> {
    /// A window of `max_tokens` counted by `counter`, threshold 0.8, [`essentials`] summaries.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::strategies::CharEstimate;
    /// use curator::tasks::Budget;
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

    /// The same budget summarizing with `summarizer` instead of [`essentials`].
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
    /// use curator::strategies::CharEstimate;
    /// use curator::tasks::{Budget, TaskHistory};
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

/// A step's turns as provider messages (for summarizers): each recorded tool call becomes
/// an assistant message with its arguments (consecutive calls share one message, as
/// parallel calls do), followed by the results that answer it. A tool result whose call was
/// not recorded (histories kept before calls were) gets a call with `{}` as its arguments
/// before it.
///
/// # Examples
///
/// ```
/// use curator::tasks::{StepHistory, StepTurn, TaskEvent, TaskHistory, TurnRole, step_messages};
///
/// let history = TaskHistory::new("Ship", [(1, "Test")])?
///     .apply(&TaskEvent::SetActiveStep { step_id: 1 })?
///     .apply(&TaskEvent::append(StepTurn::tool_call(1, "cargo_test", "c1", r#"{"package":"auth"}"#)))?
///     .apply(&TaskEvent::append(StepTurn::new(2, TurnRole::Tool, "ok. 14 passed").with_tool("cargo_test", "c1")))?;
/// let messages = step_messages(history.step(1).ok_or("no step")?);
/// assert_eq!(messages[0].tool_calls()[0].arguments(), r#"{"package":"auth"}"#);
/// assert!(curator::model::validate::openai(&messages).is_ok());
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn step_messages(step: &StepHistory) -> Vec<Message> {
    let mut messages: Vec<Message> = Vec::with_capacity(step.turns().len());
    // The calls of the assistant message being built, until a non-call turn closes it.
    let mut calls: Vec<ToolCall> = Vec::new();
    let mut recorded_calls: Vec<&str> = Vec::new();
    let flush = |messages: &mut Vec<Message>, calls: &mut Vec<ToolCall>| {
        if !calls.is_empty() {
            messages.push(Message::assistant_with_calls(None, std::mem::take(calls)));
        }
    };
    for turn in step.turns() {
        let name = turn.tool_name.as_deref().unwrap_or("tool");
        match (turn.role, &turn.tool_call_id) {
            (TurnRole::ToolCall, Some(call_id)) => {
                calls.push(ToolCall::new(call_id, name, turn.content.as_str()));
                recorded_calls.push(call_id);
                continue;
            }
            (TurnRole::ToolCall, None) => {
                flush(&mut messages, &mut calls);
                messages.push(Message::assistant(format!("[call:{name}] {}", turn.content)));
                continue;
            }
            _ => {}
        }
        flush(&mut messages, &mut calls);
        match (turn.role, &turn.tool_call_id) {
            (TurnRole::User, _) => messages.push(Message::user(turn.content.as_str())),
            (TurnRole::Tool, Some(call_id)) => {
                if !recorded_calls.contains(&call_id.as_str()) {
                    messages.push(Message::assistant_with_calls(
                        None,
                        vec![ToolCall::new(call_id, name, "{}")],
                    ));
                }
                messages.push(Message::tool_result(call_id.as_str(), turn.content.as_str()));
            }
            (TurnRole::Tool, None) => {
                messages.push(Message::user(format!("[tool:{name}] {}", turn.content)));
            }
            (TurnRole::Assistant | TurnRole::ToolCall, _) => {
                messages.push(Message::assistant(turn.content.as_str()));
            }
        }
    }
    flush(&mut messages, &mut calls);
    messages
}

/// The longest line an essentials summary quotes, in characters.
const ESSENTIAL_LINE_CHARS: usize = 160;
/// How many outcome lines an essentials summary keeps per tool.
const ESSENTIAL_LINES_PER_TOOL: usize = 3;

/// The summary compaction writes when no summarizer is given: what the step was asked, each
/// tool once (with how many times it was called) followed by the outcome lines of its
/// results (lines with an error, a failure, a pass, a result or a number), and the last
/// thing the assistant said. Tool results keep their essentials; repeated calls collapse;
/// the task tools' own calls are left out.
///
/// # Examples
///
/// ```
/// use curator::tasks::{StepTurn, TaskEvent, TaskHistory, TurnRole, essentials};
///
/// let mut history = TaskHistory::new("Ship", [(1, "Test")])?.apply(&TaskEvent::SetActiveStep { step_id: 1 })?;
/// for (id, turn) in [
///     StepTurn::new(1, TurnRole::User, "Run the auth tests."),
///     StepTurn::tool_call(2, "cargo_test", "c1", "{}"),
///     StepTurn::new(3, TurnRole::Tool, "Compiling auth v0.1.0\nrunning 14 tests\ntest result: ok. 14 passed; 0 failed").with_tool("cargo_test", "c1"),
///     StepTurn::new(4, TurnRole::Assistant, "All green."),
/// ].into_iter().enumerate() {
///     history = history.apply(&TaskEvent::append(turn))?;
///     assert_eq!(history.step(1).map(|s| s.turns().len()), Some(id + 1));
/// }
/// let summary = essentials(history.step(1).ok_or("no step")?);
/// assert_eq!(summary, "Asked: Run the auth tests.\ncargo_test: running 14 tests | test result: ok. 14 passed; 0 failed\nLast: All green.");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn essentials(step: &StepHistory) -> String {
    let mut lines: Vec<String> = Vec::new();
    if let Some(asked) = step.turns().iter().find(|turn| turn.role == TurnRole::User) {
        lines.push(format!("Asked: {}", clipped(first_line(&asked.content))));
    }
    // Each tool once, in the order of first use: its call count and outcome lines.
    let mut tools: Vec<(&str, usize, Vec<String>)> = Vec::new();
    for turn in step.turns() {
        let name = turn.tool_name.as_deref().unwrap_or("tool");
        // The task tools manage the context; their answers say nothing about the task.
        if is_task_tool(name) {
            continue;
        }
        let index = match tools.iter().position(|(known, _, _)| *known == name) {
            Some(index) => index,
            None if matches!(turn.role, TurnRole::Tool | TurnRole::ToolCall) => {
                tools.push((name, 0, Vec::new()));
                tools.len() - 1
            }
            None => continue,
        };
        match turn.role {
            TurnRole::ToolCall => tools[index].1 += 1,
            TurnRole::Tool => {
                // A result without a recorded call counts as one call.
                let called = step
                    .turns()
                    .iter()
                    .any(|t| t.role == TurnRole::ToolCall && t.tool_call_id == turn.tool_call_id);
                if !called || turn.tool_call_id.is_none() {
                    tools[index].1 += 1;
                }
                for line in outcome_lines(&turn.content) {
                    let outcomes = &mut tools[index].2;
                    outcomes.retain(|kept| *kept != line);
                    outcomes.push(line);
                }
            }
            TurnRole::User | TurnRole::Assistant => {}
        }
    }
    for (name, count, outcomes) in tools {
        let times = if count > 1 { format!(" ×{count}") } else { String::new() };
        let shown = &outcomes[outcomes.len().saturating_sub(ESSENTIAL_LINES_PER_TOOL)..];
        if shown.is_empty() {
            lines.push(format!("{name}{times}"));
        } else {
            lines.push(format!("{name}{times}: {}", shown.join(" | ")));
        }
    }
    if let Some(last) = step.turns().iter().rev().find(|turn| turn.role == TurnRole::Assistant) {
        lines.push(format!("Last: {}", clipped(first_line(&last.content))));
    }
    let mut summary = String::new();
    for line in lines {
        let needed = line.chars().count() + usize::from(!summary.is_empty());
        if summary.chars().count() + needed > MAX_SUMMARY_CHARS {
            break;
        }
        if !summary.is_empty() {
            summary.push('\n');
        }
        summary.push_str(&line);
    }
    summary
}

fn first_line(text: &str) -> &str {
    text.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or_default()
}

fn clipped(line: &str) -> String {
    if line.chars().count() <= ESSENTIAL_LINE_CHARS {
        return line.to_owned();
    }
    let mut out: String = line.chars().take(ESSENTIAL_LINE_CHARS - 1).collect();
    out.push('…');
    out
}

/// The lines of a tool result that carry its outcome: an error, a failure or panic, a pass,
/// a result, or a number (a count or a measure, not the digits of a version or a path). A result with none of them keeps its first line.
fn outcome_lines(content: &str) -> Vec<String> {
    const MARKERS: [&str; 12] = [
        "error",
        "fail",
        "panic",
        "warn",
        "pass",
        "result",
        "success",
        "denied",
        "not found",
        "exception",
        "abort",
        "exit",
    ];
    // A count or a measure (`14`, `0.5`, `98%`), not the digits of a version or a path.
    let number = |word: &str| {
        let word = word.trim_matches(|c: char| ",.;:()[]".contains(c));
        let word = word.strip_suffix('%').unwrap_or(word);
        word.bytes().any(|b| b.is_ascii_digit())
            && word.bytes().all(|b| b.is_ascii_digit() || b == b'.' || b == b',')
    };
    let essential = |line: &str| {
        let lower = line.to_lowercase();
        line.split_whitespace().any(number)
            || MARKERS.iter().any(|marker| lower.contains(marker))
            || lower.split(|c: char| !c.is_alphanumeric()).any(|word| word == "ok")
    };
    let mut lines: Vec<String> = content
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && essential(line))
        .map(clipped)
        .collect();
    lines.dedup();
    if lines.is_empty() {
        lines.extend(content.lines().map(str::trim).find(|line| !line.is_empty()).map(clipped));
    }
    lines
}

/// `step` holding only `later`, its turns after its summary (for summarizing them).
fn later_turns(step: &StepHistory, later: &[crate::history::StepTurn]) -> StepHistory {
    let mut rest = StepHistory::new(step.step_id(), step.step_title());
    rest.turns = later.to_vec();
    rest
}

/// When the prompt uses more than the budget's threshold, summarizes the completed step
/// left longest ago that is still shown in full, and returns the event that records the
/// summary; `None` when under the threshold or nothing is left to summarize.
///
/// A completed step is one with turns that is not the active step, wherever it stands in
/// the plan (a step finished out of the plan's order included); the one whose last turn is
/// the oldest goes first. Its summary is
/// [`essentials`], or the budget's summarizer's; a summary that would not make the step
/// shorter (counted by the budget's counter, the step rendered as the section renders it)
/// is refused and the next candidate is tried.
///
/// **A step the model expanded stays expanded** (it has a summary and shows in full): it
/// is left out while the prompt fits the window, so that the model sees what it asked for
/// however high the pressure. Only when the prompt is over the window itself, and no other
/// step could be summarized, is the oldest expanded step summarized again (with its own
/// summary, the model's often).
///
/// # Examples
///
/// ```
/// use curator::strategies::CharEstimate;
/// use curator::tasks::{
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
/// nothing; [`Error::SummaryNotShorter`] (naming the oldest candidate) when there were
/// candidates and no summary would make any of them shorter.
pub fn check_and_compact(history: &TaskHistory, budget: &Budget<'_>) -> Result<Option<TaskEvent>> {
    let used = budget.used_tokens(history);
    #[expect(clippy::cast_precision_loss, reason = "token counts are far below 2^52")]
    let over = used as f64 > budget.threshold * budget.max_tokens as f64;
    if !over {
        return Ok(None);
    }
    let active = history.active_step_id();
    let mut completed: Vec<(usize, &StepHistory)> = history
        .steps()
        .enumerate()
        .filter(|(_, step)| {
            Some(step.step_id()) != active
                && !step.turns().is_empty()
                && (step.visibility() == Visibility::Full
                    // A summary with turns recorded after it: summarized again, with them.
                    || !step.turns_after_summary().is_empty())
        })
        .collect();
    // The step left longest ago first (its last turn the oldest), in plan order among
    // equals: a step finished out of the plan's order is a candidate like any other.
    completed.sort_by_key(|(index, step)| (step.turns().last().map(|t| t.created_at), *index));
    // Steps never summarized (or summarized before their last turns) first; the ones the
    // model expanded only over the window.
    let (expanded, fresh): (Vec<_>, Vec<_>) = completed
        .into_iter()
        .map(|(_, step)| step)
        .partition(|step| step.summary().is_some() && step.turns_after_summary().is_empty());
    let over_window = used > budget.max_tokens;
    let candidates = fresh.into_iter().chain(expanded.into_iter().filter(|_| over_window));
    let default_section = HistorySection::new();
    let section = budget.section.unwrap_or(&default_section);
    let mut refused = None;
    for step in candidates {
        let later = step.turns_after_summary();
        let summary = match (step.summary(), budget.summarizer) {
            // Turns came after the summary: it is extended with what they add, whole lines
            // while they fit; when none does, the step stays as it is (its later turns shown).
            (Some(summary), None) if !later.is_empty() => {
                let mut extended = summary.to_owned();
                for line in essentials(&later_turns(step, later)).lines() {
                    if extended.chars().count() + 1 + line.chars().count() > MAX_SUMMARY_CHARS {
                        break;
                    }
                    extended.push('\n');
                    extended.push_str(line);
                }
                if extended.len() == summary.len() {
                    continue;
                }
                extended
            }
            (Some(summary), Some(summarizer)) if !later.is_empty() => {
                let messages = step_messages(&later_turns(step, later));
                let refs: Vec<&Message> = messages.iter().collect();
                let extended = summarizer
                    .summarize(Some(summary), &refs)
                    .map_err(|source| Error::Summarizer { step_id: step.step_id(), source })?;
                extended.trim().chars().take(MAX_SUMMARY_CHARS).collect()
            }
            // Expanded earlier: its summary (the model's own, often) still covers it.
            (Some(summary), _) => summary.to_owned(),
            (None, None) => essentials(step),
            (None, Some(summarizer)) => {
                let messages = step_messages(step);
                let refs: Vec<&Message> = messages.iter().collect();
                let summary = summarizer
                    .summarize(None, &refs)
                    .map_err(|source| Error::Summarizer { step_id: step.step_id(), source })?;
                // Keep within the limit whatever the summarizer wrote.
                summary.trim().chars().take(MAX_SUMMARY_CHARS).collect()
            }
        };
        let summary = checked_summary(&summary)?;
        match shorter(section, step, &summary, "", "tokens", |text| budget.counter.count_text(text))
        {
            Ok(()) => {
                return Ok(Some(TaskEvent::SummarizeStep { step_id: step.step_id(), summary }));
            }
            Err(error) => {
                refused.get_or_insert(error);
            }
        }
    }
    refused.map_or(Ok(None), Err)
}
