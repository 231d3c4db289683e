//! curator manages the conversation history of LLM agent loops.
//!
//! This facade re-exports the workspace's crates, one module per crate, and a [`prelude`]
//! with the names most programs use. It adds no code of its own.
//!
//! | module | crate | what it holds |
//! |---|---|---|
//! | [`model`] | `curator-model` | messages, tool calls, entries, OpenAI and Anthropic formats, validation |
//! | [`strategies`] | `curator-strategies` | `HistoryManager`, windows, budgets, truncation, redaction, summarization, composition |
//! | [`session`] | `curator-session` | the record: `SessionStore`, `MemoryStore`, session keys, the `Conversation` driver (open-or-resume, next step; async behind `tokio`), snapshots |
//! | [`coalesce`] | `curator-coalesce` | code-executing agents: turns, values and their Clojure-like printing |
//! | [`tasks`] | `curator-tasks` | task history by plan step (`TaskHistory`, `StepTurn`, `TaskEvent`), `summarize_step` / `expand_step` / `context_pressure` tools, compaction |
//! | `sqlite` (feature `sqlite`, on by default) | `curator-sqlite` | `SqliteStore`: the durable, multi-process store on one file |
//! | `postgres` (feature `postgres`) | `curator-postgres` | `PgStore`: one record shared by workers on many machines, with claims |
//! | `r#loop` (feature `loop`) | `curator-loop` | conversational loops: turns, bounded history injected into agent steps, templates, redacted traces, pause and resume, the OpenAI-compatible chat step |
//!
//! Features: `sqlite` (default) adds the SQLite store; `postgres` adds the PostgreSQL store;
//! `postgres-tls` encrypts its connections (rustls; `postgres::SslMode`); `tiktoken` switches
//! on exact OpenAI
//! token counts (`strategies::Bpe`); `openai-compatible` adds the summarizer that calls an
//! OpenAI-compatible endpoint (`strategies::OpenAiCompatible`); `tokio` adds the async driver
//! (`session::AsyncConversation`, `session::run_async`, and `loop::AsyncLoop` with `loop`);
//! `loop` adds conversational loops (`curator::r#loop`, see `docs/conversation-loop.md`).
//!
//! # Examples
//!
//! ```
//! use curator::prelude::*;
//!
//! let messages = vec![
//!     Message::system("You are a careful agent."),
//!     Message::user("Count the files."),
//!     Message::assistant_with_calls(None, vec![ToolCall::new("c1", "ls", "{}")]),
//!     Message::tool_result("c1", "a\nb\nc"),
//!     Message::assistant("There are 3 files."),
//! ];
//! curator::model::validate::openai(&messages)?;
//!
//! let pipeline = ToolResultTruncator::new(2_000)?.then(SlidingWindow::new(20));
//! let view = pipeline.curate_messages(&messages, &CurationContext::default())?;
//! let wire = curator::model::formats::openai::from_messages(&view)?;
//! assert_eq!(wire.as_array().map(Vec::len), Some(5));
//! Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use curator_coalesce as coalesce;
#[cfg(feature = "loop")]
pub use curator_loop as r#loop;
pub use curator_model as model;
#[cfg(feature = "postgres")]
pub use curator_postgres as postgres;
pub use curator_session as session;
#[cfg(feature = "sqlite")]
pub use curator_sqlite as sqlite;
pub use curator_strategies as strategies;
pub use curator_tasks as tasks;

/// The names most programs need, for a glob import.
pub mod prelude {
    pub use curator_model::{
        Content, Entry, EvaluationId, Message, MessageId, PromptRef, Role, ToolCall, ToolCallStatus,
    };
    pub use curator_session::{
        ClaimStore, Conversation, MemoryStore, NextStep, ResumePolicy, SessionKey, SessionStore,
    };
    pub use curator_strategies::{
        CharEstimate, CurationContext, History, HistoryManager, HistoryManagerExt, SlidingWindow,
        StrategyConfig, TokenBudget, TokenCounter, ToolResultTruncator, TurnLimit, View,
    };
}

/// The Rust examples of `docs/sessions.md`, compiled and run as doctests against this
/// facade, so that the guide cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/sessions.md")]
struct SessionsGuide;

/// The Rust examples of `docs/task-history.md`, run as doctests against this facade.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/task-history.md")]
struct TaskHistoryGuide;

/// The Rust examples of `docs/strategies.md`, run as doctests against this facade.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/strategies.md")]
struct StrategiesGuide;

/// The Rust examples of `docs/coalesce.md`, run as doctests against this facade.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/coalesce.md")]
struct CoalesceGuide;

/// The Rust examples of `docs/conversation-loop.md`, compiled and run as doctests.
#[cfg(all(doctest, feature = "loop"))]
#[doc = include_str!("../../../docs/conversation-loop.md")]
struct ConversationLoopGuide;
