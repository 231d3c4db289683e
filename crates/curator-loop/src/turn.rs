//! The conversation a loop keeps: turns and the serialisable loop state.

use curator_model::{Message, Role};
use serde::{Deserialize, Serialize};

/// Who said a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConversationRole {
    /// The human (a human-in-the-loop step, the loop's initial input, a user-turn step).
    User,
    /// An agent step's reply.
    Assistant,
}

impl ConversationRole {
    /// The role as a string: `user` or `assistant`.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::conversation_loop::ConversationRole;
    ///
    /// assert_eq!(ConversationRole::Assistant.as_str(), "assistant");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            ConversationRole::User => "user",
            ConversationRole::Assistant => "assistant",
        }
    }
}

impl std::fmt::Display for ConversationRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One turn of the conversation: who said it and what, as natural-language text (tool and
/// function-call artifacts are not part of it unless the loop is configured to keep them).
///
/// # Examples
///
/// ```
/// use curator::conversation_loop::{ConversationTurn, ConversationRole};
///
/// let turn = ConversationTurn::user("Book a table for two.");
/// assert_eq!(turn.role, ConversationRole::User);
/// assert_eq!(serde_json::to_string(&turn)?, r#"{"role":"user","content":"Book a table for two."}"#);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConversationTurn {
    /// Who said it.
    pub role: ConversationRole,
    /// What was said.
    pub content: String,
}

impl ConversationTurn {
    /// A turn of `role`.
    pub fn new(role: ConversationRole, content: impl Into<String>) -> Self {
        Self { role, content: content.into() }
    }

    /// A user turn.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(ConversationRole::User, content)
    }

    /// An assistant turn.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(ConversationRole::Assistant, content)
    }

    /// The turn as a chat message (`user` or `assistant`).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::conversation_loop::ConversationTurn;
    /// use curator::model::Role;
    ///
    /// assert_eq!(ConversationTurn::assistant("hi").to_message().role(), Role::Assistant);
    /// ```
    pub fn to_message(&self) -> Message {
        match self.role {
            ConversationRole::User => Message::user(self.content.as_str()),
            ConversationRole::Assistant => Message::assistant(self.content.as_str()),
        }
    }

    /// The turn a message stands for: user and assistant messages are turns (their text);
    /// system and tool messages are not.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::conversation_loop::ConversationTurn;
    /// use curator::model::Message;
    ///
    /// assert_eq!(ConversationTurn::from_message(&Message::user("a")), Some(ConversationTurn::user("a")));
    /// assert_eq!(ConversationTurn::from_message(&Message::system("s")), None);
    /// ```
    pub fn from_message(message: &Message) -> Option<Self> {
        let role = match message.role() {
            Role::User => ConversationRole::User,
            Role::Assistant => ConversationRole::Assistant,
            _ => return None,
        };
        Some(Self::new(role, message.text().into_owned()))
    }
}

/// Where a paused loop stopped: the iteration in flight and the step that waits for a human.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Paused {
    /// The index of the human-in-the-loop step in the loop's body.
    pub step: usize,
    /// The step's name.
    pub step_name: String,
    /// What the step asked the human, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The outputs of the steps that ran before it in this iteration, in order.
    #[serde(default)]
    pub outputs: Vec<(String, String)>,
    /// The waiting step's own state, when it has one ([`Step::checkpoint_state`]): a nested
    /// loop's turns and pause, so that a new process resumes it where it waits.
    ///
    /// [`Step::checkpoint_state`]: crate::Step::checkpoint_state
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nested: Option<serde_json::Value>,
    /// Whether the steps before the pause reported their usage, which the run's quota was
    /// charged when the iteration paused: the rest of the iteration is then charged what it
    /// reports, not its reservation.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reported: bool,
    /// The tokens the steps before the pause reported (charged when the iteration paused):
    /// the steps after it are told their reservation less these ([`StepCall::quota`]).
    ///
    /// [`StepCall::quota`]: crate::StepCall::quota
    #[serde(default, skip_serializing_if = "is_zero")]
    pub settled: u64,
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A loop's state: the iteration counter, the turns, and where it paused. It serialises
/// with serde; a [`ConversationLoop`](crate::ConversationLoop) checkpoints it incrementally
/// (see [`ConversationLoop::state`](crate::ConversationLoop::state) for the whole of it).
///
/// # Examples
///
/// ```
/// use curator::conversation_loop::{ConversationTurn, LoopState};
///
/// let state = LoopState {
///     iteration: 2,
///     turns: vec![ConversationTurn::user("hi")],
///     input: "hi".into(),
///     ..LoopState::default()
/// };
/// let json = serde_json::to_string(&state)?;
/// assert_eq!(serde_json::from_str::<LoopState>(&json)?, state);
/// Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoopState {
    /// Iterations completed (a paused iteration is not counted until it completes).
    pub iteration: u64,
    /// The conversation, oldest first.
    pub turns: Vec<ConversationTurn>,
    /// Where the loop waits for a human, when it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<Paused>,
    /// The next iteration's input (the last output of the last completed iteration, or the
    /// input the run started with).
    #[serde(default)]
    pub input: String,
    /// Whether a run is in progress: paused, interrupted by a crash, or stopped by an error.
    /// [`ConversationLoop::run`](crate::ConversationLoop::run) continues it from `input`.
    #[serde(default)]
    pub running: bool,
    /// The iterations completed when the current (or last) run started: `max_iterations`
    /// counts the iterations of a run from it.
    #[serde(default)]
    pub run_start: u64,
    /// The tokens the current (or last) run used of its [`Quota`](crate::Quota) (0
    /// without one).
    #[serde(default)]
    pub quota_used: u64,
}
