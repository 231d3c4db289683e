//! Telling the format of messages from their signs: each request field, role, part or block
//! that only some formats have narrows the formats left, and signs that no one format has
//! are refused, naming two that disagree. `curator curate --format auto` and the Python
//! package's `format="auto"` both read through this module.
//!
//! The signs (see `docs/cli.md`):
//!
//! - **Anthropic**: a top-level `system`, `anthropic_version`, `stop_sequences` or `top_k`;
//!   a `tool_use`, `tool_result`, `document`, `thinking`, `redacted_thinking`,
//!   `server_tool_use`, `web_search_tool_result` or `search_result` block; an `image`
//!   block with a `source`; `cache_control` on a block.
//! - **OpenAI Chat Completions**: a `tool` or `function` role, `tool_calls`,
//!   `tool_call_id`, `function_call`, `refusal` as a field, `content: null`, an
//!   `image_url`, `input_audio` or `file` part, OpenAI-only request fields.
//! - **The Responses API**: an item with a `type` (`function_call`,
//!   `function_call_output`, `reasoning`, `message`, …); an `input_text`, `output_text`,
//!   `input_image` or `input_file` part.
//! - **OpenAI or the Responses API**: a `system` or `developer` role, a `refusal` part, a
//!   top-level `parallel_tool_calls`. **OpenAI or Anthropic**: a `text` part.
//!
//! Among the formats left, OpenAI is chosen first (plain user and assistant text reads into
//! the same messages in every format), then the Responses API, then Anthropic.
//!
//! # Examples
//!
//! ```
//! use curator::model::{Error, formats::detect::{self, Format}};
//! use serde_json::json;
//!
//! let items = [json!({"role": "user", "content": "hi"}), json!({"type": "function_call_output", "call_id": "c", "output": "x"})];
//! assert_eq!(detect::detect(None, &items)?, Format::Responses);
//!
//! let mixed = [
//!     json!({"role": "tool", "tool_call_id": "c1", "content": "ok"}),
//!     json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}),
//! ];
//! let error = detect::detect(None, &mixed).unwrap_err();
//! assert!(matches!(error, Error::AmbiguousFormat { .. }));
//! assert_eq!(error.to_string(), "cannot tell the format: role `tool` at message 0 is OpenAI's, but a `tool_result` block at message 1 is Anthropic's");
//! # Ok::<(), Error>(())
//! ```

use serde_json::{Map, Value};

use super::{ANTHROPIC_BLOCKS, RESPONSES_PARTS};
use crate::{Error, Result};

/// A message format on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// OpenAI Chat Completions messages ([`openai`](super::openai)).
    Openai,
    /// The Anthropic Messages API ([`anthropic`](super::anthropic)).
    Anthropic,
    /// OpenAI Responses API items, what the OpenAI Agents SDK stores
    /// ([`responses`](super::responses)).
    Responses,
}

/// A set of the three formats, as bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Formats(u8);

const OPENAI: Formats = Formats(1);
const ANTHROPIC: Formats = Formats(2);
const RESPONSES: Formats = Formats(4);
const OPENAI_OR_RESPONSES: Formats = Formats(1 | 4);
const OPENAI_OR_ANTHROPIC: Formats = Formats(1 | 2);
const ANY: Formats = Formats(1 | 2 | 4);

impl Formats {
    fn and(self, other: Formats) -> Formats {
        Formats(self.0 & other.0)
    }

    fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// How an error names the formats.
    fn name(self) -> &'static str {
        match self.0 {
            1 => "OpenAI's",
            2 => "Anthropic's",
            4 => "the Responses API's",
            5 => "OpenAI's or the Responses API's",
            3 => "OpenAI's or Anthropic's",
            _ => "every format's",
        }
    }
}

/// Top-level request fields only Anthropic defines.
pub const ANTHROPIC_FIELDS: &[&str] = &["system", "anthropic_version", "stop_sequences", "top_k"];
/// Top-level request fields only OpenAI defines (the Responses API takes
/// `parallel_tool_calls` too).
pub const OPENAI_FIELDS: &[&str] = &[
    "max_completion_tokens",
    "response_format",
    "frequency_penalty",
    "presence_penalty",
    "logprobs",
    "parallel_tool_calls",
    "functions",
];
/// Content part types only OpenAI Chat Completions defines (`refusal` is the Responses
/// API's too, and checked apart).
const OPENAI_ONLY_PARTS: &[&str] = &["image_url", "input_audio", "file"];

/// One sign: what it is, and the formats that have it.
#[derive(Clone, Debug)]
struct Signal {
    formats: Formats,
    what: String,
}

/// The formats every sign seen so far allows; feed it a request's fields and its messages,
/// then ask for the [`format`](Detection::format).
///
/// # Examples
///
/// ```
/// use curator::model::formats::detect::{Detection, Format};
/// use serde_json::json;
///
/// let mut detection = Detection::new();
/// detection.envelope(json!({"system": "Be brief."}).as_object().unwrap())?;
/// detection.message(0, &json!({"role": "user", "content": "hi"}))?;
/// assert_eq!(detection.format(), Format::Anthropic);
/// # Ok::<(), curator::model::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Detection {
    allowed: Formats,
    /// The first sign of each set of formats, to name two that disagree.
    firsts: Vec<Signal>,
}

impl Default for Detection {
    fn default() -> Self {
        Self::new()
    }
}

impl Detection {
    /// No sign seen: every format allowed.
    pub fn new() -> Self {
        Self { allowed: ANY, firsts: Vec::new() }
    }

    /// Takes the signs of a request's top-level fields.
    ///
    /// # Errors
    ///
    /// [`Error::AmbiguousFormat`] when no format has every sign seen.
    pub fn envelope(&mut self, object: &Map<String, Value>) -> Result<()> {
        for field in ANTHROPIC_FIELDS.iter().filter(|f| object.contains_key(**f)) {
            self.add(ANTHROPIC, format!("top-level `{field}`"))?;
        }
        for field in OPENAI_FIELDS.iter().filter(|f| object.contains_key(**f)) {
            let formats =
                if *field == "parallel_tool_calls" { OPENAI_OR_RESPONSES } else { OPENAI };
            self.add(formats, format!("top-level `{field}`"))?;
        }
        Ok(())
    }

    /// Takes the signs of message (or Responses item) `index`.
    ///
    /// # Errors
    ///
    /// [`Error::AmbiguousFormat`] when no format has every sign seen.
    pub fn message(&mut self, index: usize, message: &Value) -> Result<()> {
        if let Some(kind) = message.get("type").and_then(Value::as_str) {
            self.add(RESPONSES, format!("an item of type `{kind}` at message {index}"))?;
        }
        let role = message.get("role").and_then(Value::as_str).unwrap_or_default();
        if matches!(role, "system" | "developer") {
            self.add(OPENAI_OR_RESPONSES, format!("role `{role}` at message {index}"))?;
        }
        if matches!(role, "tool" | "function") {
            self.add(OPENAI, format!("role `{role}` at message {index}"))?;
        }
        for field in ["tool_calls", "tool_call_id", "function_call", "refusal"] {
            if message.get(field).is_some_and(|v| !v.is_null()) {
                self.add(OPENAI, format!("`{field}` at message {index}"))?;
            }
        }
        if message.get("content").is_some_and(Value::is_null) {
            self.add(OPENAI, format!("`content: null` at message {index}"))?;
        }
        for block in message.get("content").and_then(Value::as_array).into_iter().flatten() {
            let kind = block.get("type").and_then(Value::as_str).unwrap_or_default();
            let (formats, what) = if ANTHROPIC_BLOCKS.contains(&kind) {
                (ANTHROPIC, format!("a `{kind}` block"))
            } else if kind == "image" && block.get("source").is_some() {
                (ANTHROPIC, "an `image` block with `source`".to_owned())
            } else if kind == "text" && block.get("cache_control").is_some() {
                (ANTHROPIC, "`cache_control`".to_owned())
            } else if kind == "text" {
                (OPENAI_OR_ANTHROPIC, "a `text` part".to_owned())
            } else if OPENAI_ONLY_PARTS.contains(&kind) {
                (OPENAI, format!("an `{kind}` part"))
            } else if kind == "refusal" {
                (OPENAI_OR_RESPONSES, "a `refusal` part".to_owned())
            } else if RESPONSES_PARTS.contains(&kind) {
                (RESPONSES, format!("an `{kind}` part"))
            } else {
                continue;
            };
            self.add(formats, format!("{what} at message {index}"))?;
        }
        Ok(())
    }

    /// The format read among those the signs allow: OpenAI, then the Responses API, then
    /// Anthropic.
    pub fn format(&self) -> Format {
        if !self.allowed.and(OPENAI).is_empty() {
            Format::Openai
        } else if !self.allowed.and(RESPONSES).is_empty() {
            Format::Responses
        } else {
            Format::Anthropic
        }
    }

    fn add(&mut self, formats: Formats, what: String) -> Result<()> {
        let allowed = self.allowed.and(formats);
        if allowed.is_empty() {
            // The first sign this one contradicts, by itself or with the signs before.
            let first = self
                .firsts
                .iter()
                .find(|s| s.formats.and(formats).is_empty())
                .or(self.firsts.first());
            let (first, first_formats) =
                first.map_or((String::new(), ANY), |s| (s.what.clone(), s.formats));
            return Err(Error::AmbiguousFormat {
                first,
                first_formats: first_formats.name(),
                then: what,
                then_formats: formats.name(),
            });
        }
        self.allowed = allowed;
        if !self.firsts.iter().any(|s| s.formats == formats) {
            self.firsts.push(Signal { formats, what });
        }
        Ok(())
    }
}

/// The format of `messages` (with a request's top-level fields, `envelope`): see the
/// [module](self).
///
/// # Errors
///
/// [`Error::AmbiguousFormat`] when no format has every sign.
pub fn detect(envelope: Option<&Map<String, Value>>, messages: &[Value]) -> Result<Format> {
    let mut detection = Detection::new();
    if let Some(object) = envelope {
        detection.envelope(object)?;
    }
    for (index, message) in messages.iter().enumerate() {
        detection.message(index, message)?;
    }
    Ok(detection.format())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[track_caller]
    fn check(messages: &Value, expected: Format) {
        assert_eq!(detect(None, messages.as_array().unwrap()).unwrap(), expected);
    }

    #[test]
    fn each_format_is_told_by_its_signs() {
        check(&json!([{"role": "user", "content": "hi"}]), Format::Openai);
        check(&json!([{"role": "tool", "tool_call_id": "c1", "content": "ok"}]), Format::Openai);
        check(
            &json!([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}]),
            Format::Anthropic,
        );
        check(
            &json!([{"role": "user", "content": "hi"}, {"type": "function_call_output", "call_id": "c", "output": "x"}]),
            Format::Responses,
        );
        check(
            &json!([{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]),
            Format::Responses,
        );
        check(
            &json!([{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {}}]}]),
            Format::Anthropic,
        );
    }

    #[test]
    fn contradicting_signs_are_refused_naming_both() {
        let messages = json!([
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}
        ]);
        let error = detect(None, messages.as_array().unwrap()).unwrap_err();
        let Error::AmbiguousFormat { first, then, .. } = &error else { panic!("{error:?}") };
        assert_eq!(first, "role `tool` at message 0");
        assert_eq!(then, "a `tool_result` block at message 1");
    }

    #[test]
    fn request_fields_count() {
        let anthropic = json!({"system": "Be brief."});
        let format = detect(anthropic.as_object(), &[json!({"role": "user", "content": "hi"})]);
        assert_eq!(format.unwrap(), Format::Anthropic);
        let openai = json!({"response_format": {"type": "json_object"}, "system": "x"});
        assert!(matches!(detect(openai.as_object(), &[]), Err(Error::AmbiguousFormat { .. })));
        let either = json!({"parallel_tool_calls": true});
        let format = detect(
            either.as_object(),
            &[json!({"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"})],
        );
        assert_eq!(format.unwrap(), Format::Responses);
    }
}
