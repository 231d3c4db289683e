//! The names of the four task tools, which the handlers, the rendering, the reducer and the
//! adapter all recognise.

/// The tool that summarizes a step.
pub(crate) const SUMMARIZE_STEP: &str = "summarize_step";
/// The tool that shows a summarized step in full again.
pub(crate) const EXPAND_STEP: &str = "expand_step";
/// The tool that chooses how a finished step shows.
pub(crate) const SHOW_STEP: &str = "show_step";
/// The tool that measures the context.
pub(crate) const CONTEXT_PRESSURE: &str = "context_pressure";

/// Whether `name` is one of the four task tools.
pub(crate) fn is_task_tool(name: &str) -> bool {
    matches!(name, SUMMARIZE_STEP | EXPAND_STEP | SHOW_STEP | CONTEXT_PRESSURE)
}
