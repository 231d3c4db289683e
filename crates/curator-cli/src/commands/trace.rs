//! `curator trace`: the record of one evaluation, or the view a pipeline would send.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context as _, Result, bail};
use curator::conversation_loop::{ConversationTurn, saved_loops};
use curator::model::{EvaluationId, Message};
use curator::session::{SessionKey, SessionStore, Usage, recorded_usage};
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

/// The record of one evaluation (the latest by default), or the curated view of it; the
/// record shows each reply's recorded usage (what its model call took and was billed).
pub(crate) fn run(
    path: &Path,
    which: Which<'_>,
    kind: ViewKind,
    shown: Shown<'_>,
    pipeline: &Pipeline,
) -> Result<String> {
    let Shown { raw, usage, prices, secrets } = shown;
    // What is printed is redacted unless asked: a record kept unredacted (an agent told to
    // keep secrets, a file written by another tool) shows no credential on a terminal.
    let redactor = (!secrets).then(Redactor::new);
    let shown = Printed { raw, usage, redactor: redactor.as_ref() };
    let store = session_file::open_read_only(path)?;
    let key = which.key.map(SessionKey::new);
    let evaluation = match (which.evaluation, &key) {
        (Some(id), _) => {
            // The parse error names the id and what is wrong with it.
            id.parse::<EvaluationId>()?
        }
        (None, Some(key)) => match store.evaluations_of(key)?.last() {
            Some(summary) => summary.evaluation_id,
            None => {
                return loop_session(&*store, Some(key.as_str()), kind, shown, pipeline)?
                    .with_context(|| {
                        format!(
                            "{} holds no evaluation or loop session of session `{key}`",
                            session_file::name(path)
                        )
                    });
            }
        },
        (None, None) => match store.latest_evaluation()? {
            Some(id) => id,
            None => {
                return loop_session(&*store, None, kind, shown, pipeline)?.with_context(|| {
                    format!("{} holds no evaluation or loop session", session_file::name(path))
                });
            }
        },
    };
    if let Some(key) = &key
        && let Some(summary) = store.evaluation(evaluation)?
        && &summary.key != key
    {
        bail!("evaluation {evaluation} belongs to session `{}`, not `{key}`", summary.key);
    }
    let entries = store.entries(evaluation)?;
    if entries.is_empty() {
        bail!("{} holds no evaluation {evaluation}", session_file::name(path));
    }
    let history = History::from(entries.iter().map(|e| e.message.clone()).collect::<Vec<_>>());
    let calls = recorded_usage(&*store, evaluation)?;
    let billed = if calls.is_empty() {
        String::new()
    } else {
        let total: Usage = calls.iter().map(|call| call.usage).sum();
        format!("\nrecorded model {}", billed::usage_line(calls.len(), &total, prices))
    };
    let heading = |shown: usize, tokens: u64| {
        format!(
            "evaluation {evaluation}: {shown} messages shown of {} recorded, {tokens} tokens{billed}",
            entries.len()
        )
    };
    let records: Vec<(String, Message)> = entries
        .iter()
        .map(|e| (format!("#{:<4} turn {:<3}", e.sequence, e.turn), e.message.clone()))
        .collect();
    // Each reply's recorded usage, on the line below it (the calls come in sequence order).
    let notes: Vec<Option<String>> = entries
        .iter()
        .map(|e| {
            let at = calls.binary_search_by_key(&e.sequence, |c| c.sequence).ok()?;
            Some(format!("      └ {}", billed::usage_line(1, &calls[at].usage, prices)))
        })
        .collect();
    render(&history, records, &notes, &heading, kind, shown, pipeline)
}

/// The turns of the latest saved loop session (of `key`, when given): a `curator chat`
/// conversation, say; `None` when there is none.
fn loop_session(
    store: &dyn SessionStore,
    key: Option<&str>,
    kind: ViewKind,
    shown: Printed<'_>,
    pipeline: &Pipeline,
) -> Result<Option<String>> {
    let latest = saved_loops(store)?
        .into_iter()
        .filter(|l| key.is_none_or(|k| l.key == k))
        .max_by_key(|l| l.saved_at);
    let Some(saved) = latest else { return Ok(None) };
    let messages: Vec<Message> =
        saved.state.turns.iter().map(ConversationTurn::to_message).collect();
    let records: Vec<(String, Message)> =
        messages.iter().enumerate().map(|(i, m)| (format!("#{i:<4}"), m.clone())).collect();
    let history = History::from(messages);
    let heading = |shown: usize, tokens: u64| {
        format!(
            "loop `{}` of session `{}` (iteration {}): {shown} turns shown of {}, {tokens} tokens",
            saved.name,
            saved.key,
            saved.state.iteration,
            saved.state.turns.len()
        )
    };
    render(&history, records, &[], &heading, kind, shown, pipeline).map(Some)
}

/// How messages are printed: as JSON (`raw`), with their tokens (`usage`), redacted.
#[derive(Clone, Copy)]
struct Printed<'r> {
    raw: bool,
    usage: bool,
    redactor: Option<&'r Redactor>,
}

/// The record (`records`, each followed by its line of `notes` when it has one) or the
/// pipeline's view of `history`, one line per message; as JSON (`raw`) and with each
/// message's tokens (`usage`) as asked, redacted unless asked otherwise.
fn render(
    history: &History<'_>,
    records: Vec<(String, Message)>,
    notes: &[Option<String>],
    heading: &dyn Fn(usize, u64) -> String,
    kind: ViewKind,
    Printed { raw, usage, redactor }: Printed<'_>,
    pipeline: &Pipeline,
) -> Result<String> {
    let mut out = String::new();
    let counter: &dyn TokenCounter = &*pipeline.counter;
    let notes = if kind == ViewKind::Record { notes } else { &[] };
    let lines: Vec<(String, Message)> = match kind {
        ViewKind::Record => records,
        ViewKind::Curated => {
            let view = pipeline.manager.curate_history(history, &pipeline.context())?;
            view.iter()
                .map(|v| {
                    let place = v.pos.map_or_else(|| "new".to_owned(), |p| format!("#{p}"));
                    let changed = if v.message.is_borrowed() { "" } else { " (changed)" };
                    (format!("{place:<5}{changed:<10}"), Message::clone(&v.message))
                })
                .collect()
        }
    };
    let lines: Vec<(String, Message)> = match redactor {
        Some(redactor) => lines
            .into_iter()
            .map(|(place, m)| (place, redactor.redact_message(&m).unwrap_or(m)))
            .collect(),
        None => lines,
    };
    let total: u64 = lines.iter().map(|(_, m)| counter.count_message(m)).sum();
    let _ = writeln!(out, "{}", heading(lines.len(), total));
    for (index, (place, message)) in lines.iter().enumerate() {
        let note = notes.get(index).and_then(Option::as_deref);
        let tokens = if usage {
            format!("{:>7} tok  ", counter.count_message(message))
        } else {
            String::new()
        };
        if raw {
            let json = serde_json::to_string(message).unwrap_or_default();
            let _ = writeln!(out, "{place} {tokens}{json}");
            continue;
        }
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
        let _ = writeln!(
            out,
            "{place} {tokens}{:<9} {}{}{}",
            message.role().as_str(),
            answered.unwrap_or_default(),
            text,
            if calls.is_empty() { String::new() } else { format!(" → {}", calls.join(", ")) }
        );
        if let Some(note) = note {
            let _ = writeln!(out, "{note}");
        }
    }
    Ok(out)
}
