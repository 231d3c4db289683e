//! `curator curate`: write the messages a provider would be sent.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use curator::model::validate;
use curator::strategies::{CurationContext, History, TokenCounter, View};
use serde_json::Value;

use crate::input::{self, Format, Input, Layout};
use crate::pipeline::Pipeline;

fn tokens(
    counter: &dyn TokenCounter,
    messages: &[impl std::borrow::Borrow<curator::model::Message>],
) -> u64 {
    messages.iter().map(|m| counter.count_message(m.borrow())).sum::<u64>()
        + counter.reply_priming()
}

/// Curates every conversation of `input` and writes the views, in `to` or the input's format,
/// to `output` or stdout; with `check`, exits 1 when the input or a view breaks a provider rule.
pub(crate) fn run(
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
