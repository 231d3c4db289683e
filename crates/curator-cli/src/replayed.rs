//! A conversation replayed as an agent loop would run it, curating before every assistant
//! message: what each provider call would have sent, what curation saved, and the table of it.

use std::fmt::Write as _;
use std::time::Instant;

use anyhow::Result;
use curator::model::{Role, validate};
use curator::strategies::{CurationContext, History, View};

use crate::input::Conversation;
use crate::pipeline::Pipeline;

/// One provider call of a replay.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Call {
    /// Index of the assistant message this call produced.
    pub(crate) message: usize,
    pub(crate) full_messages: usize,
    pub(crate) sent_messages: usize,
    pub(crate) full_tokens: u64,
    pub(crate) sent_tokens: u64,
    /// Time spent curating, in microseconds.
    pub(crate) curation_us: f64,
}

/// One replayed conversation.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Replayed {
    pub(crate) id: String,
    pub(crate) calls: Vec<Call>,
    /// The first view a provider would refuse: (call number from 1, what is wrong).
    pub(crate) violation: Option<(usize, String)>,
}

/// Totals over calls.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub(crate) struct Totals {
    pub(crate) calls: usize,
    pub(crate) full_messages: usize,
    pub(crate) sent_messages: usize,
    pub(crate) full_tokens: u64,
    pub(crate) sent_tokens: u64,
    pub(crate) curation_us: f64,
}

impl Totals {
    pub(crate) fn of<'a>(calls: impl IntoIterator<Item = &'a Call>) -> Self {
        calls.into_iter().fold(Totals::default(), |t, c| Totals {
            calls: t.calls + 1,
            full_messages: t.full_messages + c.full_messages,
            sent_messages: t.sent_messages + c.sent_messages,
            full_tokens: t.full_tokens + c.full_tokens,
            sent_tokens: t.sent_tokens + c.sent_tokens,
            curation_us: t.curation_us + c.curation_us,
        })
    }

    /// Tokens saved, in percent of the full history.
    pub(crate) fn saved(&self) -> f64 {
        saved(self.full_tokens, self.sent_tokens)
    }
}

pub(crate) fn saved(full: u64, sent: u64) -> f64 {
    if full == 0 { 0.0 } else { 100.0 * (1.0 - sent as f64 / full as f64) }
}

/// Replays one conversation; with `check`, validates every view for both providers and
/// stops at the first violation.
pub(crate) fn replay(
    conversation: &Conversation,
    pipeline: &Pipeline,
    check: bool,
) -> Result<Replayed> {
    let ctx = CurationContext::default();
    let counter = &*pipeline.counter;
    let mut history = History::new();
    let mut calls = Vec::new();
    let mut violation = None;
    for (index, message) in conversation.messages.iter().enumerate() {
        if message.role() == Role::Assistant && !history.is_empty() {
            let started = Instant::now();
            let view = pipeline.manager.curate(View::full(&history), &ctx)?;
            let sent = view.messages();
            let curation_us = started.elapsed().as_secs_f64() * 1e6;
            calls.push(Call {
                message: index,
                full_messages: history.len(),
                sent_messages: sent.len(),
                full_tokens: View::full(&history).tokens(counter),
                sent_tokens: view.tokens(counter),
                curation_us,
            });
            if check {
                let problem = validate::openai(&sent)
                    .map_err(|v| {
                        format!("OpenAI rule broken at view message {}: {}", v.index, v.kind)
                    })
                    .and_then(|()| {
                        validate::anthropic(&sent).map_err(|v| {
                            format!("Anthropic rule broken at view message {}: {}", v.index, v.kind)
                        })
                    });
                if let Err(problem) = problem {
                    violation = Some((calls.len(), problem));
                    break;
                }
            }
        }
        history.push(message.clone());
    }
    Ok(Replayed { id: conversation.id.clone(), calls, violation })
}

fn arrow<T: std::fmt::Display>(a: T, b: T) -> String {
    format!("{a} → {b}")
}

/// The table of a replay: one row per call when `per_call`, else one per conversation, then
/// the totals.
pub(crate) fn table(replays: &[Replayed], per_call: bool) -> String {
    let mut out = String::new();
    let head = if per_call { "call" } else { "conversation (calls)" };
    let _ = writeln!(
        out,
        "{head:<34} {:>16} {:>20} {:>7} {:>12}",
        "messages", "tokens", "saved", "curation µs"
    );
    for replay in replays {
        if per_call {
            for (n, c) in replay.calls.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "{:<34} {:>16} {:>20} {:>6.1}% {:>12.1}",
                    format!("{} #{}", short(&replay.id, 28), n + 1),
                    arrow(c.full_messages, c.sent_messages),
                    arrow(c.full_tokens, c.sent_tokens),
                    saved(c.full_tokens, c.sent_tokens),
                    c.curation_us
                );
            }
        } else {
            let t = Totals::of(&replay.calls);
            let _ = writeln!(
                out,
                "{:<34} {:>16} {:>20} {:>6.1}% {:>12.1}",
                format!("{} ({})", short(&replay.id, 28), t.calls),
                arrow(t.full_messages, t.sent_messages),
                arrow(t.full_tokens, t.sent_tokens),
                t.saved(),
                if t.calls == 0 { 0.0 } else { t.curation_us / t.calls as f64 }
            );
        }
    }
    let t = Totals::of(replays.iter().flat_map(|r| &r.calls));
    let _ = writeln!(
        out,
        "{:<34} {:>16} {:>20} {:>6.1}% {:>12.1}",
        format!("total ({} calls)", t.calls),
        arrow(t.full_messages, t.sent_messages),
        arrow(t.full_tokens, t.sent_tokens),
        t.saved(),
        if t.calls == 0 { 0.0 } else { t.curation_us / t.calls as f64 }
    );
    if !per_call {
        out.push_str("(curation µs: mean per call)\n");
    }
    out
}

fn short(id: &str, max: usize) -> String {
    if id.chars().count() <= max {
        id.to_owned()
    } else {
        let cut: String = id.chars().take(max - 1).collect();
        format!("{cut}…")
    }
}
