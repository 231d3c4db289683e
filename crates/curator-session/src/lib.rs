//! The authoritative record of agent conversations.
//!
//! This crate sits on [`curator_strategies`], [`curator_model`] and the usage type of
//! [`curator_client`] (it does no I/O of its own but the store's; `curator-agent` puts a
//! model client and tools around it). It keeps the **record**
//! (every message, in order, written the moment it exists) apart from the **view** (what a
//! strategy builds from the record for the next provider call):
//!
//! - [`SessionStore`]: append-only storage, idempotent by message id, with checkpoints and
//!   [`Snapshot`]s; [`MemoryStore`] in process (the SQLite store lives in `curator-sqlite`).
//! - [`Conversation`]: a sans-IO driver that records the system message, user messages, the
//!   assistant's replies and each tool result, builds curated requests, says what to do
//!   next ([`Action`]), and resumes after a crash with exactly the unfinished tool calls
//!   pending. Every evaluation belongs to a [`SessionKey`] the caller chooses, and
//!   [`Conversation::open`] resumes a key's conversation or starts one.
//! - [`ClaimStore`]: claims, so that two workers never drive (and re-run the tool calls of)
//!   one session at once.
//! - The driver protocol: [`Driver`], the one description of an agent loop's steps
//!   ([`Action`]: call the model, run work, wait for the user, finished), implemented by
//!   [`Conversation`], task history and the coalesced conversation; [`drive`], the one loop
//!   over any driver, ending with an [`Outcome`]; [`run_blocking`], that loop for the plain
//!   conversation with provider and tool closures.
//! - [`rows`]: for store implementations, the row codec of the SQL stores, with one policy
//!   for rows that cannot be read.
//! - Feature `tokio`: `AsyncDriver`, the one async wrapper of any driver (its store I/O on
//!   tokio's blocking threads), `drive_async`, the loop over it, and `AsyncConversation` and
//!   `run_async`, the plain conversation's conveniences on them.
//!
//! # Examples
//!
//! Resume after a crash between two tool results:
//!
//! ```
//! use curator::model::{Message, PromptRef, ToolCall};
//! use curator::session::{Conversation, MemoryStore};
//!
//! let store = MemoryStore::new();
//! let prompt = PromptRef::new("demo", "agent");
//! {
//!     let mut conversation = Conversation::open(&store, "job-1", prompt.clone(), Message::system("s"))?;
//!     conversation.add_user("check a and b")?;
//!     conversation.record_assistant(Message::assistant_with_calls(None, vec![
//!         ToolCall::new("a", "check", "{}"),
//!         ToolCall::new("b", "check", "{}"),
//!     ]))?;
//!     conversation.record_tool_result("a", Ok::<_, String>("a is fine"))?;
//!     // The process dies here.
//! }
//! let resumed = Conversation::open(&store, "job-1", prompt, Message::system("s"))?;
//! let contexts = resumed.tool_contexts();
//! assert_eq!(contexts.len(), 1);
//! assert_eq!((contexts[0].call_id(), contexts[0].is_resume), ("b", true));
//! assert_eq!(resumed.next_sequence(), 4);
//! Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[cfg(feature = "tokio")]
mod async_conversation;
#[cfg(feature = "tokio")]
mod async_driver;
mod checkpoint;
mod claim;
mod contended;
mod conversation;
mod driver;
mod error;
mod key;
mod key_rule;
mod memory;
mod retention;
pub mod rows;
mod snapshot;
mod snapshot_json;
mod step;
mod store;
mod summaries;
#[cfg(feature = "testing")]
pub mod testing;
mod work;

#[cfg(feature = "tokio")]
pub use async_conversation::{AsyncConversation, run_async};
#[cfg(feature = "tokio")]
pub use async_driver::{AsyncDriver, drive_async};
pub use checkpoint::Checkpoint;
pub use claim::{Claim, ClaimStore, Fence, Lease};
pub use contended::append_at_end;
pub use conversation::{
    CallUsage, Conversation, Curation, Keyed, RunOutcome, recorded_usage, run_blocking,
};
pub use driver::{Action, Driver, Outcome, drive, drive_parallel};
pub use error::{Error, Result, SnapshotErrorKind, StoreErrorKind};
pub use key::SessionKey;
pub use memory::MemoryStore;
pub use retention::{ITEM_HEADS, Prune, Pruned, evaluation_checkpoints, prune};
pub use snapshot::Snapshot;
pub use snapshot_json::{SNAPSHOT_FORMAT, SNAPSHOT_VERSION};
pub use step::{ResumePolicy, ToolContext, ToolOutcome, next_turn};
pub use store::{Appended, ChangeStamp, EvaluationSummary, SessionStore};
pub use summaries::{SUMMARIES_CHECKPOINT, SessionSummaries};
/// The error of a spawned tokio task that panicked or was cancelled (feature `tokio`),
/// named here so that it converts into this crate's [`Error::Join`] and the facade's error.
#[cfg(feature = "tokio")]
pub use tokio::task::JoinError;
