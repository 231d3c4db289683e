//! The folded-history note: what the units left out held, in one compact user message.

use std::collections::HashSet;
use std::ops::Range;

use curator_model::{Message, Role, ToolCall};
use serde_json::Value;

use crate::budget::share;
use crate::fx::FxBuild;
use crate::{TokenCounter, View};

/// How every folded-history note begins.
pub(crate) const NOTE_START: &str = "[curator left out ";

/// The most tool calls a note lists (they take at most a third of its room).
const MAX_CALLS: usize = 12;

/// The most messages of left-out units a note reads (the newest), which bounds its cost.
pub(super) const MAX_SCANNED: usize = 400;

/// The longest key argument a note quotes for a tool call, in characters.
const MAX_ARGUMENT: usize = 60;

/// The share of the terms' room that goes to the newest left-out units' terms, in order;
/// the rest goes to the terms the conversation came back to most often. Over
/// `../shared/corpus` at 4,000 tokens, half and half keeps more evidence than either order
/// alone (see `docs/benchmarks.md`).
const NEWEST_TERMS_SHARE: f64 = 0.5;

/// The note for the units at `dropped` (view index ranges, newest first), given what the
/// view keeps (`kept`): the tool calls the dropped units made and the distinctive terms they
/// held that the kept messages do not, as many as fit `room` tokens. The calls come newest
/// first; the terms of the newest dropped units in order take up to
/// [`NEWEST_TERMS_SHARE`] of the terms' room, then the others most returned to first.
/// `None` when nothing was dropped or not even the note's opening fits.
pub(super) fn note(
    view: &View<'_>,
    dropped: &[Range<usize>],
    kept: &[Range<usize>],
    room: u64,
    counter: &dyn TokenCounter,
) -> Option<Message> {
    let count: usize = dropped.iter().map(ExactSizeIterator::len).sum();
    if count == 0 {
        return None;
    }
    let index = view.history().term_index();
    let mut shown: HashSet<u32, FxBuild> = kept
        .iter()
        .flat_map(Clone::clone)
        .filter_map(|i| view.pos(i))
        .flat_map(|pos| index.terms_at(pos).iter().copied())
        .collect();
    let opening = format!(
        "{NOTE_START}{count} earlier message{} to fit the context; ask for what you need again.",
        if count == 1 { "" } else { "s" }
    );
    let mut used = counter.count_message(&Message::user(format!("{opening}]")));
    if used > room {
        return None;
    }
    let mut calls: Vec<String> = Vec::new();
    let mut terms: Vec<String> = Vec::new();
    let mut seen_calls: HashSet<String, FxBuild> = HashSet::default();
    let mut candidates: Vec<u32> = Vec::new();
    for range in dropped {
        for i in range.clone().rev() {
            let Some(pos) = view.pos(i) else { continue };
            let structure = view.structure(i);
            if structure.role() == Role::Assistant && calls.len() < MAX_CALLS {
                for call in structure.tool_calls() {
                    let label = call_label(call);
                    if seen_calls.contains(&label) {
                        continue;
                    }
                    let cost = counter.count_text(&label) + 1;
                    if used + cost > room / 3 {
                        continue;
                    }
                    used += cost;
                    seen_calls.insert(label.clone());
                    calls.push(label);
                }
            }
            for &id in index.terms_at(pos) {
                if shown.insert(id) {
                    candidates.push(id);
                }
            }
        }
    }
    // The newest left-out units' terms in order (what the agent was just looking at), up to
    // their share of the room; then those the conversation came back to most often (newest
    // first on ties).
    let newest_room = used + share(NEWEST_TERMS_SHARE, room.saturating_sub(used));
    let mut newest = 0;
    for &id in &candidates {
        let term = quoted(index.text(id));
        let cost = counter.count_text(&term) + 1;
        if used + cost > newest_room {
            break;
        }
        used += cost;
        newest += 1;
        terms.push(term);
    }
    let mut rest = candidates.split_off(newest);
    rest.sort_by_cached_key(|&id| std::cmp::Reverse(index.postings(id).len()));
    for id in rest {
        let term = quoted(index.text(id));
        let cost = counter.count_text(&term) + 1;
        if used + cost > room {
            break;
        }
        used += cost;
        terms.push(term);
    }
    drop(index);
    let message = loop {
        let message = Message::user(text(&opening, &calls, &terms));
        if counter.count_message(&message) <= room || (calls.is_empty() && terms.is_empty()) {
            break message;
        }
        // Estimates per item can undercount the joined text by a token or two.
        if terms.pop().is_none() {
            calls.pop();
        }
    };
    (counter.count_message(&message) <= room).then_some(message)
}

fn text(opening: &str, calls: &[String], terms: &[String]) -> String {
    let mut text = opening.to_owned();
    if !calls.is_empty() {
        text.push_str(" Tool calls: ");
        text.push_str(&calls.join(", "));
        text.push('.');
    }
    if !terms.is_empty() {
        text.push_str(" They mentioned: ");
        text.push_str(&terms.join(", "));
        text.push('.');
    }
    text.push(']');
    text
}

/// A term as the note writes it: quoted when it holds spaces or list punctuation, so that
/// it reads back as one term.
fn quoted(term: &str) -> String {
    if term.contains(|c: char| c.is_whitespace() || c == ',' || c == ';') {
        if term.contains('"') { format!("`{term}`") } else { format!("\"{term}\"") }
    } else {
        term.to_owned()
    }
}

/// A value in quotes, so that it reads back as one term.
fn quoted_always(value: &str) -> String {
    if value.contains('"') { format!("`{value}`") } else { format!("\"{value}\"") }
}

/// `name(key argument)`: the call's name and its first short string argument.
fn call_label(call: &ToolCall) -> String {
    let key = call.arguments_json().ok().and_then(|value| match value {
        Value::Object(map) => map.into_iter().find_map(|(_, v)| match v {
            Value::String(s) if !s.trim().is_empty() => Some(s),
            _ => None,
        }),
        _ => None,
    });
    match key {
        Some(key) => {
            let key = key.lines().next().unwrap_or_default();
            let short: String = key.chars().take(MAX_ARGUMENT).collect();
            let more = if short.len() < key.len() { "…" } else { "" };
            format!("{}({})", call.name(), quoted_always(&format!("{short}{more}")))
        }
        None => format!("{}()", call.name()),
    }
}

/// Whether `message` is a folded-history note.
pub(crate) fn is_note(message: &Message) -> bool {
    message.role() == Role::User && message.text().starts_with(NOTE_START)
}
