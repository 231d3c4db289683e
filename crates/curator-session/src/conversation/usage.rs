//! The record of each model call's usage: kept beside the assistant message it produced, so
//! that a recorded run's billed cost can be read back ([`recorded_usage`]).

use curator_model::EvaluationId;
use serde_json::{Value, json};

use curator_client::Usage;

use crate::{Conversation, Error, Result, SessionStore, StoreErrorKind};

/// The checkpoint that holds an evaluation's usage: `curator.usage/<evaluation>`, deleted
/// with the evaluation.
pub(crate) fn usage_checkpoint(evaluation: EvaluationId) -> String {
    format!("curator.usage/{evaluation}")
}

/// The usage of one recorded model call: the sequence of the assistant message the call
/// produced, and the tokens it took.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct CallUsage {
    /// The sequence of the assistant message the call produced.
    pub sequence: u64,
    /// The tokens it took.
    pub usage: Usage,
}

impl<S: SessionStore> Conversation<S> {
    /// Records `usage` as what the call that produced the latest assistant reply took: kept
    /// in the store beside the record (the checkpoint `curator.usage/<evaluation>`), read
    /// back by [`recorded_usage`] and shown by `curator inspect` and `curator trace`.
    /// Recording the same reply's usage again replaces it. `curator_agent::Agent` records
    /// every call's usage that its client reports.
    ///
    /// The usage is written after the reply: a process killed between the two keeps the
    /// reply and not its usage (never the other way round).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::{Message, PromptRef};
    /// use curator::client::Usage;
    /// use curator::session::{Conversation, MemoryStore, recorded_usage};
    ///
    /// let store = MemoryStore::new();
    /// let mut c = Conversation::open(&store, "job-1", PromptRef::new("demo", "agent"), Message::system("s"))?;
    /// c.add_user("hello")?;
    /// c.record_assistant(Message::assistant("hi"))?;
    /// c.record_usage(Usage::new(1_200, 5).with_cache(1_024, 0))?;
    /// let calls = recorded_usage(&store, c.evaluation_id())?;
    /// assert_eq!((calls[0].sequence, calls[0].usage.cache_read_tokens), (2, 1_024));
    /// Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::WrongRole`] when no assistant reply was recorded yet (nothing is written);
    /// [`Error::Fenced`] under a fence whose claim was taken over; a store error, and
    /// [`Error::Store`] of kind [`Corrupt`](StoreErrorKind::Corrupt) when the checkpoint is
    /// not one this build wrote.
    pub fn record_usage(&mut self, usage: Usage) -> Result<()> {
        let Some(sequence) = self.reply_sequence() else {
            return Err(Error::WrongRole {
                call: "record_usage",
                expected: "an assistant reply recorded first",
                found: self
                    .history()
                    .messages()
                    .last()
                    .map_or(curator_model::Role::System, curator_model::Message::role),
            });
        };
        let mut calls = recorded_usage(self.store(), self.evaluation_id())?;
        calls.retain(|call| call.sequence != sequence);
        calls.push(CallUsage { sequence, usage });
        calls.sort_by_key(|call| call.sequence);
        let document = json!({ "calls": calls.iter().map(write_call).collect::<Vec<_>>() });
        self.put_own_checkpoint(&usage_checkpoint(self.evaluation_id()), &document)?;
        Ok(())
    }
}

/// The usage recorded for the model calls of `evaluation`
/// ([`Conversation::record_usage`]), in the order of their replies; empty when none was.
///
/// # Examples
///
/// ```
/// use curator::model::EvaluationId;
/// use curator::session::{MemoryStore, recorded_usage};
///
/// assert!(recorded_usage(&MemoryStore::new(), EvaluationId::new())?.is_empty());
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// A store error; [`Error::Store`] of kind [`Corrupt`](StoreErrorKind::Corrupt) when the
/// checkpoint is not one this build wrote, naming it and the call that is not.
pub fn recorded_usage<S: SessionStore + ?Sized>(
    store: &S,
    evaluation: EvaluationId,
) -> Result<Vec<CallUsage>> {
    let name = usage_checkpoint(evaluation);
    let Some(checkpoint) = store.checkpoint(&name)? else { return Ok(Vec::new()) };
    let corrupt = |what: String| {
        Error::store(
            "conversation",
            StoreErrorKind::Corrupt,
            format!("checkpoint `{name}`: {what}"),
            None,
        )
    };
    let calls = checkpoint
        .document
        .get("calls")
        .and_then(Value::as_array)
        .ok_or_else(|| corrupt("holds no `calls` array".to_owned()))?;
    let mut calls = calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            read_call(call).ok_or_else(|| {
                corrupt(format!(
                    "call {i} is not {{\"sequence\", \"input\", \"output\", \"cache_read\", \"cache_write\"}} counts"
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    calls.sort_by_key(|call| call.sequence);
    Ok(calls)
}

fn write_call(call: &CallUsage) -> Value {
    let u = &call.usage;
    json!({
        "sequence": call.sequence,
        "input": u.input_tokens,
        "output": u.output_tokens,
        "cache_read": u.cache_read_tokens,
        "cache_write": u.cache_write_tokens,
    })
}

fn read_call(call: &Value) -> Option<CallUsage> {
    let count = |name: &str| call.get(name).and_then(Value::as_u64);
    Some(CallUsage {
        sequence: count("sequence")?,
        usage: Usage::new(count("input")?, count("output")?)
            .with_cache(count("cache_read")?, count("cache_write")?),
    })
}
