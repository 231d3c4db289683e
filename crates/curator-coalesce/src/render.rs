//! The text of the coalesced USER message: sections, entries and the aligned comment column.

use std::fmt::Write as _;

use crate::format::{Limits, to_clojure};
use crate::namespace::Run;
use crate::turn::{Turn, Turns};
use crate::user_namespace::{UserDefinition, accumulate};
use crate::value::Value;

/// The column every entry's `;` comment starts at (counted from 0): code shorter than this
/// is padded with spaces, longer code is followed by a single space.
pub const COMMENT_COLUMN: usize = 33;

/// Limits of the execution history in the coalesced USER message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HistoryLimits {
    pub(crate) println_limit: usize,
    pub(crate) tool_call_limit: usize,
}

fn push_entry(out: &mut String, code: &str, comment: Option<&str>) {
    out.push_str(code);
    if let Some(comment) = comment {
        let width = code.chars().count();
        let pad = COMMENT_COLUMN.saturating_sub(width).max(1);
        out.extend(std::iter::repeat_n(' ', pad));
        out.push_str("; ");
        out.push_str(comment);
    }
    out.push('\n');
}

fn described(value: &Value, sample: bool) -> String {
    match value.sample().filter(|_| sample) {
        Some(sample) => {
            format!("{}, sample: {}", value.type_label(), to_clojure(sample, Limits::SAMPLE))
        }
        None => value.type_label(),
    }
}

fn tool_section(out: &mut String, run: &Run) {
    if run.tools.is_empty() {
        return;
    }
    out.push_str("\n;; === tool/ ===\n");
    for tool in &run.tools {
        let mut code = format!("(tool/{}", tool.name);
        for param in &tool.params {
            code.push(' ');
            code.push_str(param);
        }
        code.push(')');
        let comment = match (tool.signature.is_empty(), &tool.description) {
            (true, None) => None,
            (false, None) => Some(tool.signature.clone()),
            (true, Some(description)) => Some(format!("\"{description}\"")),
            (false, Some(description)) => Some(format!("{}, \"{description}\"", tool.signature)),
        };
        push_entry(out, &code, comment.as_deref());
    }
}

fn data_section(out: &mut String, run: &Run) {
    if run.data.is_empty() {
        return;
    }
    out.push_str("\n;; === data/ ===\n");
    for entry in &run.data {
        push_entry(
            out,
            &format!("data/{}", entry.name),
            Some(&described(&entry.value, entry.show_sample)),
        );
    }
}

fn user_section(out: &mut String, definitions: &[UserDefinition<'_>]) {
    if definitions.is_empty() {
        return;
    }
    out.push_str("\n;; === user/ (your prelude) ===\n");
    for entry in definitions {
        if let Value::Function(function) = entry.value {
            let code = format!("({} [{}])", entry.name, function.params().join(" "));
            let comment = match (function.docstring(), function.return_type()) {
                (Some(doc), Some(label)) => Some(format!("\"{doc}\" -> {label}")),
                (Some(doc), None) => Some(format!("\"{doc}\"")),
                (None, Some(label)) => Some(format!("-> {label}")),
                (None, None) => None,
            };
            push_entry(out, &code, comment.as_deref());
        } else {
            push_entry(
                out,
                entry.name,
                Some(&format!("= {}", described(entry.value, entry.sample))),
            );
        }
    }
}

fn tool_calls_section(out: &mut String, turns: &Turns, limit: usize) {
    let calls: Vec<_> = turns.iter().flat_map(Turn::tool_calls).collect();
    if calls.is_empty() {
        out.push_str("\n;; No tool calls made\n");
        return;
    }
    let shown = &calls[calls.len().saturating_sub(limit)..];
    if shown.is_empty() {
        // A limit of zero hides the history; a header with nothing under it would mislead.
        return;
    }
    out.push_str("\n;; Tool calls made:\n");
    for call in shown {
        let args = match &call.args {
            Value::Nil => String::new(),
            args => to_clojure(args, Limits::TOOL_ARGS),
        };
        let _ = writeln!(out, ";   {}({args})", call.name);
    }
}

fn output_section(out: &mut String, turns: &Turns, limit: usize) {
    let prints: Vec<&String> =
        turns.iter().filter(|turn| turn.success()).flat_map(Turn::prints).collect();
    let shown = &prints[prints.len().saturating_sub(limit)..];
    if shown.is_empty() {
        return;
    }
    out.push_str("\n;; Output:\n");
    for print in shown {
        out.push_str(print);
        out.push('\n');
    }
}

fn failure_section(out: &mut String, turns: &Turns) {
    // Only while the run is still failing: one successful turn collapses every error.
    let Some(turn) = turns.last() else { return };
    let Some(error) = turn.error() else { return };
    let _ = write!(
        out,
        "\n---\nYour previous attempt:\n```clojure\n{}\n```\n\nError: {error}\n---\n",
        turn.program().trim_end()
    );
}

/// The namespaces only: mission, `tool/` and `data/` (what uncompressed mode opens with).
pub(crate) fn mission_and_namespaces(run: &Run) -> String {
    let mut out = String::with_capacity(256);
    // Trailing line breaks of the mission would add to the one blank line between sections.
    out.push_str(run.mission.trim_end_matches(['\n', '\r']));
    out.push('\n');
    tool_section(&mut out, run);
    data_section(&mut out, run);
    out
}

/// The whole coalesced USER message.
pub(crate) fn coalesced(run: &Run, turns: &Turns, limits: HistoryLimits) -> String {
    let mut out = mission_and_namespaces(run);
    user_section(&mut out, &accumulate(turns));
    if !run.tools.is_empty() || turns.iter().any(|turn| !turn.tool_calls().is_empty()) {
        tool_calls_section(&mut out, turns, limits.tool_call_limit);
    }
    output_section(&mut out, turns, limits.println_limit);
    failure_section(&mut out, turns);
    let _ = write!(out, "\nTurns left: {}\n", turns_left(run, turns));
    out.truncate(out.trim_end().len());
    out
}

pub(crate) fn turns_left(run: &Run, turns: &Turns) -> u64 {
    u64::from(run.max_turns).saturating_sub(turns.len() as u64)
}
