//! One run of an [`Agent`](crate::Agent) as a [`Driver`]: the plain conversation whose
//! model reply is the client's whole reply (its usage recorded with it), whose work is the
//! agent's tools (a stop ends the run), and which renews the agent's claim before every
//! step; [`drive_parallel`](curator_session::drive_parallel) runs it like any other driver.

use std::collections::HashSet;

use curator_client::{ModelReply, Usage};
use curator_model::{BoxError, Content, Message};

use curator_session::{
    Action, Claim, Conversation, Curation, Driver, Error, Result, ResumePolicy, SessionStore,
    ToolContext,
};

use crate::ToolError;

/// How an [`Agent`](crate::Agent) run ended.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum AgentEnd {
    /// The model answered without calling a tool: the answer to the message.
    Answered(Message),
    /// A tool stopped the run ([`ToolError::Stop`]): its call stays pending (marked
    /// started), and the next run resumes it as the [`ResumePolicy`] says.
    Stopped {
        /// The call that stopped the run.
        call_id: String,
        /// Its tool.
        tool: String,
        /// Why.
        reason: String,
    },
}

/// What an [`Agent`](crate::Agent) run did: how it ended, and what its model calls took.
///
/// # Examples
///
/// ```
/// use curator::model::Message;
/// use curator::client::Usage;
/// use curator::agent::{AgentEnd, AgentOutcome};
///
/// let outcome = AgentOutcome::new(AgentEnd::Answered(Message::assistant("4")), Usage::new(1_200, 3), 1);
/// assert_eq!(outcome.answer().map(|m| m.text().into_owned()), Some("4".into()));
/// assert_eq!(outcome.usage.input_tokens, 1_200);
/// let stopped = AgentEnd::Stopped { call_id: "c1".into(), tool: "pay".into(), reason: "ask a person".into() };
/// assert_eq!(AgentOutcome::new(stopped, Usage::default(), 2).answer(), None);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct AgentOutcome {
    /// How the run ended.
    pub end: AgentEnd,
    /// The tokens the run's model calls took together, as their client reported them
    /// (cache reads and writes included; a call whose client reported none counts
    /// nothing). A message answered from the record made no call: zero.
    pub usage: Usage,
    /// The model calls the run made.
    pub model_calls: u32,
}

impl AgentOutcome {
    /// An outcome that ended as `end` after `model_calls` calls that took `usage`.
    pub const fn new(end: AgentEnd, usage: Usage, model_calls: u32) -> Self {
        Self { end, usage, model_calls }
    }

    /// The answer of an answered run.
    pub fn answer(&self) -> Option<&Message> {
        match &self.end {
            AgentEnd::Answered(message) => Some(message),
            _ => None,
        }
    }

    /// The answer's text; for a run that did not answer, a sentence saying why.
    pub fn text(&self) -> String {
        match &self.end {
            AgentEnd::Answered(message) => message.text().into_owned(),
            AgentEnd::Stopped { tool, reason, .. } => format!("[stopped by `{tool}`: {reason}]"),
        }
    }
}

/// The usage and model calls of an ask so far (a turn cut short earlier, finished first,
/// counts in it).
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) usage: Usage,
    pub(crate) calls: u32,
}

impl Tally {
    pub(crate) fn outcome(&self, end: AgentEnd) -> AgentOutcome {
        AgentOutcome::new(end, self.usage, self.calls)
    }
}

/// A conversation driven by an agent: what it says next is the conversation's, until a
/// tool stops the run.
pub(crate) struct AgentRun<'a, S> {
    conversation: &'a mut Conversation<S>,
    policy: ResumePolicy,
    claim: Option<&'a Claim>,
    tally: &'a mut Tally,
    /// The first stop of a tool: the run is finished with it once the batch's other
    /// results are recorded.
    stopped: Option<AgentEnd>,
}

impl<'a, S> AgentRun<'a, S> {
    pub(crate) fn new(
        conversation: &'a mut Conversation<S>,
        policy: ResumePolicy,
        claim: Option<&'a Claim>,
        tally: &'a mut Tally,
    ) -> Self {
        Self { conversation, policy, claim, tally, stopped: None }
    }

    /// Renews the claim, if the run holds one: a worker that lost it records nothing more.
    fn renew(&self) -> Result<()> {
        self.claim.map_or(Ok(()), Claim::renew)
    }
}

impl<S: SessionStore> Driver for AgentRun<'_, S> {
    type Work = ToolContext;
    type WorkResult = std::result::Result<String, ToolError>;
    type Output = AgentEnd;
    type Reply = ModelReply;
    type Error = Error;
    type Curation<'c> = Curation<'c>;
    // Renewing a claim writes to the store.
    const PREPARES: bool = true;

    fn action(&self) -> Action<ToolContext, AgentEnd> {
        if let Some(stopped) = &self.stopped {
            return Action::Finished(stopped.clone());
        }
        match self.conversation.next_step() {
            Action::Run(contexts) => Action::Run(contexts),
            Action::CallModel => Action::CallModel,
            Action::Finished(answer) => Action::Finished(AgentEnd::Answered(answer)),
            _ => Action::WaitForUser,
        }
    }

    /// Calls a crash interrupted go through the resume policy first; the rest are marked
    /// started (after renewing the claim) before any runs.
    fn start_work(&mut self, work: Vec<ToolContext>) -> Result<Vec<ToolContext>> {
        let work = if work.iter().any(|c| c.started) {
            self.conversation.repair(self.policy)?
        } else {
            work
        };
        if work.is_empty() {
            return Ok(work);
        }
        self.renew()?;
        let ids: Vec<&str> = work.iter().map(ToolContext::call_id).collect();
        self.conversation.mark_started(&ids)?;
        Ok(work)
    }

    fn prepare(&mut self) -> Result<()> {
        self.renew()
    }

    fn build_request(&self, curation: Curation<'_>) -> Result<Vec<Message>> {
        Driver::build_request(&*self.conversation, curation)
    }

    fn record_reply(&mut self, reply: ModelReply) -> Result<()> {
        self.tally.calls += 1;
        if let Some(usage) = reply.usage {
            self.tally.usage = self.tally.usage.plus(usage);
        }
        let message = reply.message;
        if message.tool_calls().is_empty()
            && message.text().trim().is_empty()
            && !matches!(message.content(), Some(Content::Parts(p)) if !p.is_empty())
        {
            return Err(Error::EmptyReply);
        }
        self.renew()?;
        let message = with_fresh_ids(message, self.conversation.history().messages());
        self.conversation.record_assistant(message)?;
        if let Some(usage) = reply.usage {
            self.conversation.record_usage(usage)?;
        }
        Ok(())
    }

    fn record_work(
        &mut self,
        context: ToolContext,
        result: std::result::Result<String, ToolError>,
    ) -> Result<()> {
        let outcome = match result {
            Ok(text) => Ok(text),
            Err(ToolError::Failed(reason)) => Err(reason),
            // Not recorded: the call stays pending (marked started) for the next run.
            Err(ToolError::Stop(reason)) => {
                self.stopped.get_or_insert(AgentEnd::Stopped {
                    call_id: context.call_id().to_owned(),
                    tool: context.call.name().to_owned(),
                    reason,
                });
                return Ok(());
            }
        };
        self.renew()?;
        self.conversation.record_tool_result(context.call_id(), outcome).map(drop)
    }

    fn provider_failed(source: BoxError) -> Error {
        Error::Provider(source)
    }
}

/// `reply` with every tool call id that is empty, repeated in the reply, or already in the
/// record replaced by a fresh one (`<id>~<n>`): some servers reuse ids (`call_0` every
/// turn) or give two calls one id, and each call must be told apart from the others to be
/// answered. The ids are the record's: the model is sent them back as recorded.
fn with_fresh_ids(reply: Message, record: &[Message]) -> Message {
    let calls = reply.tool_calls();
    if calls.is_empty() {
        return reply;
    }
    // Only the record's ids that a reply's id, or a fresh one made from it, could meet (not
    // a set of every id of the record on every reply): the reply's ids, and them plus `~`.
    let bases: Vec<&str> =
        calls.iter().map(|c| if c.id().is_empty() { "call" } else { c.id() }).collect();
    let mut taken: HashSet<String> = record
        .iter()
        .flat_map(Message::tool_calls)
        .map(curator_model::ToolCall::id)
        .filter(|id| {
            bases.iter().any(|base| {
                id.strip_prefix(base).is_some_and(|rest| rest.is_empty() || rest.starts_with('~'))
            })
        })
        .map(str::to_owned)
        .collect();
    let mut fresh: Vec<Option<String>> = Vec::with_capacity(calls.len());
    for call in calls {
        let id = call.id();
        if !id.is_empty() && taken.insert(id.to_owned()) {
            fresh.push(None);
            continue;
        }
        let base = if id.is_empty() { "call" } else { id };
        // Of `taken.len() + 1` candidates, one is free.
        let new = (1..=taken.len() + 1).map(|n| format!("{base}~{n}")).find(|c| !taken.contains(c));
        if let Some(new) = &new {
            taken.insert(new.clone());
        }
        fresh.push(new);
    }
    if fresh.iter().all(Option::is_none) {
        return reply;
    }
    let mut fresh = fresh.into_iter();
    reply.map_tool_call_ids(|_| fresh.next().flatten())
}
