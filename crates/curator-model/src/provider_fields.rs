//! Provider fields that curator carries without interpreting them.

use serde_json::{Map, Value};

/// A provider wire format.
///
/// # Examples
///
/// ```
/// use curator::model::Format;
///
/// assert_eq!(serde_json::to_string(&Format::Anthropic)?, "\"anthropic\"");
/// assert_eq!(serde_json::to_string(&Format::Responses)?, "\"responses\"");
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Format {
    /// OpenAI Chat Completions messages.
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic Messages API.
    Anthropic,
    /// OpenAI Responses API items (what the OpenAI Agents SDK stores in a session).
    Responses,
}

/// Fields of a wire object that curator does not model, kept verbatim together with the
/// format they came from.
///
/// A converter writes them back only into the same format, so an OpenAI-only field never
/// leaks into an Anthropic request (where the API would reject it) and vice versa. This is
/// what makes `OpenAI → Message → OpenAI` (and the same for Anthropic) lossless.
///
/// # Examples
///
/// ```
/// use curator::model::{Format, ProviderFields};
/// use serde_json::json;
///
/// let mut fields = serde_json::Map::new();
/// fields.insert("cache_control".into(), json!({"type": "ephemeral"}));
/// let extra = ProviderFields::new(Format::Anthropic, fields);
/// assert_eq!(extra.format(), Format::Anthropic);
/// assert!(extra.fields_for(Format::OpenAi).is_none());
/// assert_eq!(extra.fields_for(Format::Anthropic).map(|f| f.len()), Some(1));
/// ```
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderFields {
    format: Format,
    fields: Map<String, Value>,
}

impl ProviderFields {
    /// Wraps fields read from a message in `format`.
    pub fn new(format: Format, fields: Map<String, Value>) -> Self {
        Self { format, fields }
    }

    /// Wraps fields when there are any, for the `Option` that messages hold.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Format, ProviderFields};
    /// assert!(ProviderFields::non_empty(Format::OpenAi, serde_json::Map::new()).is_none());
    /// ```
    pub fn non_empty(format: Format, fields: Map<String, Value>) -> Option<Self> {
        (!fields.is_empty()).then(|| Self::new(format, fields))
    }

    /// The format the fields came from.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The fields, whatever format they came from.
    pub fn fields(&self) -> &Map<String, Value> {
        &self.fields
    }

    /// The fields when they came from `format`, else `None`.
    pub fn fields_for(&self, format: Format) -> Option<&Map<String, Value>> {
        (self.format == format).then_some(&self.fields)
    }
}

/// The fields of `extra` for `format`, when `extra` is present and came from that format.
pub(crate) fn fields_for(
    extra: Option<&ProviderFields>,
    format: Format,
) -> Option<&Map<String, Value>> {
    extra.and_then(|e| e.fields_for(format))
}
