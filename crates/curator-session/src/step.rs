//! What a conversation asks its caller to do next, and what the caller hands back: the
//! next step, a tool call to run, a tool's outcome, and how a resume treats unanswered calls.

use curator_model::{Content, Role, ToolCall};

/// What a tool returned: its output, or the error it reported (recorded as a failed result).
/// [`Conversation::record_tool_result`](crate::Conversation::record_tool_result) takes any `Result` whose two sides turn into
/// [`Content`]; this is the one [`run_blocking`](crate::run_blocking)'s tool closure returns.
pub type ToolOutcome = Result<Content, Content>;

/// The turn a message of role `role` recorded after turn `current` belongs to, `previous`
/// being the role of the message recorded before it: an assistant message starts the next
/// turn, unless it follows an assistant message (one reply recorded as several items, as
/// the Responses API gives a reasoning item, then the message it produced); a tool result
/// belongs to the turn of the reply that called it (at least turn 1); user and system
/// messages to the current one. The one rule every recorder follows
/// ([`Conversation`](crate::Conversation), the Python package's session, `curator replay`'s
/// session files).
///
/// # Examples
///
/// ```
/// use curator::model::Role;
/// use curator::session::next_turn;
///
/// let roles = [Role::System, Role::User, Role::Assistant, Role::Tool, Role::Assistant, Role::Assistant, Role::User];
/// let (mut turn, mut previous) = (0, None);
/// let turns: Vec<u32> = roles.iter().map(|&role| {
///     turn = next_turn(turn, previous, role);
///     previous = Some(role);
///     turn
/// }).collect();
/// assert_eq!(turns, [0, 0, 1, 1, 2, 2, 2]);
/// ```
pub fn next_turn(current: u32, previous: Option<Role>, role: Role) -> u32 {
    match role {
        Role::Assistant if previous == Some(Role::Assistant) => current.max(1),
        Role::Assistant => current.saturating_add(1),
        Role::Tool => current.max(1),
        _ => current,
    }
}

/// A tool call handed to the caller to run, with whether it is being re-run after a resume
/// (so that tools that must not run twice can check their own idempotency keys).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolContext {
    /// The call.
    pub call: ToolCall,
    /// Whether the call was recorded before the process that resumed it.
    pub is_resume: bool,
    /// Whether the call may have started running before the process that resumed it: it
    /// was [marked started](crate::Conversation::mark_started) and has no result, so a crash
    /// interrupted it while it ran. A resumed call of a conversation that keeps start marks
    /// ([`with_start_marks`](crate::Conversation::with_start_marks)) and was never marked did not
    /// start: it is safe to run. Without start marks nothing is known, so every resumed call
    /// counts as started. Never true for a call recorded in this process.
    pub started: bool,
}

impl ToolContext {
    /// A context for a call of this process (not resumed, not started before).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::model::ToolCall;
    /// use curator::session::ToolContext;
    ///
    /// let context = ToolContext::new(ToolCall::new("c1", "ls", "{}"));
    /// assert_eq!((context.call_id(), context.is_resume, context.started), ("c1", false, false));
    /// ```
    pub fn new(call: ToolCall) -> Self {
        Self { call, is_resume: false, started: false }
    }

    /// The call's id, usable as an idempotency key.
    pub fn call_id(&self) -> &str {
        self.call.id()
    }
}

/// What [`Conversation::repair`](crate::Conversation::repair) does with the calls a crash left unanswered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResumePolicy {
    /// Hand them back to be run again, with `is_resume: true` (the default).
    #[default]
    Rerun,
    /// Answer each call that was interrupted while it ran ([`ToolContext::started`]) with a
    /// recorded error result saying so, for tools that must not run twice; the calls that
    /// never started are handed back to be run.
    AnswerInterrupted,
}
