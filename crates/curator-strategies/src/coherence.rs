//! Coherence: tool calls and their results stay together.
//!
//! Messages form *units*: an assistant message that calls tools, together with every tool
//! message that answers one of its calls, is one unit; every other message is a unit of its
//! own. Strategies keep or drop whole units. After a strategy has chosen what to keep, these
//! rules make the view one that providers accept:
//!
//! 1. A tool message whose call is not in the view (or was already answered) is dropped.
//! 2. A tool message answers the most recent still-open call with its id (real transcripts
//!    reuse ids after a call was answered).
//! 3. A non-tool message closes every open call: results after it no longer count.
//! 4. An assistant tool call whose answer is not in the view is removed from its message, and
//!    the message is dropped when nothing is left (no call and no content).
//!
//! Rule 4 also removes calls still pending at the end of the view: a provider rejects a
//! request whose last assistant message has unanswered calls. The record keeps them.
//!
//! Repair reads only structure (roles, call ids), which maps never change, so it never
//! runs a transformation; it costs O(view), and trimming strategies run it on what they
//! keep, not on the whole history.
//!
//! # Examples
//!
//! ```
//! use curator_model::{Message, ToolCall, validate};
//! use curator_strategies::{CurationContext, HistoryManagerExt, SlidingWindow};
//!
//! let messages = vec![
//!     Message::tool_result("lost", "orphan from a cut transcript"),
//!     Message::user("go"),
//!     Message::assistant_with_calls(None, vec![ToolCall::new("a", "ls", "{}"), ToolCall::new("b", "ls", "{}")]),
//!     Message::tool_result("a", "x"),
//! ];
//! let view = SlidingWindow::new(10).curate_messages(&messages, &CurationContext::default())?;
//! // The orphan is gone and the unanswered call `b` was removed from the assistant message.
//! assert_eq!(view.len(), 3);
//! assert_eq!(view[1].tool_calls().len(), 1);
//! validate::openai(&view)?;
//! Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashMap;

use curator_model::Role;

use crate::View;
use crate::view::{Item, Slot, push_item};

/// Applies the coherence rules to a view.
pub(crate) fn repair(view: View<'_>) -> View<'_> {
    let slots: Vec<Slot> = view.slots().collect();
    // For each slot: keep it? For assistant slots: which calls were answered.
    let mut keep = vec![true; slots.len()];
    let mut answered: HashMap<usize, Vec<bool>> = HashMap::new();
    let mut open: HashMap<&str, Vec<(usize, usize)>> = HashMap::new();
    for (k, &slot) in slots.iter().enumerate() {
        let message = view.structure(slot);
        match message.role() {
            Role::Tool => {
                let call =
                    message.tool_call_id().and_then(|id| open.get_mut(id)).and_then(Vec::pop);
                match call {
                    Some((owner, index)) => {
                        if let Some(flags) = answered.get_mut(&owner) {
                            flags[index] = true;
                        }
                    }
                    None => keep[k] = false,
                }
            }
            role => {
                open.clear();
                if role == Role::Assistant && message.has_tool_calls() {
                    answered.insert(k, vec![false; message.tool_calls().len()]);
                    for (index, call) in message.tool_calls().iter().enumerate() {
                        open.entry(call.id()).or_default().push((k, index));
                    }
                }
            }
        }
    }
    if keep.iter().all(|k| *k) && answered.values().all(|flags| flags.iter().all(|a| *a)) {
        return view;
    }
    let mut items: Vec<Item> = Vec::with_capacity(view.items().len());
    for (k, &slot) in slots.iter().enumerate() {
        if !keep[k] {
            continue;
        }
        match answered.get(&k) {
            Some(flags) if !flags.iter().all(|a| *a) => {
                let mut index = 0;
                let trimmed = crate::view::MessageRef::clone(&view.message(slot));
                let trimmed = curator_model::Message::clone(&trimmed).retain_tool_calls(|_| {
                    index += 1;
                    flags[index - 1]
                });
                let empty = trimmed.content().is_none_or(curator_model::Content::is_empty);
                if trimmed.has_tool_calls() || !empty {
                    items.push(view.owned_item(slot, trimmed));
                }
            }
            _ => push_slot_of(&view, &mut items, slot),
        }
    }
    view.with_items(items)
}

fn push_slot_of(view: &View<'_>, out: &mut Vec<Item>, slot: Slot) {
    match &view.items()[slot.item] {
        Item::Run { start, .. } => {
            let p = start + slot.offset;
            push_item(out, Item::Run { start: p, end: p + 1 });
        }
        owned @ Item::Owned { .. } => out.push(owned.clone()),
    }
}
