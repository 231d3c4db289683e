//! The Responses API's rules for items that go together, applied to a view: a reasoning item
//! and the item it produced are sent together or not at all, and so are a call the caller
//! answers with an item of its own (a computer or custom tool call, …) and its answer.

use std::collections::{BTreeSet, HashMap};

use curator_model::formats::responses::{ItemLink, is_reasoning, item_link};
use curator_model::{Message, Role};

use super::{MessageRef, View, ViewEntry};

impl<'h> View<'h> {
    /// The view's entries as the Responses API takes them: each reasoning item that
    /// curation left out right before a kept message is put back before it (the API refuses
    /// an item without the reasoning item that produced it; a reasoning item and the calls
    /// after it are one message already), and each reasoning item whose calls the view left
    /// out (still pending at the end, or closed by a user or system message before their
    /// results came) is left out, unless an item on the assistant's side still follows it
    /// (the API refuses a reasoning item without its following item). A call that the caller
    /// answers with an item of its own ([`ItemLink`]: a `computer_call`, a
    /// `custom_tool_call`, an MCP approval request, …) and its answer are sent together: when
    /// the view keeps one and the history holds the other, that one is put back beside it
    /// (the API refuses an answer without its call; function calls and their outputs are
    /// kept together by curation itself). For other formats the entries are the view's.
    /// Costs O(view + items put back), and O(history) more when the view holds such a call
    /// or answer.
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
        without_stranded_reasoning(self, with_reasoning(self, with_partners(self)))
    }
}

/// The view's entries, each call or answer ([`ItemLink`]) whose partner the history holds
/// and the view left out with that partner put back beside it: a call before its answer,
/// an answer after its call.
fn with_partners<'h>(view: &View<'h>) -> Vec<ViewEntry<'h>> {
    let kept: Vec<ViewEntry<'h>> = view.iter().collect();
    if !kept.iter().any(|e| e.pos.is_some() && item_link(&e.message).is_some()) {
        return kept;
    }
    let history = view.history();
    let (mut calls, mut answers) = (HashMap::new(), HashMap::new());
    for (pos, message) in history.messages().iter().enumerate() {
        match item_link(message) {
            Some(ItemLink::Call(id)) => calls.entry(id).or_insert(pos),
            Some(ItemLink::Output(id)) => answers.entry(id).or_insert(pos),
            None => continue,
        };
    }
    let mut sent: BTreeSet<usize> = kept.iter().filter_map(|e| e.pos).collect();
    let borrowed = |pos: usize| {
        history.get(pos).map(|m| ViewEntry { pos: Some(pos), message: MessageRef::Borrowed(m) })
    };
    let mut out = Vec::with_capacity(kept.len());
    for entry in kept {
        let link = entry.pos.and_then(|pos| item_link(&entry.message).map(|link| (pos, link)));
        let partner = match link {
            Some((pos, ItemLink::Output(id))) => calls.get(id).filter(|&&call| call < pos),
            Some((pos, ItemLink::Call(id))) => answers.get(id).filter(|&&answer| answer > pos),
            None => None,
        };
        let partner = partner.copied().filter(|p| !sent.contains(p));
        match (link, partner) {
            (Some((_, ItemLink::Output(_))), Some(call)) => {
                sent.insert(call);
                out.extend(borrowed(call));
                out.push(entry);
            }
            (Some((_, ItemLink::Call(_))), Some(answer)) => {
                sent.insert(answer);
                out.push(entry);
                out.extend(borrowed(answer));
            }
            _ => out.push(entry),
        }
    }
    out
}

/// `kept` (the view's entries), each reasoning item right before a kept message that
/// curation left out put back before it.
fn with_reasoning<'h>(view: &View<'h>, kept: Vec<ViewEntry<'h>>) -> Vec<ViewEntry<'h>> {
    let history = view.history();
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
