//! `curator inspect`: the evaluations a session file holds.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use curator::model::{Message, pending_tool_calls};
use curator::session::SessionStore;

use crate::session_file;

/// Evaluations with message counts, turns, first and last time, pending tool calls.
pub(crate) fn run(path: &Path) -> Result<String> {
    let store = session_file::open_read_only(path)?;
    let evaluations = store.evaluations()?;
    let mut out = String::new();
    let _ = writeln!(out, "{}: {} evaluations", path.display(), evaluations.len());
    let _ = writeln!(
        out,
        "{:<36}  {:<28} {:>8} {:>6}  {:<20}  {:<20}  pending tool calls",
        "evaluation", "prompt", "messages", "turns", "first", "last"
    );
    for e in &evaluations {
        let messages: Vec<Message> =
            store.entries(e.evaluation_id)?.into_iter().map(|e| e.message).collect();
        let pending: Vec<String> = pending_tool_calls(&messages)
            .iter()
            .map(|c| format!("{} ({})", c.id(), c.name()))
            .collect();
        let _ = writeln!(
            out,
            "{:<36}  {:<28} {:>8} {:>6}  {:<20}  {:<20}  {}",
            e.evaluation_id,
            e.prompt.as_ref().map_or_else(|| "-".to_owned(), ToString::to_string),
            e.messages,
            e.turns,
            e.first_at.format("%Y-%m-%d %H:%M:%S"),
            e.last_at.format("%Y-%m-%d %H:%M:%S"),
            if pending.is_empty() { "none".to_owned() } else { pending.join(", ") }
        );
    }
    Ok(out)
}
