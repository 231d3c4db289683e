//! `curator replay`: replay conversations as an agent loop would, then print the table or
//! JSON, and write the report and the session file asked for.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::input::Input;
use crate::pipeline::{Pipeline, describe};
use crate::replayed::{self, Replayed, Totals};
use crate::session_file;

/// What to do with a replay besides printing it.
pub(crate) struct Options<'a> {
    pub(crate) check: bool,
    pub(crate) report: Option<&'a Path>,
    pub(crate) db: Option<&'a Path>,
    pub(crate) per_call: bool,
    pub(crate) json: bool,
    pub(crate) title: String,
}

/// Replays every conversation of `input`; exits 1 at the first view a provider would refuse.
pub(crate) fn run(input: &Input, pipeline: &Pipeline, options: &Options<'_>) -> Result<ExitCode> {
    let progress = std::io::stderr().is_terminal() && input.conversations.len() > 5;
    let mut replays: Vec<Replayed> = Vec::with_capacity(input.conversations.len());
    for (n, conversation) in input.conversations.iter().enumerate() {
        if progress {
            let done = (n + 1) * 30 / input.conversations.len();
            eprint!(
                "\r[{}{}] {}/{} conversations",
                "#".repeat(done),
                " ".repeat(30 - done),
                n + 1,
                input.conversations.len()
            );
        }
        let replayed = replayed::replay(conversation, pipeline, options.check)?;
        if let Some((call, problem)) = &replayed.violation {
            if progress {
                eprintln!();
            }
            eprintln!("{}: call {call}: {problem}", replayed.id);
            return Ok(ExitCode::from(1));
        }
        replays.push(replayed);
    }
    if progress {
        eprintln!();
    }
    let per_call = options.per_call || replays.len() == 1;
    if options.json {
        let totals = Totals::of(replays.iter().flat_map(|r| &r.calls));
        let document = serde_json::json!({"pipeline": pipeline.config, "conversations": replays, "totals": totals});
        println!("{}", serde_json::to_string_pretty(&document)?);
    } else {
        println!("pipeline: {}", describe(&pipeline.config));
        print!("{}", replayed::table(&replays, per_call));
    }
    if let Some(path) = options.report {
        let page = crate::report::html(&options.title, &describe(&pipeline.config), &replays);
        std::fs::write(path, page).with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("report: {}", path.display());
    }
    if let Some(path) = options.db {
        let recorded = session_file::record(path, &input.conversations)?;
        eprintln!(
            "recorded {recorded} messages of {} conversations into {}",
            input.conversations.len(),
            path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
