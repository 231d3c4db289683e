//! `curator inspect`: the evaluations a session file holds, and its loop sessions (those
//! of `curator chat` among them).

use std::fmt::Write as _;
use std::ops::ControlFlow;
use std::path::Path;

use anyhow::Result;
use curator::client::Usage;
use curator::conversation_loop::{SavedLoop, saved_loops};
use curator::model::{EvaluationId, Message, Role, pending_tool_calls};
use curator::session::{SessionKey, SessionStore, recorded_usage};
use curator::strategies::Redactor;
use curator::strategies::bill::Prices;

use crate::billed;
use crate::output::plural;
use crate::session_file;

/// The most characters of a session key a row shows (a longer one is cut with its length).
const KEY_CHARS: usize = 80;

/// Evaluations (all, or those of one session key) with their key, message counts, turns,
/// first and last time, pending tool calls, and the usage recorded for their model calls
/// (priced at `prices`, when given); the columns are as wide as their longest value.
pub(crate) fn run(
    path: &Path,
    key: Option<&str>,
    prices: Option<&Prices>,
    redactor: Option<&Redactor>,
) -> Result<String> {
    // Keys and prompt names are shown redacted (unless no redactor is given): a token a
    // caller put in a key is no more printed than in `curator trace`.
    let shown = |text: String| match redactor {
        Some(redactor) => redactor.redact(&text).into_owned(),
        None => text,
    };
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
        "model calls".to_owned(),
    ]];
    for e in &evaluations {
        let pending = pending_calls(&*store, e.evaluation_id, PAGE)?;
        rows.push([
            e.evaluation_id.to_string(),
            shown(e.key.shortened(KEY_CHARS)),
            e.prompt.as_ref().map_or_else(|| "-".to_owned(), |p| shown(visible(&p.to_string()))),
            e.messages.to_string(),
            e.turns.to_string(),
            e.first_at.format("%Y-%m-%d %H:%M:%S").to_string(),
            e.last_at.format("%Y-%m-%d %H:%M:%S").to_string(),
            if pending.is_empty() { "none".to_owned() } else { pending.join(", ") },
            billed_calls(&*store, e.evaluation_id, prices)?,
        ]);
    }
    let mut out = String::new();
    let scope = key
        .map(|k| format!(" of session `{}`", SessionKey::new(k).shortened(KEY_CHARS)))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "{}: {}{scope}",
        session_file::name(path),
        plural(evaluations.len(), "evaluation", "evaluations")
    );
    table(&mut out, &rows);
    let loops: Vec<SavedLoop> =
        saved_loops(&*store)?.into_iter().filter(|l| key.is_none_or(|k| l.key == k)).collect();
    if !loops.is_empty() {
        let _ = writeln!(out, "\n{}{scope}", plural(loops.len(), "loop session", "loop sessions"));
        let mut rows = vec![[
            "key".to_owned(),
            "loop".to_owned(),
            "turns".to_owned(),
            "iterations".to_owned(),
            "last saved".to_owned(),
            "state".to_owned(),
        ]];
        for l in &loops {
            let state = match (&l.state.paused, l.state.running) {
                (Some(p), _) => format!("waiting at step `{}`", visible(&p.step_name)),
                (None, true) => "under way (continued by the next run)".to_owned(),
                (None, false) => "finished".to_owned(),
            };
            rows.push([
                shown(SessionKey::new(l.key.as_str()).shortened(KEY_CHARS)),
                visible(&l.name),
                l.state.turns.len().to_string(),
                l.state.iteration.to_string(),
                l.saved_at.format("%Y-%m-%d %H:%M:%S").to_string(),
                state,
            ]);
        }
        table(&mut out, &rows);
    }
    Ok(out)
}

/// How many entries a page holds while an evaluation is read.
const PAGE: usize = 2_000;

/// The calls still waiting for a result at the end of an evaluation, named for the table;
/// read a page at a time. Only the messages since the last one that closes every open call
/// (a user or system message, an assistant message after anything but an assistant message:
/// see `curator::model::pairing`) are kept, so memory holds a page and that tail.
fn pending_calls(
    store: &dyn SessionStore,
    evaluation: EvaluationId,
    page: usize,
) -> Result<Vec<String>> {
    let mut tail: Vec<Message> = Vec::new();
    store.entries_in_pages(evaluation, page, &mut |entries| {
        for entry in entries {
            let message = entry.message;
            let closes = match message.role() {
                Role::User | Role::System => true,
                Role::Assistant => tail.last().is_none_or(|m| m.role() != Role::Assistant),
                Role::Tool => false,
            };
            if closes {
                tail.clear();
            }
            tail.push(message);
        }
        ControlFlow::Continue(())
    })?;
    Ok(pending_tool_calls(&tail)
        .iter()
        .map(|c| visible(&format!("{} ({})", c.id(), c.name())))
        .collect())
}

/// The usage recorded for an evaluation's model calls, in one line ("-" when none was).
fn billed_calls(
    store: &dyn SessionStore,
    evaluation: EvaluationId,
    prices: Option<&Prices>,
) -> Result<String> {
    let calls = recorded_usage(store, evaluation)?;
    if calls.is_empty() {
        return Ok("-".to_owned());
    }
    let total: Usage = calls.iter().map(|call| call.usage).sum();
    Ok(billed::usage_line(calls.len(), &total, prices))
}

/// Writes `rows` as a table whose columns are as wide as their longest value: counts
/// (columns whose cells are all numbers) aligned right, text left, the last column not
/// padded.
fn table<const N: usize>(out: &mut String, rows: &[[String; N]]) {
    let mut widths = [0; N];
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let numeric: Vec<bool> = (0..N)
        .map(|i| {
            rows.len() > 1 && rows[1..].iter().all(|r| r[i].bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    for row in rows {
        let mut line = String::new();
        for (i, (cell, width)) in row.iter().zip(widths).enumerate() {
            let pad = width - cell.chars().count();
            if i + 1 == N {
                line.push_str(cell);
            } else if numeric[i] {
                let _ = write!(line, "{}{cell}  ", " ".repeat(pad));
            } else {
                let _ = write!(line, "{cell}{}  ", " ".repeat(pad));
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
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

#[cfg(test)]
mod tests {
    use curator::model::{Entry, ToolCall};
    use curator::session::MemoryStore;

    use super::*;

    fn calls(ids: &[&str]) -> Message {
        Message::assistant_with_calls(
            None,
            ids.iter().map(|id| ToolCall::new(*id, "f", "{}")).collect(),
        )
    }

    /// Read in pages of any size, the pending calls are those of the whole record.
    #[test]
    fn pending_calls_read_in_pages_are_those_of_the_whole_record() {
        let records: Vec<Vec<Message>> = vec![
            vec![Message::user("go"), calls(&["a", "b"]), Message::tool_result("a", "x")],
            vec![Message::user("go"), calls(&["a"]), calls(&["b"]), Message::tool_result("b", "y")],
            vec![calls(&["a"]), Message::user("stop"), Message::tool_result("a", "late")],
            vec![calls(&["a"]), Message::tool_result("a", "x"), Message::assistant("done")],
            vec![
                Message::user("go"),
                calls(&["a"]),
                Message::tool_result("a", "x"),
                calls(&["a", "c"]),
                Message::tool_result("c", "z"),
            ],
        ];
        for record in records {
            let store = MemoryStore::new();
            let evaluation = EvaluationId::new();
            let all: Vec<Message> = std::iter::once(Message::system("s")).chain(record).collect();
            for (sequence, m) in (0_u64..).zip(&all) {
                let entry = Entry::builder(evaluation, m.clone())
                    .sequence(sequence)
                    .turn(1)
                    .build()
                    .unwrap();
                store.append(&SessionKey::new("k"), &entry).unwrap();
            }
            let whole: Vec<String> = pending_tool_calls(&all)
                .iter()
                .map(|c| visible(&format!("{} ({})", c.id(), c.name())))
                .collect();
            for page in [1, 2, 3, 100] {
                assert_eq!(
                    pending_calls(&store, evaluation, page).unwrap(),
                    whole,
                    "{all:?}, pages of {page}"
                );
            }
        }
    }
}
