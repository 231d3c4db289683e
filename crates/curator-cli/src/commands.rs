//! What each command does.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use curator::model::validate;
use curator::strategies::{CurationContext, History, TokenCounter, View};
use serde_json::Value;

use crate::Command;
use crate::input::{self, Format, Input, Layout};
use crate::pipeline::{Pipeline, describe};
use crate::replay::{self, Replayed, Totals};

pub(crate) fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Curate { file, format, to, output, check, pipeline } => {
            let input = input::read(&file, format)?;
            curate(&input, to, output.as_deref(), check, &pipeline.build()?)
        }
        Command::Replay { file, format, check, report, db, per_call, json, pipeline } => {
            let input = input::read(&file, format)?;
            let title = format!("curator replay of {}", file.display());
            replay_command(
                &input,
                &pipeline.build()?,
                &ReplayOptions {
                    check,
                    report: report.as_deref(),
                    db: db.as_deref(),
                    per_call,
                    json,
                    title,
                },
            )
        }
        Command::Inspect { db } => {
            print!("{}", crate::inspect::inspect(&db)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Trace { db, evaluation, view, raw, usage, pipeline } => {
            print!(
                "{}",
                crate::inspect::trace(
                    &db,
                    evaluation.as_deref(),
                    view,
                    raw,
                    usage,
                    &pipeline.build()?
                )?
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo => crate::demo::run(),
    }
}

fn tokens(
    counter: &dyn TokenCounter,
    messages: &[impl std::borrow::Borrow<curator::model::Message>],
) -> u64 {
    messages.iter().map(|m| counter.count_message(m.borrow())).sum::<u64>()
        + counter.reply_priming()
}

fn curate(
    input: &Input,
    to: Option<Format>,
    output: Option<&Path>,
    check: bool,
    pipeline: &Pipeline,
) -> Result<ExitCode> {
    let ctx = CurationContext::default();
    let mut documents = Vec::with_capacity(input.conversations.len());
    let mut violations = 0;
    for conversation in &input.conversations {
        let target = to.unwrap_or(conversation.format);
        let rules = |messages: &[curator::strategies::MessageRef<'_>]| match target {
            Format::Anthropic => validate::anthropic(messages),
            _ => validate::openai(messages),
        };
        let history = History::from(conversation.messages.as_slice());
        if check {
            let all: Vec<_> = View::full(&history).messages();
            if let Err(v) = rules(&all) {
                eprintln!("{}: the input breaks a provider rule: {v}", conversation.id);
                violations += 1;
            }
        }
        let view = pipeline.manager.curate(View::full(&history), &ctx)?;
        let sent = view.messages();
        if check && let Err(v) = rules(&sent) {
            eprintln!("{}: the curated view breaks a provider rule: {v}", conversation.id);
            violations += 1;
        }
        eprintln!(
            "{}: {} messages, {} tokens → {} messages, {} tokens",
            conversation.id,
            conversation.messages.len(),
            tokens(&*pipeline.counter, &conversation.messages),
            sent.len(),
            tokens(&*pipeline.counter, &sent)
        );
        let (messages, system) = input::write_messages(&sent, target)?;
        documents.push(match &conversation.envelope {
            None if input.layout == Layout::Array && system.is_none() => messages,
            envelope => {
                let mut object = envelope.clone().unwrap_or_default();
                object.insert("messages".into(), messages);
                object.remove("system");
                if let Some(system) = system {
                    object.insert("system".into(), system);
                }
                Value::Object(object)
            }
        });
    }
    let text = match input.layout {
        Layout::Lines => documents.iter().fold(String::new(), |mut out, d| {
            out.push_str(&d.to_string());
            out.push('\n');
            out
        }),
        _ => format!(
            "{}\n",
            serde_json::to_string_pretty(documents.first().unwrap_or(&Value::Null))?
        ),
    };
    match output {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(if violations > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

pub(crate) struct ReplayOptions<'a> {
    pub(crate) check: bool,
    pub(crate) report: Option<&'a Path>,
    pub(crate) db: Option<&'a Path>,
    pub(crate) per_call: bool,
    pub(crate) json: bool,
    pub(crate) title: String,
}

pub(crate) fn replay_command(
    input: &Input,
    pipeline: &Pipeline,
    options: &ReplayOptions<'_>,
) -> Result<ExitCode> {
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
        let replayed = replay::replay(conversation, pipeline, options.check)?;
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
        print!("{}", replay::table(&replays, per_call));
    }
    if let Some(path) = options.report {
        let page = crate::report::html(&options.title, &describe(&pipeline.config), &replays);
        std::fs::write(path, page).with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("report: {}", path.display());
    }
    if let Some(path) = options.db {
        let recorded = replay::record(path, &input.conversations)?;
        eprintln!(
            "recorded {recorded} messages of {} conversations into {}",
            input.conversations.len(),
            path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
