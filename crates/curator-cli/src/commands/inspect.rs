//! `curator inspect`: the evaluations a session file holds.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use curator::model::{Message, pending_tool_calls};
use curator::session::{SessionKey, SessionStore};

use crate::session_file;

/// Evaluations (all, or those of one session key) with their key, message counts, turns,
/// first and last time, pending tool calls.
pub(crate) fn run(path: &Path, key: Option<&str>) -> Result<String> {
    let store = session_file::open_read_only(path)?;
    let evaluations = match key {
        Some(key) => store.evaluations_of(&SessionKey::new(key))?,
        None => store.evaluations()?,
    };
    let mut out = String::new();
    let scope = key.map(|k| format!(" of session `{k}`")).unwrap_or_default();
    let _ = writeln!(out, "{}: {} evaluations{scope}", path.display(), evaluations.len());
    let _ = writeln!(
        out,
        "{:<36}  {:<20} {:<28} {:>8} {:>6}  {:<20}  {:<20}  pending tool calls",
        "evaluation", "key", "prompt", "messages", "turns", "first", "last"
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
            "{:<36}  {:<20} {:<28} {:>8} {:>6}  {:<20}  {:<20}  {}",
            e.evaluation_id,
            e.key,
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
