//! curator manages the conversation history of LLM agent loops.
//!
//! An agent loop (system, task, assistant replies, tool calls, tool results...) resends its
//! whole history on every provider call: it outgrows the context window, costs money, and
//! drowns the model in stale tool output. curator does two things for it:
//!
//! - **It records** every message the moment it exists, under a session key the caller
//!   chooses (a thread, user or job id), in memory, in a SQLite file or in PostgreSQL. A
//!   process killed in the middle of a tool call resumes exactly where it stopped and runs
//!   again only the calls that never finished.
//! - **It curates** what the model is sent before each call: windows, turn limits, token
//!   budgets with exact tokenizers, tool-result truncation and clearing, summaries,
//!   redaction, relevance-aware retention. Strategies are pure, deterministic and compose;
//!   none ever splits a tool call from its result or drops the system message or the task,
//!   and every view is valid for the OpenAI and Anthropic formats, which curator reads and
//!   writes losslessly.
//!
//! # The main job
//!
//! A worker with a stand-in model and one tool, recorded to SQLite under the key `user-42`,
//! curated by a token budget before each model call, killed while its tool runs, and started
//! again: the new process resumes the conversation and runs only the pending call.
//!
//! ```
//! use curator::prelude::*;
//!
//! /// A stand-in for the model: it asks for the weather once, then reports the tool's result.
//! fn model(request: &[Message]) -> Message {
//!     match request.last() {
//!         Some(last) if last.role() == Role::Tool => {
//!             Message::assistant(format!("In Paris: {}.", last.text()))
//!         }
//!         _ => Message::assistant_with_calls(
//!             None,
//!             vec![ToolCall::new("call-1", "weather", r#"{"city": "Paris"}"#)],
//!         ),
//!     }
//! }
//!
//! /// The tool.
//! fn weather(call: &ToolContext) -> Result<String, String> {
//!     match call.call.name() {
//!         "weather" => Ok("18 °C, light rain".to_owned()),
//!         other => Err(format!("no tool named {other}")),
//!     }
//! }
//!
//! /// One process of the worker; `killed` makes it die once its tool call has started.
//! fn worker(store: &SqliteStore, killed: bool) -> Result<Option<String>, curator::Error> {
//!     let budget = TokenBudget::new(8_000).with_reserve(1_000);
//!     let system = Message::system("You report the weather.");
//!     let mut c = Conversation::open(store, "user-42", PromptRef::new("demo", "weather"), system)?;
//!     loop {
//!         match c.next_step() {
//!             Action::WaitForUser => {
//!                 c.add_user("What is the weather in Paris?")?;
//!             }
//!             Action::CallModel => {
//!                 // The curated view, not the whole record, is what the model is sent.
//!                 let request = c.request(&budget, &CurationContext::default())?.to_messages();
//!                 c.record_assistant(model(&request))?;
//!             }
//!             Action::Run(calls) => {
//!                 for call in calls {
//!                     if killed {
//!                         return Ok(None); // the process dies while the tool runs
//!                     }
//!                     c.record_tool_result(call.call_id(), weather(&call))?;
//!                 }
//!             }
//!             _ => return Ok(c.history().messages().last().map(|m| m.text().into_owned())),
//!         }
//!     }
//! }
//!
//! let path = std::env::temp_dir().join(format!("curator-main-job-{}.db", std::process::id()));
//! assert_eq!(worker(&SqliteStore::open(&path)?, true)?, None); // killed mid-tool-call
//! let store = SqliteStore::open(&path)?; // a new process opens the same file
//! let answer = worker(&store, false)?; // resumes, runs the pending call, finishes
//! assert_eq!(answer.as_deref(), Some("In Paris: 18 °C, light rain."));
//! let recorded = store.evaluations_of(&SessionKey::new("user-42"))?;
//! assert_eq!((recorded.len(), recorded[0].messages), (1, 5)); // one conversation, 5 messages
//! # drop(store);
//! # for end in ["", "-wal", "-shm"] { let _ = std::fs::remove_file(format!("{}{end}", path.display())); }
//! Ok::<(), curator::Error>(())
//! ```
//!
//! # Modules and features
//!
//! Each crate of the workspace is a module here; one dependency on `curator` reaches all of
//! them, and features switch the optional ones on.
//!
//! | module | feature | what it holds |
//! |---|---|---|
//! | [`model`] | always | messages, tool calls, entries; the OpenAI and Anthropic formats; validation |
//! | [`strategies`] | always (`tiktoken`: exact OpenAI token counts) | `HistoryManager` and the strategies: windows, turn limits, token and relevance budgets, truncation, clearing, summaries, redaction, composition |
//! | [`client`] | always (`openai`, `anthropic`: the HTTP clients; `tokio`: async calls) | `ModelClient`, the one trait under every model call; `OpenAiClient` and `AnthropicClient` with retries, usage with prompt-cache counts and cache breakpoints; `ModelSummarizer` |
//! | [`session`] | always (`tokio`: the async driver) | the record: `SessionStore`, `MemoryStore`, session keys, claims, the `Conversation` driver, the driver protocol (`Driver`, `drive`, `drive_parallel`), snapshots |
//! | [`agent`] | always (`tokio`: `ask_async`) | `Agent`: a model client, `Tools`, the default pipeline and exactly-once resume around the conversation, so that an agent is a few lines |
//! | `sqlite` | `sqlite` (default) | `SqliteStore`: the embedded, crash-safe store on one file |
//! | `postgres` | `postgres` (`postgres-tls`: encrypted connections) | `PgStore`: one record shared by workers on many machines |
//! | `coalesce` | `coalesce` | `SingleUserCoalesced`, for code-executing agents: the history as one user message |
//! | `tasks` | `tasks` | task history by plan step, with `summarize_step` / `expand_step` / `context_pressure` tools |
//! | `conversation_loop` | `loop` | conversational loops: turns, history injected into agent steps, templates, redacted traces, pause and resume |
//!
//! `cargo build -p curator --no-default-features` builds the core alone (model, strategies,
//! client traits, session, agent). [`Error`] is the one error type every module's error converts into, for
//! programs that use several with `?`; each module keeps its own, more precise one.
//!
//! # Guides
//!
//! Each guide is a page of these docs (and a file of the repository's `docs/` folder):
//!
//! - [Sessions](guides::sessions): the record, session keys, the driver, model clients,
//!   resume, stores, claims, snapshots.
//! - [Strategies](guides::strategies): every strategy, what it keeps, and how to compose
//!   them.
//! - [Task history](guides::task_history), [Coalesce](guides::coalesce) and
//!   [Conversational loops](guides::conversation_loop): the three upper layers.
//! - [The `curator` command](guides::cli): curate, replay with a report, inspect, trace,
//!   chat.
//! - [Benchmarks](guides::benchmarks): what every speed and quality number is, and how it
//!   was measured.
//! - [Architecture](guides::architecture): the crates, their contracts and the invariants
//!   checked.

mod error;

pub use error::Error;

#[doc(inline)]
pub use curator_agent as agent;
#[doc(inline)]
pub use curator_client as client;
#[cfg(feature = "coalesce")]
#[doc(inline)]
pub use curator_coalesce as coalesce;
#[cfg(feature = "loop")]
#[doc(inline)]
pub use curator_loop as conversation_loop;
#[doc(inline)]
pub use curator_model as model;
#[cfg(feature = "postgres")]
#[doc(inline)]
pub use curator_postgres as postgres;
#[doc(inline)]
pub use curator_session as session;
#[cfg(feature = "sqlite")]
#[doc(inline)]
pub use curator_sqlite as sqlite;
#[doc(inline)]
pub use curator_strategies as strategies;
#[cfg(feature = "tasks")]
#[doc(inline)]
pub use curator_tasks as tasks;

/// The names an agent loop needs, for a glob import: messages, the driver, the stores, the
/// common strategies, the model clients (features `openai`, `anthropic`), and [`Error`].
pub mod prelude {
    pub use crate::Error;
    pub use curator_agent::{Agent, AgentEnd, AgentOutcome, ToolError, Tools};
    #[cfg(feature = "anthropic")]
    pub use curator_client::AnthropicClient;
    #[cfg(feature = "tokio")]
    pub use curator_client::AsyncModelClient;
    #[cfg(feature = "openai")]
    pub use curator_client::OpenAiClient;
    pub use curator_client::{ModelClient, ModelReply, ModelRequest, Usage};
    pub use curator_model::{
        BoxError, Content, Entry, EvaluationId, Message, MessageId, PromptRef, Role, ToolCall,
        ToolCallStatus,
    };
    #[cfg(feature = "postgres")]
    pub use curator_postgres::PgStore;
    pub use curator_session::{
        Action, Claim, ClaimStore, Conversation, Curation, Driver, MemoryStore, Outcome,
        ResumePolicy, RunOutcome, SessionKey, SessionStore, StoreErrorKind, ToolContext, drive,
        drive_parallel, run_blocking,
    };
    #[cfg(feature = "tokio")]
    pub use curator_session::{AsyncConversation, AsyncDriver, drive_async, run_async};
    #[cfg(feature = "sqlite")]
    pub use curator_sqlite::SqliteStore;
    pub use curator_strategies::{
        CharEstimate, ClearOldToolResults, CurationContext, History, HistoryManager,
        HistoryManagerExt, Redactor, RelevanceBudget, SlidingWindow, StableBudget, StrategyConfig,
        TokenBudget, TokenCounter, ToolResultTruncator, TurnLimit, View,
    };
}

/// The guides, one page each. Their Rust examples are compiled and run as doctests against
/// this facade, so that a guide cannot drift from the API; under `cargo test --doc` a guide
/// is built only with the features its examples need (CI builds them all).
#[cfg(doc)]
pub mod guides {
    #[cfg(any(
        not(doctest),
        all(
            feature = "sqlite",
            feature = "tokio",
            feature = "postgres-tls",
            feature = "openai",
            feature = "anthropic"
        )
    ))]
    #[doc = include_str!("../../../docs/sessions.md")]
    pub mod sessions {}
    #[cfg(any(
        not(doctest),
        all(
            feature = "sqlite",
            feature = "tokio",
            feature = "postgres-tls",
            feature = "openai",
            feature = "anthropic"
        )
    ))]
    #[doc = include_str!("../../../docs/agents.md")]
    pub mod agents {}
    #[cfg(any(
        not(doctest),
        all(
            feature = "sqlite",
            feature = "tokio",
            feature = "postgres-tls",
            feature = "openai",
            feature = "anthropic"
        )
    ))]
    #[doc = include_str!("../../../docs/stores.md")]
    pub mod stores {}
    #[doc = include_str!("../../../docs/strategies.md")]
    pub mod strategies {}
    #[cfg(any(not(doctest), feature = "tasks"))]
    #[doc = include_str!("../../../docs/task-history.md")]
    pub mod task_history {}
    #[cfg(any(not(doctest), feature = "coalesce"))]
    #[doc = include_str!("../../../docs/coalesce.md")]
    pub mod coalesce {}
    #[cfg(any(not(doctest), feature = "loop"))]
    #[doc = include_str!("../../../docs/conversation-loop.md")]
    pub mod conversation_loop {}
    #[doc = include_str!("../../../docs/cli.md")]
    pub mod cli {}
    #[doc = include_str!("../../../docs/benchmarks.md")]
    pub mod benchmarks {}
    #[doc = include_str!("../../../docs/cost.md")]
    pub mod cost {}
    #[doc = include_str!("../../../docs/architecture.md")]
    pub mod architecture {}
}

/// The Rust examples of the README, compiled and run as doctests (with the features its
/// agent needs: `openai` and `sqlite`, which `--all-features` turns on).
#[cfg(all(doctest, feature = "openai", feature = "sqlite"))]
#[doc = include_str!("../../../README.md")]
struct Readme;
