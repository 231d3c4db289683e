//! `run_blocking`: drive a conversation with a provider closure and a tool closure.

use curator_model::Message;
use curator_strategies::{CurationContext, HistoryManager};

use crate::{Conversation, Error, Result, SessionStore, ToolContext, ToolOutcome};

/// How a [`run_blocking`] loop ended.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum RunOutcome {
    /// The assistant replied without calling a tool: its reply.
    Finished(Message),
    /// `max_turns` assistant replies were recorded and the last one still called tools.
    MaxTurns,
}

/// Runs an agent loop on `conversation` until the assistant answers without calling a tool,
/// or for at most `max_turns` replies.
///
/// First, calls left waiting by a crash are run again (with `is_resume: true`). Then each
/// turn: the record is curated by `manager`, `provider` is called with the view, its reply is
/// recorded, and each tool call is run by `tool` and its result recorded at once. Callers
/// that need their own loop (async, streaming, parallel tools) use [`Conversation`] directly.
///
/// # Errors
///
/// [`Error::Provider`] when `provider` fails (what was recorded so far stays recorded, so the
/// loop can be resumed), and the conversation's own errors.
///
/// # Examples
///
/// ```
/// use curator_model::{Message, PromptRef, ToolCall};
/// use curator_session::{Conversation, MemoryStore, RunOutcome, run_blocking};
/// use curator_strategies::{CurationContext, SlidingWindow};
///
/// let store = MemoryStore::new();
/// let mut conversation = Conversation::open(&store, "calc-1", PromptRef::new("demo", "calc"), Message::system("Add."))?;
/// conversation.add_user("2 + 2?")?;
/// let outcome = run_blocking(
///     &mut conversation,
///     &SlidingWindow::new(10),
///     &CurationContext::default(),
///     |messages| Ok(if messages.last().map(|m| m.role()) == Some(curator_model::Role::Tool) {
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
    run_tools(conversation, &mut tool)?;
    for _ in 0..max_turns {
        let request = conversation.request(manager, ctx)?.to_messages();
        let reply = provider(&request).map_err(Error::Provider)?;
        let calls = conversation.record_assistant(reply.clone())?;
        if calls.is_empty() {
            return Ok(RunOutcome::Finished(reply));
        }
        run_tools(conversation, &mut tool)?;
    }
    Ok(RunOutcome::MaxTurns)
}

fn run_tools<S: SessionStore>(
    conversation: &mut Conversation<S>,
    tool: &mut impl FnMut(&ToolContext) -> ToolOutcome,
) -> Result<()> {
    for context in conversation.tool_contexts() {
        let outcome = tool(&context);
        conversation.record_tool_result(context.call_id(), outcome)?;
    }
    Ok(())
}
