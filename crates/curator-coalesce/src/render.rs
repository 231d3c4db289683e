//! The text of the coalesced USER message: sections, entries and the aligned comment column.

use std::fmt::Write as _;

use crate::budget::{self, Layout, Section, SectionKind, write_capped};
use crate::format::{Limits, Printer, is_private, write_escaped, write_string};
use crate::namespace::Run;
use crate::turn::{Turn, Turns};
use crate::user_namespace::{UserDefinition, accumulate};
use crate::value::Value;

/// The column every entry's `;` comment starts at (counted from 0): code shorter than this
/// is padded with spaces, longer code is followed by a single space.
pub const COMMENT_COLUMN: usize = 33;

/// The most characters of a tool's description or a function's docstring shown (in quotes,
/// the rest replaced by `...`).
pub(crate) const TEXT_CHARS: usize = 240;

/// What a private (`_`) name shows in place of its sample.
pub(crate) const HIDDEN: &str = "[hidden]";

/// Limits of the execution history in the coalesced USER message, and its budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HistoryLimits {
    pub(crate) println_limit: usize,
    pub(crate) tool_call_limit: usize,
    /// The most characters of the whole message.
    pub(crate) max_chars: usize,
}

/// The text being written and where its pieces are, for the budget.
struct Writer<'a> {
    out: String,
    layout: Layout,
    printer: Printer<'a>,
}

impl<'a> Writer<'a> {
    fn new(capacity: usize) -> Self {
        Self {
            out: String::with_capacity(capacity),
            layout: Layout::default(),
            printer: Printer::new(),
        }
    }

    /// Starts a section with its header line, after a blank line.
    fn section(&mut self, kind: SectionKind, header: &str) {
        let start = self.out.len();
        self.out.push('\n');
        self.out.push_str(header);
        self.out.push('\n');
        self.layout.sections.push(Section {
            kind,
            header: start..self.out.len(),
            entries: Vec::new(),
        });
    }

    /// Ends the entry that started at `start` (its line break included).
    fn end_entry(&mut self, start: usize) {
        self.out.push('\n');
        if let Some(section) = self.layout.sections.last_mut() {
            section.entries.push(start..self.out.len());
        }
    }

    /// Pads the code written since `start` to the comment column and starts the comment.
    fn comment(&mut self, start: usize) {
        let width = self.out[start..].chars().count();
        let pad = COMMENT_COLUMN.saturating_sub(width).max(1);
        self.out.extend(std::iter::repeat_n(' ', pad));
        self.out.push_str("; ");
    }

    /// Text that must stay on its line (names, parameters, signatures, type labels).
    fn name(&mut self, text: &str) {
        write_escaped(&mut self.out, text, false, None, None);
    }

    /// A type label, then `, sample: …` or `, [hidden]` when a sample is shown.
    fn described(&mut self, name: &str, value: &'a Value, sample: bool) {
        self.name(&value.type_label());
        match value.sample().filter(|_| sample) {
            Some(_) if is_private(name) => {
                self.out.push_str(", ");
                self.out.push_str(HIDDEN);
            }
            Some(sample) => {
                self.out.push_str(", sample: ");
                self.printer.write(&mut self.out, sample, Limits::SAMPLE);
            }
            None => {}
        }
    }

    fn tool_section(&mut self, run: &'a Run) {
        if run.tools.is_empty() {
            return;
        }
        self.section(SectionKind::Tool, ";; === tool/ ===");
        for tool in &run.tools {
            let start = self.out.len();
            self.out.push_str("(tool/");
            self.name(&tool.name);
            for param in &tool.params {
                self.out.push(' ');
                self.name(param);
            }
            self.out.push(')');
            if !tool.signature.is_empty() || tool.description.is_some() {
                self.comment(start);
                self.name(&tool.signature);
                if let Some(description) = &tool.description {
                    if !tool.signature.is_empty() {
                        self.out.push_str(", ");
                    }
                    write_string(&mut self.out, description, Some(TEXT_CHARS), None);
                }
            }
            self.end_entry(start);
        }
    }

    fn data_section(&mut self, run: &'a Run) {
        if run.data.is_empty() {
            return;
        }
        self.section(SectionKind::Data, ";; === data/ ===");
        for entry in &run.data {
            let start = self.out.len();
            self.out.push_str("data/");
            self.name(&entry.name);
            self.comment(start);
            self.described(&entry.name, &entry.value, entry.show_sample);
            self.end_entry(start);
        }
    }

    fn user_section(&mut self, definitions: &[UserDefinition<'a>]) {
        if definitions.is_empty() {
            return;
        }
        self.section(SectionKind::User, ";; === user/ (your prelude) ===");
        for entry in definitions {
            let start = self.out.len();
            if let Value::Function(function) = entry.value {
                self.out.push('(');
                self.name(entry.name);
                self.out.push_str(" [");
                for (index, param) in function.params().iter().enumerate() {
                    if index > 0 {
                        self.out.push(' ');
                    }
                    self.name(param);
                }
                self.out.push_str("])");
                let (doc, label) = (function.docstring(), function.return_type());
                if doc.is_some() || label.is_some() {
                    self.comment(start);
                }
                if let Some(doc) = doc {
                    write_string(&mut self.out, doc, Some(TEXT_CHARS), None);
                    if label.is_some() {
                        self.out.push(' ');
                    }
                }
                if let Some(label) = label {
                    self.out.push_str("-> ");
                    self.name(label);
                }
            } else {
                self.name(entry.name);
                self.comment(start);
                self.out.push_str("= ");
                self.described(entry.name, entry.value, entry.sample);
            }
            self.end_entry(start);
        }
    }

    fn tool_calls_section(&mut self, turns: &'a Turns, limit: usize) {
        let calls: Vec<_> = turns.iter().flat_map(Turn::tool_calls).collect();
        if calls.is_empty() {
            self.section(SectionKind::ToolCalls, ";; No tool calls made");
            return;
        }
        let shown = &calls[calls.len().saturating_sub(limit)..];
        if shown.is_empty() {
            // A limit of zero hides the history; a header with nothing under it would mislead.
            return;
        }
        let hidden = calls.len() - shown.len();
        if hidden == 0 {
            self.section(SectionKind::ToolCalls, ";; Tool calls made:");
        } else {
            let noun = if hidden == 1 { "tool call" } else { "tool calls" };
            let header = format!(
                ";; Tool calls made:\n;   ... {hidden} earlier {noun} not shown (tool_call_limit {limit})"
            );
            self.section(SectionKind::ToolCalls, &header);
        }
        for call in shown {
            let start = self.out.len();
            self.out.push_str(";   ");
            self.name(&call.name);
            self.out.push('(');
            if !matches!(call.args, Value::Nil) {
                self.printer.write(&mut self.out, &call.args, Limits::TOOL_ARGS);
            }
            self.out.push(')');
            self.end_entry(start);
        }
    }

    fn output_section(&mut self, turns: &Turns, limits: HistoryLimits) {
        let prints: Vec<&String> =
            turns.iter().filter(|turn| turn.success()).flat_map(Turn::prints).collect();
        let shown = &prints[prints.len().saturating_sub(limits.println_limit)..];
        if shown.is_empty() {
            return;
        }
        let hidden = prints.len() - shown.len();
        if hidden == 0 {
            self.section(SectionKind::Output, ";; Output:");
        } else {
            let noun = if hidden == 1 { "println call" } else { "println calls" };
            let header = format!(
                ";; Output:\n;; ... {hidden} earlier {noun} not shown (println_limit {})",
                limits.println_limit
            );
            self.section(SectionKind::Output, &header);
        }
        // One println call takes at most a quarter of the budget, its beginning and its end.
        let cap = limits.max_chars / 4;
        for print in shown {
            let start = self.out.len();
            write_capped(&mut self.out, print, cap);
            self.end_entry(start);
        }
    }

    fn failure_section(&mut self, turns: &Turns, max_chars: usize) {
        // Only while the run is still failing: one successful turn collapses every error.
        let Some(turn) = turns.last() else { return };
        let Some(error) = turn.error() else { return };
        let start = self.out.len();
        // The program and the error take at most an eighth of the budget each.
        let cap = max_chars / 8;
        let mut program = String::new();
        write_capped(&mut program, turn.program().trim_end(), cap);
        let fence = fence(&program);
        let _ = write!(
            self.out,
            "\n---\nYour previous attempt:\n{fence}clojure\n{program}\n{fence}\n\nError: "
        );
        write_capped(&mut self.out, error, cap);
        self.out.push_str("\n---\n");
        self.layout.failure = Some(start..self.out.len());
    }
}

/// A code fence longer than any run of backticks in `code`, so that the code cannot close
/// it (three backticks, as the spec writes it, unless the code holds three or more).
fn fence(code: &str) -> String {
    let longest = code.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

/// The mission, `tool/` and `data/`, into `writer`.
fn write_opening<'a>(writer: &mut Writer<'a>, run: &'a Run) {
    // Trailing line breaks of the mission would add to the one blank line between sections.
    let mission = run.mission.trim_end_matches(['\n', '\r']);
    writer.out.push_str(mission);
    writer.layout.mission = 0..writer.out.len();
    writer.out.push('\n');
    writer.tool_section(run);
    writer.data_section(run);
}

/// The namespaces only: mission, `tool/` and `data/` (what uncompressed mode opens with).
pub(crate) fn mission_and_namespaces(run: &Run) -> String {
    let mut writer = Writer::new(256);
    write_opening(&mut writer, run);
    writer.out
}

/// The whole coalesced USER message, within `limits.max_chars` characters.
pub(crate) fn coalesced(run: &Run, turns: &Turns, limits: HistoryLimits) -> String {
    let mut writer = Writer::new(1024);
    write_opening(&mut writer, run);
    writer.user_section(&accumulate(turns));
    if !run.tools.is_empty() || turns.iter().any(|turn| !turn.tool_calls().is_empty()) {
        writer.tool_calls_section(turns, limits.tool_call_limit);
    }
    writer.output_section(turns, limits);
    writer.failure_section(turns, limits.max_chars);
    let start = writer.out.len();
    let _ = write!(writer.out, "\nTurns left: {}", turns_left(run, turns));
    writer.layout.tail = start..writer.out.len();
    let Writer { out, layout, .. } = writer;
    budget::fit(out, &layout, limits.max_chars)
}

pub(crate) fn turns_left(run: &Run, turns: &Turns) -> u64 {
    u64::from(run.max_turns).saturating_sub(turns.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_outgrow_the_backticks_of_the_code() {
        assert_eq!(fence("(+ 1 2)"), "```");
        assert_eq!(fence("``` inside"), "````");
        assert_eq!(fence("a ````` b ` c"), "``````");
    }
}
