//! The lens: what each agent step of each iteration was sent, saved with the loop session
//! (`lens = true`), for `curator trace` and [`saved_lens`](crate::saved_lens) to show
//! afterwards.

use curator_model::Message;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::trace::PromptTrace;

/// What one agent step was sent in one iteration, as a loop with `lens = true` saves it:
/// the rendered request after injection, redacted as the loop's traces are.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LensStep {
    /// The iteration (1 for the first).
    pub iteration: u64,
    /// The step's name.
    pub step: String,
    /// Whether the conversation was injected into the request (the step uses the history).
    pub injected: bool,
    /// The messages sent, in order.
    pub messages: Vec<Message>,
}

/// The checkpoint documents of `traces` (the steps of one or more iterations), one per
/// iteration, named under the loop's head `head`.
pub(crate) fn documents(head: &str, traces: &[PromptTrace]) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = Vec::new();
    let mut start = 0;
    while start < traces.len() {
        let iteration = traces[start].iteration;
        let end = traces[start..]
            .iter()
            .position(|t| t.iteration != iteration)
            .map_or(traces.len(), |n| start + n);
        let steps: Vec<Value> = traces[start..end]
            .iter()
            .map(|t| {
                serde_json::json!({
                    "iteration": t.iteration,
                    "step": t.step,
                    "injected": t.injected,
                    "messages": t.messages,
                })
            })
            .collect();
        out.push((format!("{}{iteration}", lens_prefix(head)), Value::Array(steps)));
        start = end;
    }
    out
}

pub(crate) fn lens_prefix(head: &str) -> String {
    format!("{head}/lens/")
}

/// Whether a checkpoint name is an iteration's lens (`…/lens/N`).
pub(crate) fn is_lens(name: &str) -> bool {
    iteration_of(name).is_some()
}

pub(crate) fn iteration_of(name: &str) -> Option<u64> {
    let (_, n) = name.rsplit_once("/lens/")?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    n.parse().ok()
}
