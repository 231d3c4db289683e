//! `curator replay`: replay conversations as an agent loop would, then print the table or
//! JSON, and write the report and the session file asked for.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::billed::Rates;
use crate::input::{self, Format, Source};
use crate::output::{Chain, note, note_inline, outln, plural};
use crate::pipeline::{PipelineArgs, Pipelines, describe};
use crate::replayed::{self, Replayed, Rows, Totals};
use crate::report;
use crate::session_file::{self, Recorded, Recorder};

/// Where to write the HTML report.
#[derive(Debug)]
pub(crate) struct ReportTo<'a> {
    pub(crate) path: &'a Path,
    /// Say where it was written (the demo says it itself).
    pub(crate) announce: bool,
    pub(crate) title: String,
    /// US dollars per million input tokens, for the cost.
    pub(crate) price: f64,
}

/// Which session file to record into.
#[derive(Debug)]
pub(crate) struct RecordTo<'a> {
    pub(crate) path: &'a Path,
    /// Record a conversation the file already holds again, under a new id.
    pub(crate) again: bool,
}

/// What to do with a replay besides printing it.
#[derive(Debug)]
pub(crate) struct Options<'a> {
    pub(crate) format: Format,
    pub(crate) check: bool,
    pub(crate) report: Option<ReportTo<'a>>,
    pub(crate) db: Option<RecordTo<'a>>,
    /// The table's rows, when forced.
    pub(crate) rows: Option<Rows>,
    pub(crate) json: bool,
    /// The prices bills are priced at.
    pub(crate) rates: Rates,
}

/// A progress bar on stderr, when it is a terminal and there is enough to wait for: the
/// conversations done, and within a long conversation the messages replayed.
struct Progress {
    total: usize,
    shown: bool,
    /// Whether stderr is a terminal.
    terminal: bool,
    /// When the messages of a long conversation were last shown.
    last: std::cell::Cell<Option<std::time::Instant>>,
}

/// Conversations with at least this many messages show their own progress.
const LONG: usize = 1_000;

impl Progress {
    fn new(sources: &[Source]) -> Self {
        let last = std::cell::Cell::new(None);
        if !std::io::stderr().is_terminal() {
            return Progress { total: 0, shown: false, terminal: false, last };
        }
        let total = sources.iter().map(Source::estimate_count).sum();
        Progress { total, shown: total > 5, terminal: true, last }
    }

    /// Within a long conversation: the messages replayed, at most five times a second.
    fn messages(&self, name: &str, done: usize, total: usize) {
        if !self.terminal || total < LONG {
            return;
        }
        let now = std::time::Instant::now();
        let due = self.last.get().is_none_or(|at| now.duration_since(at).as_millis() >= 200);
        if due || done + 1 == total {
            self.last.set(Some(now));
            note_inline!("\r\x1b[K{}", messages_line(name, done + 1, total));
        }
    }

    /// Ends a long conversation's line.
    fn messages_done(&self, total: usize) {
        if self.terminal && total >= LONG && !self.shown {
            note!();
        }
    }

    fn update(&self, done: usize) {
        if self.shown {
            let total = self.total.max(done);
            let filled = done * 30 / total;
            note_inline!(
                "\r[{}{}] {done}/{total} conversations",
                "#".repeat(filled),
                " ".repeat(30 - filled)
            );
        }
    }

    /// Ends the bar's line before a note.
    fn break_line(&self) {
        if self.shown {
            note!();
        }
    }
}

/// The conversations replayed, and how many could not be read.
struct Replays {
    replays: Vec<Replayed>,
    unreadable: usize,
}

/// The progress line of a long conversation.
fn messages_line(name: &str, done: usize, total: usize) -> String {
    format!("{name}: {done}/{total} messages replayed ({}%)", done * 100 / total.max(1))
}

/// Replays every conversation of every source, one at a time.
///
/// Exit status: 2 when a source or a conversation could not be read or curated (the others
/// are still replayed and reported), else 1 with `check` when a view or an input breaks a provider
/// rule, else 0.
pub(crate) fn run(
    sources: &[Source],
    args: &PipelineArgs,
    options: &Options<'_>,
) -> Result<ExitCode> {
    let mut pipelines = args.pipelines()?;
    if !options.json {
        // Printed first, so that a reader that wants only the start (`| head -1`) has it at
        // once and, by going away, lets the replay stop early.
        outln!("pipeline: {}", describe(&pipelines.plain().config))?;
    }
    let Replays { replays, unreadable } = replay_all(sources, &mut pipelines, options)?;
    let rows = options.rows.unwrap_or(if sources.len() > 1 {
        Rows::File
    } else if replays.len() == 1 {
        Rows::Call
    } else {
        Rows::Conversation
    });
    let config = &pipelines.plain().config;
    if let Some(to) = &options.report {
        let page = report::html(
            &report::Page { title: &to.title, pipeline: config, price: to.price },
            &replays,
        );
        std::fs::write(to.path, page)
            .with_context(|| format!("cannot write {}", to.path.display()))?;
        if to.announce {
            note!("report: {}", to.path.display());
        }
    }
    let violations: usize = replays.iter().map(|r| r.violations).sum();
    if options.json {
        let totals = Totals::of(replays.iter().flat_map(|r| &r.calls));
        let evidence = crate::evidence::Summary::of(
            replays.iter().flat_map(|r| r.calls.iter().map(|c| c.evidence)),
        );
        let verbatim = crate::evidence::Summary::of(
            replays.iter().flat_map(|r| r.calls.iter().map(|c| c.verbatim)),
        );
        let document = serde_json::json!({
            "pipeline": config,
            "conversations": replays,
            "totals": totals,
            "cost": options.rates.costs(&totals.billed, &totals.everything),
            "evidence": evidence,
            "verbatim_evidence": verbatim,
            "violations": violations,
            "unreadable": unreadable,
        });
        let text = serde_json::to_string_pretty(&document)?;
        outln!("{text}")?;
    } else {
        crate::output::out_str(&replayed::table(&replays, rows, &options.rates))?;
    }
    Ok(if unreadable > 0 {
        ExitCode::from(2)
    } else if options.check && violations > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Reads and replays every conversation, recording them when asked; notes on stderr what
/// could not be read, what was already recorded and (with `check`) what breaks a rule.
/// Notes what went wrong in a replayed conversation (named `named`): the calls refused, and
/// with `check` the first view that breaks a provider's rules.
fn say_problems(named: &str, replayed: &Replayed, check: bool) {
    if let Some(first) = replayed.refused.first() {
        let calls = match replayed.refused.len() {
            1 => "1 call".to_owned(),
            n => format!("{n} calls"),
        };
        note!(
            "{named}: {calls} refused (nothing sent), the first at message {}: {}",
            first.message,
            first.reason
        );
    }
    if check && let Some((call, problem)) = &replayed.violation {
        match call {
            0 => note!("{named}: {problem}"),
            call => note!("{named}: call {call}: {problem}"),
        }
    }
}

fn replay_all(
    sources: &[Source],
    pipelines: &mut Pipelines,
    options: &Options<'_>,
) -> Result<Replays> {
    let mut recorder =
        options.db.as_ref().map(|to| Recorder::open(to.path, to.again)).transpose()?;
    let (mut new_ones, mut skipped) = (0, 0);
    let progress = Progress::new(sources);
    let mut unreadable = 0;
    let mut replays: Vec<Replayed> = Vec::new();
    for source in sources {
        let name = source.name();
        let reader = match source.open(options.format) {
            Ok(reader) => reader,
            Err(error) => {
                progress.break_line();
                note!("error: {}", Chain(&error));
                unreadable += 1;
                continue;
            }
        };
        for item in reader {
            let conversation = match item {
                Ok(conversation) => conversation,
                Err(failed) => {
                    progress.break_line();
                    note!("{}: {}", input::naming(&name, &failed.id), Chain(&failed.error));
                    unreadable += 1;
                    continue;
                }
            };
            let pipeline = pipelines.for_tools(conversation.tools())?;
            let id = conversation.id.clone();
            let own_id = conversation.has_own_id();
            // A pipeline that fails on one conversation is reported, and the others go on (a
            // call whose budget is too small for what is never dropped is counted, not a
            // failure).
            let messages = conversation.messages.len();
            let label = input::naming(&name, &id);
            let mut on_message = |done, total| progress.messages(&label, done, total);
            let replayed = replayed::replay(
                &name,
                conversation,
                pipeline,
                options.report.is_some(),
                &mut on_message,
            );
            progress.messages_done(messages);
            let (replayed, history) = match replayed {
                Ok(done) => done,
                Err(error) => {
                    progress.break_line();
                    let error = crate::pipeline::explain(error, pipeline.tools_tokens);
                    note!("{}: {}", input::naming(&name, &id), Chain(&error));
                    unreadable += 1;
                    continue;
                }
            };
            if let Some(recorder) = &mut recorder {
                match recorder.record(&replayed.id, own_id, history.messages())? {
                    Recorded::New { id, renamed_from, .. } => {
                        new_ones += 1;
                        if let Some(given) = renamed_from {
                            progress.break_line();
                            note!(
                                "{given}: another conversation with this id, whose messages differ, is already recorded; recorded this one as `{id}`"
                            );
                        }
                    }
                    Recorded::Skipped { key, evaluation } => {
                        skipped += 1;
                        progress.break_line();
                        note!(
                            "{key}: already recorded as evaluation {evaluation}; not recorded again (--db-again records it under a new id)"
                        );
                    }
                }
            }
            drop(history);
            if !replayed.refused.is_empty() || (options.check && replayed.violation.is_some()) {
                progress.break_line();
                say_problems(&input::naming(&name, &id), &replayed, options.check);
            }
            replays.push(replayed);
            progress.update(replays.len());
            // Only stdout wants the results: when its reader has gone, stop (as a write into
            // the closed pipe would), and `main` exits quietly.
            if options.report.is_none() && options.db.is_none() && crate::output::stdout_closed() {
                progress.break_line();
                return Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe).into());
            }
        }
    }
    progress.break_line();
    if let Some(to) = &options.db {
        note!(
            "recorded {} into {}{}",
            plural(new_ones, "conversation", "conversations"),
            session_file::name(to.path),
            if skipped > 0 {
                format!(" ({skipped} already there, skipped)")
            } else {
                String::new()
            }
        );
    }
    Ok(Replays { replays, unreadable })
}
