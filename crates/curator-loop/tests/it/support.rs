//! Stand-in steps shared by the tests.

use std::sync::{Arc, Mutex};

use curator_loop::{Injection, Step, StepCall, StepKind, StepOutcome};
use curator_model::{BoxError, Message};

/// What a recording agent was sent, call by call.
pub(crate) type Calls = Arc<Mutex<Vec<Vec<Message>>>>;

/// An agent that records the messages it is sent and answers with a reply computed from
/// them (`reply(call number, messages)`).
pub(crate) struct Recording<F> {
    pub(crate) injection: Injection,
    pub(crate) system: Option<String>,
    pub(crate) calls: Calls,
    pub(crate) reply: F,
    /// Whether the step sends its input as its own user message (else only its system
    /// prompt, so that what follows it is the injected history alone).
    pub(crate) own_input: bool,
}

impl<F> Recording<F>
where
    F: FnMut(usize, &[Message]) -> Result<StepOutcome, BoxError> + Send,
{
    pub(crate) fn new(injection: Injection, reply: F) -> (Self, Calls) {
        let calls = Calls::default();
        (
            Self {
                injection,
                system: Some("You are the agent.".into()),
                calls: calls.clone(),
                reply,
                own_input: true,
            },
            calls,
        )
    }
}

impl<F> Step for Recording<F>
where
    F: FnMut(usize, &[Message]) -> Result<StepOutcome, BoxError> + Send,
{
    fn kind(&self) -> StepKind {
        StepKind::Agent(self.injection)
    }

    fn request(&self, input: &str) -> Vec<Message> {
        let mut messages = Vec::new();
        if let Some(system) = &self.system {
            messages.push(Message::system(system.as_str()));
        }
        if self.own_input {
            messages.push(Message::user(input));
        }
        messages
    }

    fn run(&mut self, call: StepCall<'_>) -> Result<StepOutcome, BoxError> {
        let mut calls = self.calls.lock().unwrap();
        calls.push(call.messages.to_vec());
        let n = calls.len();
        drop(calls);
        (self.reply)(n, call.messages)
    }
}

/// A recording agent answering `"{name} {call number}"`.
pub(crate) fn agent(name: &'static str, injection: Injection) -> (impl Step, Calls) {
    Recording::new(injection, move |n, _| Ok(StepOutcome::text(format!("{name} {n}"))))
}

/// `role: text` of each message.
pub(crate) fn texts(messages: &[Message]) -> Vec<String> {
    messages.iter().map(|m| format!("{}: {}", m.role(), m.text())).collect()
}

/// `role: content` of each turn of a loop.
pub(crate) fn turns(l: &curator_loop::ConversationLoop) -> Vec<String> {
    l.turns().iter().map(|t| format!("{}: {}", t.role, t.content)).collect()
}
