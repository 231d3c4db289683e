//! The steps of a loop's body: the [`Step`] trait, what a step is given and what it returns,
//! and ready-made steps built from closures.

use curator_client::Usage;
use curator_model::{BoxError, Message};

/// How an agent step takes the conversation history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Injection {
    /// As chat messages, after the step's system messages and before its own messages.
    Messages,
    /// As a delimited text block (rendered by the loop's template) put before the step's
    /// prompt, for agents that take one prompt string.
    Prompt,
}

/// What kind of step a step is: it decides which turns its output makes and whether it is
/// sent history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StepKind {
    /// A model call: sent history (when the loop is conversational and the step's
    /// `use_history` is on); its output can become an assistant turn.
    Agent(Injection),
    /// A human in the loop: its output becomes a user turn; with no input it pauses the loop.
    Human,
    /// Any other work (parsing, a tool, a nested loop): sent nothing, makes no turn unless
    /// named as a source.
    Plain,
}

/// A step's result when it completed: the text, plus the tool or function-call artifacts the
/// reply held, which turns leave out unless the loop keeps them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Output {
    /// The natural-language text.
    pub text: String,
    /// Tool calls and similar structured parts, as JSON text.
    pub artifacts: Vec<String>,
    /// The tokens the step's model calls took, as their clients reported them
    /// ([`ModelStep`](crate::ModelStep) fills it in); `None` for a step that made no call or
    /// knows nothing of it. A loop with a [`Quota`](crate::Quota) charges it.
    pub usage: Option<Usage>,
}

impl Output {
    /// An output of text alone.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(curator::conversation_loop::Output::text("done").text, "done");
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        Self { text: text.into(), artifacts: Vec::new(), usage: None }
    }

    /// Says what the step's model calls took (added to what it said before).
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::client::Usage;
    /// use curator::conversation_loop::Output;
    ///
    /// let output = Output::text("done").with_usage(Usage::new(1_000, 50));
    /// assert_eq!(output.usage.map(|u| u.total()), Some(1_050));
    /// ```
    #[must_use]
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(self.usage.map_or(usage, |before| before.plus(usage)));
        self
    }

    /// Adds an artifact (a tool call's JSON, say).
    #[must_use]
    pub fn with_artifact(mut self, artifact: impl Into<String>) -> Self {
        self.artifacts.push(artifact.into());
        self
    }
}

/// What a step tells the loop.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StepOutcome {
    /// The step finished with this output.
    Output(Output),
    /// The step waits for a human: the loop keeps what the iteration produced so far,
    /// checkpoints, and returns [`LoopOutcome::Paused`](crate::LoopOutcome::Paused).
    Pause {
        /// What the human is asked.
        prompt: Option<String>,
    },
    /// The step stops the loop (control flow, not a failure): the iteration in flight is
    /// dropped and the loop returns [`LoopOutcome::Aborted`](crate::LoopOutcome::Aborted).
    Abort {
        /// Why.
        reason: String,
    },
}

impl StepOutcome {
    /// A finished step with `text` as its output.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::conversation_loop::{Output, StepOutcome};
    ///
    /// assert_eq!(StepOutcome::text("ok"), StepOutcome::Output(Output::text("ok")));
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        StepOutcome::Output(Output::text(text))
    }
}

/// What a step is given when it runs.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct StepCall<'a> {
    /// The iteration this run belongs to (1 for the first).
    pub iteration: u64,
    /// The previous step's output in this iteration, or the iteration's input for the first
    /// step.
    pub input: &'a str,
    /// For agent steps: the messages to send, history injected; empty for other steps.
    pub messages: &'a [Message],
    /// For the step a paused loop resumes at: the human's input.
    pub human_input: Option<&'a str>,
    /// With a [`Quota`](crate::Quota): the tokens this step may still take in this
    /// iteration (the iteration's reservation, less what the steps before it reported);
    /// a [`Parallel`](crate::Parallel) step gives each branch an equal share. `None`
    /// without a quota.
    pub quota: Option<u64>,
}

/// One step of a loop's body.
///
/// Steps are object safe and run one at a time. An error from [`run`](Step::run) fails the
/// iteration, which is rolled back; pausing and aborting are outcomes, not errors.
///
/// # Examples
///
/// A prompt-only agent that echoes the last line it was sent:
///
/// ```
/// use curator::conversation_loop::{Injection, Step, StepCall, StepKind, StepOutcome};
///
/// #[derive(Debug)]
/// struct Echo;
///
/// impl Step for Echo {
///     fn kind(&self) -> StepKind {
///         StepKind::Agent(Injection::Prompt)
///     }
///     fn run(&mut self, call: StepCall<'_>) -> Result<StepOutcome, curator::model::BoxError> {
///         let prompt = call.messages.last().map(|m| m.text().into_owned()).unwrap_or_default();
///         Ok(StepOutcome::text(prompt.lines().last().unwrap_or_default()))
///     }
/// }
/// ```
pub trait Step: Send {
    /// What kind of step this is.
    fn kind(&self) -> StepKind;

    /// For agent steps: the messages the step sends for `input` without history: its system
    /// messages first, then its own messages. The default is one user message holding the
    /// input.
    fn request(&self, input: &str) -> Vec<Message> {
        vec![Message::user(input)]
    }

    /// Runs the step.
    ///
    /// # Errors
    ///
    /// Any error: the loop reports it as [`Error::Step`](crate::Error::Step) with the step's
    /// name and iteration, and the iteration's turns are dropped.
    fn run(&mut self, call: StepCall<'_>) -> Result<StepOutcome, BoxError>;

    /// The step's own state, saved in the loop's checkpoint when the loop pauses at this
    /// step, so that a new process can [`restore_state`](Self::restore_state) it before
    /// resuming. `None` (the default) for steps that keep nothing between a pause and the
    /// resume; a nested loop gives its turns, next input and pause.
    fn checkpoint_state(&self) -> Option<serde_json::Value> {
        None
    }

    /// Restores what [`checkpoint_state`](Self::checkpoint_state) gave, in a new process,
    /// before the paused loop resumes at this step. The default accepts anything and does
    /// nothing.
    ///
    /// # Errors
    ///
    /// A state the step cannot read: the loop is not built
    /// ([`Error::BadCheckpoint`](crate::Error::BadCheckpoint)).
    fn restore_state(&mut self, state: serde_json::Value) -> Result<(), BoxError> {
        let _ = state;
        Ok(())
    }

    /// Whether the step is made so that it can run, checked when the loop is built. The
    /// default accepts every step; a [`Parallel`](crate::Parallel) step needs a branch, and
    /// branches that can run alone.
    ///
    /// # Errors
    ///
    /// What is wrong with the step: the loop is not built
    /// ([`Error::InvalidConfig`](crate::Error::InvalidConfig), key `body`).
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
}

impl<T: Step + ?Sized> Step for Box<T> {
    fn kind(&self) -> StepKind {
        (**self).kind()
    }
    fn request(&self, input: &str) -> Vec<Message> {
        (**self).request(input)
    }
    fn run(&mut self, call: StepCall<'_>) -> Result<StepOutcome, BoxError> {
        (**self).run(call)
    }
    fn checkpoint_state(&self) -> Option<serde_json::Value> {
        (**self).checkpoint_state()
    }
    fn restore_state(&mut self, state: serde_json::Value) -> Result<(), BoxError> {
        (**self).restore_state(state)
    }
    fn check(&self) -> Result<(), String> {
        (**self).check()
    }
}

/// A step made of a closure, of any [`StepKind`], with an optional system prompt for agents.
///
/// # Examples
///
/// ```
/// use curator::conversation_loop::{FnStep, Injection, Step, StepKind, StepOutcome};
///
/// let agent = FnStep::agent(Injection::Messages, |call| Ok(StepOutcome::text(format!("{} messages", call.messages.len()))))
///     .with_system("You are terse.");
/// assert_eq!(agent.request("hi").len(), 2);
/// assert_eq!(agent.kind(), StepKind::Agent(Injection::Messages));
/// ```
pub struct FnStep<F> {
    kind: StepKind,
    system: Option<String>,
    f: F,
}

impl<F> FnStep<F>
where
    F: FnMut(StepCall<'_>) -> Result<StepOutcome, BoxError> + Send,
{
    /// A step of `kind` running `f`.
    pub fn new(kind: StepKind, f: F) -> Self {
        Self { kind, system: None, f }
    }

    /// An agent step.
    pub fn agent(injection: Injection, f: F) -> Self {
        Self::new(StepKind::Agent(injection), f)
    }

    /// A plain step.
    pub fn plain(f: F) -> Self {
        Self::new(StepKind::Plain, f)
    }

    /// Gives an agent step a system prompt, sent first and never changed by injection.
    #[must_use]
    pub fn with_system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }
}

impl<F> std::fmt::Debug for FnStep<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnStep")
            .field("kind", &self.kind)
            .field("system", &self.system)
            .finish_non_exhaustive()
    }
}

impl<F> Step for FnStep<F>
where
    F: FnMut(StepCall<'_>) -> Result<StepOutcome, BoxError> + Send,
{
    fn kind(&self) -> StepKind {
        self.kind
    }

    fn request(&self, input: &str) -> Vec<Message> {
        let mut messages = Vec::with_capacity(2);
        if let Some(system) = &self.system {
            messages.push(Message::system(system.as_str()));
        }
        messages.push(Message::user(input));
        messages
    }

    fn run(&mut self, call: StepCall<'_>) -> Result<StepOutcome, BoxError> {
        (self.f)(call)
    }
}

/// A human-in-the-loop step that takes its input from [`ConversationLoop::resume`]: with
/// no input it pauses the loop, asking its prompt.
///
/// # Examples
///
/// ```
/// use curator::conversation_loop::{Hitl, Step, StepKind};
///
/// assert_eq!(Hitl::new("Your answer?").kind(), StepKind::Human);
/// ```
///
/// [`ConversationLoop::resume`]: crate::ConversationLoop::resume
#[derive(Clone, Debug, Default)]
pub struct Hitl {
    prompt: Option<String>,
}

impl Hitl {
    /// A human step asking `prompt`.
    pub fn new(prompt: impl Into<String>) -> Self {
        Self { prompt: Some(prompt.into()) }
    }
}

impl Step for Hitl {
    fn kind(&self) -> StepKind {
        StepKind::Human
    }

    fn run(&mut self, call: StepCall<'_>) -> Result<StepOutcome, BoxError> {
        Ok(match call.human_input {
            Some(input) => StepOutcome::text(input),
            None => StepOutcome::Pause { prompt: self.prompt.clone() },
        })
    }
}
