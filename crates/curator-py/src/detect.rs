//! Telling the format of messages from their signs, as `curator curate --format auto` does
//! (see `docs/cli.md`): each field, role, part or block that only some formats have narrows
//! the formats left; signs that no one format has are refused, naming two that disagree.

use serde_json::{Map, Value};

use crate::error::Failure;

/// A message format on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// OpenAI Chat Completions messages.
    Openai,
    /// Anthropic Messages API.
    Anthropic,
    /// OpenAI Responses API items (what the OpenAI Agents SDK stores).
    Responses,
}

impl Format {
    /// Reads a `format=` argument; `None` for `"auto"`.
    pub(crate) fn from_argument(name: &str) -> Result<Option<Format>, Failure> {
        match name {
            "auto" => Ok(None),
            "openai" => Ok(Some(Format::Openai)),
            "anthropic" => Ok(Some(Format::Anthropic)),
            "responses" => Ok(Some(Format::Responses)),
            other => Err(Failure::Config {
                kind: "unknown_format",
                message: format!(
                    "format `{other}` is not one of `auto`, `openai`, `anthropic`, `responses`"
                ),
            }),
        }
    }
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

    /// The format read when the signs allow several: OpenAI first (plain text reads the same
    /// in every format), then the Responses API, then Anthropic.
    fn chosen(self) -> Format {
        if self.0 & OPENAI.0 != 0 {
            Format::Openai
        } else if self.0 & RESPONSES.0 != 0 {
            Format::Responses
        } else {
            Format::Anthropic
        }
    }
}

/// Top-level request fields only one provider defines.
const ANTHROPIC_FIELDS: &[&str] = &["system", "anthropic_version", "stop_sequences", "top_k"];
/// Content block types only Anthropic defines.
const ANTHROPIC_BLOCKS: &[&str] = &[
    "tool_use",
    "tool_result",
    "document",
    "thinking",
    "redacted_thinking",
    "server_tool_use",
    "web_search_tool_result",
    "search_result",
];
/// Content part types only OpenAI Chat Completions defines.
const OPENAI_PARTS: &[&str] = &["image_url", "input_audio", "file"];
/// Content part types only the Responses API defines.
const RESPONSES_PARTS: &[&str] = &["input_text", "output_text", "input_image", "input_file"];

/// The formats every sign seen so far allows, and the first sign seen (to name two that
/// disagree).
struct Detection {
    allowed: Formats,
    firsts: Vec<(Formats, String)>,
}

impl Detection {
    fn add(&mut self, formats: Formats, what: String) -> Result<(), Failure> {
        let allowed = Formats(self.allowed.0 & formats.0);
        if allowed.0 == 0 {
            let first = self
                .firsts
                .iter()
                .find(|(f, _)| f.0 & formats.0 == 0)
                .or(self.firsts.first())
                .map_or((ANY, ""), |(f, w)| (*f, w.as_str()));
            return Err(Failure::Input {
                kind: "ambiguous_format",
                message: format!(
                    "cannot tell the format: {} is {}, but {what} is {}; pass format=",
                    first.1,
                    first.0.name(),
                    formats.name()
                ),
            });
        }
        self.allowed = allowed;
        if !self.firsts.iter().any(|(f, _)| *f == formats) {
            self.firsts.push((formats, what));
        }
        Ok(())
    }
}

/// Decides the format of messages (and of the request object around them, if any).
///
/// # Errors
///
/// [`Failure::Input`] of kind `ambiguous_format` when the signs contradict each other.
pub(crate) fn detect(
    envelope: Option<&Map<String, Value>>,
    messages: &[Value],
) -> Result<Format, Failure> {
    let mut detection = Detection { allowed: ANY, firsts: Vec::new() };
    for field in ANTHROPIC_FIELDS.iter().filter(|f| envelope.is_some_and(|e| e.contains_key(**f))) {
        detection.add(ANTHROPIC, format!("top-level `{field}`"))?;
    }
    for (index, message) in messages.iter().enumerate() {
        signals(index, message, &mut detection)?;
    }
    Ok(detection.allowed.chosen())
}

/// The signs of one message (or Responses item).
fn signals(index: usize, message: &Value, detection: &mut Detection) -> Result<(), Failure> {
    if let Some(kind) = message.get("type").and_then(Value::as_str) {
        detection.add(RESPONSES, format!("an item of type `{kind}` at message {index}"))?;
    }
    let role = message.get("role").and_then(Value::as_str).unwrap_or_default();
    if matches!(role, "system" | "developer") {
        detection.add(OPENAI_OR_RESPONSES, format!("role `{role}` at message {index}"))?;
    }
    if matches!(role, "tool" | "function") {
        detection.add(OPENAI, format!("role `{role}` at message {index}"))?;
    }
    for field in ["tool_calls", "tool_call_id", "function_call", "refusal"] {
        if message.get(field).is_some_and(|v| !v.is_null()) {
            detection.add(OPENAI, format!("`{field}` at message {index}"))?;
        }
    }
    if message.get("content").is_some_and(Value::is_null) {
        detection.add(OPENAI, format!("`content: None` at message {index}"))?;
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
        } else if OPENAI_PARTS.contains(&kind) {
            (OPENAI, format!("an `{kind}` part"))
        } else if kind == "refusal" {
            (OPENAI_OR_RESPONSES, "a `refusal` part".to_owned())
        } else if RESPONSES_PARTS.contains(&kind) {
            (RESPONSES, format!("an `{kind}` part"))
        } else {
            continue;
        };
        detection.add(formats, format!("{what} at message {index}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[track_caller]
    fn check(messages: &Value, expected: Format) {
        let messages = messages.as_array().unwrap();
        assert_eq!(detect(None, messages).unwrap(), expected);
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
    }

    #[test]
    fn contradicting_signs_are_refused_naming_both() {
        let messages = json!([
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}
        ]);
        let error = detect(None, messages.as_array().unwrap()).unwrap_err();
        assert_eq!(error.kind(), "ambiguous_format");
        let Failure::Input { message, .. } = error else { panic!("{error:?}") };
        assert!(message.contains("role `tool` at message 0"), "{message}");
        assert!(message.contains("a `tool_result` block at message 1"), "{message}");
    }

    #[test]
    fn an_anthropic_system_field_tells_anthropic() {
        let envelope = json!({"system": "Be brief."});
        let format = detect(envelope.as_object(), &[json!({"role": "user", "content": "hi"})]);
        assert_eq!(format.unwrap(), Format::Anthropic);
    }

    #[test]
    fn unknown_format_names_are_refused() {
        assert_eq!(Format::from_argument("auto").unwrap(), None);
        assert_eq!(Format::from_argument("gemini").unwrap_err().kind(), "unknown_format");
    }
}
