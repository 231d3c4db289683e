//! `curator`: see what curation does to your own agent conversations.
//!
//! `curator curate`, `replay`, `inspect`, `trace` and `demo`; run `curator --help`. This file
//! holds the command line and sends each command to its module in `commands/`.
#![expect(clippy::print_stdout, clippy::print_stderr, reason = "a command-line program")]
#![expect(clippy::cast_precision_loss, reason = "counts become percentages and chart coordinates")]

mod commands;
mod input;
mod pipeline;
mod replayed;
mod report;
mod session_file;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::commands::trace::ViewKind;
use crate::commands::{curate, demo, inspect, replay, trace};
use crate::input::Format;
use crate::pipeline::PipelineArgs;

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
    Curate {
        /// A JSON array of messages, an object with `messages`, or JSON Lines.
        file: PathBuf,
        /// The input format.
        #[arg(long, value_enum, default_value = "auto")]
        format: Format,
        /// The output format (the input's by default).
        #[arg(long, value_enum)]
        to: Option<Format>,
        /// Write here instead of stdout.
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// Exit 1 when the input or the curated view breaks the provider's rules.
        #[arg(long)]
        check: bool,
        #[command(flatten)]
        pipeline: PipelineArgs,
    },
    /// Replay conversations as an agent loop would, curating before every assistant message.
    Replay {
        /// A JSON array of messages, an object with `messages`, or JSON Lines.
        file: PathBuf,
        /// The input format.
        #[arg(long, value_enum, default_value = "auto")]
        format: Format,
        /// Validate every view against both providers' rules; exit 1 at the first violation.
        #[arg(long)]
        check: bool,
        /// Write a self-contained HTML report (charts and table) here.
        #[arg(long, value_name = "FILE.html")]
        report: Option<PathBuf>,
        /// Also record the conversations into this SQLite session file.
        #[arg(long, value_name = "FILE")]
        db: Option<PathBuf>,
        /// One row per provider call (the default for a single conversation).
        #[arg(long)]
        per_call: bool,
        /// Print the results as JSON instead of a table.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        pipeline: PipelineArgs,
    },
    /// List the evaluations of a session file.
    Inspect {
        /// A SQLite session file.
        db: PathBuf,
        /// Only the evaluations of this session key.
        #[arg(long)]
        key: Option<String>,
    },
    /// Show the record of one evaluation, or the view a pipeline would send.
    Trace {
        /// A SQLite session file.
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
        #[command(flatten)]
        pipeline: PipelineArgs,
    },
    /// Replay an example agent session that ships with curator and record it to a temporary
    /// session file.
    Demo,
}

/// Runs one command.
fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Curate { file, format, to, output, check, pipeline } => {
            let input = input::read(&file, format)?;
            curate::run(&input, to, output.as_deref(), check, &pipeline.build()?)
        }
        Command::Replay { file, format, check, report, db, per_call, json, pipeline } => {
            let input = input::read(&file, format)?;
            let title = format!("curator replay of {}", file.display());
            replay::run(
                &input,
                &pipeline.build()?,
                &replay::Options {
                    check,
                    report: report.as_deref(),
                    db: db.as_deref(),
                    per_call,
                    json,
                    title,
                },
            )
        }
        Command::Inspect { db, key } => {
            print!("{}", inspect::run(&db, key.as_deref())?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Trace { db, evaluation, key, view, raw, usage, pipeline } => {
            let which = trace::Which { evaluation: evaluation.as_deref(), key: key.as_deref() };
            print!("{}", trace::run(&db, which, view, raw, usage, &pipeline.build()?)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo => demo::run(),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}
