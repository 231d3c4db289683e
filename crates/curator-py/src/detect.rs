//! The `format=` argument, and telling the format of messages from their signs with
//! [`curator::model::formats::detect`], as `curator curate --format auto` does.

use curator::model::formats::detect as model;
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

/// Decides the format of messages (and of the request object around them, if any).
///
/// # Errors
///
/// [`Failure::Input`] of kind `ambiguous_format` when the signs contradict each other,
/// naming two that do.
pub(crate) fn detect(
    envelope: Option<&Map<String, Value>>,
    messages: &[Value],
) -> Result<Format, Failure> {
    match model::detect(envelope, messages) {
        Ok(model::Format::Anthropic) => Ok(Format::Anthropic),
        Ok(model::Format::Responses) => Ok(Format::Responses),
        Ok(_) => Ok(Format::Openai),
        Err(error) => Err(Failure::Input {
            kind: "ambiguous_format",
            message: format!("{error}; pass format=\"openai\", \"anthropic\" or \"responses\""),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        assert!(message.ends_with("pass format=\"openai\", \"anthropic\" or \"responses\""));
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
