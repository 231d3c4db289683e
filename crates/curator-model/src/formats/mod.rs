//! Conversion between [`Message`](crate::Message) lists and provider wire formats.
//!
//! Both directions are lossless for a format's own messages: every field curator does not
//! model is kept as [`ProviderFields`](crate::ProviderFields) and written back, content parts
//! it does not know are kept verbatim, and tool-call arguments keep their exact text. Across
//! formats, what one provider cannot express is left out (see each module).

pub mod anthropic;
pub mod openai;

mod object;
