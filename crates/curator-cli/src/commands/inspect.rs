//! `curator inspect`: the evaluations a session file holds.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use curator::model::{Message, pending_tool_calls};
use curator::session::{SessionKey, SessionStore};

use crate::output::plural;
use crate::session_file;

/// Evaluations (all, or those of one session key) with their key, message counts, turns,
/// first and last time, pending tool calls; the columns are as wide as their longest value.
pub(crate) fn run(path: &Path, key: Option<&str>) -> Result<String> {
    let store = session_file::open_read_only(path)?;
    let evaluations = match key {
        Some(key) => store.evaluations_of(&SessionKey::new(key))?,
        None => store.evaluations()?,
    };
    let mut rows = vec![[
        "evaluation".to_owned(),
        "key".to_owned(),
        "prompt".to_owned(),
        "messages".to_owned(),
        "turns".to_owned(),
        "first".to_owned(),
        "last".to_owned(),
        "pending tool calls".to_owned(),
    ]];
    for e in &evaluations {
        let messages: Vec<Message> =
            store.entries(e.evaluation_id)?.into_iter().map(|e| e.message).collect();
        let pending: Vec<String> = pending_tool_calls(&messages)
            .iter()
            .map(|c| visible(&format!("{} ({})", c.id(), c.name())))
            .collect();
        rows.push([
            e.evaluation_id.to_string(),
            visible(e.key.as_str()),
            e.prompt.as_ref().map_or_else(|| "-".to_owned(), |p| visible(&p.to_string())),
            e.messages.to_string(),
            e.turns.to_string(),
            e.first_at.format("%Y-%m-%d %H:%M:%S").to_string(),
            e.last_at.format("%Y-%m-%d %H:%M:%S").to_string(),
            if pending.is_empty() { "none".to_owned() } else { pending.join(", ") },
        ]);
    }
    let mut widths = [0; 8];
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let scope = key.map(|k| format!(" of session `{}`", visible(k))).unwrap_or_default();
    let _ = writeln!(
        out,
        "{}: {}{scope}",
        session_file::name(path),
        plural(evaluations.len(), "evaluation", "evaluations")
    );
    for row in &rows {
        let mut line = String::new();
        for (i, (cell, width)) in row.iter().zip(widths).enumerate() {
            let pad = width - cell.chars().count();
            match i {
                // Counts align right, text left; the last column is not padded.
                3 | 4 => {
                    let _ = write!(line, "{}{cell}  ", " ".repeat(pad));
                }
                7 => line.push_str(cell),
                _ => {
                    let _ = write!(line, "{cell}{}  ", " ".repeat(pad));
                }
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    Ok(out)
}

/// A name as one line of the table: control characters (a newline or a tab in a session
/// key) written as escapes, so that they neither break the row nor hide in it.
fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}
