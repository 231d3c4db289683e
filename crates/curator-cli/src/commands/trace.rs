//! `curator trace`: the record of one evaluation, or the view a pipeline would send.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Result, bail};
use curator::model::{EvaluationId, Message};
use curator::session::{SessionKey, SessionStore};
use curator::strategies::{History, HistoryManagerExt, TokenCounter};

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

/// The record of one evaluation (the latest by default), or the curated view of it.
pub(crate) fn run(
    path: &Path,
    which: Which<'_>,
    kind: ViewKind,
    raw: bool,
    usage: bool,
    pipeline: &Pipeline,
) -> Result<String> {
    let store = session_file::open_read_only(path)?;
    let key = which.key.map(SessionKey::new);
    let evaluation = match (which.evaluation, &key) {
        (Some(id), _) => {
            // The parse error names the id and what is wrong with it.
            id.parse::<EvaluationId>()?
        }
        (None, Some(key)) => match store.evaluations_of(key)?.last() {
            Some(summary) => summary.evaluation_id,
            None => bail!("{} holds no evaluation of session `{key}`", session_file::name(path)),
        },
        (None, None) => match store.latest_evaluation()? {
            Some(id) => id,
            None => bail!("{} holds no evaluation", session_file::name(path)),
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
    let mut out = String::new();
    let counter: &dyn TokenCounter = &*pipeline.counter;
    let lines: Vec<(String, Message)> = match kind {
        ViewKind::Record => entries
            .iter()
            .map(|e| (format!("#{:<4} turn {:<3}", e.sequence, e.turn), e.message.clone()))
            .collect(),
        ViewKind::Curated => {
            let view = pipeline.manager.curate_history(&history, &pipeline.context())?;
            view.iter()
                .map(|v| {
                    let place = v.pos.map_or_else(|| "new".to_owned(), |p| format!("#{p}"));
                    let changed = if v.message.is_borrowed() { "" } else { " (changed)" };
                    (format!("{place:<5}{changed:<10}"), Message::clone(&v.message))
                })
                .collect()
        }
    };
    let total: u64 = lines.iter().map(|(_, m)| counter.count_message(m)).sum();
    let _ = writeln!(
        out,
        "evaluation {evaluation}: {} messages shown of {} recorded, {total} tokens",
        lines.len(),
        entries.len()
    );
    for (place, message) in &lines {
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
    }
    Ok(out)
}
