//! `curator trace`: the record of one evaluation, or the view a pipeline would send.

use std::io::Write;
use std::ops::ControlFlow;
use std::path::Path;

use anyhow::{Context as _, Result, bail};
use curator::client::Usage;
use curator::conversation_loop::{ConversationTurn, saved_lens, saved_loops};
use curator::model::{Entry, EvaluationId, Message};
use curator::session::{SessionKey, SessionStore, recorded_usage};
use curator::strategies::bill::Prices;
use curator::strategies::{History, HistoryManagerExt, Redactor, TokenCounter};

use crate::billed;
use crate::pipeline::Pipeline;
use crate::session_file;

/// What `curator trace` shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ViewKind {
    /// Every recorded message.
    Record,
    /// What the pipeline would send.
    Curated,
}

/// Which evaluation to show: a given one, the latest of a session key, or the latest.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Which<'a> {
    /// The evaluation id, when one is given.
    pub(crate) evaluation: Option<&'a str>,
    /// The session key the evaluation must belong to.
    pub(crate) key: Option<&'a str>,
}

/// How the messages are shown.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Shown<'a> {
    /// Each message as JSON.
    pub(crate) raw: bool,
    /// Each message's tokens.
    pub(crate) usage: bool,
    /// The prices the recorded model calls are priced at (`--model`).
    pub(crate) prices: Option<&'a Prices>,
    /// Secrets as recorded (`--show-secrets`), instead of redacted.
    pub(crate) secrets: bool,
}

/// Writes to `out` the record of one evaluation (the latest by default), or the curated view
/// of it; the record shows each reply's recorded usage (what its model call took and was
/// billed). The record is read a page at a time, twice (once for the heading's totals, once
/// to print), so that memory holds one page of a long record, not the record.
pub(crate) fn run(
    path: &Path,
    which: Which<'_>,
    kind: ViewKind,
    shown: Shown<'_>,
    pipeline: &Pipeline,
    out: &mut dyn Write,
) -> Result<()> {
    let Shown { raw, usage, prices, secrets } = shown;
    // What is printed is redacted unless asked: a record kept unredacted (an agent told to
    // keep secrets, a file written by another tool) shows no credential on a terminal.
    let redactor = (!secrets).then(Redactor::new);
    let shown = Printed { raw, usage, redactor: redactor.as_ref() };
    let store = session_file::open_read_only(path)?;
    let key = which.key.map(SessionKey::new);
    let latest = match (which.evaluation, &key) {
        (Some(id), _) => Some(id.parse::<EvaluationId>().map_err(|_| {
            anyhow::anyhow!(
                "--evaluation `{id}` is not an evaluation id (a UUID, as `curator inspect` lists them)"
            )
        })?),
        (None, Some(key)) => store.evaluations_of(key)?.last().map(|s| s.evaluation_id),
        (None, None) => store.latest_evaluation()?,
    };
    let Some(evaluation) = latest else {
        // No evaluation: the latest loop session's turns, if there is one.
        let lines =
            loop_session(&*store, key.as_ref().map(SessionKey::as_str), kind, shown, pipeline)?
                .with_context(|| {
                    let of = key.as_ref().map(|k| format!(" of session `{k}`")).unwrap_or_default();
                    format!("{} holds no evaluation or loop session{of}", session_file::name(path))
                })?;
        return print(out, &lines, pipeline, shown);
    };
    if let Some(key) = &key
        && let Some(summary) = store.evaluation(evaluation)?
        && &summary.key != key
    {
        bail!("evaluation {evaluation} belongs to session `{}`, not `{key}`", summary.key);
    }
    let calls = recorded_usage(&*store, evaluation)?;
    let billed = if calls.is_empty() {
        String::new()
    } else {
        let total: Usage = calls.iter().map(|call| call.usage).sum();
        format!("\nrecorded model {}", billed::usage_line(calls.len(), &total, prices))
    };
    let counter: &dyn TokenCounter = &*pipeline.counter;
    if kind == ViewKind::Curated {
        let mut messages = Vec::new();
        read_pages(&*store, evaluation, &mut |page| {
            messages.extend(page.into_iter().map(|e| e.message));
            Ok(())
        })?;
        if messages.is_empty() {
            bail!("{} holds no evaluation {evaluation}", session_file::name(path));
        }
        let recorded = messages.len();
        let lines = curated(&History::from(messages), pipeline, shown)?;
        let tokens: u64 = lines.iter().map(|l| counter.count_message(&l.message)).sum();
        writeln!(
            out,
            "evaluation {evaluation}: {} messages shown of {recorded} recorded, {tokens} tokens{billed}",
            lines.len()
        )?;
        return lines.iter().try_for_each(|line| write_line(out, line, counter, shown));
    }
    // The record: the heading's totals first, then each message as it is read. The first
    // read keeps, per message, its tokens and whether redaction changed it (8 bytes), so that
    // the second redacts only those and counts nothing again.
    let mut seen: Vec<(u32, bool)> = Vec::new();
    read_pages(&*store, evaluation, &mut |page| {
        for entry in page {
            let redacted = shown.redactor.and_then(|r| r.redact_message(&entry.message));
            let tokens = counter.count_message(redacted.as_ref().unwrap_or(&entry.message));
            seen.push((u32::try_from(tokens).unwrap_or(u32::MAX), redacted.is_some()));
        }
        Ok(())
    })?;
    if seen.is_empty() {
        bail!("{} holds no evaluation {evaluation}", session_file::name(path));
    }
    let tokens: u64 = seen.iter().map(|&(t, _)| u64::from(t)).sum();
    writeln!(
        out,
        "evaluation {evaluation}: {0} messages shown of {0} recorded, {tokens} tokens{billed}",
        seen.len()
    )?;
    let mut at = 0;
    read_pages(&*store, evaluation, &mut |page| {
        for e in page {
            // Messages appended since the first read are shown as they are read.
            let (tokens, changed) = seen.get(at).copied().unwrap_or((0, true));
            at += 1;
            // Each reply's recorded usage, on the line below it.
            let note = calls
                .binary_search_by_key(&e.sequence, |c| c.sequence)
                .ok()
                .map(|at| format!("      └ {}", billed::usage_line(1, &calls[at].usage, prices)));
            let line = Line {
                place: format!("#{:<4} turn {:<3}", e.sequence, e.turn),
                message: if changed { shown.redacted(e.message) } else { e.message },
                note,
                title: None,
                tokens: (at <= seen.len()).then_some(u64::from(tokens)),
            };
            write_line(out, &line, counter, shown)?;
        }
        Ok(())
    })
}

/// How many entries a page of a record holds while it is printed.
const PAGE: usize = 2_000;

/// Reads an evaluation's entries a page at a time, stopping at `each`'s first error.
fn read_pages(
    store: &dyn SessionStore,
    evaluation: EvaluationId,
    each: &mut dyn FnMut(Vec<Entry>) -> Result<()>,
) -> Result<()> {
    let mut failed = None;
    store.entries_in_pages(evaluation, PAGE, &mut |page| match each(page) {
        Ok(()) => ControlFlow::Continue(()),
        Err(e) => {
            failed = Some(e);
            ControlFlow::Break(())
        }
    })?;
    failed.map_or(Ok(()), Err)
}

/// The turns of the latest saved loop session (of `key`, when given): a `curator chat`
/// conversation, say, as lines to print after their heading; `None` when there is none.
fn loop_session(
    store: &dyn SessionStore,
    key: Option<&str>,
    kind: ViewKind,
    shown: Printed<'_>,
    pipeline: &Pipeline,
) -> Result<Option<Vec<Line>>> {
    let latest = saved_loops(store)?
        .into_iter()
        .filter(|l| key.is_none_or(|k| l.key == k))
        .max_by_key(|l| l.saved_at);
    let Some(saved) = latest else { return Ok(None) };
    let messages: Vec<Message> =
        saved.state.turns.iter().map(ConversationTurn::to_message).collect();
    let lines = match kind {
        ViewKind::Record => messages
            .into_iter()
            .enumerate()
            .map(|(i, m)| Line {
                place: format!("#{i:<4}"),
                message: shown.redacted(m),
                note: None,
                title: None,
                tokens: None,
            })
            .collect(),
        ViewKind::Curated => curated(&History::from(messages), pipeline, shown)?,
    };
    // What each agent step was sent, when the loop keeps its lens (`lens = true`).
    let lens: Vec<Line> = saved_lens(store, &saved.key, &saved.name)?
        .into_iter()
        .flat_map(|step| {
            let badge =
                if step.injected { "conversation injected" } else { "no conversation injected" };
            let title = format!(
                "sent in iteration {} to step `{}` ({badge}, {} messages):",
                step.iteration,
                step.step,
                step.messages.len()
            );
            step.messages.into_iter().enumerate().map(move |(i, m)| Line {
                place: format!("  sent #{i:<3}"),
                message: shown.redacted(m),
                note: None,
                title: (i == 0).then(|| title.clone()),
                tokens: None,
            })
        })
        .collect();
    let counter: &dyn TokenCounter = &*pipeline.counter;
    let tokens: u64 = lines.iter().map(|l: &Line| counter.count_message(&l.message)).sum();
    let shown_turns = lines.len();
    let lines: Vec<Line> =
        if kind == ViewKind::Record { lines.into_iter().chain(lens).collect() } else { lines };
    let heading = Line {
        place: format!(
            "loop `{}` of session `{}` (iteration {}): {shown_turns} turns shown of {}, {tokens} tokens",
            saved.name,
            saved.key,
            saved.state.iteration,
            saved.state.turns.len()
        ),
        message: Message::user(""),
        note: None,
        title: None,
        tokens: None,
    };
    Ok(Some(std::iter::once(heading).chain(lines).collect()))
}

/// How messages are printed: as JSON (`raw`), with their tokens (`usage`), redacted.
#[derive(Clone, Copy)]
struct Printed<'r> {
    raw: bool,
    usage: bool,
    redactor: Option<&'r Redactor>,
}

/// One printed message: where it is, the message (redacted as asked), and the line below it.
struct Line {
    place: String,
    message: Message,
    note: Option<String>,
    /// A line printed before the message's (what the messages after it are).
    title: Option<String>,
    /// The message's tokens, when already counted.
    tokens: Option<u64>,
}

impl Printed<'_> {
    /// `message` as it is shown: redacted unless asked otherwise.
    fn redacted(&self, message: Message) -> Message {
        match self.redactor {
            Some(redactor) => redactor.redact_message(&message).unwrap_or(message),
            None => message,
        }
    }
}

/// The pipeline's view of `history`, as lines.
fn curated(history: &History<'_>, pipeline: &Pipeline, shown: Printed<'_>) -> Result<Vec<Line>> {
    let view = pipeline.manager.curate_history(history, &pipeline.context())?;
    Ok(view
        .iter()
        .map(|v| {
            let place = v.pos.map_or_else(|| "new".to_owned(), |p| format!("#{p}"));
            let changed = if v.message.is_borrowed() { "" } else { " (changed)" };
            Line {
                place: format!("{place:<5}{changed:<10}"),
                message: shown.redacted(Message::clone(&v.message)),
                note: None,
                title: None,
                tokens: None,
            }
        })
        .collect())
}

/// Prints a heading (the first line's place) and the lines after it.
fn print(
    out: &mut dyn Write,
    lines: &[Line],
    pipeline: &Pipeline,
    shown: Printed<'_>,
) -> Result<()> {
    let Some((heading, lines)) = lines.split_first() else { return Ok(()) };
    writeln!(out, "{}", heading.place)?;
    let counter: &dyn TokenCounter = &*pipeline.counter;
    lines.iter().try_for_each(|line| write_line(out, line, counter, shown))
}

/// Writes one message on one line: as JSON (`raw`) or as its role, text (cut at 100
/// characters) and calls; with its tokens (`usage`) as asked; then its note.
fn write_line(
    out: &mut dyn Write,
    Line { place, message, note, title, tokens }: &Line,
    counter: &dyn TokenCounter,
    Printed { raw, usage, .. }: Printed<'_>,
) -> Result<()> {
    let tokens = if usage {
        format!("{:>7} tok  ", tokens.unwrap_or_else(|| counter.count_message(message)))
    } else {
        String::new()
    };
    if let Some(title) = title {
        writeln!(out, "{title}")?;
    }
    if raw {
        // One JSON line per message, no note between them.
        writeln!(out, "{place} {tokens}{}", serde_json::to_string(message)?)?;
        return Ok(());
    }
    {
        let mut text: String = message.text().replace('\n', " ⏎ ");
        if text.chars().count() > 100 {
            text = format!(
                "{}… ({} characters)",
                text.chars().take(100).collect::<String>(),
                message.text().chars().count()
            );
        }
        let calls: Vec<String> = message
            .tool_calls()
            .iter()
            .map(|c| format!("{}({}) [{}]", c.name(), c.arguments(), c.id()))
            .collect();
        let answered = message.tool_call_id().map(|id| {
            format!("[answers {id}{}] ", if message.is_error() { ", failed" } else { "" })
        });
        writeln!(
            out,
            "{place} {tokens}{:<9} {}{}{}",
            message.role().as_str(),
            answered.unwrap_or_default(),
            text,
            if calls.is_empty() { String::new() } else { format!(" → {}", calls.join(", ")) }
        )?;
    }
    if let Some(note) = note {
        writeln!(out, "{note}")?;
    }
    Ok(())
}
