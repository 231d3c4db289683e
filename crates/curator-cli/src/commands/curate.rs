//! `curator curate`: write the messages a provider would be sent.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use curator::model::{formats, validate};
use curator::strategies::{History, HistoryManagerExt, TokenCounter, View};
use serde_json::Value;

use crate::input::{self, Conversation, Format, Layout, Source};
use crate::output::{Chain, note, plural};
use crate::pipeline::PipelineArgs;

fn tokens(
    counter: &dyn TokenCounter,
    messages: &[impl std::borrow::Borrow<curator::model::Message>],
) -> u64 {
    messages.iter().map(|m| counter.count_message(m.borrow())).sum::<u64>()
        + counter.reply_priming()
}

/// What `curate` writes and checks.
#[derive(Debug)]
pub(crate) struct Options<'a> {
    pub(crate) format: Format,
    pub(crate) to: Option<Format>,
    /// A file (one source) or a folder (several), instead of stdout.
    pub(crate) output: Option<&'a Path>,
    pub(crate) check: bool,
    /// Write a view without the messages no provider takes, instead of refusing it.
    pub(crate) drop_unsendable: bool,
}

/// The file one source's curated conversations go to (`None`: stdout).
fn destination(source: &Source, several: bool, output: Option<&Path>) -> Result<Option<PathBuf>> {
    match (output, several) {
        (None, false) => Ok(None),
        (None, true) => bail!("several inputs: give --output FOLDER to write one file per input"),
        (Some(path), false) if !path.is_dir() => Ok(Some(path.to_owned())),
        (Some(folder), _) => {
            let name = match source {
                Source::File(path) => path.file_name().map(PathBuf::from),
                Source::Text { name, .. } => Some(PathBuf::from(name)),
            };
            let name = name.ok_or_else(|| anyhow::anyhow!("{} has no file name", source.name()))?;
            Ok(Some(folder.join(name)))
        }
    }
}

/// Refuses, before anything is written, an output file that is one of the inputs: creating it
/// would empty the input while it is still being read.
fn refuse_overwriting_inputs(sources: &[Source], outputs: &[Option<PathBuf>]) -> Result<()> {
    for output in outputs.iter().flatten() {
        for source in sources {
            if let Source::File(input) = source
                && same_file(input, output)
            {
                bail!(
                    "--output {} is one of the inputs ({}): writing it would destroy the input; write elsewhere",
                    output.display(),
                    input.display()
                );
            }
        }
    }
    Ok(())
}

/// Whether two paths name one existing file: the same canonical path, or (on Unix) the same
/// inode, as a hard link is.
fn same_file(a: &Path, b: &Path) -> bool {
    if let (Ok(a), Ok(b)) = (a.canonicalize(), b.canonicalize())
        && a == b
    {
        return true;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(a), Ok(b)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            return (a.dev(), a.ino()) == (b.dev(), b.ino());
        }
    }
    false
}

/// Opens a destination for writing.
fn create(path: Option<&Path>) -> Result<Box<dyn Write>> {
    let Some(path) = path else { return Ok(Box::new(BufWriter::new(std::io::stdout().lock()))) };
    let file = File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(Box::new(BufWriter::new(file)))
}

/// Curates every conversation of every source and writes the views, in `to` or the input's
/// format, mirroring the input's layout (JSON Lines are written a line at a time); with
/// `check`, exits 1 when an input or a view breaks a provider rule. A conversation that
/// cannot be read is reported and the others go on (exit 2 at the end).
pub(crate) fn run(
    sources: &[Source],
    args: &PipelineArgs,
    options: &Options<'_>,
) -> Result<ExitCode> {
    let several = sources.len() > 1;
    if several
        && let Some(output) = options.output
        && output.is_file()
    {
        bail!("several inputs: --output must be a folder, and {} is a file", output.display());
    }
    let mut names = std::collections::HashSet::new();
    for source in sources {
        if let Source::File(path) = source
            && several
            && !names.insert(path.file_name().map(ToOwned::to_owned))
        {
            bail!("two inputs are named {}: curate them one at a time", path.display());
        }
    }
    let outputs = sources
        .iter()
        .map(|source| destination(source, several, options.output))
        .collect::<Result<Vec<_>>>()?;
    refuse_overwriting_inputs(sources, &outputs)?;
    if several && let Some(folder) = options.output {
        std::fs::create_dir_all(folder)
            .with_context(|| format!("cannot create folder {}", folder.display()))?;
    }
    let mut pipelines = args.pipelines()?;
    let (mut violations, mut unreadable) = (0, 0);
    for (source, output) in sources.iter().zip(&outputs) {
        let reader = match source.open(options.format) {
            Ok(reader) => reader,
            Err(error) => {
                note!("error: {}", Chain(&error));
                unreadable += 1;
                continue;
            }
        };
        let layout = reader.layout();
        let mut out = create(output.as_deref())?;
        for item in reader {
            let conversation = match item {
                Ok(conversation) => conversation,
                Err(failed) => {
                    note!(
                        "{}: {}",
                        input::naming(&source.name(), &failed.id),
                        Chain(&failed.error)
                    );
                    unreadable += 1;
                    continue;
                }
            };
            let pipeline = pipelines.for_tools(conversation.tools())?;
            let id = conversation.id.clone();
            let (document, broken) = match curate_one(conversation, pipeline, options) {
                Ok(done) => done,
                Err(error) => {
                    let error = crate::pipeline::explain(error, pipeline.tools_tokens);
                    note!("{}: {}", input::naming(&source.name(), &id), Chain(&error));
                    unreadable += 1;
                    continue;
                }
            };
            violations += broken;
            if layout == Layout::Lines {
                serde_json::to_writer(&mut out, &document)?;
            } else {
                serde_json::to_writer_pretty(&mut out, &document)?;
            }
            out.write_all(b"\n")?;
        }
        out.flush()?;
    }
    Ok(if unreadable > 0 {
        ExitCode::from(2)
    } else if violations > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Says which messages of the input no provider would take, whatever the pipeline (a
/// result that answers no open call, a call closed without its result, one of two calls
/// sharing an id): coherence leaves them out of every view, so the conversation is refused
/// unless `drop` says to write its view without them (then a note names them). Calls still
/// waiting for their results at the end of a record are not counted: they are the record's
/// present, answered by the next step.
fn check_unsendable(id: &str, history: &History<'_>, drop: bool) -> Result<()> {
    let left_out = history.unsendable();
    if left_out.is_empty() {
        return Ok(());
    }
    let positions: Vec<String> = left_out.iter().map(ToString::to_string).collect();
    let what = format!(
        "{} message(s) of the input (at {}) answer no open call, call a tool whose result never comes (a system or user message came between) or share a call id: no provider takes them",
        left_out.len(),
        positions.join(", ")
    );
    if !drop {
        bail!("{what}; --drop-unsendable writes the view without them");
    }
    note!("{id}: {what}, so the view leaves them out");
    Ok(())
}

/// Curates one conversation: its output document and the number of rule violations found.
fn curate_one(
    conversation: Conversation,
    pipeline: &crate::pipeline::Pipeline,
    options: &Options<'_>,
) -> Result<(Document, usize)> {
    let Conversation { id, messages, format, envelope } = conversation;
    // `--to auto` is the input's own format, as leaving `--to` out is.
    let target = match options.to {
        None | Some(Format::Auto) => format,
        Some(to) => to,
    };
    let mut violations = 0;
    let history = History::from(messages);
    if options.check {
        // The input is a record in its own format: it may end with calls still waiting.
        let all: Vec<_> = View::full(&history).messages();
        let checked = match format {
            Format::Anthropic => validate::anthropic(&all),
            Format::Responses => validate::responses(&all),
            _ => validate::openai(&all),
        };
        if let Err(v) = checked {
            note!("{id}: the input breaks a provider rule: {v}");
            violations += 1;
        }
    }
    check_unsendable(&id, &history, options.drop_unsendable)?;
    let view = pipeline.manager.curate_history(&history, &pipeline.context())?;
    let sent = view.messages();
    let schemas = if pipeline.tools_tokens > 0 {
        format!(
            " (and the tool schemas' {} tokens, reserved from the budget)",
            pipeline.tools_tokens
        )
    } else {
        String::new()
    };
    note!(
        "{id}: {} messages, {} tokens → {} messages, {} tokens{schemas}",
        history.len(),
        tokens(&*pipeline.counter, history.messages()),
        sent.len(),
        tokens(&*pipeline.counter, &sent)
    );
    // The view is the request: checked as the target receives it, adapted when converted
    // (Responses items take every message as it is).
    let adapted = (target != format && target != Format::Responses).then(|| match target {
        Format::Anthropic => formats::anthropic::adapt(&sent),
        _ => formats::openai::adapt(&sent),
    });
    match target {
        _ if target == format => {}
        Format::Openai => left_out_fields(&id, &sent, curator::model::Format::OpenAi, "openai"),
        Format::Anthropic => {
            left_out_fields(&id, &sent, curator::model::Format::Anthropic, "anthropic");
        }
        // Responses items carry every message as it is.
        Format::Responses | Format::Auto => {}
    }
    if options.check {
        let checked = match (&adapted, target) {
            (Some(adapted), Format::Anthropic) => validate::anthropic_request(adapted),
            (Some(adapted), _) => validate::openai_request(adapted),
            (None, Format::Anthropic) => validate::anthropic_request(&sent),
            (None, Format::Responses) => validate::responses_request(&sent),
            (None, _) => validate::openai_request(&sent),
        };
        if let Err(v) = checked {
            note!("{id}: the curated view breaks a provider rule: {v}");
            violations += 1;
        }
    }
    let written = match &adapted {
        Some(adapted) => input::write_messages(adapted, target, target)?,
        None => input::write_messages(&sent, format, target)?,
    };
    // A bare array written as Anthropic needs an object for its `system`.
    let mut envelope = envelope.or_else(|| written.system.is_some().then(serde_json::Map::new));
    if let Some(object) = &mut envelope {
        object.remove("system");
        object.remove("messages");
        convert_tools(object, format, target)?;
        if options.check
            && let Some(tools) = object.get("tools").filter(|t| !t.is_null())
        {
            let checked = match target {
                Format::Anthropic => validate::anthropic_tools(tools),
                Format::Responses => validate::responses_tools(tools),
                _ => validate::openai_tools(tools),
            };
            if let Err(error) = checked {
                note!("{id}: the tools break a provider rule: {error}");
                violations += 1;
            }
        }
    }
    let document = Document { envelope, written };
    Ok((document, violations))
}

/// Converts the envelope's `tools` schemas when the target format is not the input's, so
/// that a request written `--to anthropic` carries Anthropic tools.
fn convert_tools(
    object: &mut serde_json::Map<String, Value>,
    from: Format,
    to: Format,
) -> Result<()> {
    let Some(tools) = object.get_mut("tools").filter(|t| !t.is_null()) else { return Ok(()) };
    *tools = match (from, to) {
        (Format::Anthropic, Format::Openai) => formats::openai::tools_from_anthropic(tools)?,
        (Format::Openai, Format::Anthropic) => formats::anthropic::tools_from_openai(tools)?,
        (Format::Responses, other) | (other, Format::Responses) if from != to => bail!(
            "the input has `tools`, and converting tool schemas between the Responses API and {} is not supported: leave out --to, or remove `tools`",
            if other == Format::Anthropic { "Anthropic" } else { "OpenAI Chat Completions" }
        ),
        _ => return Ok(()),
    };
    Ok(())
}

/// One curated conversation as written: the envelope's other fields (sorted, as a JSON
/// object's keys are), then `messages` and `system` as JSON text; the messages alone when
/// the input was a bare array.
#[derive(Debug)]
struct Document {
    envelope: Option<serde_json::Map<String, Value>>,
    written: input::Written,
}

impl serde::Serialize for Document {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let system = self.written.system.as_deref();
        let Some(envelope) = self.envelope.as_ref() else {
            return self.written.messages.serialize(serializer);
        };
        let mut keys: Vec<&str> = envelope.keys().map(String::as_str).collect();
        keys.push("messages");
        if system.is_some() {
            keys.push("system");
        }
        keys.sort_unstable();
        let mut map = serializer.serialize_map(Some(keys.len()))?;
        for key in keys {
            match (key, envelope.get(key)) {
                ("messages", _) => map.serialize_entry(key, &*self.written.messages)?,
                ("system", _) if system.is_some() => map.serialize_entry(key, &system)?,
                (_, Some(value)) => map.serialize_entry(key, value)?,
                (_, None) => {}
            }
        }
        map.end()
    }
}

/// Says which fields of the messages (and their tool calls) the conversion to `target`
/// leaves out: fields another format keeps that `target` has no place for.
fn left_out_fields<M: std::borrow::Borrow<curator::model::Message>>(
    id: &str,
    messages: &[M],
    target: curator::model::Format,
    flag: &str,
) {
    let mut names = std::collections::BTreeSet::new();
    let mut holding = 0;
    for message in messages {
        let message = message.borrow();
        let extras = std::iter::once(message.extra())
            .chain(message.tool_calls().iter().map(curator::model::ToolCall::extra));
        // OpenAI's tool messages say nothing of a failed result.
        let mut held = target == curator::model::Format::OpenAi && message.is_error();
        if held {
            names.insert("is_error".to_owned());
        }
        for extra in extras.flatten().filter(|e| e.format() != target) {
            held = true;
            names.extend(extra.fields().keys().cloned());
        }
        holding += usize::from(held);
    }
    if !names.is_empty() {
        let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
        note!(
            "{id}: --to {flag} leaves out fields it has no place for: {} ({})",
            names.join(", "),
            plural(holding, "message", "messages")
        );
    }
}
