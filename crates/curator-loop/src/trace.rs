//! Traces of what agents are sent: one event per agent call, after injection, redacted.

use std::sync::{Mutex, PoisonError};

use curator_model::{BoxError, Message};

/// The message set one agent step was sent, after history injection, with secrets redacted.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct PromptTrace {
    /// The loop's name.
    pub loop_name: String,
    /// The iteration (1 for the first).
    pub iteration: u64,
    /// The agent step.
    pub step: String,
    /// Whether history was injected.
    pub injected: bool,
    /// What was sent, redacted.
    pub messages: Vec<Message>,
}

/// Receives [`PromptTrace`]s. A failing sink never fails the loop: the error is logged (a
/// `tracing` warning) and counted ([`ConversationLoop::trace_failures`]).
///
/// # Examples
///
/// ```
/// use curator::conversation_loop::{PromptTrace, TraceSink};
///
/// #[derive(Debug)]
/// struct Stderr;
///
/// impl TraceSink for Stderr {
///     fn emit(&self, trace: &PromptTrace) -> Result<(), curator::model::BoxError> {
///         let _ = (trace.step.len(), trace.messages.len()); // write them somewhere
///         Ok(())
///     }
/// }
/// ```
///
/// [`ConversationLoop::trace_failures`]: crate::ConversationLoop::trace_failures
pub trait TraceSink: Send + Sync + std::fmt::Debug {
    /// Records one trace.
    ///
    /// # Errors
    ///
    /// Any: the loop logs it and goes on.
    fn emit(&self, trace: &PromptTrace) -> Result<(), BoxError>;
}

/// A [`TraceSink`] that keeps every trace in memory.
///
/// # Examples
///
/// ```
/// use curator::conversation_loop::{MemoryTraces, TraceSink};
///
/// let traces = MemoryTraces::default();
/// assert!(traces.traces().is_empty());
/// ```
#[derive(Debug, Default)]
pub struct MemoryTraces {
    traces: Mutex<Vec<PromptTrace>>,
}

impl MemoryTraces {
    /// The traces so far, oldest first.
    pub fn traces(&self) -> Vec<PromptTrace> {
        self.traces.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl TraceSink for MemoryTraces {
    fn emit(&self, trace: &PromptTrace) -> Result<(), BoxError> {
        self.traces.lock().unwrap_or_else(PoisonError::into_inner).push(trace.clone());
        Ok(())
    }
}

impl<T: TraceSink + ?Sized> TraceSink for std::sync::Arc<T> {
    fn emit(&self, trace: &PromptTrace) -> Result<(), BoxError> {
        (**self).emit(trace)
    }
}
