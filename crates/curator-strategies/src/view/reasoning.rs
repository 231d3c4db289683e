//! The Responses API's rule for reasoning items, applied to a view: a reasoning item and the
//! item it produced are sent together or not at all.

use std::collections::BTreeSet;

use curator_model::formats::responses::is_reasoning;
use curator_model::{Message, Role};

use super::{MessageRef, View, ViewEntry};

impl<'h> View<'h> {
    /// The view's entries as the Responses API takes them: each reasoning item that
    /// curation left out right before a kept message is put back before it (the API refuses
    /// an item without the reasoning item that produced it; a reasoning item and the calls
    /// after it are one message already), and each reasoning item whose calls the view left
    /// out (still pending at the end, or closed by a user or system message before their
    /// results came) is left out, unless an item on the assistant's side still follows it
    /// (the API refuses a reasoning item without its following item). For other formats the
    /// entries are the view's. Costs O(view + reasoning items put back).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::formats::responses;
    /// use curator::strategies::{CurationContext, History, HistoryManagerExt, SlidingWindow};
    /// use serde_json::json;
    ///
    /// let history = History::from(responses::to_messages(&[
    ///     json!({"type": "message", "role": "user", "content": "hi"}),
    ///     json!({"type": "reasoning", "id": "rs_1", "summary": []}),
    ///     json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hello"}]}),
    /// ])?);
    /// // A window of one keeps the answer, and leaves its reasoning item out ...
    /// let view = SlidingWindow::new(1).curate_history(&history, &CurationContext::default())?;
    /// assert_eq!(view.iter().map(|e| e.pos).collect::<Vec<_>>(), [Some(0), Some(2)]);
    /// // ... which the Responses API needs before it.
    /// let sent: Vec<_> = view.responses_entries().iter().map(|e| e.pos).collect();
    /// assert_eq!(sent, [Some(0), Some(1), Some(2)]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn responses_entries(&self) -> Vec<ViewEntry<'h>> {
        without_stranded_reasoning(self, with_reasoning(self))
    }
}

/// The view's entries, each reasoning item right before a kept message that curation left
/// out put back before it.
fn with_reasoning<'h>(view: &View<'h>) -> Vec<ViewEntry<'h>> {
    let history = view.history();
    let kept: Vec<ViewEntry<'h>> = view.iter().collect();
    let positions: BTreeSet<usize> = kept.iter().filter_map(|e| e.pos).collect();
    let mut out = Vec::with_capacity(kept.len());
    for entry in kept {
        if let Some(pos) = entry.pos {
            let mut missing = Vec::new();
            let mut before = pos;
            while let Some(prev) = before.checked_sub(1) {
                let Some(m) = history.get(prev) else { break };
                if positions.contains(&prev) || !is_reasoning(m) {
                    break;
                }
                missing.push(prev);
                before = prev;
            }
            for prev in missing.into_iter().rev() {
                if let Some(m) = history.get(prev) {
                    out.push(ViewEntry { pos: Some(prev), message: MessageRef::Borrowed(m) });
                }
            }
        }
        out.push(entry);
    }
    out
}

/// `entries` without each reasoning item whose calls the view left out, unless an item on
/// the assistant's side still follows it.
fn without_stranded_reasoning<'h>(
    view: &View<'h>,
    entries: Vec<ViewEntry<'h>>,
) -> Vec<ViewEntry<'h>> {
    let history = view.history();
    let stranded: Vec<bool> = (0..entries.len())
        .map(|index| {
            let entry = &entries[index];
            let message: &Message = &entry.message;
            is_reasoning(message)
                && !message.has_tool_calls()
                && entry.pos.and_then(|pos| history.get(pos)).is_some_and(Message::has_tool_calls)
                && !entries.get(index + 1).is_some_and(|next| {
                    next.message.role() == Role::Assistant && !is_reasoning(&next.message)
                })
        })
        .collect();
    if !stranded.contains(&true) {
        return entries;
    }
    entries.into_iter().zip(stranded).filter(|(_, stranded)| !stranded).map(|(e, _)| e).collect()
}
