//! The task history as a prompt section: Markdown or plain text, laid out for prompt caching.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::error::{Error, Result};
use crate::escape::{Lead, escaped, one_line, opens_with_fence};
use crate::exchange::{Shown, shown};
use crate::history::{StepHistory, StepId, StepTurn, TaskHistory, TurnRole, Visibility};

/// How many turns a condensed step shows.
pub const CONDENSED_TURNS: usize = 3;

/// Decides each step's visibility: an explicit override beats the stored visibility.
///
/// # Examples
///
/// ```
/// use curator::tasks::{StepHistory, StepVisibilityResolver, Visibility};
///
/// let resolver = StepVisibilityResolver::new().with_override(2, Visibility::Title);
/// assert_eq!(resolver.resolve(&StepHistory::new(2, "Tag")), Visibility::Title);
/// assert_eq!(resolver.resolve(&StepHistory::new(1, "Test")), Visibility::Full);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepVisibilityResolver {
    overrides: BTreeMap<StepId, Visibility>,
}

impl StepVisibilityResolver {
    /// No overrides: every step shows as stored.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::tasks::{StepHistory, StepVisibilityResolver, Visibility};
    ///
    /// assert_eq!(StepVisibilityResolver::new().resolve(&StepHistory::new(1, "Test")), Visibility::Full);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The same resolver with `step_id` shown at `visibility` whatever is stored.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::tasks::{StepHistory, StepVisibilityResolver, Visibility};
    ///
    /// let resolver = StepVisibilityResolver::new().with_override(1, Visibility::Condensed);
    /// assert_eq!(resolver.resolve(&StepHistory::new(1, "Test")), Visibility::Condensed);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_override(mut self, step_id: StepId, visibility: Visibility) -> Self {
        self.overrides.insert(step_id, visibility);
        self
    }

    /// The visibility `step` is rendered at.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::tasks::{StepHistory, StepVisibilityResolver, Visibility};
    ///
    /// let resolver = StepVisibilityResolver::new().with_override(2, Visibility::Title);
    /// assert_eq!(resolver.resolve(&StepHistory::new(1, "Test")), Visibility::Full);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn resolve(&self, step: &StepHistory) -> Visibility {
        self.overrides.get(&step.step_id()).copied().unwrap_or(step.visibility())
    }
}

/// Renders a [`TaskHistory`] as a prompt section.
///
/// Completed steps come first, in plan order, and render identically from one iteration to
/// the next; the active step comes last. Only the tail of the section changes as turns
/// arrive, so a provider's prompt cache keeps the rest.
///
/// # Examples
///
/// ```
/// use curator::tasks::{HistorySection, StepTurn, TaskEvent, TaskHistory, TurnRole};
///
/// let history = TaskHistory::new("Ship", [(1, "Test"), (2, "Tag")])?
///     .apply(&TaskEvent::SetActiveStep { step_id: 1 })?
///     .apply(&TaskEvent::append(StepTurn::new(1, TurnRole::Assistant, "Running the tests")))?;
/// let markdown = HistorySection::new().markdown(&history);
/// assert!(markdown.starts_with("## Task History\n\n**Objective**: Ship\n"));
/// assert!(markdown.ends_with("### 1. Test [active]\n\n**Assistant**: Running the tests"));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistorySection {
    title: String,
    level: usize,
    resolver: StepVisibilityResolver,
}

impl Default for HistorySection {
    fn default() -> Self {
        Self { title: "Task History".to_owned(), level: 2, resolver: StepVisibilityResolver::new() }
    }
}

impl HistorySection {
    /// A section titled "Task History" at heading level 2, steps as stored.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::tasks::{HistorySection, TaskHistory};
    ///
    /// let history = TaskHistory::new("Ship", [(1, "Test")])?;
    /// assert!(HistorySection::new().markdown(&history).starts_with("## Task History\n"));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The same section with another title.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::tasks::{HistorySection, TaskHistory};
    ///
    /// let history = TaskHistory::new("Ship", [(1, "Test")])?;
    /// assert!(HistorySection::new().with_title("Work so far").markdown(&history).starts_with("## Work so far\n"));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = title.into();
        self
    }

    /// The same section at another heading level (1 to 5; steps are one level below).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::tasks::{HistorySection, TaskHistory};
    ///
    /// let history = TaskHistory::new("Ship", [(1, "Test")])?;
    /// let markdown = HistorySection::new().with_level(3).markdown(&history);
    /// assert!(markdown.starts_with("### Task History\n") && markdown.contains("\n#### 1. Test"));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_level(mut self, level: usize) -> Self {
        self.level = level.clamp(1, 5);
        self
    }

    /// The same section with visibility overrides.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::tasks::{HistorySection, StepVisibilityResolver, TaskHistory, Visibility};
    ///
    /// let history = TaskHistory::new("Ship", [(1, "Test")])?;
    /// let resolver = StepVisibilityResolver::new().with_override(1, Visibility::Title);
    /// assert!(HistorySection::new().with_resolver(resolver).markdown(&history).ends_with("### 1. Test"));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_resolver(mut self, resolver: StepVisibilityResolver) -> Self {
        self.resolver = resolver;
        self
    }

    /// The section as Markdown.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::tasks::{HistorySection, TaskHistory};
    ///
    /// let history = TaskHistory::new("Ship", [(1, "Test")])?;
    /// assert_eq!(HistorySection::new().markdown(&history), "## Task History\n\n**Objective**: Ship\n\n### 1. Test");
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn markdown(&self, history: &TaskHistory) -> String {
        let mut out = String::with_capacity(4096);
        let hashes = "#".repeat(self.level);
        let _ = write!(
            out,
            "{hashes} {}\n\n**Objective**: {}\n",
            self.title,
            escaped(history.objective(), Lead::AfterLabel)
        );
        if !history.unplanned.is_empty() {
            // What was said before the plan had a step: shown in full, before the steps.
            out.push('\n');
            out.extend(std::iter::repeat_n('#', self.level + 1));
            out.push_str(" Before the plan\n\n");
            for turn in shown(&history.unplanned) {
                markdown_turn(&mut out, &turn, false);
            }
        } else if history.steps.is_empty() {
            out.push_str("\n_No history recorded._");
            return out;
        }
        for (number, step) in ordered(history) {
            let active = history.active_step_id() == Some(step.step_id());
            self.markdown_step(&mut out, number, step, active, self.visibility(step));
        }
        out.truncate(out.trim_end().len());
        out
    }

    /// The section as plain text.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::tasks::{HistorySection, TaskHistory};
    ///
    /// let history = TaskHistory::new("Ship", [(1, "Test")])?;
    /// assert_eq!(HistorySection::new().text(&history), "Task: Ship\n\nStep 1: Test");
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn text(&self, history: &TaskHistory) -> String {
        let mut out = String::with_capacity(4096);
        let _ = writeln!(out, "Task: {}", history.objective());
        if !history.unplanned.is_empty() {
            out.push_str("\nBefore the plan:\n");
            for shown in shown(&history.unplanned) {
                text_turn(&mut out, shown.turn, &shown.content, false);
            }
        } else if history.steps.is_empty() {
            out.push_str("\n<no history recorded>");
            return out;
        }
        for (_, step) in ordered(history) {
            let active = history.active_step_id() == Some(step.step_id());
            let marker = if active { " [active]" } else { "" };
            let _ = writeln!(
                out,
                "\nStep {}: {}{marker}",
                step.step_id(),
                title_text(step.step_title())
            );
            match self.visibility(step) {
                Visibility::Title => {}
                Visibility::Summary => {
                    let summary = step.summary().unwrap_or_default();
                    let summary = if step.is_plain() {
                        summary.into()
                    } else {
                        escaped(summary, Lead::AfterLabel)
                    };
                    let _ = writeln!(out, "[Summary] {summary}");
                    let plain = step.is_plain();
                    for shown in shown(step.turns_after_summary()) {
                        text_turn(&mut out, shown.turn, &shown.content, plain);
                    }
                    out.push_str("[Call `expand_step` with this step_id for full history]\n");
                }
                Visibility::Full if step.is_plain() => {
                    for turn in step.turns() {
                        text_turn(&mut out, turn, &turn.content, true);
                    }
                }
                Visibility::Full => {
                    for shown in shown(step.turns()) {
                        text_turn(&mut out, shown.turn, &shown.content, false);
                    }
                }
                Visibility::Condensed => {
                    let plain = step.is_plain();
                    for shown in condensed(shown(step.turns()).collect()) {
                        text_turn(&mut out, shown.turn, &shown.content, plain);
                    }
                }
            }
        }
        out.truncate(out.trim_end().len());
        out
    }

    /// One step's Markdown: its heading, then its turns or summary as `visibility` shows them.
    fn markdown_step(
        &self,
        out: &mut String,
        number: usize,
        step: &StepHistory,
        active: bool,
        visibility: Visibility,
    ) {
        let marker = if active { " [active]" } else { "" };
        let plain = step.is_plain();
        out.push('\n');
        out.extend(std::iter::repeat_n('#', self.level + 1));
        let title = title_text(step.step_title());
        // The tools take step ids: a heading whose plan position is not the id says the id.
        let id = step.step_id();
        if usize::try_from(id).ok() == Some(number) {
            let _ = writeln!(out, " {number}. {title}{marker}");
        } else {
            let _ = writeln!(out, " {number}. {title} (step_id {id}){marker}");
        }
        match visibility {
            Visibility::Title => {}
            Visibility::Summary => {
                let summary = step.summary().unwrap_or_default();
                let summary =
                    if plain { summary.into() } else { escaped(summary, Lead::LineStart) };
                let _ = writeln!(out, "\n{summary}");
                // The turns recorded after the summary, which it does not cover.
                let mut later = shown(step.turns_after_summary()).peekable();
                if later.peek().is_some() {
                    out.push('\n');
                }
                for turn in later {
                    markdown_turn(out, &turn, plain);
                }
                let _ = write!(
                    out,
                    "\n_Call `expand_step({})` for full conversation._\n",
                    step.step_id()
                );
            }
            Visibility::Full => {
                let mut turns = shown(step.turns()).peekable();
                if turns.peek().is_some() {
                    out.push('\n');
                }
                for turn in turns {
                    markdown_turn(out, &turn, plain);
                }
            }
            Visibility::Condensed => {
                let all: Vec<Shown<'_>> = shown(step.turns()).collect();
                let count = all.len();
                let turns = condensed(all);
                if !turns.is_empty() {
                    out.push('\n');
                }
                for turn in &turns {
                    markdown_turn(out, turn, plain);
                }
                if turns.len() < count {
                    let _ = write!(
                        out,
                        "\n_{} of {} turns shown. Call `expand_step({})` for full conversation._\n",
                        turns.len(),
                        count,
                        step.step_id()
                    );
                }
            }
        }
    }

    /// One step's Markdown at `visibility`, alone (to compare a summary with the turns it
    /// would replace).
    pub(crate) fn step_markdown(&self, step: &StepHistory, visibility: Visibility) -> String {
        let mut out = String::new();
        let number = usize::try_from(step.step_id()).unwrap_or(1);
        self.markdown_step(&mut out, number, step, false, visibility);
        out
    }

    fn visibility(&self, step: &StepHistory) -> Visibility {
        match self.resolver.resolve(step) {
            // Nothing to summarize with: show what there is.
            Visibility::Summary if step.summary().is_none() => Visibility::Full,
            visibility => visibility,
        }
    }
}

/// A step's title on one line, a literal `[active]` in it escaped (`\[active]`) so that only
/// the marker marks the active step.
fn title_text(title: &str) -> Cow<'_, str> {
    let title = one_line(title);
    if title.contains("[active]") {
        Cow::Owned(title.replace("[active]", "\\[active]"))
    } else {
        title
    }
}

/// Steps with their plan numbers: every step but the active one in plan order, then the
/// active one.
fn ordered(history: &TaskHistory) -> impl Iterator<Item = (usize, &StepHistory)> {
    let active = history.active_step_id();
    let numbered = || history.steps().enumerate().map(|(index, step)| (index + 1, step));
    numbered()
        .filter(move |(_, step)| Some(step.step_id()) != active)
        .chain(numbered().filter(move |(_, step)| Some(step.step_id()) == active))
}

/// The turns a condensed step shows of those the step shows, at most [`CONDENSED_TURNS`]:
/// the first (what was asked) and the last (the conclusion) always, and between them the
/// newest tool results that fit, in order.
fn condensed(turns: Vec<Shown<'_>>) -> Vec<Shown<'_>> {
    if turns.len() <= CONDENSED_TURNS {
        return turns;
    }
    let last = turns.len() - 1;
    let mut key: Vec<usize> = vec![0, last];
    let results = (1..last).rev().filter(|&index| turns[index].turn.role == TurnRole::Tool);
    key.extend(results.take(CONDENSED_TURNS.saturating_sub(2)));
    turns.into_iter().enumerate().filter(|(index, _)| key.contains(index)).map(|(_, t)| t).collect()
}

// Pieces pushed one by one rather than through `write!`: the section is rendered before
// every provider call, and this is its innermost loop.
fn markdown_turn(out: &mut String, shown: &Shown<'_>, plain: bool) {
    let turn = shown.turn;
    let content = shown.content.as_ref();
    let name = turn.tool_name.as_deref().unwrap_or("tool");
    match turn.role {
        TurnRole::Tool => {
            out.push_str("**[");
            out.push_str(name);
            out.push_str("]**:");
        }
        TurnRole::ToolCall => {
            out.push_str("**Call [");
            out.push_str(name);
            out.push_str("]**:");
        }
        TurnRole::User => out.push_str("**User**:"),
        TurnRole::Assistant => out.push_str("**Assistant**:"),
    }
    if plain {
        out.push(' ');
        out.push_str(content);
    } else if opens_with_fence(content) {
        // A fence opens only at the start of a line: the label goes on its own.
        out.push('\n');
        out.push_str(&escaped(content, Lead::LineStart));
    } else {
        out.push(' ');
        out.push_str(&escaped(content, Lead::AfterLabel));
    }
    out.push('\n');
}

/// One turn's line of the text section: `content` is what the section shows of `turn`.
fn text_turn(out: &mut String, turn: &StepTurn, content: &str, plain: bool) {
    out.push_str("  [");
    match (&turn.tool_name, turn.role) {
        (Some(name), TurnRole::ToolCall) => {
            out.push_str("call:");
            out.push_str(name);
        }
        (Some(name), _) => {
            out.push_str("tool:");
            out.push_str(name);
        }
        (None, role) => out.push_str(role.as_str()),
    }
    out.push_str("] ");
    if plain {
        out.push_str(content);
    } else {
        out.push_str(&escaped(content, Lead::AfterLabel));
    }
    out.push('\n');
}

/// `turns` as the Markdown section shows them in a step, alone (to measure what a tool's
/// exchange adds to the section).
pub(crate) fn turns_markdown(turns: &[StepTurn]) -> String {
    let mut out = String::new();
    for turn in shown(turns) {
        markdown_turn(&mut out, &turn, false);
    }
    out
}

/// Checks that the section gets smaller, by `size`, when `step` shows `summary` in place of
/// its turns and `added` (what summarizing adds elsewhere: the exchange of a
/// `summarize_step` call, rendered) is shown too.
pub(crate) fn shorter(
    section: &HistorySection,
    step: &StepHistory,
    summary: &str,
    added: &str,
    unit: &'static str,
    size: impl Fn(&str) -> u64,
) -> Result<()> {
    // As the step shows now: in full, or its summary and the turns after it.
    let now = if step.visibility() == Visibility::Summary {
        Visibility::Summary
    } else {
        Visibility::Full
    };
    let full = size(&section.step_markdown(step, now));
    let mut summarized = step.clone();
    summarized.summary = Some(summary.to_owned());
    summarized.summarized_turns = None;
    summarized.plain = std::sync::OnceLock::new();
    let mut rendered = section.step_markdown(&summarized, Visibility::Summary);
    rendered.push_str(added);
    let summarized = size(&rendered);
    if summarized < full {
        Ok(())
    } else {
        Err(Error::SummaryNotShorter { step_id: step.step_id(), summary: summarized, full, unit })
    }
}
