//! The events that change a task history, and the pure reducer that applies them.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::history::{StepHistory, StepId, StepTurn, TaskHistory, Visibility};

/// The longest summary a step may carry, in characters.
pub const MAX_SUMMARY_CHARS: usize = 1_000;

/// A change to a task history.
///
/// # Examples
///
/// ```
/// use curator::tasks::{TaskEvent, TaskHistory};
///
/// let history = TaskHistory::new("Ship", [(1, "Test")])?;
/// let event = TaskEvent::SummarizeStep { step_id: 1, summary: "All 212 tests pass.".into() };
/// let json = serde_json::to_string(&event)?;
/// assert!(json.contains("summarize_step"));
/// assert!(history.apply(&event).is_ok());
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskEvent {
    /// Replace the whole history (a new plan was set up).
    Seed {
        /// The new history.
        history: TaskHistory,
    },
    /// Add steps after the existing ones.
    AddSteps {
        /// The new steps; their ids must be new.
        steps: Vec<StepHistory>,
    },
    /// Make a step the one receiving turns.
    SetActiveStep {
        /// The step.
        step_id: StepId,
    },
    /// Stop sending turns to any step (every step of the plan is done).
    ClearActiveStep,
    /// Give the task a new objective (the plan's changed): the steps and their turns stay.
    SetObjective {
        /// The new objective.
        objective: String,
    },
    /// Give a step a new title (the plan renamed it).
    RenameStep {
        /// The step.
        step_id: StepId,
        /// Its new title.
        title: String,
    },
    /// Append a turn to the named step, or to the active one; while the plan has no step,
    /// to the turns before the plan ([`TaskHistory::unplanned`]). A step with a summary
    /// keeps it: the summary covers the turns before, and a summarized step shows the new
    /// turns after it ([`StepHistory::turns_after_summary`](crate::StepHistory::turns_after_summary)).
    AppendTurn {
        /// The step; `None` for the active step.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        step_id: Option<StepId>,
        /// The turn.
        turn: StepTurn,
    },
    /// Replace a step's turns by a summary in renderings (the turns are kept). The active
    /// step cannot be summarized.
    SummarizeStep {
        /// The step.
        step_id: StepId,
        /// The summary, trimmed, 1 to [`MAX_SUMMARY_CHARS`] characters.
        summary: String,
    },
    /// Show a finished step as `visibility` chooses: condensed, its summary (it must have
    /// one) or its title alone; in full again, as [`ExpandStep`](TaskEvent::ExpandStep). The
    /// active step shows in full while it receives turns.
    ShowStep {
        /// The step.
        step_id: StepId,
        /// How it shows.
        visibility: Visibility,
    },
    /// Show a summarized step in full again (the summary is kept).
    ExpandStep {
        /// The step.
        step_id: StepId,
    },
}

impl TaskEvent {
    /// Append `turn` to the active step.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::tasks::{StepTurn, TaskEvent, TurnRole};
    ///
    /// let event = TaskEvent::append(StepTurn::new(1, TurnRole::User, "hi"));
    /// assert!(matches!(event, TaskEvent::AppendTurn { step_id: None, .. }));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn append(turn: StepTurn) -> Self {
        Self::AppendTurn { step_id: None, turn }
    }
}

/// Trims a summary and checks its length.
pub(crate) fn checked_summary(summary: &str) -> Result<String> {
    let trimmed = summary.trim();
    if trimmed.is_empty() {
        return Err(Error::EmptySummary);
    }
    let len = trimmed.chars().count();
    if len > MAX_SUMMARY_CHARS {
        return Err(Error::SummaryTooLong { len, max: MAX_SUMMARY_CHARS });
    }
    Ok(trimmed.to_owned())
}

// A history is built, as it is changed, through the reducer: its constructor lives here.
impl TaskHistory {
    /// A history for `objective` with empty steps, in plan order.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::tasks::TaskHistory;
    ///
    /// let history = TaskHistory::new("Ship", [(1, "Test"), (2, "Tag")])?;
    /// assert_eq!(history.steps().len(), 2);
    /// assert!(TaskHistory::new("Ship", [(1, "Test"), (1, "Again")]).is_err());
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::DuplicateStep`] when two steps share an id.
    pub fn new<T: Into<String>>(
        objective: impl Into<String>,
        steps: impl IntoIterator<Item = (StepId, T)>,
    ) -> Result<Self> {
        let empty = Self {
            objective: objective.into(),
            active_step_id: None,
            steps: Vec::new(),
            unplanned: Vec::new(),
        };
        let steps = steps.into_iter().map(|(id, title)| StepHistory::new(id, title)).collect();
        empty.apply(&TaskEvent::AddSteps { steps })
    }

    /// The history after `event`; this one is left unchanged.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::tasks::{Error, StepTurn, TaskEvent, TaskHistory, TurnRole};
    ///
    /// let history = TaskHistory::new("Ship", [(1, "Test")])?;
    /// let rejected = history.apply(&TaskEvent::append(StepTurn::new(1, TurnRole::User, "hi")));
    /// assert!(matches!(rejected, Err(Error::NoActiveStep)));
    /// let rejected = history.apply(&TaskEvent::SetActiveStep { step_id: 9 });
    /// assert_eq!(rejected.unwrap_err().to_string(), "step 9 not found; known steps: 1");
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::UnknownStep`] for an event naming a step the history does not have;
    /// [`Error::DuplicateStep`] for a step added twice; [`Error::NoActiveStep`] for a turn
    /// with no step to go to; [`Error::TurnOutOfOrder`] for a turn whose id is not after its
    /// step's last; [`Error::EmptySummary`] and [`Error::SummaryTooLong`] for a bad summary.
    pub fn apply(&self, event: &TaskEvent) -> Result<Self> {
        match event {
            TaskEvent::Seed { history } => {
                history.check()?;
                Ok(history.clone())
            }
            TaskEvent::AddSteps { steps } => {
                let mut next = self.clone();
                for step in steps {
                    if next.steps.iter().any(|existing| existing.step_id == step.step_id) {
                        return Err(Error::DuplicateStep { step_id: step.step_id });
                    }
                    next.steps.push(Arc::new(step.clone()));
                }
                Ok(next)
            }
            TaskEvent::SetActiveStep { step_id } => {
                self.position(*step_id)?;
                Ok(Self { active_step_id: Some(*step_id), ..self.clone() })
            }
            TaskEvent::ClearActiveStep => Ok(Self { active_step_id: None, ..self.clone() }),
            TaskEvent::SetObjective { objective } => {
                Ok(Self { objective: objective.clone(), ..self.clone() })
            }
            TaskEvent::RenameStep { step_id, title } => self.with_step(*step_id, |step| {
                step.step_title.clone_from(title);
                Ok(())
            }),
            TaskEvent::AppendTurn { step_id: None, turn }
                if self.active_step_id.is_none() && self.steps.is_empty() =>
            {
                // No step to hold it yet: kept before the plan, never dropped.
                let next_id = self.next_turn_id();
                if turn.turn_id < next_id {
                    return Err(Error::TurnOutOfOrder {
                        step_id: 0,
                        turn_id: turn.turn_id,
                        last: next_id - 1,
                    });
                }
                let mut next = self.clone();
                next.unplanned.push(turn.clone());
                Ok(next)
            }
            TaskEvent::AppendTurn { step_id, turn } => {
                let step_id = step_id.or(self.active_step_id).ok_or(Error::NoActiveStep)?;
                self.with_step(step_id, |step| {
                    if let Some(last) =
                        step.turns.last().filter(|last| last.turn_id >= turn.turn_id)
                    {
                        return Err(Error::TurnOutOfOrder {
                            step_id,
                            turn_id: turn.turn_id,
                            last: last.turn_id,
                        });
                    }
                    // The summary covers the turns before this one: it is kept, and the new
                    // turns show after it.
                    // (A task tool's exchange manages the context: the summary covers it.)
                    if step.summary.is_some()
                        && step.summarized_turns.is_none()
                        && !turn.is_task_tool()
                    {
                        step.summarized_turns = Some(step.turns.len());
                    }
                    step.turns.push(turn.clone());
                    Ok(())
                })
            }
            TaskEvent::SummarizeStep { step_id, summary } => {
                if self.active_step_id == Some(*step_id) {
                    self.position(*step_id)?;
                    return Err(Error::ActiveStep { step_id: *step_id });
                }
                let summary = checked_summary(summary)?;
                self.with_step(*step_id, |step| {
                    step.summary = Some(summary);
                    step.summarized_turns = None;
                    step.visibility = Visibility::Summary;
                    Ok(())
                })
            }
            TaskEvent::ExpandStep { step_id } => self.with_step(*step_id, |step| {
                // A summary-visibility step without a summary shows in full already.
                let full = step.visibility == Visibility::Full
                    || (step.visibility == Visibility::Summary && step.summary.is_none());
                if full {
                    return Err(Error::NotSummarized { step_id: *step_id });
                }
                step.visibility = Visibility::Full;
                Ok(())
            }),
            TaskEvent::ShowStep { step_id, visibility } => {
                if self.active_step_id == Some(*step_id) && *visibility != Visibility::Full {
                    self.position(*step_id)?;
                    return Err(Error::ActiveStepShown { step_id: *step_id });
                }
                self.with_step(*step_id, |step| {
                    if *visibility == Visibility::Summary && step.summary.is_none() {
                        return Err(Error::NoSummary { step_id: *step_id });
                    }
                    step.visibility = *visibility;
                    Ok(())
                })
            }
        }
    }

    /// The rules a history read from elsewhere must keep, the ones the reducer keeps: unique
    /// step ids, turn ids increasing within each step, summaries the reducer would accept
    /// (trimmed, 1 to [`MAX_SUMMARY_CHARS`] characters), and an active step that exists.
    pub(crate) fn check(&self) -> Result<()> {
        let mut seen = std::collections::HashSet::with_capacity(self.steps.len());
        if let Some(step) = self.steps.iter().find(|step| !seen.insert(step.step_id)) {
            return Err(Error::DuplicateStep { step_id: step.step_id });
        }
        for step in &self.steps {
            for pair in step.turns.windows(2) {
                if pair[1].turn_id <= pair[0].turn_id {
                    return Err(Error::TurnOutOfOrder {
                        step_id: step.step_id,
                        turn_id: pair[1].turn_id,
                        last: pair[0].turn_id,
                    });
                }
            }
            if step.summarized_turns.is_some_and(|covered| covered > step.turns.len()) {
                return Err(Error::StoredSummary {
                    step_id: step.step_id,
                    problem: "it covers more turns than the step holds".to_owned(),
                });
            }
            if let Some(summary) = &step.summary {
                match checked_summary(summary) {
                    Ok(trimmed) if trimmed == *summary => {}
                    Ok(_) => {
                        return Err(Error::StoredSummary {
                            step_id: step.step_id,
                            problem: "it has leading or trailing whitespace".to_owned(),
                        });
                    }
                    Err(error) => {
                        return Err(Error::StoredSummary {
                            step_id: step.step_id,
                            problem: error.to_string(),
                        });
                    }
                }
            }
        }
        if let Some(active) = self.active_step_id {
            self.position(active)?;
        }
        Ok(())
    }

    /// A copy with one step changed; the other steps stay shared with `self`.
    fn with_step(
        &self,
        step_id: StepId,
        change: impl FnOnce(&mut StepHistory) -> Result<()>,
    ) -> Result<Self> {
        let index = self.position(step_id)?;
        let mut step = StepHistory::clone(&self.steps[index]);
        change(&mut step)?;
        step.plain = std::sync::OnceLock::new();
        let mut next = self.clone();
        next.steps[index] = Arc::new(step);
        Ok(next)
    }

    /// The index of a step, or [`Error::UnknownStep`].
    pub(crate) fn position(&self, step_id: StepId) -> Result<usize> {
        self.steps
            .iter()
            .position(|step| step.step_id == step_id)
            .ok_or_else(|| self.unknown(step_id))
    }

    /// The error for a step this history does not have, listing the ones it has.
    pub(crate) fn unknown(&self, step_id: StepId) -> Error {
        let known = self.steps.iter().map(|step| step.step_id.to_string()).collect::<Vec<_>>();
        Error::UnknownStep {
            step_id,
            known: if known.is_empty() { "none".to_owned() } else { known.join(", ") },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::TurnRole;

    fn history() -> TaskHistory {
        TaskHistory::new("Ship", [(1, "Test"), (2, "Tag")]).unwrap()
    }

    #[test]
    fn every_event_applies_and_leaves_the_old_version_alone() {
        let start = history();
        let active = start.apply(&TaskEvent::SetActiveStep { step_id: 1 }).unwrap();
        assert_eq!(active.active_step_id(), Some(1));
        let appended =
            active.apply(&TaskEvent::append(StepTurn::new(1, TurnRole::User, "go"))).unwrap();
        let explicit = appended
            .apply(&TaskEvent::AppendTurn {
                step_id: Some(2),
                turn: StepTurn::new(2, TurnRole::Assistant, "tagging"),
            })
            .unwrap();
        assert_eq!(explicit.step(1).unwrap().turns().len(), 1);
        assert_eq!(explicit.step(2).unwrap().turns().len(), 1);
        assert!(active.step(1).unwrap().turns().is_empty(), "the old version is unchanged");

        let summarized = explicit
            .apply(&TaskEvent::SummarizeStep { step_id: 2, summary: "  done  ".into() })
            .unwrap();
        assert_eq!(summarized.step(2).unwrap().summary(), Some("done"));
        assert_eq!(summarized.step(2).unwrap().visibility(), Visibility::Summary);
        let expanded = summarized.apply(&TaskEvent::ExpandStep { step_id: 2 }).unwrap();
        assert_eq!(expanded.step(2).unwrap().visibility(), Visibility::Full);
        assert_eq!(expanded.step(2).unwrap().turns(), explicit.step(2).unwrap().turns());
        let renamed = expanded
            .apply(&TaskEvent::RenameStep { step_id: 2, title: "Tag and push".into() })
            .unwrap();
        assert_eq!(renamed.step(2).unwrap().step_title(), "Tag and push");
        let cleared = renamed.apply(&TaskEvent::ClearActiveStep).unwrap();
        assert_eq!(cleared.active_step_id(), None);

        let added = expanded
            .apply(&TaskEvent::AddSteps { steps: vec![StepHistory::new(3, "Announce")] })
            .unwrap();
        assert_eq!(added.steps().map(StepHistory::step_id).collect::<Vec<_>>(), [1, 2, 3]);
        let seeded = added.apply(&TaskEvent::Seed { history: history() }).unwrap();
        assert_eq!(seeded, history());
    }

    #[test]
    fn rejected_events_name_the_problem() {
        let start = history().apply(&TaskEvent::SetActiveStep { step_id: 1 }).unwrap();
        let with_turn =
            start.apply(&TaskEvent::append(StepTurn::new(5, TurnRole::User, "go"))).unwrap();
        let cases: Vec<(TaskEvent, &str)> = vec![
            (TaskEvent::SetActiveStep { step_id: 7 }, "step 7 not found; known steps: 1, 2"),
            (
                TaskEvent::AppendTurn {
                    step_id: Some(7),
                    turn: StepTurn::new(9, TurnRole::User, "x"),
                },
                "step 7 not found; known steps: 1, 2",
            ),
            (
                TaskEvent::append(StepTurn::new(5, TurnRole::User, "again")),
                "turn 5 is out of order in step 1, whose last turn is 5",
            ),
            (
                TaskEvent::SummarizeStep { step_id: 2, summary: " \n ".into() },
                "summary must not be empty",
            ),
            (
                TaskEvent::SummarizeStep { step_id: 2, summary: "x".repeat(1_001) },
                "summary must be at most 1000 characters (got 1001)",
            ),
            (
                TaskEvent::SummarizeStep { step_id: 1, summary: "ok".into() },
                "step 1 is the active step and cannot be summarized while it receives turns; \
                 summarize a completed step, or finish this one first",
            ),
            (
                TaskEvent::ExpandStep { step_id: 2 },
                "step 2 is not summarized: its turns already show in full",
            ),
            (
                TaskEvent::RenameStep { step_id: 7, title: "x".into() },
                "step 7 not found; known steps: 1, 2",
            ),
            (
                TaskEvent::SummarizeStep { step_id: 3, summary: "ok".into() },
                "step 3 not found; known steps: 1, 2",
            ),
            (TaskEvent::ExpandStep { step_id: 3 }, "step 3 not found; known steps: 1, 2"),
            (
                TaskEvent::AddSteps { steps: vec![StepHistory::new(2, "again")] },
                "step 2 already exists",
            ),
        ];
        for (event, message) in cases {
            assert_eq!(with_turn.apply(&event).unwrap_err().to_string(), message, "{event:?}");
        }
        assert!(matches!(
            history().apply(&TaskEvent::append(StepTurn::new(1, TurnRole::User, "x"))),
            Err(Error::NoActiveStep)
        ));
        let mut bad_seed = history();
        bad_seed.active_step_id = Some(9);
        assert!(matches!(
            history().apply(&TaskEvent::Seed { history: bad_seed }),
            Err(Error::UnknownStep { step_id: 9, .. })
        ));
    }
}
