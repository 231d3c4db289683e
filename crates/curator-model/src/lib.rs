//! The provider-neutral entry model of curator: messages, tool calls, recorded entries,
//! lossless conversion to and from the OpenAI and Anthropic formats, and a validator that
//! says whether a message list would be accepted by a provider.
//!
//! This is the bottom layer of the workspace: every other curator crate builds on these
//! types, and this crate depends on none of them.
//!
//! - [`Message`] is what strategies curate: a [`Role`], optional [`Content`] (text or
//!   parts), [`ToolCall`]s on assistant messages, the answered call's id on tool messages.
//! - [`Entry`] is a recorded message: its [`MessageId`], [`EvaluationId`], sequence, turn,
//!   [`PromptRef`] and time.
//! - [`ToolCallStatus`] is derived from the record by [`tool_call_states`], never stored.
//! - [`formats::openai`], [`formats::anthropic`] and [`formats::responses`] read and write
//!   provider messages (and the Responses API's items).
//! - [`validate::openai`] and [`validate::anthropic`] report the first rule a list breaks.
//!
//! # Examples
//!
//! ```
//! use curator::model::{formats, validate};
//!
//! let messages = formats::openai::parse(r#"[
//!     {"role": "system", "content": "You are a shell assistant."},
//!     {"role": "user", "content": "How big is /var/log?"},
//!     {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
//!         "function": {"name": "du", "arguments": "{\"path\":\"/var/log\"}"}}]},
//!     {"role": "tool", "tool_call_id": "c1", "content": "1.2G"}
//! ]"#)?;
//! validate::openai(&messages)?;
//! validate::anthropic(&messages)?;
//!
//! let request = formats::anthropic::from_messages(&messages)?;
//! assert_eq!(request.system.as_ref().and_then(|s| s.as_str()), Some("You are a shell assistant."));
//! assert_eq!(request.messages.len(), 3);
//! Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod content;
mod entry;
mod entry_json;
mod error;
pub mod formats;
mod ids;
mod message;
pub mod pairing;
mod provider_fields;
mod role;
mod status;
mod tool_call;
pub mod validate;

pub use content::{Content, ImageSource, Part};
pub use entry::{Entry, EntryBuilder, PromptRef};
pub use entry_json::write_json_string;
pub use error::{BoxError, Error, Result, json_kind};
pub use ids::{EvaluationId, MessageId};
pub use message::Message;
pub use provider_fields::{Format, ProviderFields};
pub use role::{ParseRoleError, Role};
pub use status::{ToolCallState, pending_tool_calls, tool_call_states};
pub use tool_call::{ToolCall, ToolCallStatus};
