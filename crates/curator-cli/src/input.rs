//! Reading conversations: a JSON array of messages, `{"messages": [...]}`, or JSON Lines, from
//! one or several files and folders, one conversation at a time.
//!
//! Memory stays within about twice the input: an array document is parsed from the
//! reader (its text is never held beside its JSON; an object document, one conversation, is
//! held as text while read, for the numbers of Anthropic inputs), the `messages` are moved out of their
//! envelope rather than cloned, and JSON Lines are read one line at a time, so a file of many
//! conversations holds one of them at a time. A line that cannot be read is reported by its
//! id (or line number) and the others go on.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use curator::model::Message;
use curator::model::formats::{self, detect};
use curator::model::json_kind;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// A message format on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// OpenAI Chat Completions messages.
    Openai,
    /// Anthropic Messages API.
    Anthropic,
    /// OpenAI Responses API items (what the OpenAI Agents SDK stores).
    Responses,
    /// Decide from the content.
    Auto,
}

/// How the file was laid out, so output can mirror it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// A JSON array of messages.
    Array,
    /// A JSON object with `messages` (and, for Anthropic, `system`).
    Object,
    /// One conversation object per line.
    Lines,
}

/// One conversation read from the input.
#[derive(Debug, Clone)]
pub(crate) struct Conversation {
    /// Its `id`; without one, the file's name (and `line N` in JSON Lines), or its position
    /// when it has no file.
    pub(crate) id: String,
    pub(crate) messages: Vec<Message>,
    /// The format it was read in.
    pub(crate) format: Format,
    /// The object it came in, without its `messages` (for objects and lines), to write back
    /// its other fields.
    pub(crate) envelope: Option<Map<String, Value>>,
}

impl Conversation {
    /// Whether it came with an `id` of its own (else [`id`](Self::id) names where it was
    /// read, which two different conversations may share).
    pub(crate) fn has_own_id(&self) -> bool {
        self.envelope.as_ref().is_some_and(|envelope| id_of(envelope).is_some())
    }

    /// The input's `tools` schemas, when it has them.
    pub(crate) fn tools(&self) -> Option<&Value> {
        self.envelope.as_ref()?.get("tools").filter(|t| !t.is_null())
    }
}

/// A conversation that could not be read; the others go on.
#[derive(Debug)]
pub(crate) struct Failed {
    /// Its `id`, or `line N`.
    pub(crate) id: String,
    pub(crate) error: anyhow::Error,
}

/// How notes name conversation `id` of the source named `source`: `source: conversation id`,
/// or just the source when the id is its file's name (a conversation without an `id`), so
/// that the name is said once.
pub(crate) fn naming(source: &str, id: &str) -> String {
    let file = Path::new(source).file_name().map(|f| f.to_string_lossy().into_owned());
    match file.as_deref().and_then(|file| id.strip_prefix(file)) {
        Some(rest) if rest.is_empty() || rest.starts_with(" line ") => format!("{source}{rest}"),
        _ if id.starts_with("line ") => format!("{source} {id}"),
        _ => format!("{source}: conversation {id}"),
    }
}

/// The conversations of one file, read one at a time.
pub(crate) struct Reader {
    layout: Layout,
    format: Format,
    /// The file's name, naming the conversations that have no `id`.
    label: Option<String>,
    /// The conversation read already, handed out first.
    pending: Option<Result<Conversation, Failed>>,
    source: Rest,
}

enum Rest {
    /// Nothing more to read (a whole-document file).
    Done,
    /// JSON Lines: the line read ahead, then the rest.
    Lines { next: Option<Line>, number: usize, rest: Box<dyn BufRead> },
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader").field("layout", &self.layout).finish_non_exhaustive()
    }
}

impl Reader {
    /// How the file is laid out.
    pub(crate) fn layout(&self) -> Layout {
        self.layout
    }
}

impl Iterator for Reader {
    type Item = Result<Conversation, Failed>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut next = self.read_next();
        let Some(label) = &self.label else { return next };
        let relabel = |id: &mut String| {
            *id = if id.starts_with("line ") { format!("{label} {id}") } else { label.clone() };
        };
        match &mut next {
            Some(Ok(conversation)) if !conversation.has_own_id() => relabel(&mut conversation.id),
            // A conversation that could not be read is named by where it stands, unless it
            // gave an id.
            Some(Err(failed)) if failed.id == "1" || failed.id.starts_with("line ") => {
                relabel(&mut failed.id);
            }
            _ => {}
        }
        next
    }
}

impl Reader {
    fn read_next(&mut self) -> Option<Result<Conversation, Failed>> {
        if let Some(pending) = self.pending.take() {
            return Some(pending);
        }
        match &mut self.source {
            Rest::Done => None,
            Rest::Lines { next, number, rest } => {
                let (line_number, line) = match next.take() {
                    Some(read_ahead) => read_ahead,
                    None => match next_line(rest.as_mut(), number) {
                        Ok(Some(line)) => line,
                        Ok(None) => return None,
                        Err(error) => {
                            // An unreadable stream cannot go on: report it once, then stop.
                            *rest = Box::new(std::io::empty());
                            return Some(Err(Failed { id: format!("line {number}"), error }));
                        }
                    },
                };
                Some(match line {
                    Ok(line) => from_line(&line, line_number, self.format),
                    Err(error) => Err(Failed { id: format!("line {line_number}"), error }),
                })
            }
        }
    }
}

/// A line of JSON Lines: its number from 1, and its text, or why it is not text.
type Line = (usize, Result<String>);

/// The next non-blank line. A line that is not UTF-8 is handed on as its own failure, so
/// that the lines after it are read.
fn next_line(reader: &mut dyn BufRead, number: &mut usize) -> Result<Option<Line>> {
    loop {
        let mut bytes = Vec::new();
        let read = reader.read_until(b'\n', &mut bytes).context("cannot read the next line")?;
        if read == 0 {
            return Ok(None);
        }
        *number += 1;
        match String::from_utf8(bytes) {
            Ok(line) if line.trim().is_empty() => {}
            Ok(line) => return Ok(Some((*number, Ok(line)))),
            Err(e) => {
                let (bytes, at) = (e.as_bytes(), e.utf8_error().valid_up_to());
                return Ok(Some((*number, Err(not_utf8(bytes, at, None)))));
            }
        }
    }
}

/// Text from the bytes of a whole input, or an error naming where it stops being UTF-8.
pub(crate) fn utf8_text(bytes: Vec<u8>) -> Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        let (bytes, at) = (e.as_bytes(), e.utf8_error().valid_up_to());
        let line = 1 + String::from_utf8_lossy(&bytes[..at]).matches('\n').count();
        let start = bytes[..at].iter().rposition(|&b| b == b'\n').map_or(0, |n| n + 1);
        not_utf8(&bytes[start..], at - start, Some(line))
    })
}

/// Says that a line (whose bytes are `bytes`; its number when the message names it) is not
/// UTF-8 from byte `at` on.
fn not_utf8(bytes: &[u8], at: usize, line: Option<usize>) -> anyhow::Error {
    let column = String::from_utf8_lossy(&bytes[..at]).chars().count() + 1;
    let byte = bytes.get(at).copied().unwrap_or_default();
    let bom = if at == 0 && (bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF])) {
        " (a UTF-16 byte order mark: save the file as UTF-8)"
    } else {
        ""
    };
    let line = line.map(|n| format!("line {n}, ")).unwrap_or_default();
    anyhow!("{line}column {column}: not UTF-8 text (byte 0x{byte:02X}){bom}")
}

fn from_line(line: &str, number: usize, format: Format) -> Result<Conversation, Failed> {
    let fallback = format!("line {number}");
    let value = formats::anthropic::parse_value(line)
        .map_err(|e| Failed { id: fallback.clone(), error: json_error(e, None) })?;
    let Value::Object(object) = value else {
        return Err(Failed {
            id: fallback,
            error: anyhow!(
                "line {number}: expected a conversation object with `messages`, found {}",
                json_kind(&value)
            ),
        });
    };
    match id_of(&object) {
        // Named by its id: the line says where it is.
        Some(id) => from_object(object, format, &id, Some(line))
            .map_err(|error| Failed { id, error: error.context(format!("line {number}")) }),
        None => from_object(object, format, &fallback, Some(line))
            .map_err(|error| Failed { id: fallback, error }),
    }
}

/// A failure to read JSON text that starts at line `first` of the file, its place (line and
/// column in the file) said once; `None` for a line of JSON Lines, which the caller names.
fn json_error(error: curator::model::Error, first: Option<usize>) -> anyhow::Error {
    use curator::model::Error;
    let line = |relative: usize| first.map(|f| format!("line {}, ", f + relative.max(1) - 1));
    match error {
        Error::NotJson { source } => {
            let message = source.to_string();
            let place = format!(" at line {} column {}", source.line(), source.column());
            let what = message.strip_suffix(&place).unwrap_or(&message);
            match line(source.line()) {
                Some(at) => anyhow!("invalid JSON at {at}column {}: {what}", source.column()),
                // A line of JSON Lines that ends too soon: the parser is past its end.
                None if source.line() > 1 || source.column() == 0 => {
                    anyhow!("invalid JSON at the end of the line: {what}")
                }
                None => anyhow!("invalid JSON at column {}: {what}", source.column()),
            }
        }
        Error::InexactNumber { line: relative, column, number } => {
            let said = Error::InexactNumber { line: relative, column, number }.to_string();
            let what = said.split_once(": ").map_or(said.as_str(), |(_, what)| what);
            anyhow!("{}column {column}: {what}", line(relative).unwrap_or_default())
        }
        other => anyhow!(other),
    }
}

fn id_of(object: &Map<String, Value>) -> Option<String> {
    match object.get("id")? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Opens a file of conversations.
pub(crate) fn open(path: &Path, format: Format) -> Result<Reader> {
    let file = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut reader = from_reader(Box::new(BufReader::with_capacity(1 << 16, file)), format)
        .with_context(|| format!("{}", path.display()))?;
    reader.label = path.file_name().map(|name| name.to_string_lossy().into_owned());
    Ok(reader)
}

/// Reads conversations from text (the bundled demo).
pub(crate) fn from_text(text: &'static str, format: Format) -> Result<Reader> {
    from_reader(Box::new(text.as_bytes()), format)
}

/// Decides the layout from the first bytes and lines, then reads lazily.
///
/// An array is a whole document. A first line that is a JSON object on its own, followed by
/// more non-blank lines, makes JSON Lines; otherwise the file is one document.
pub(crate) fn from_reader(mut reader: Box<dyn BufRead>, format: Format) -> Result<Reader> {
    // A UTF-8 byte order mark (as some editors write) says only that the text is UTF-8.
    if reader.fill_buf().context("cannot read the input")?.starts_with(b"\xEF\xBB\xBF") {
        reader.consume(3);
    }
    let first = loop {
        let buffer = reader.fill_buf().context("cannot read the input")?;
        match buffer.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(at) => break buffer[at],
            None if buffer.is_empty() => bail!("the input is empty"),
            None => {
                let len = buffer.len();
                reader.consume(len);
            }
        }
    };
    if first == b'{' {
        let mut number = 0;
        let Some((line_number, line)) = next_line(reader.as_mut(), &mut number)? else {
            bail!("the input is empty");
        };
        let line = match line {
            Ok(line) => line,
            // A first line that is not text: read as JSON Lines, the others go on.
            Err(error) => {
                return Ok(Reader {
                    label: None,
                    layout: Layout::Lines,
                    format,
                    pending: Some(Err(Failed { id: format!("line {line_number}"), error })),
                    source: Rest::Lines { next: None, number, rest: reader },
                });
            }
        };
        // A first line that is a JSON object on its own (whatever its numbers).
        let object_line = serde_json::from_str::<&RawValue>(&line)
            .is_ok_and(|raw| raw.get().trim_start().starts_with('{'));
        if object_line {
            return match next_line(reader.as_mut(), &mut number)? {
                None => {
                    let value = formats::anthropic::parse_value(&line)
                        .map_err(|e| json_error(e, Some(line_number)))?;
                    let Value::Object(object) = value else {
                        bail!("expected an object with `messages`, found {}", json_kind(&value));
                    };
                    Ok(Reader {
                        label: None,
                        layout: Layout::Object,
                        format,
                        pending: Some(whole_object(object, format, Some(&line))),
                        source: Rest::Done,
                    })
                }
                Some(second) => {
                    let first_conversation = from_line(&line, line_number, format);
                    Ok(Reader {
                        label: None,
                        layout: Layout::Lines,
                        format,
                        pending: Some(first_conversation),
                        source: Rest::Lines { next: Some(second), number, rest: reader },
                    })
                }
            };
        }
        // A document spread over lines: read it whole, the first line included. An object is
        // one conversation: its text is kept while it is read, so that Anthropic `tool_use`
        // inputs keep their numbers as written.
        let mut bytes = line.into_bytes();
        reader.read_to_end(&mut bytes).context("cannot read the input")?;
        let text = utf8_text(bytes)?;
        let value = formats::anthropic::parse_value(&text).map_err(|e| json_error(e, Some(1)))?;
        let Value::Object(object) = value else {
            bail!("expected an object with `messages`, found {}", json_kind(&value));
        };
        return Ok(Reader {
            label: None,
            layout: Layout::Object,
            format,
            pending: Some(whole_object(object, format, Some(&text))),
            source: Rest::Done,
        });
    }
    document(reader, format)
}

fn whole_object(
    object: Map<String, Value>,
    format: Format,
    text: Option<&str>,
) -> Result<Conversation, Failed> {
    let id = id_of(&object).unwrap_or_else(|| "1".to_owned());
    from_object(object, format, &id, text).map_err(|error| Failed { id, error })
}

/// Reads a whole JSON document (an array of messages or one conversation object). Its text
/// is held while it is read: an array's messages are slices of it, read one at a time (to
/// tell the format, then to convert), so memory holds the text and the messages read from
/// it; Anthropic `tool_use` inputs are read from the text, so that their numbers keep it.
fn document(mut reader: Box<dyn BufRead>, format: Format) -> Result<Reader> {
    let mut bytes = Vec::new();
    reader.read_to_end(&mut bytes).context("cannot read the input")?;
    let text = utf8_text(bytes)?;
    if let Ok(items) = serde_json::from_str::<Vec<&RawValue>>(&text) {
        // The messages are read one at a time below, as values: a number a value would
        // change is refused first, unless a tool input keeps its text.
        formats::anthropic::check_numbers(&text).map_err(|e| json_error(e, Some(1)))?;
        let conversation = detect_array(format, &items)
            .and_then(|format| {
                let messages = if format == Format::Anthropic {
                    formats::anthropic::parse(&text)?
                } else if format == Format::Responses {
                    let items = items
                        .iter()
                        .map(|raw| serde_json::from_str(raw.get()))
                        .collect::<Result<Vec<Value>, _>>()?;
                    formats::responses::to_messages(&items)?
                } else {
                    let mut out = Vec::with_capacity(items.len());
                    for (index, raw) in items.iter().enumerate() {
                        let item: Value = serde_json::from_str(raw.get())?;
                        out.push(formats::openai::message_from_value(index, &item)?);
                    }
                    out
                };
                Ok(Conversation { id: "1".into(), messages, format, envelope: None })
            })
            .map_err(|error| Failed { id: "1".into(), error });
        return Ok(Reader {
            label: None,
            layout: Layout::Array,
            format,
            pending: Some(conversation),
            source: Rest::Done,
        });
    }
    let value = formats::anthropic::parse_value(&text).map_err(|e| json_error(e, Some(1)))?;
    match value {
        Value::Object(object) => Ok(Reader {
            label: None,
            layout: Layout::Object,
            format,
            pending: Some(whole_object(object, format, Some(&text))),
            source: Rest::Done,
        }),
        other => bail!(
            "expected a JSON array of messages or an object with `messages`, found {}",
            json_kind(&other)
        ),
    }
}

/// Reads one conversation object; `text`, when known (a line), is the object as written, from
/// which Anthropic `tool_use` inputs are read so that their numbers keep their text.
fn from_object(
    mut object: Map<String, Value>,
    format: Format,
    id: &str,
    text: Option<&str>,
) -> Result<Conversation> {
    // Moved out, not cloned: the envelope keeps the other fields only.
    let messages = object.remove("messages").ok_or_else(|| anyhow!("no `messages` field"))?;
    let explicit = format != Format::Auto;
    let format = detect(format, Some(&object), &messages)?;
    if explicit {
        refuse_foreign_envelope(&object, format)?;
    }
    let system = object.remove("system");
    let result = match (format, text) {
        (Format::Anthropic, Some(text)) => {
            drop(messages);
            formats::anthropic::parse(text).map_err(anyhow::Error::from)
        }
        _ => to_messages(messages, system.as_ref(), format),
    };
    if let Some(system) = system {
        object.insert("system".into(), system);
    }
    Ok(Conversation { id: id.to_owned(), messages: result?, format, envelope: Some(object) })
}

/// Refuses, with the format given explicitly (`--format`), a top-level field or `tools` schema of the other
/// format: the reader is strict, so that nothing is dropped or passed through unread (an
/// Anthropic `system` read as OpenAI would otherwise vanish).
fn refuse_foreign_envelope(object: &Map<String, Value>, format: Format) -> Result<()> {
    let foreign = |what: String| {
        let (this, that) = match format {
            Format::Anthropic => ("Anthropic", "OpenAI"),
            Format::Responses => ("the Responses API", "Anthropic"),
            Format::Openai | Format::Auto => ("OpenAI", "Anthropic"),
        };
        anyhow!(
            "{what} belongs to the {that} format, not {this}'s: pass --format {}",
            that.to_lowercase()
        )
    };
    let fields =
        if format == Format::Anthropic { detect::OPENAI_FIELDS } else { detect::ANTHROPIC_FIELDS };
    if let Some(field) = fields.iter().find(|f| object.get(**f).is_some_and(|v| !v.is_null())) {
        return Err(foreign(format!("top-level `{field}`")));
    }
    for (index, tool) in
        object.get("tools").and_then(Value::as_array).into_iter().flatten().enumerate()
    {
        let openai_shaped = tool.get("function").is_some()
            || tool.get("type").and_then(Value::as_str) == Some("function");
        let anthropic_shaped = tool.get("input_schema").is_some();
        if (format == Format::Anthropic && openai_shaped)
            || (format != Format::Anthropic && anthropic_shaped)
        {
            let field = if openai_shaped { "function" } else { "input_schema" };
            return Err(foreign(format!("`tools[{index}].{field}`")));
        }
    }
    Ok(())
}

/// Converts messages, consuming their JSON: OpenAI messages one at a time (each message's
/// JSON is freed once converted, so the two never both hold the whole conversation).
fn to_messages(messages: Value, system: Option<&Value>, format: Format) -> Result<Vec<Message>> {
    Ok(match (format, messages) {
        (Format::Anthropic, messages) => match system {
            Some(system) => {
                let mut request = Map::new();
                request.insert("system".into(), system.clone());
                request.insert("messages".into(), Value::Array(Vec::new()));
                let mut head = formats::anthropic::to_messages(&Value::Object(request))?;
                head.extend(formats::anthropic::to_messages(&messages)?);
                head
            }
            None => formats::anthropic::to_messages(&messages)?,
        },
        (Format::Responses, Value::Array(items)) => formats::responses::to_messages(&items)?,
        (Format::Responses, other) => {
            bail!(
                "`messages` should be an array of Responses API items, found {}",
                json_kind(&other)
            )
        }
        (_, Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for (index, item) in items.into_iter().enumerate() {
                out.push(formats::openai::message_from_value(index, &item)?);
            }
            out
        }
        (_, other) => formats::openai::to_messages(&other)?,
    })
}

/// The CLI's format for the model's detected one.
fn detected(format: detect::Format) -> Format {
    match format {
        detect::Format::Anthropic => Format::Anthropic,
        detect::Format::Responses => Format::Responses,
        _ => Format::Openai,
    }
}

/// A detection error, with what to do about it.
fn undecided(error: &curator::model::Error) -> anyhow::Error {
    anyhow!("{error}; pass --format")
}

/// Decides the format of one conversation: with `--format auto`, from the signs that only
/// some formats have ([`detect`](curator::model::formats::detect), `docs/cli.md`).
fn detect(
    format: Format,
    envelope: Option<&Map<String, Value>>,
    messages: &Value,
) -> Result<Format> {
    if format != Format::Auto {
        return Ok(format);
    }
    let mut detection = detect::Detection::new();
    if let Some(object) = envelope {
        detection.envelope(object).map_err(|e| undecided(&e))?;
    }
    for (index, message) in messages.as_array().into_iter().flatten().enumerate() {
        detection.message(index, message).map_err(|e| undecided(&e))?;
    }
    Ok(detected(detection.format()))
}

/// [`detect`] for a bare array whose messages are slices of the text, read one at a time.
fn detect_array(format: Format, items: &[&RawValue]) -> Result<Format> {
    if format != Format::Auto {
        return Ok(format);
    }
    let mut detection = detect::Detection::new();
    for (index, raw) in items.iter().enumerate() {
        let message = formats::anthropic::parse_value(raw.get())?;
        detection.message(index, &message).map_err(|e| undecided(&e))?;
    }
    Ok(detected(detection.format()))
}

/// Messages written in a format, as JSON text: the OpenAI messages array, the Responses
/// items array, or the Anthropic request's `messages` and `system`. Text, not `Value`, so that the numbers of Anthropic
/// `tool_use` inputs are written as the arguments hold them (`1e2` stays `1e2`).
#[derive(Debug)]
pub(crate) struct Written {
    pub(crate) messages: Box<RawValue>,
    pub(crate) system: Option<Box<RawValue>>,
}

/// Writes messages read in `from` in the format `to`, adapting them to what `to` accepts
/// when the two differ (see `formats::openai::adapt`, `formats::anthropic::adapt`; Responses
/// items take every message as it is).
pub(crate) fn write_messages<M: std::borrow::Borrow<Message>>(
    messages: &[M],
    from: Format,
    to: Format,
) -> Result<Written> {
    #[derive(serde::Deserialize)]
    struct Request {
        messages: Box<RawValue>,
        #[serde(default)]
        system: Option<Box<RawValue>>,
    }
    if to == Format::Responses {
        // Items carry every message as it is: nothing to adapt.
        let items = formats::responses::from_messages(messages)?;
        return Ok(Written { messages: serde_json::value::to_raw_value(&items)?, system: None });
    }
    if to == Format::Anthropic {
        let text = if from == Format::Anthropic {
            formats::anthropic::to_json(messages)?
        } else {
            formats::anthropic::to_json(&formats::anthropic::adapt(messages))?
        };
        let request: Request = serde_json::from_str(&text)?;
        return Ok(Written { messages: request.messages, system: request.system });
    }
    let value = if from == Format::Openai {
        formats::openai::from_messages(messages)?
    } else {
        formats::openai::convert(messages)?
    };
    Ok(Written { messages: serde_json::value::to_raw_value(&value)?, system: None })
}

/// Where conversations come from: a file, or text that ships with the binary.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    File(PathBuf),
    Text { name: &'static str, text: &'static str },
}

impl Source {
    /// How reports name it.
    pub(crate) fn name(&self) -> String {
        match self {
            Source::File(path) => path.display().to_string(),
            Source::Text { name, .. } => (*name).to_owned(),
        }
    }

    /// Starts reading it.
    pub(crate) fn open(&self, format: Format) -> Result<Reader> {
        match self {
            Source::File(path) => open(path, format),
            Source::Text { text, .. } => from_text(text, format),
        }
    }

    /// How many conversations it holds, counted cheaply (the lines that start with `{`),
    /// for a progress bar.
    pub(crate) fn estimate_count(&self) -> usize {
        let Source::File(path) = self else { return 1 };
        let Ok(file) = File::open(path) else { return 1 };
        let mut reader = BufReader::new(file);
        let (mut objects, mut at_line_start) = (0, true);
        while let Ok(buffer) = reader.fill_buf() {
            if buffer.is_empty() {
                break;
            }
            for &b in buffer {
                objects += usize::from(at_line_start && b == b'{');
                at_line_start = b == b'\n';
            }
            let len = buffer.len();
            reader.consume(len);
        }
        objects.max(1)
    }
}

/// The files named on the command line: files as given, folders expanded to the `.json`
/// and `.jsonl` files they hold (recursively, in name order).
pub(crate) fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let before = files.len();
            walk(path, &mut files)?;
            if files.len() == before {
                bail!("{} holds no .json or .jsonl file", path.display());
            }
        } else if path.exists() {
            files.push(path.clone());
        } else {
            // Said before anything is read or printed, rather than as one unreadable input
            // among the others under an empty table.
            bail!("cannot read {}: no such file or folder", path.display());
        }
    }
    Ok(files)
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read folder {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .with_context(|| format!("cannot read folder {}", dir.display()))?;
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, files)?;
        } else if path.extension().is_some_and(|e| e == "json" || e == "jsonl") {
            files.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(text: &'static str) -> (Layout, Vec<Result<Conversation, Failed>>) {
        let reader = from_text(text, Format::Auto).unwrap();
        (reader.layout(), reader.collect())
    }

    #[track_caller]
    fn check_format(envelope: Value, expected: Format) {
        let Value::Object(mut object) = envelope else { panic!("an object") };
        let messages = object.remove("messages").unwrap();
        assert_eq!(detect(Format::Auto, Some(&object), &messages).unwrap(), expected);
    }

    #[test]
    fn an_anthropic_request_without_system_or_tools_is_anthropic() {
        // The defect: only `system` and tool blocks were looked at.
        check_format(
            json!({"model": "claude", "max_tokens": 100, "stop_sequences": ["\n\nHuman:"],
                   "messages": [{"role": "user", "content": "hi"}]}),
            Format::Anthropic,
        );
        check_format(
            json!({"messages": [{"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
                {"type": "text", "text": "what is this?"}]}]}),
            Format::Anthropic,
        );
        check_format(
            json!({"messages": [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"},
                                                  {"type": "text", "text": "hello"}]}]}),
            Format::Anthropic,
        );
        check_format(
            json!({"messages": [{"role": "user", "content": [{"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "x"}}]}]}),
            Format::Anthropic,
        );
        check_format(
            json!({"anthropic_version": "vertex-2023-10-16", "messages": [{"role": "user", "content": "hi"}]}),
            Format::Anthropic,
        );
    }

    #[test]
    fn openai_only_signs_make_openai() {
        check_format(
            json!({"messages": [{"role": "developer", "content": "be brief"}, {"role": "user", "content": "hi"}]}),
            Format::Openai,
        );
        check_format(
            json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}}]}]}),
            Format::Openai,
        );
        check_format(
            json!({"response_format": {"type": "json_object"}, "messages": []}),
            Format::Openai,
        );
    }

    #[test]
    fn responses_items_and_parts_make_responses() {
        check_format(
            json!({"messages": [{"role": "developer", "content": "be brief"}, {"role": "user", "content": "hi"},
                {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}]}),
            Format::Responses,
        );
        check_format(
            json!({"messages": [{"type": "reasoning", "id": "rs", "summary": []}]}),
            Format::Responses,
        );
        check_format(
            json!({"parallel_tool_calls": false, "messages": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}),
            Format::Responses,
        );
        // A refusal part or a system role alone is OpenAI's as much as the Responses API's.
        check_format(
            json!({"messages": [{"role": "system", "content": "s"},
                {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]}]}),
            Format::Openai,
        );
        let mixed = json!([{"role": "user", "content": [{"type": "text", "text": "a"}]},
            {"role": "user", "content": [{"type": "input_text", "text": "b"}]}]);
        let error = detect(Format::Auto, None, &mixed).unwrap_err().to_string();
        assert!(
            error.contains("a `text` part at message 0 is OpenAI's or Anthropic's")
                && error.contains("an `input_text` part at message 1 is the Responses API's"),
            "{error}"
        );
    }

    #[test]
    fn plain_text_is_read_as_openai_and_both_readings_agree() {
        let messages = json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}]);
        assert_eq!(detect(Format::Auto, None, &messages).unwrap(), Format::Openai);
        assert_eq!(
            formats::openai::to_messages(&messages).unwrap(),
            formats::anthropic::to_messages(&messages).unwrap()
        );
    }

    #[test]
    fn contradictory_signs_are_refused_by_name() {
        let messages = json!([{"role": "tool", "tool_call_id": "c", "content": "x"},
                              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": "x"}]}]);
        let error = detect(Format::Auto, None, &messages).unwrap_err().to_string();
        assert!(
            error.contains("role `tool` at message 0")
                && error.contains("`tool_result` block at message 1"),
            "{error}"
        );
        assert_eq!(detect(Format::Anthropic, None, &messages).unwrap(), Format::Anthropic);
    }

    #[test]
    fn layouts_are_told_apart() {
        let (layout, conversations) = read(r#"[{"role": "user", "content": "hi"}]"#);
        assert_eq!((layout, conversations.len()), (Layout::Array, 1));
        let (layout, conversations) = read(
            "{\n  \"id\": \"x\",\n  \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]\n}\n",
        );
        assert_eq!(layout, Layout::Object);
        assert_eq!(conversations[0].as_ref().unwrap().id, "x");
        let (layout, conversations) = read(
            "{\"id\": \"a\", \"messages\": []}\n\n{\"id\": 7, \"messages\": []}\n{\"messages\": []}\n",
        );
        assert_eq!(layout, Layout::Lines);
        let ids: Vec<String> = conversations.into_iter().map(|c| c.unwrap().id).collect();
        assert_eq!(ids, ["a", "7", "line 4"]);
    }

    #[test]
    fn a_failing_line_is_reported_by_id_and_the_others_go_on() {
        let (_, conversations) = read(concat!(
            "{\"id\": \"good-1\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n",
            "{\"id\": \"bad\", \"messages\": [{\"role\": \"wizard\", \"content\": \"x\"}]}\n",
            "{\"id\": \"broken\", \"messages\": [\n",
            "{\"id\": \"good-2\", \"messages\": []}\n",
        ));
        let outcome: Vec<Result<String, (String, String)>> = conversations
            .into_iter()
            .map(|c| c.map(|c| c.id).map_err(|f| (f.id, format!("{:#}", f.error))))
            .collect();
        assert_eq!(outcome[0], Ok("good-1".to_owned()));
        let (id, error) = outcome[1].clone().unwrap_err();
        assert_eq!(id, "bad");
        assert!(error.contains("line 2") && error.contains("unknown role `wizard`"), "{error}");
        let (id, error) = outcome[2].clone().unwrap_err();
        assert_eq!(id, "line 3");
        assert!(error.contains("invalid JSON at the end of the line: EOF"), "{error}");
        assert_eq!(outcome[3], Ok("good-2".to_owned()));
    }

    #[test]
    fn the_envelope_keeps_other_fields_but_not_the_messages() {
        let (_, conversations) = read(
            r#"{"id": "t", "tools": [{"type": "function"}], "system": "s", "messages": [{"role": "user", "content": "hi"}]}"#,
        );
        let conversation = conversations.into_iter().next().unwrap().unwrap();
        let envelope = conversation.envelope.as_ref().unwrap();
        assert!(!envelope.contains_key("messages"));
        assert_eq!(envelope["system"], "s");
        assert!(conversation.tools().is_some());
        assert_eq!(conversation.messages.len(), 2);
        assert_eq!(conversation.format, Format::Anthropic);
    }
}
