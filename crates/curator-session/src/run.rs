//! `run_blocking`: drive a conversation with a provider closure and a tool closure.

use curator_model::{Message, Role};
use curator_strategies::{CurationContext, HistoryManager};

use crate::{Conversation, Error, NextStep, Result, SessionStore, ToolContext, ToolOutcome};

/// How a [`run_blocking`] loop ended.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum RunOutcome {
    /// The assistant replied without calling a tool: its reply.
    Finished(Message),
    /// `max_turns` assistant replies were recorded and the last one still called tools.
    MaxTurns,
    /// Only the system message is recorded ([`NextStep::WaitForUser`]): there is no task to
    /// send the model yet. Nothing was called or recorded; record the user's message
    /// ([`Conversation::add_user`]) and run the loop again.
    WaitingForUser,
}

/// Runs an agent loop on `conversation` until the assistant answers without calling a tool,
/// or for at most `max_turns` replies.
///
/// It does what [`Conversation::next_step`] says, so it can be called on a conversation in
/// any state, freshly opened after a crash or not:
///
/// - [`NextStep::RunTools`]: runs the calls still waiting for a result (only those; after a
///   resume with `is_resume: true`) and records each result at once;
/// - [`NextStep::CallModel`]: curates the record with `manager`, calls `provider` with the
///   view and records its reply (at most `max_turns` times);
/// - [`NextStep::Finished`]: returns [`RunOutcome::Finished`] with the recorded answer,
///   without calling the provider (a conversation reopened after it finished is not sent
///   again);
/// - [`NextStep::WaitForUser`]: returns [`RunOutcome::WaitingForUser`] at once.
///
/// Callers that need their own loop (streaming, parallel tools) use [`Conversation`]
/// directly.
///
/// # Errors
///
/// [`Error::Provider`] when `provider` fails (what was recorded so far stays recorded, so the
/// loop can be resumed), and the conversation's own errors.
///
/// # Examples
///
/// ```
/// use curator::model::{Message, PromptRef, ToolCall};
/// use curator::session::{Conversation, MemoryStore, RunOutcome, run_blocking};
/// use curator::strategies::{CurationContext, SlidingWindow};
///
/// let store = MemoryStore::new();
/// let mut conversation = Conversation::open(&store, "calc-1", PromptRef::new("demo", "calc"), Message::system("Add."))?;
/// conversation.add_user("2 + 2?")?;
/// let outcome = run_blocking(
///     &mut conversation,
///     &SlidingWindow::new(10),
///     &CurationContext::default(),
///     |messages| Ok(if messages.last().map(|m| m.role()) == Some(curator::model::Role::Tool) {
///         Message::assistant(format!("It is {}.", messages.last().map(|m| m.text().into_owned()).unwrap_or_default()))
///     } else {
///         Message::assistant_with_calls(None, vec![ToolCall::new("c1", "add", r#"{"a":2,"b":2}"#)])
///     }),
///     |_ctx| Ok("4".into()),
///     5,
/// )?;
/// assert_eq!(outcome, RunOutcome::Finished(Message::assistant("It is 4.")));
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn run_blocking<S, P, T>(
    conversation: &mut Conversation<S>,
    manager: &dyn HistoryManager,
    ctx: &CurationContext<'_>,
    mut provider: P,
    mut tool: T,
    max_turns: u32,
) -> Result<RunOutcome>
where
    S: SessionStore,
    P: FnMut(&[Message]) -> std::result::Result<Message, Box<dyn std::error::Error + Send + Sync>>,
    T: FnMut(&ToolContext) -> ToolOutcome,
{
    let mut turns = 0;
    loop {
        match conversation.next_step() {
            NextStep::RunTools(contexts) => {
                for context in contexts {
                    let outcome = tool(&context);
                    conversation.record_tool_result(context.call_id(), outcome)?;
                }
            }
            NextStep::CallModel if turns < max_turns => {
                turns += 1;
                let request = conversation.request(manager, ctx)?.to_messages();
                let reply = provider(&request).map_err(Error::Provider)?;
                conversation.record_assistant(reply)?;
            }
            NextStep::CallModel => return Ok(RunOutcome::MaxTurns),
            NextStep::Finished => return Ok(finished(conversation.history().messages())),
            NextStep::WaitForUser => return Ok(RunOutcome::WaitingForUser),
        }
    }
}

/// The outcome of a conversation whose next step is [`NextStep::Finished`]: its latest
/// message, the assistant's answer.
pub(crate) fn finished(record: &[Message]) -> RunOutcome {
    match record.last() {
        Some(answer) if answer.role() == Role::Assistant => RunOutcome::Finished(answer.clone()),
        // `next_step` says finished only after an assistant reply; this is never reached.
        _ => RunOutcome::WaitingForUser,
    }
}
