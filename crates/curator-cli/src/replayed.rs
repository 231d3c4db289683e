//! A conversation replayed as an agent loop would run it, curating before every assistant
//! message: what each provider call would have sent, what curation saved, the evidence it
//! kept, what it did to each message (the context map), and the table of it.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use curator::model::{Role, validate};

use crate::pipeline::explain;
use curator::strategies::{History, HistoryManagerExt, MessageRef, View};

use crate::billed::{Bills, Meter, Rates, money};
use crate::evidence::{self, Score, Summary};
use crate::input::{Conversation, Format};
use crate::output::plural;
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
    /// The evidence the reply needed and the view kept.
    #[serde(flatten)]
    pub(crate) evidence: Score,
    /// The same, counting only what the view holds verbatim (not what curator's notes list).
    pub(crate) verbatim: Score,
    /// What the call is billed, the prompt cache counted.
    pub(crate) billed: Bills,
    /// What it would be billed sending the whole history.
    pub(crate) everything: Bills,
}

/// What a view did to one message of the history, for the context map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Cell {
    /// Not sent.
    Dropped = 0,
    /// Sent as recorded.
    Kept = 1,
    /// Sent changed: shortened (truncated, cleared) or rewritten (redacted).
    Shortened = 2,
    /// Not sent, but folded into a summary the view sends.
    Summarized = 3,
}

impl Cell {
    pub(crate) const ALL: [Cell; 4] =
        [Cell::Kept, Cell::Shortened, Cell::Summarized, Cell::Dropped];

    /// What the legend says.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Cell::Dropped => "dropped",
            Cell::Kept => "kept",
            Cell::Shortened => "shortened or rewritten",
            Cell::Summarized => "replaced by a summary",
        }
    }
}

/// One row per call: what its view did to each message before it.
fn map_row(view: &View<'_>, len: usize) -> Vec<Cell> {
    let mut row = vec![Cell::Dropped; len];
    let entries: Vec<_> = view.iter().collect();
    for (i, entry) in entries.iter().enumerate() {
        match entry.pos {
            Some(pos) if pos < len => {
                row[pos] = if matches!(entry.message, MessageRef::Borrowed(_)) {
                    Cell::Kept
                } else {
                    Cell::Shortened
                };
            }
            Some(_) => {}
            None => {
                // A summary stands for the messages missing where it sits.
                let from = entries[..i].iter().rev().find_map(|e| e.pos).map_or(0, |p| p + 1);
                let to = entries[i + 1..].iter().find_map(|e| e.pos).unwrap_or(len).min(len);
                for cell in row.iter_mut().take(to).skip(from) {
                    if *cell == Cell::Dropped {
                        *cell = Cell::Summarized;
                    }
                }
            }
        }
    }
    row
}

/// One replayed conversation.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Replayed {
    /// The file it came from.
    pub(crate) file: String,
    pub(crate) id: String,
    pub(crate) calls: Vec<Call>,
    /// Views (or the input) a provider would refuse.
    pub(crate) violations: usize,
    /// The first of them: (call number from 1, or 0 for the input; what is wrong).
    pub(crate) violation: Option<(usize, String)>,
    pub(crate) evidence: Summary,
    /// Evidence kept verbatim.
    pub(crate) verbatim: Summary,
    /// Tokens of the input's `tools` schemas, reserved from every budget.
    pub(crate) tools_tokens: u64,
    /// Calls for which the budget could not hold what curation never drops: nothing was
    /// sent for them, and they count in no total but this one.
    pub(crate) refused: Vec<Refused>,
    /// The context map, when asked for: one row per call.
    #[serde(skip)]
    pub(crate) map: Option<Vec<Vec<Cell>>>,
}

/// A call the pipeline refused with `BudgetTooSmall`, and its numbers.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Refused {
    /// Index of the assistant message of the call.
    pub(crate) message: usize,
    /// The budget's words: what must be sent and how many tokens each part takes.
    pub(crate) reason: String,
}

/// Totals over calls.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub(crate) struct Totals {
    pub(crate) calls: usize,
    pub(crate) full_tokens: u64,
    pub(crate) sent_tokens: u64,
    /// The most tokens one call sent.
    pub(crate) largest_view: u64,
    pub(crate) curation_us: f64,
    /// What the calls are billed, the prompt cache counted, and sending everything.
    pub(crate) billed: Bills,
    pub(crate) everything: Bills,
}

impl Totals {
    pub(crate) fn of<'a>(calls: impl IntoIterator<Item = &'a Call>) -> Self {
        calls.into_iter().fold(Totals::default(), |t, c| Totals {
            calls: t.calls + 1,
            full_tokens: t.full_tokens + c.full_tokens,
            sent_tokens: t.sent_tokens + c.sent_tokens,
            largest_view: t.largest_view.max(c.sent_tokens),
            curation_us: t.curation_us + c.curation_us,
            billed: t.billed.plus(c.billed),
            everything: t.everything.plus(c.everything),
        })
    }

    /// Tokens saved, in percent of the full history.
    pub(crate) fn saved(&self) -> f64 {
        saved(self.full_tokens, self.sent_tokens)
    }

    /// Mean curation time per call.
    pub(crate) fn mean_us(&self) -> f64 {
        if self.calls == 0 { 0.0 } else { self.curation_us / self.calls as f64 }
    }
}

pub(crate) fn saved(full: u64, sent: u64) -> f64 {
    if full == 0 { 0.0 } else { 100.0 * (1.0 - sent as f64 / full as f64) }
}

/// A share as a percentage, or `-` when there is none.
pub(crate) fn percent(share: Option<f64>) -> String {
    share.map_or_else(|| "-".to_owned(), |s| format!("{:.1}%", 100.0 * s))
}

/// The rules a view must keep: the Responses API's for Responses items (whose reasoning
/// and other items neither chat format carries), else both chat formats'.
fn rules(format: Format, messages: &[MessageRef<'_>]) -> Result<(), String> {
    if format == Format::Responses {
        return validate::responses(messages).map_err(|v| {
            format!("Responses API rule broken at view message {}: {}", v.index, v.kind)
        });
    }
    validate::openai(messages)
        .map_err(|v| format!("OpenAI rule broken at view message {}: {}", v.index, v.kind))?;
    validate::anthropic(messages)
        .map_err(|v| format!("Anthropic rule broken at view message {}: {}", v.index, v.kind))
}

/// Replays one conversation, moving its messages into the history it returns (for
/// recording); every view is checked against both providers' rules and the input against
/// its own format's. `map` asks for the context map; `progress` is told before each message
/// how many came before it, of how many.
pub(crate) fn replay(
    file: &str,
    conversation: Conversation,
    pipeline: &Pipeline,
    map: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(Replayed, History<'static>)> {
    let ctx = pipeline.context();
    let counter = &*pipeline.counter;
    let mut meter = Meter::new(Arc::clone(&pipeline.counter), conversation.tools());
    let Conversation { id, messages, format, .. } = conversation;
    let mut violations = 0;
    let mut violation = None;
    let input_rules = match format {
        Format::Anthropic => validate::anthropic(&messages),
        Format::Responses => validate::responses(&messages),
        _ => validate::openai(&messages),
    };
    if let Err(v) = input_rules {
        violations += 1;
        violation = Some((0, format!("the input breaks a provider rule: {v}")));
    }
    let mut history = History::new();
    // The whole history's tokens, kept as it grows (counting it again at every call would
    // make a replay quadratic in its length).
    let mut full_tokens = counter.reply_priming();
    let mut tracker = evidence::Tracker::new();
    let mut calls = Vec::new();
    let mut refused = Vec::new();
    let mut rows = Vec::new();
    let total = messages.len();
    for (index, message) in messages.into_iter().enumerate() {
        progress(index, total);
        if message.role() == Role::Assistant && !history.is_empty() {
            let started = Instant::now();
            let view = match pipeline.manager.curate_history(&history, &ctx) {
                Ok(view) => view,
                Err(error @ curator::strategies::Error::BudgetTooSmall(_)) => {
                    let reason = explain(error.into(), pipeline.tools_tokens).to_string();
                    refused.push(Refused { message: index, reason });
                    tracker.push(&message);
                    meter.push(&message);
                    full_tokens += counter.count_message(&message);
                    history.push(message);
                    continue;
                }
                Err(error) => return Err(error.into()),
            };
            let curation_us = started.elapsed().as_secs_f64() * 1e6;
            let sent = view.messages();
            let (billed, everything) = meter.call(&view);
            calls.push(Call {
                message: index,
                full_messages: history.len(),
                sent_messages: sent.len(),
                full_tokens,
                sent_tokens: view.tokens(counter),
                curation_us,
                evidence: tracker.score(&message, &view),
                verbatim: tracker.score_verbatim(&message, &view),
                billed,
                everything,
            });
            if let Err(problem) = rules(format, &sent) {
                violations += 1;
                violation.get_or_insert((calls.len(), problem));
            }
            if map {
                rows.push(map_row(&view, history.len()));
            }
        }
        tracker.push(&message);
        meter.push(&message);
        full_tokens += counter.count_message(&message);
        history.push(message);
    }
    let evidence = Summary::of(calls.iter().map(|c| c.evidence));
    let verbatim = Summary::of(calls.iter().map(|c| c.verbatim));
    let replayed = Replayed {
        file: file.to_owned(),
        id,
        calls,
        violations,
        violation,
        evidence,
        verbatim,
        tools_tokens: pipeline.tools_tokens,
        refused,
        map: map.then_some(rows),
    };
    Ok((replayed, history))
}

fn arrow<T: std::fmt::Display>(a: T, b: T) -> String {
    format!("{a} → {b}")
}

/// How the table groups rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rows {
    Call,
    Conversation,
    File,
}

/// The table of a replay: one row per call, conversation or file, then the totals and the
/// two closing lines (tokens saved, evidence kept).
pub(crate) fn table(replays: &[Replayed], rows: Rows, rates: &Rates) -> String {
    let mut out = String::new();
    match rows {
        Rows::Call => {
            let _ = writeln!(
                out,
                "{:<34} {:>16} {:>20} {:>7} {:>9} {:>12}",
                "call", "messages", "tokens", "saved", "evidence", "curation µs"
            );
            for replay in replays {
                for (n, c) in replay.calls.iter().enumerate() {
                    let _ = writeln!(
                        out,
                        "{:<34} {:>16} {:>20} {:>6.1}% {:>9} {:>12.1}",
                        format!("{} #{}", short(&replay.id, 28), n + 1),
                        arrow(c.full_messages, c.sent_messages),
                        arrow(c.full_tokens, c.sent_tokens),
                        saved(c.full_tokens, c.sent_tokens),
                        percent(c.evidence.share()),
                        c.curation_us
                    );
                }
            }
            out.push_str(
                "(messages and tokens: full history → sent; evidence: kept by the view)\n",
            );
        }
        Rows::Conversation => {
            let _ = writeln!(
                out,
                "{:<34} {:>5} {:>23} {:>7} {:>9} {:>7} {:>11}",
                "conversation",
                "calls",
                "tokens over all calls",
                "saved",
                "evidence",
                "worst",
                "µs per call"
            );
            for replay in replays {
                let t = Totals::of(&replay.calls);
                let _ = writeln!(
                    out,
                    "{:<34} {:>5} {:>23} {:>6.1}% {:>9} {:>7} {:>11.1}",
                    short(&replay.id, 34),
                    t.calls,
                    arrow(t.full_tokens, t.sent_tokens),
                    t.saved(),
                    percent(replay.evidence.mean),
                    percent(replay.evidence.worst),
                    t.mean_us()
                );
            }
            out.push_str("(tokens: full history → sent, summed over calls; evidence: mean over calls, worst: its worst call)\n");
        }
        Rows::File => {
            let _ = writeln!(
                out,
                "{:<34} {:>13} {:>5} {:>23} {:>7} {:>9} {:>7}",
                "file",
                "conversations",
                "calls",
                "tokens over all calls",
                "saved",
                "evidence",
                "worst"
            );
            let mut start = 0;
            while start < replays.len() {
                let file = &replays[start].file;
                let end = replays[start..]
                    .iter()
                    .position(|r| &r.file != file)
                    .map_or(replays.len(), |k| start + k);
                let group = &replays[start..end];
                let t = Totals::of(group.iter().flat_map(|r| &r.calls));
                let e = Summary::of(group.iter().flat_map(|r| r.calls.iter().map(|c| c.evidence)));
                let _ = writeln!(
                    out,
                    "{:<34} {:>13} {:>5} {:>23} {:>6.1}% {:>9} {:>7}",
                    short_path(file, 34),
                    group.len(),
                    t.calls,
                    arrow(t.full_tokens, t.sent_tokens),
                    t.saved(),
                    percent(e.mean),
                    percent(e.worst_decile)
                );
                start = end;
            }
            out.push_str("(tokens: full history → sent, summed over calls; evidence: mean over calls, worst: the worst decile of calls)\n");
        }
    }
    out.push_str(&closing(replays, rates));
    out
}

/// The closing lines: totals, tokens saved, evidence kept.
pub(crate) fn closing(replays: &[Replayed], rates: &Rates) -> String {
    let t = Totals::of(replays.iter().flat_map(|r| &r.calls));
    let e = Summary::of(replays.iter().flat_map(|r| r.calls.iter().map(|c| c.evidence)));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "total: {}, {}, {:.1} µs of curation per call",
        plural(replays.len(), "conversation", "conversations"),
        plural(t.calls, "call", "calls"),
        t.mean_us()
    );
    let _ = writeln!(
        out,
        "tokens saved: {:.1}% ({} → {} tokens over all calls; largest view {} tokens)",
        t.saved(),
        t.full_tokens,
        t.sent_tokens,
        t.largest_view
    );
    let costs = rates.costs(&t.billed, &t.everything);
    let _ = writeln!(
        out,
        "billed input, prompt cache counted: {:.2}x of sending everything under OpenAI's rule ({} → {}), {:.2}x under Anthropic's ({} → {})",
        costs.openai.ratio,
        money(costs.openai.everything),
        money(costs.openai.curated),
        costs.anthropic.ratio,
        money(costs.anthropic.everything),
        money(costs.anthropic.curated),
    );
    let _ = writeln!(
        out,
        "evidence kept: {} on average, {} in the worst decile of calls ({} needed none)",
        percent(e.mean),
        percent(e.worst_decile),
        plural(e.not_needed, "call", "calls")
    );
    let v = Summary::of(replays.iter().flat_map(|r| r.calls.iter().map(|c| c.verbatim)));
    let _ = writeln!(
        out,
        "evidence kept verbatim (not counting what curator's notes list): {} on average, {} in the worst decile",
        percent(v.mean),
        percent(v.worst_decile),
    );
    let with_tools: Vec<u64> = replays.iter().map(|r| r.tools_tokens).filter(|&t| t > 0).collect();
    if let (Some(least), Some(most)) = (with_tools.iter().min(), with_tools.iter().max()) {
        let range = if least == most { least.to_string() } else { format!("{least} to {most}") };
        let _ = writeln!(
            out,
            "tool schemas: {range} tokens reserved from every budget ({} with `tools`)",
            plural(with_tools.len(), "conversation", "conversations")
        );
    }
    let refused: Vec<(&Replayed, &Refused)> =
        replays.iter().flat_map(|r| r.refused.iter().map(move |c| (r, c))).collect();
    if let Some((replay, first)) = refused.first() {
        let _ = writeln!(
            out,
            "refused: {} whose budget cannot hold what is never dropped (sent nothing, counted in no total above); first: {} at message {}: {}",
            plural(refused.len(), "call", "calls"),
            replay.id,
            first.message,
            first.reason
        );
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

/// A path cut from the left, so the file name shows.
fn short_path(path: &str, max: usize) -> String {
    let count = path.chars().count();
    if count <= max {
        path.to_owned()
    } else {
        let cut: String = path.chars().skip(count - (max - 1)).collect();
        format!("…{cut}")
    }
}

#[cfg(test)]
mod tests {
    use curator::model::{Message, ToolCall};

    use super::*;

    #[test]
    fn the_map_tells_kept_shortened_summarized_and_dropped_apart() {
        let history = History::from(vec![
            Message::system("s"),
            Message::user("task"),
            Message::assistant("a"),
            Message::assistant_with_calls(None, vec![ToolCall::new("1", "ls", "{}")]),
            Message::tool_result("1", "long output"),
            Message::user("more"),
        ]);
        let full = View::full(&history);
        let mut edit = full.edit();
        edit.keep(0..2)
            .insert(Message::assistant("[summary]"))
            .keep(3..4)
            .replace(4, Message::tool_result("1", "lo…"))
            .keep(5..6);
        let view = edit.finish();
        assert_eq!(
            map_row(&view, 6),
            [Cell::Kept, Cell::Kept, Cell::Summarized, Cell::Kept, Cell::Shortened, Cell::Kept]
        );
        let dropped = full.retain(|e| e.pos != Some(2));
        assert_eq!(map_row(&dropped, 6)[2], Cell::Dropped);
    }
}
