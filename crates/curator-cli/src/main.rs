//! `curator`: see what curation does to your own agent conversations.
//!
//! `curator curate`, `replay`, `inspect`, `trace`, `demo` and `chat`; run `curator --help`. This file
//! holds the command line and sends each command to its module in `commands/`.
#![expect(clippy::cast_precision_loss, reason = "counts become percentages and chart coordinates")]

mod billed;
mod commands;
mod evidence;
mod input;
mod output;
mod pipeline;
mod replayed;
mod report;
mod session_file;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::commands::trace::ViewKind;
use crate::commands::{chat, curate, demo, inspect, prune, replay, trace};
use crate::input::{Format, Source};
use crate::output::note;
use crate::pipeline::PipelineArgs;
use crate::replayed::Rows;

/// See what curation does to your agent conversations.
#[derive(Parser, Debug)]
#[command(name = "curator", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Curate conversations and write the messages a provider would be sent.
    #[command(after_help = pipeline::default_pipeline_help())]
    Curate {
        /// Files (a JSON array of messages, an object with `messages`, or JSON Lines) and
        /// folders (their .json and .jsonl files).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// The input format.
        #[arg(long, value_enum, default_value = "auto")]
        format: Format,
        /// The output format (the input's by default, or with `auto`).
        #[arg(long, value_enum)]
        to: Option<Format>,
        /// Write here instead of stdout (a folder, one file per input, for several inputs).
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// Exit 1 when the input or the curated view breaks the provider's rules.
        #[arg(long)]
        check: bool,
        /// Write the view of a conversation some of whose messages no provider takes (a tool
        /// result that answers no call, a call closed before its result, one of two calls
        /// sharing an id), without them; by default such a conversation is refused.
        #[arg(long)]
        drop_unsendable: bool,
        #[command(flatten)]
        pipeline: PipelineArgs,
    },
    /// Replay conversations as an agent loop would, curating before every assistant message.
    #[command(after_help = pipeline::default_pipeline_help())]
    Replay {
        /// Files (a JSON array of messages, an object with `messages`, or JSON Lines) and
        /// folders (their .json and .jsonl files).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// The input format.
        #[arg(long, value_enum, default_value = "auto")]
        format: Format,
        /// Exit 1 when an input or a view breaks a provider's rules, naming each.
        #[arg(long)]
        check: bool,
        /// Write a self-contained HTML report (overview, charts, context maps) here.
        #[arg(long, value_name = "FILE.html")]
        report: Option<PathBuf>,
        /// The price, in US dollars per million input tokens, for the report's cost.
        #[arg(long, value_name = "USD", default_value_t = report::DEFAULT_PRICE)]
        price: f64,
        /// Price the calls, prompt cache counted, at this model's prices (`gpt-5`,
        /// `claude-sonnet-4-5`; from the bundled genai-prices data). Without it, costs are
        /// in multiples of the input price, with a cache read at 0.1x and a write at 1.25x.
        #[arg(long, value_name = "MODEL")]
        model: Option<String>,
        /// Also record the conversations into this SQLite session file, or the PostgreSQL
        /// database of this `postgres://` URL (a conversation already there, by its id, is
        /// skipped).
        #[arg(long, value_name = "FILE|URL")]
        db: Option<PathBuf>,
        /// With --db, record a conversation already there again, under a new id (`ID (2)`).
        #[arg(long, requires = "db")]
        db_again: bool,
        /// One row per provider call (the default for a single conversation).
        #[arg(long, conflicts_with = "per_conversation")]
        per_call: bool,
        /// One row per conversation (the default for one file of several conversations).
        #[arg(long)]
        per_conversation: bool,
        /// Print the results as JSON instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        pipeline: PipelineArgs,
    },
    /// List the evaluations of a session file.
    Inspect {
        /// A SQLite session file, or a PostgreSQL database's `postgres://` URL.
        #[arg(value_name = "FILE|URL")]
        db: PathBuf,
        /// Only the evaluations of this session key.
        #[arg(long)]
        key: Option<String>,
        /// Price the recorded model calls at this model's prices (`gpt-5`,
        /// `claude-sonnet-4-5`, ...), prompt cache counted.
        #[arg(long, value_name = "NAME")]
        model: Option<String>,
        /// Print session keys and prompt names as recorded: a secret in one (a token in a
        /// key) is redacted unless this is given.
        #[arg(long)]
        show_secrets: bool,
    },
    /// Delete what is no longer needed: a session (`--key`), all but the last evaluations of
    /// each session (`--keep-last N`), or those older than a date or an age
    /// (`--older-than 2026-01-31 | 30d`). A session a worker holds (a live claim) is left
    /// alone.
    Prune {
        /// A SQLite session file, or a PostgreSQL database's `postgres://` URL.
        #[arg(value_name = "FILE|URL")]
        db: PathBuf,
        /// Delete the evaluations of this session key and its loop sessions' saved turns
        /// (`curator chat`'s conversation among them).
        #[arg(long)]
        key: Option<String>,
        /// Keep the newest N evaluations of each session, delete the rest.
        #[arg(long, value_name = "N")]
        keep_last: Option<usize>,
        /// Delete the evaluations whose newest message is older than this: a date
        /// (2026-01-31), an RFC 3339 time, or an age (30d, 12h, 90m).
        #[arg(long, value_name = "WHEN")]
        older_than: Option<String>,
        /// Say what would be deleted, delete nothing.
        #[arg(long)]
        dry_run: bool,
        /// Give the space back afterwards (SQLite: `VACUUM`, the file shrinks; PostgreSQL:
        /// `VACUUM` of the tables).
        #[arg(long)]
        vacuum: bool,
    },
    /// Show the record of one evaluation, or the view a pipeline would send.
    Trace {
        /// A SQLite session file, or a PostgreSQL database's `postgres://` URL.
        #[arg(value_name = "FILE|URL")]
        db: PathBuf,
        /// The evaluation (the latest by default).
        #[arg(long)]
        evaluation: Option<String>,
        /// The session key: its latest evaluation by default, and an evaluation of another
        /// key is refused.
        #[arg(long)]
        key: Option<String>,
        /// The record, or the curated view.
        #[arg(long, value_enum, default_value = "record")]
        view: ViewKind,
        /// Print each message as JSON.
        #[arg(long)]
        raw: bool,
        /// Show the tokens of each message.
        #[arg(long)]
        usage: bool,
        /// Price the recorded model calls at this model's prices (`gpt-5`,
        /// `claude-sonnet-4-5`, ...), prompt cache counted.
        #[arg(long, value_name = "NAME")]
        model: Option<String>,
        /// Print secrets as recorded (by default what is printed is redacted).
        #[arg(long)]
        show_secrets: bool,
        #[command(flatten)]
        pipeline: PipelineArgs,
    },
    /// Replay an example agent session that ships with curator and record it to a temporary
    /// session file.
    Demo,
    /// Talk with a model behind an OpenAI-compatible server; Ctrl-C pauses, the same command
    /// resumes.
    Chat(chat::ChatArgs),
}

/// Runs one command.
fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Curate { files, format, to, output, check, drop_unsendable, pipeline } => {
            let sources = sources(&files)?;
            curate::run(
                &sources,
                &pipeline,
                &curate::Options { format, to, output: output.as_deref(), check, drop_unsendable },
            )
        }
        Command::Replay {
            files,
            format,
            check,
            report,
            price,
            model,
            db,
            db_again,
            per_call,
            per_conversation,
            json,
            pipeline,
        } => {
            let sources = sources(&files)?;
            let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
            let rows = if per_call {
                Some(Rows::Call)
            } else if per_conversation {
                Some(Rows::Conversation)
            } else {
                None
            };
            replay::run(
                &sources,
                &pipeline,
                &replay::Options {
                    format,
                    check,
                    report: report.as_deref().map(|path| replay::ReportTo {
                        path,
                        announce: true,
                        title: format!("curator replay of {}", names.join(", ")),
                        price,
                    }),
                    db: db.as_deref().map(|path| replay::RecordTo { path, again: db_again }),
                    rows,
                    json,
                    rates: billed::Rates::of(model.as_deref())?,
                },
            )
        }
        Command::Inspect { db, key, model, show_secrets } => {
            let prices = billed::prices_of(model.as_deref())?;
            let redactor = (!show_secrets).then(curator::strategies::Redactor::new);
            let listing = inspect::run(&db, key.as_deref(), prices.as_ref(), redactor.as_ref())?;
            output::out_str(&listing)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Prune { db, key, keep_last, older_than, dry_run, vacuum } => {
            let rule = prune::Rule { key, keep_last, older_than };
            output::out_str(&prune::run(&db, &rule, dry_run, vacuum)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Trace { db, evaluation, key, view, raw, usage, model, show_secrets, pipeline } => {
            let which = trace::Which { evaluation: evaluation.as_deref(), key: key.as_deref() };
            let prices = billed::prices_of(model.as_deref())?;
            let shown = trace::Shown { raw, usage, prices: prices.as_ref(), secrets: show_secrets };
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            trace::run(&db, which, view, shown, &pipeline.build()?, &mut out)?;
            std::io::Write::flush(&mut out)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo => demo::run(),
        Command::Chat(args) => chat::run(&args),
    }
}

fn sources(files: &[PathBuf]) -> Result<Vec<Source>> {
    Ok(input::expand(files)?.into_iter().map(Source::File).collect())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match run(cli.command) {
        Ok(code) => code,
        // The reader of our output has gone (`curator replay --json | head`): nothing is
        // wrong, and nobody is left to tell. Exit quietly, with 0, as ripgrep does.
        Err(error) if output::is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            note!("error: {}", output::Chain(&error));
            ExitCode::from(2)
        }
    };
    if std::env::var_os("CURATOR_PEAK_RSS").is_some()
        && let Some(kb) = output::peak_rss_kb()
    {
        note!("peak RSS: {kb} kB");
    }
    code
}
