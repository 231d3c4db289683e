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

use curator_model::{Content, Message, Role};

use crate::View;
use crate::view::{Item, Slot, push_item};

/// Applies the coherence rules to a view. O(view), with no allocation per message.
pub(crate) fn repair(view: View<'_>) -> View<'_> {
    let slots: Vec<Slot> = view.slots().collect();
    // Tool slots to drop, and assistant slots that keep only some calls (with the flags of
    // the calls that were answered), both in slot order.
    let mut dropped: Vec<usize> = Vec::new();
    let mut trimmed: Vec<(usize, Vec<bool>)> = Vec::new();
    // The latest assistant message with calls: its slot, which calls were answered, and the
    // calls still open as (id, call index). A non-tool message closes them all (rule 3), so
    // only this one message's calls can be open.
    let mut current: Option<usize> = None;
    let mut answered: Vec<bool> = Vec::new();
    let mut open: Vec<(&str, usize)> = Vec::new();
    let mut close = |current: &mut Option<usize>, answered: &[bool]| {
        if let Some(k) = current.take()
            && answered.iter().any(|a| !a)
        {
            trimmed.push((k, answered.to_vec()));
        }
    };
    for (k, &slot) in slots.iter().enumerate() {
        let message = view.structure(slot);
        if message.role() == Role::Tool {
            let id = message.tool_call_id().unwrap_or_default();
            match open.iter().rposition(|(open_id, _)| *open_id == id) {
                Some(i) => {
                    let (_, index) = open.remove(i);
                    answered[index] = true;
                }
                None => dropped.push(k),
            }
            continue;
        }
        close(&mut current, &answered);
        open.clear();
        if message.role() == Role::Assistant && message.has_tool_calls() {
            current = Some(k);
            answered.clear();
            answered.resize(message.tool_calls().len(), false);
            open.extend(message.tool_calls().iter().enumerate().map(|(i, c)| (c.id(), i)));
        }
    }
    close(&mut current, &answered);
    if dropped.is_empty() && trimmed.is_empty() {
        return view;
    }
    let mut items: Vec<Item> = Vec::with_capacity(view.items().len() + trimmed.len());
    let (mut d, mut t) = (dropped.iter().peekable(), trimmed.iter().peekable());
    for (k, &slot) in slots.iter().enumerate() {
        if d.next_if(|&&dk| dk == k).is_some() {
            continue;
        }
        if let Some((_, flags)) = t.next_if(|(tk, _)| *tk == k) {
            let mut index = 0;
            let kept = Message::clone(&view.message(slot)).retain_tool_calls(|_| {
                index += 1;
                flags[index - 1]
            });
            if kept.has_tool_calls() || !kept.content().is_none_or(Content::is_empty) {
                items.push(view.owned_item(slot, kept));
            }
            continue;
        }
        push_item(&mut items, view.slot_item(slot));
    }
    view.with_items(items)
}
