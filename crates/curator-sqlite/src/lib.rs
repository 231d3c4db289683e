//! The SQLite session store of curator, the embedded default: one file, durable, crash-safe,
//! shared safely by several processes.
//!
//! This crate implements [`curator_session::SessionStore`] with rusqlite and a bundled
//! SQLite (no system library needed). It sits beside `curator-loop` above the session layer.
//!
//! - [`SqliteStore::open`] / [`open_with`](SqliteStore::open_with) create or open a file in
//!   write-ahead-log mode with a [`Durability`] and a busy timeout;
//!   [`open_read_only`](SqliteStore::open_read_only) is for inspection tools.
//! - The schema version lives in `PRAGMA user_version` and older files are migrated forward
//!   on open; a file of another application, a newer schema or not a database at all is a
//!   distinct [`Error`], and the file is left untouched.
//! - Snapshots are the same JSON as every other store's, so they move between stores.
//!
//! # Examples
//!
//! ```
//! use curator::model::{Message, PromptRef, ToolCall};
//! use curator::session::{Conversation, SessionStore};
//! use curator::sqlite::{Durability, SqliteOptions, SqliteStore};
//!
//! let dir = tempfile::tempdir()?;
//! let store = SqliteStore::open_with(dir.path().join("agent.db"), SqliteOptions::default().with_durability(Durability::Normal))?;
//! let prompt = PromptRef::new("demo", "agent");
//! let mut conversation = Conversation::start(&store, "test", prompt.clone(), Message::system("s"))?;
//! conversation.record_assistant(Message::assistant_with_calls(None, vec![ToolCall::new("c1", "ls", "{}")]))?;
//! drop(conversation); // the process "dies" before the tool finishes
//!
//! let resumed = Conversation::resume(&store, "test", &prompt)?;
//! assert_eq!(resumed.tool_contexts()[0].call_id(), "c1");
//! assert_eq!(store.integrity_check()?, "ok");
//! Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod checkpointer;
mod claims;
mod error;
mod leftover_log;
mod locks;
mod options;
mod place;
mod reading;
mod schema;
mod store;

pub use error::{Error, Result};
#[allow(deprecated, reason = "the old name stays available")]
pub use options::Options;
pub use options::{Durability, SqliteOptions};
pub use schema::SCHEMA_VERSION;
#[doc(hidden)]
pub use schema::create_at_version;
pub use store::SqliteStore;
