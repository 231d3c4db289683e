//! A whole agent in a few lines: [`Agent`] puts a model client (any
//! [`ModelClient`](curator_client::ModelClient)), [`Tools`], a system prompt and the default
//! curation pipeline around curator's recorded conversation
//! ([`Conversation`](curator_session::Conversation)), and answers each message exactly once:
//!
//! - **one loop**: a run is a [`Driver`](curator_session::Driver) over the conversation, run
//!   by [`drive_parallel`](curator_session::drive_parallel): a reply's tool calls run at once,
//!   each result recorded the moment its tool returns; the model's usage (cache reads and
//!   writes included) is recorded with its reply and summed in the [`AgentOutcome`];
//! - **exactly once**: each message under the caller's id is recorded once and answered
//!   once (a redelivered message gets its recorded answer, without a model call); a process
//!   killed at any point resumes where the record says, each tool call run once (or answered
//!   as interrupted, by the [`ResumePolicy`](curator_session::ResumePolicy));
//! - **claims**: [`Agent::ask_claimed`] holds the session's claim, renewed before every
//!   step, so that two workers never answer one session at once;
//! - **secrets never recorded**: every message is redacted before it is stored, unless
//!   [`record_unredacted`](Agent::record_unredacted).
//!
//! # Examples
//!
//! ```
//! use curator::agent::{Agent, Tools};
//! use curator::client::{ClientError, ModelClient, ModelReply, ModelRequest};
//! use curator::model::{Message, Role};
//! use curator::session::MemoryStore;
//!
//! /// A model that answers at once.
//! struct Echo;
//! impl ModelClient for Echo {
//!     fn complete(&self, request: &ModelRequest<'_>) -> Result<ModelReply, ClientError> {
//!         let asked = request.messages.iter().rev().find(|m| m.role() == Role::User);
//!         Ok(ModelReply::new(Message::assistant(format!("You said: {}", asked.map(|m| m.text().into_owned()).unwrap_or_default()))))
//!     }
//! }
//!
//! let agent = Agent::new(Echo, Tools::new()).system("Repeat.");
//! let store = MemoryStore::new();
//! assert_eq!(agent.ask(&store, "user-1", "m1", "hi")?.text(), "You said: hi");
//! Ok::<(), curator::session::Error>(())
//! ```

mod agent;
mod run;
mod tools;

pub use agent::{Agent, DEFAULT_AGENT_LEASE, DEFAULT_AGENT_MAX_TOKENS, DEFAULT_AGENT_MAX_TURNS};
pub use run::{AgentEnd, AgentOutcome};
pub use tools::{ToolError, ToolInput, Tools};
