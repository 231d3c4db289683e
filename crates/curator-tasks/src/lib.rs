//! Task history: an agent's conversation organised by the steps of its plan, with tools that
//! let the model summarize and expand steps itself.
//!
//! This crate sits on `curator-model`, `curator-strategies` (token counting and
//! summarizers) and `curator-session` (persistence through checkpoints). The guide is
//! `docs/task-history.md`.
//!
//! - [`TaskHistory`], [`StepHistory`], [`StepTurn`]: immutable values, changed only by
//!   [`TaskEvent`]s through [`TaskHistory::apply`].
//! - [`HistorySection`]: Markdown or text, the active step last, with [`Visibility`] levels
//!   and a [`StepVisibilityResolver`].
//! - The model's tools: [`ToolDefinition`], [`summarize_step`], [`expand_step`], [`show_step`],
//!   [`context_pressure`].
//! - [`sync_plan`] (a [`Plan`] to events), [`check_and_compact`] (a [`Budget`]), [`save`] and
//!   [`load`].
//!
//! # Examples
//!
//! ```
//! use curator::tasks::{StepTurn, TaskEvent, TaskHistory, TurnRole};
//!
//! let history = TaskHistory::new("Ship the release", [(1, "Run the tests"), (2, "Tag")])?
//!     .apply(&TaskEvent::SetActiveStep { step_id: 1 })?
//!     .apply(&TaskEvent::append(StepTurn::new(1, TurnRole::Assistant, "All 212 tests pass.")))?;
//! assert_eq!(history.step(1).map(|step| step.turns().len()), Some(1));
//! Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod compact;
mod conversation;
mod error;
mod escape;
mod event;
mod exchange;
mod history;
mod names;
mod persist;
mod plan;
mod render;
mod tools;

pub use compact::{
    Budget, DEFAULT_COMPACTION_THRESHOLD, check_and_compact, essentials, step_messages,
};
pub use conversation::{DEFAULT_WINDOW, TaskConversation, TaskOutcome};
pub use error::{Error, Result};
pub use event::{MAX_SUMMARY_CHARS, TaskEvent};
pub use history::{StepHistory, StepId, StepTurn, TaskHistory, TurnRole, Visibility};
pub use persist::{TASK_HISTORY_CHECKPOINT, load, save};
pub use plan::{Plan, PlanStep, PlanSync, StepStatus, sync_plan};
pub use render::{CONDENSED_TURNS, HistorySection, StepVisibilityResolver};
pub use tools::{
    CONSIDER_SUMMARIZING_AT, ContextPressure, Expansion, Recommendation, Showing, Summarized,
    ToolDefinition, URGENT_AT, context_pressure, expand_step, show_step, summarize_step,
};
