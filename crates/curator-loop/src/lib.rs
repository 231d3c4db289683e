//! Conversational loops for LLM agents: a body of steps run iteration by iteration, the
//! conversation kept as turns, bounded history injected into each agent step, what is sent
//! traced with secrets redacted, and the state checkpointed so a loop pauses for a human and
//! resumes, in the same process or another.
//!
//! This crate sits on [`curator_session`] (checkpoints in a `SessionStore`),
//! [`curator_strategies`] (token budgets with exact counts, turn windows, summaries,
//! redaction) and [`curator_model`] (messages). The facade re-exports it as
//! `curator::conversation_loop` behind the `loop` feature.
//!
//! - [`ConversationTurn`] and [`LoopState`]: the model, serialisable with serde.
//! - [`LoopConfig`] (TOML or JSON, checked at load) and [`Defaults`] (the application's
//!   `[conversation.history_management]` table).
//! - [`Step`]: agent, human-in-the-loop and plain steps; [`FnStep`], [`Hitl`] and
//!   [`ModelStep`] (any `curator::client::ModelClient`).
//! - [`ConversationLoop`], built by [`LoopBuilder`]: `run`, `resume`, `preview`.
//! - [`HistoryTemplate`]: the sandboxed minijinja template of prompt-only injection.
//! - [`TraceSink`]: the redacted message sets agents were sent.
//! - Feature `tokio`: [`AsyncLoop`], the loop for async code.
//!
//! # Examples
//!
//! A clarifying agent and a human, the agent sent the history as messages:
//!
//! ```
//! use curator::conversation_loop::{AiTurnSource, FnStep, Hitl, Injection, LoopBuilder, LoopConfig, StepOutcome};
//!
//! let mut config = LoopConfig::conversational();
//! config.ai_turn_source = AiTurnSource::AllAgents;
//! let mut l = LoopBuilder::new("clarify", config)
//!     .step("clarify", FnStep::agent(Injection::Messages, |call| {
//!         let seen: Vec<String> = call.messages.iter().map(|m| m.text().into_owned()).collect();
//!         Ok(StepOutcome::text(if seen.iter().any(|t| t == "two") { "Booked for two." } else { "For how many?" }))
//!     }))
//!     .step("answer", Hitl::new("Your answer?"))
//!     .exit_when(|p| p.output("clarify") == Some("Booked for two."))
//!     .build()?;
//! assert!(l.run("Book a table.")?.is_paused());      // the agent asked; the human is away
//! assert!(l.resume("two")?.is_paused());              // answered; next iteration asks again
//! let roles: Vec<String> = l.turns().iter().map(|t| format!("{}: {}", t.role, t.content)).collect();
//! assert_eq!(roles, ["user: Book a table.", "assistant: For how many?", "user: two", "assistant: Booked for two."]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[cfg(feature = "tokio")]
mod async_loop;
mod bound;
mod builder;
mod config;
mod driver;
mod error;
mod inject;
mod lens;
mod model_step;
mod parallel;
mod persist;
mod quota;
mod roles;
mod step;
mod template;
mod trace;
mod turn;

#[cfg(feature = "tokio")]
pub use async_loop::AsyncLoop;
pub use builder::{DEFAULT_CLAIM_LEASE, LoopBuilder};
pub use config::{
    AiTurnSource, DEFAULT_MAX_TOKENS, DEFAULT_MAX_TURNS, DEFAULT_SUMMARIZE_RATIO, Defaults,
    HistoryConfig, HistoryStrategy, InitConfig, LoopConfig, MIN_MAX_TOKENS, RedactConfig,
    StepConfig, UserTurnSource,
};
pub use driver::{ConversationLoop, FinishReason, LoopOutcome, Progress};
pub use error::{Error, Result};
pub use lens::LensStep;
pub use model_step::ModelStep;
pub use parallel::Parallel;
pub use persist::{
    ErasedLoops, LOOP_CHECKPOINT_FORMAT, SavedLoop, erase_loops, saved_lens, saved_loops,
};
pub use quota::Quota;
pub use step::{FnStep, Hitl, Injection, Output, Step, StepCall, StepKind, StepOutcome};
pub use template::{DEFAULT_TEMPLATE, HistoryTemplate};
pub use trace::{MemoryTraces, PromptTrace, TraceSink};
pub use turn::{ConversationRole, ConversationTurn, LoopState, Paused};
