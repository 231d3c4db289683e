//! A small plan model, and the events that keep a task history in step with it.

use serde::{Deserialize, Serialize};

use crate::event::TaskEvent;
use crate::history::{StepHistory, StepId, TaskHistory};

/// Where a plan step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Not started.
    #[default]
    Pending,
    /// Being worked on: the step that receives turns.
    InProgress,
    /// Finished.
    Done,
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    /// The step's id.
    pub step_id: StepId,
    /// Its title.
    pub title: String,
    /// Where it stands.
    #[serde(default)]
    pub status: StepStatus,
}

/// A plan: an objective and its steps, as planning tools keep it.
///
/// # Examples
///
/// ```
/// use curator::tasks::{Plan, StepStatus};
///
/// let plan = Plan::new("Ship", [(1, "Test"), (2, "Tag")]).with_status(1, StepStatus::InProgress);
/// assert_eq!(plan.steps[0].status, StepStatus::InProgress);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// What the plan is for.
    pub objective: String,
    /// The steps, in order.
    pub steps: Vec<PlanStep>,
}

impl Plan {
    /// A plan with every step pending.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::tasks::{Plan, StepStatus};
    ///
    /// assert_eq!(Plan::new("Ship", [(1, "Test")]).steps[0].status, StepStatus::Pending);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new<T: Into<String>>(
        objective: impl Into<String>,
        steps: impl IntoIterator<Item = (StepId, T)>,
    ) -> Self {
        Self {
            objective: objective.into(),
            steps: steps
                .into_iter()
                .map(|(step_id, title)| PlanStep {
                    step_id,
                    title: title.into(),
                    status: StepStatus::Pending,
                })
                .collect(),
        }
    }

    /// The same plan with one step's status changed (no change for an unknown step).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::tasks::{Plan, StepStatus};
    ///
    /// let plan = Plan::new("Ship", [(1, "Test")]).with_status(1, StepStatus::Done);
    /// assert_eq!(plan.steps[0].status, StepStatus::Done);
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn with_status(mut self, step_id: StepId, status: StepStatus) -> Self {
        if let Some(step) = self.steps.iter_mut().find(|step| step.step_id == step_id) {
            step.status = status;
        }
        self
    }
}

/// What a plan change means for the history.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PlanSync {
    /// The events to apply, in order.
    pub events: Vec<TaskEvent>,
    /// Steps the plan marks done whose history is still shown in full: candidates for the
    /// compaction policy ([`check_and_compact`](crate::check_and_compact)) or a summarize prompt.
    pub completed: Vec<StepId>,
}

/// The events that bring `history` in line with `plan`:
///
/// - a `Seed` when there is no history yet;
/// - `SetObjective` when the plan's objective changed: the steps and their turns stay (a
///   revised plan is the same task; a new task is a new conversation);
/// - `AddSteps` for steps the history lacks, `RenameStep` for steps whose title changed
///   (steps the plan no longer lists keep their turns);
/// - `SetActiveStep` for the step in progress, or `ClearActiveStep` when no step is in
///   progress and the active one is done or no longer in the plan (every step finished:
///   none receives turns, and the last one can be compacted like the others).
///
/// A plan that lists a step id twice, or marks two steps in progress, is refused: which
/// one is meant cannot be told.
///
/// # Examples
///
/// ```
/// use curator::tasks::{Plan, StepStatus, TaskEvent, sync_plan};
///
/// let plan = Plan::new("Ship", [(1, "Test")]);
/// let first = sync_plan(None, &plan)?;
/// let Some(TaskEvent::Seed { history }) = first.events.first() else { return Err("no seed".into()) };
///
/// let plan = Plan::new("Ship", [(1, "Test"), (2, "Tag")]).with_status(2, StepStatus::InProgress);
/// let mut history = history.clone();
/// for event in sync_plan(Some(&history), &plan)?.events {
///     history = history.apply(&event)?;
/// }
/// assert_eq!(history.active_step_id(), Some(2));
///
/// let plan = plan.with_status(1, StepStatus::Done).with_status(2, StepStatus::Done);
/// assert_eq!(sync_plan(Some(&history), &plan)?.events, [TaskEvent::ClearActiveStep]);
///
/// // A revised objective keeps the steps and what they hold.
/// let revised = Plan::new("Ship v2", [(1, "Test"), (2, "Tag")]);
/// assert_eq!(sync_plan(Some(&history), &revised)?.events[0], TaskEvent::SetObjective { objective: "Ship v2".into() });
/// // Two steps in progress: refused.
/// let both = revised.with_status(1, StepStatus::InProgress).with_status(2, StepStatus::InProgress);
/// assert!(sync_plan(Some(&history), &both).is_err());
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// [`Error::InvalidPlan`](crate::Error::InvalidPlan) for a step id listed twice or two steps
/// in progress.
pub fn sync_plan(history: Option<&TaskHistory>, plan: &Plan) -> crate::Result<PlanSync> {
    let mut sync = PlanSync::default();
    for (i, step) in plan.steps.iter().enumerate() {
        if plan.steps[..i].iter().any(|earlier| earlier.step_id == step.step_id) {
            return Err(crate::Error::InvalidPlan {
                reason: format!("step {} is listed twice", step.step_id),
            });
        }
    }
    let mut in_progress = plan.steps.iter().filter(|step| step.status == StepStatus::InProgress);
    let first_in_progress = in_progress.next();
    if let (Some(a), Some(b)) = (first_in_progress, in_progress.next()) {
        return Err(crate::Error::InvalidPlan {
            reason: format!(
                "steps {} and {} are both in progress: one step at a time receives turns",
                a.step_id, b.step_id
            ),
        });
    }
    let in_progress = first_in_progress.map(|step| step.step_id);
    let Some(history) = history else {
        let mut seeded = TaskHistory {
            objective: plan.objective.clone(),
            active_step_id: None,
            steps: Vec::with_capacity(plan.steps.len()),
            unplanned: Vec::new(),
        };
        for step in &plan.steps {
            if seeded.step(step.step_id).is_none() {
                seeded
                    .steps
                    .push(std::sync::Arc::new(StepHistory::new(step.step_id, step.title.clone())));
            }
        }
        seeded.active_step_id = in_progress;
        sync.events.push(TaskEvent::Seed { history: seeded });
        return Ok(sync);
    };
    if history.objective() != plan.objective {
        sync.events.push(TaskEvent::SetObjective { objective: plan.objective.clone() });
    }
    let mut new_steps: Vec<StepHistory> = Vec::new();
    for step in &plan.steps {
        match history.step(step.step_id) {
            Some(kept) if kept.step_title() != step.title => {
                sync.events.push(TaskEvent::RenameStep {
                    step_id: step.step_id,
                    title: step.title.clone(),
                });
            }
            None if !new_steps.iter().any(|new| new.step_id == step.step_id) => {
                new_steps.push(StepHistory::new(step.step_id, step.title.clone()));
            }
            Some(_) | None => {}
        }
    }
    // A step renamed twice in one plan keeps the last title; one event per step is enough.
    sync.events.dedup_by(|later, earlier| match (later, earlier) {
        (TaskEvent::RenameStep { step_id: a, .. }, TaskEvent::RenameStep { step_id: b, .. }) => {
            a == b
        }
        _ => false,
    });
    if !new_steps.is_empty() {
        sync.events.push(TaskEvent::AddSteps { steps: new_steps });
    }
    let status = |step_id: StepId| {
        plan.steps.iter().find(|step| step.step_id == step_id).map(|step| step.status)
    };
    match (in_progress, history.active_step_id()) {
        (Some(step_id), active) if active != Some(step_id) => {
            sync.events.push(TaskEvent::SetActiveStep { step_id });
        }
        // Done, or removed from the plan: no longer the step receiving turns.
        (None, Some(active)) if matches!(status(active), Some(StepStatus::Done) | None) => {
            sync.events.push(TaskEvent::ClearActiveStep);
        }
        _ => {}
    }
    sync.completed = plan
        .steps
        .iter()
        .filter(|step| step.status == StepStatus::Done)
        .filter(|step| {
            history.step(step.step_id).is_some_and(|kept| {
                kept.visibility() == crate::history::Visibility::Full && !kept.turns().is_empty()
            })
        })
        .map(|step| step.step_id)
        .collect();
    Ok(sync)
}
