//! Conversion between [`Message`](crate::Message) lists and provider wire formats: OpenAI
//! Chat Completions ([`openai`]), Anthropic Messages ([`anthropic`]) and OpenAI Responses
//! API items ([`responses`]).
//!
//! Both directions are lossless for a format's own messages: every field curator does not
//! model is kept as [`ProviderFields`](crate::ProviderFields) and written back, content parts
//! it does not know are kept verbatim, and tool-call arguments keep their exact text (read
//! and write JSON text, not `serde_json::Value`, to keep the numbers of Anthropic's
//! `tool_use` inputs as written: see [`anthropic::to_json`]). Provider fields and verbatim
//! parts go through `serde_json::Value`, whose numbers are 64-bit integers or doubles: the
//! text readers ([`anthropic::parse`], [`anthropic::parse_value`]) refuse, by line and
//! column, a number there that a value would change. Across
//! formats, what one provider cannot express is left out (see each module).

pub mod anthropic;
pub mod detect;
pub mod openai;
pub mod responses;

mod adapt;
mod exact;
mod object;
mod tools;
mod wide;

/// Content block types only the Anthropic format defines; the strict OpenAI reader refuses
/// them (an `image` block with a `source` is checked apart).
pub(crate) const ANTHROPIC_BLOCKS: &[&str] = &[
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "document",
    "server_tool_use",
    "web_search_tool_result",
    "search_result",
];

/// Content part types only the OpenAI format defines; the strict Anthropic reader refuses
/// them.
pub(crate) const OPENAI_PARTS: &[&str] = &["image_url", "input_audio", "file", "refusal"];

/// Content part types only the OpenAI Responses API defines; the strict Chat Completions and
/// Anthropic readers refuse them.
pub(crate) const RESPONSES_PARTS: &[&str] =
    &["input_text", "output_text", "input_image", "input_file"];

/// Message fields only the OpenAI format defines; the strict Anthropic reader refuses them.
pub(crate) const OPENAI_MESSAGE_FIELDS: &[&str] =
    &["tool_calls", "tool_call_id", "function_call", "refusal", "audio"];
