//! History for code-executing agents: the turns of a run, the values its programs produce,
//! and the `SingleUserCoalesced` compressor that renders them for the model.
//!
//! This crate sits on `curator-model` (messages), uses `curator-strategies` for token
//! counting only, and `curator-session` for [`CoalescedConversation`], the adapter that
//! runs an agent through the session driver. The format reference is `docs/coalesce.md`.
//!
//! - [`Value`] and [`Function`]: what an agent program produces, with Clojure-like
//!   printing ([`to_clojure`], bounded by [`Limits`]) and the spec's type vocabulary
//!   ([`Value::type_label`]).
//! - [`Turns`] and [`Turn`]: the append-only record of a run; a turn's number comes from
//!   its position, never from a message count.
//! - [`Run`]: the static system prompt, the mission, the `tool/` ([`ToolSpec`]) and `data/`
//!   ([`DataEntry`]) namespaces and the turn budget.
//! - [`Compression`]: [`SingleUserCoalesced`] (one USER message) and [`Uncompressed`] (the
//!   full history), chosen by [`CompressionConfig`].
//! - [`Run::resolve`]: the auto-fallback rule for bare names.
//! - [`Trace`]: the turns view, the compressed view and token usage.
//! - [`CoalescedConversation`]: a session conversation whose requests are built from the
//!   turns by a compression, with crash resume.
//!
//! # Guarantees
//!
//! - The USER message of [`SingleUserCoalesced`] never exceeds its budget,
//!   [`SingleUserCoalesced::max_chars`] characters (default 50,000), whatever the run holds;
//!   what the budget cuts (the oldest output and tool calls first, the mission's middle last)
//!   leaves a marker with its count, and the newest output keeps its beginning and its end.
//! - Every printed value says what its [`Limits`] cut: `[1 2 3 ... 4 more]`.
//! - Names and map keys starting with `_` are private: listed with `[hidden]` in place of a
//!   sample, or left out of maps with a count (`... 1 private key hidden`).
//! - Descriptions, docstrings, names and printed values stay on their line: nothing they hold
//!   can start a line of the message or fake a section header.
//! - No traversal of a [`Value`] recurses without a bound: a value 100,000 levels deep
//!   converts from JSON, prints, clones, compares and drops like a flat one (serializing
//!   refuses values deeper than [`MAX_NESTING`]).
//!
//! # Examples
//!
//! ```
//! use curator::coalesce::{Limits, Turns, TurnDraft, Value, to_clojure};
//!
//! let laptop = Value::map([("name", Value::from("Laptop")), ("price", Value::from(1200))]);
//! assert_eq!(to_clojure(&laptop, Limits::SAMPLE), r#"{:name "Laptop", :price 1200}"#);
//! assert_eq!(Value::list(vec![laptop.clone(); 7]).type_label(), "list[7]");
//!
//! let mut turns = Turns::new();
//! let turn = turns.push(TurnDraft::returned("(def products data/products)", laptop));
//! assert_eq!(turn.number(), 1);
//! assert!(turn.success());
//! Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod budget;
mod compression;
mod conversation;
mod error;
mod format;
mod from_json;
mod namespace;
mod render;
mod resolve;
mod trace;
mod turn;
mod user_namespace;
mod value;
mod walk;

pub use compression::{
    Compression, CompressionConfig, ConfiguredStrategy, SingleUserCoalesced, StrategyName,
    Uncompressed,
};
pub use conversation::{
    CoalescedConversation, CoalescedOutcome, Executed, TURNS_CHECKPOINT, extract_program,
};
pub use namespace::{DataEntry, Run, ToolSpec};
pub use render::COMMENT_COLUMN;
pub use resolve::Resolved;
pub use trace::{Trace, TraceView};

pub use error::{Error, Result};
pub use format::{ELLIPSIS, Limits, to_clojure};
pub use turn::{Definition, RecordedToolCall, Turn, TurnDraft, TurnResult, Turns};
pub use value::{Function, Value};
pub use walk::MAX_NESTING;
