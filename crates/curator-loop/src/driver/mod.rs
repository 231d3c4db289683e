//! The loop driver: runs the body iteration by iteration, captures turns, injects bounded
//! history into agent steps, traces what they are sent, checkpoints, pauses and resumes.

use std::sync::Arc;

use curator_model::Message;
use curator_strategies::{History, HistoryManager, Redactor};

use crate::config::HistoryConfig;
use crate::config::LoopConfig;
use crate::error::{Error, Result};
use crate::persist::Persister;
use crate::quota::Account;
use crate::roles::{StepRole, roles};
use crate::step::{Output, Step, StepCall, StepKind, StepOutcome};
use crate::template::HistoryTemplate;
use crate::trace::{PromptTrace, TraceSink};
use crate::turn::{ConversationTurn, LoopState, Paused};

mod keep;
mod request;

/// The exit condition of a loop, asked after every completed iteration.
pub(crate) type ExitCondition = Box<dyn FnMut(&Progress<'_>) -> bool + Send>;

/// What an exit condition sees after an iteration.
#[derive(Debug)]
#[non_exhaustive]
pub struct Progress<'a> {
    /// Iterations completed, this one included.
    pub iteration: u64,
    /// This iteration's step outputs, in order, by step name.
    pub outputs: &'a [(String, String)],
    /// Turns in the history.
    pub turns: usize,
}

impl Progress<'_> {
    /// The output of the step named `step` in this iteration.
    ///
    /// # Examples
    ///
    /// ```
    /// use curator::conversation_loop::{FnStep, LoopBuilder, LoopConfig, StepOutcome};
    ///
    /// let mut count = 0;
    /// let mut l = LoopBuilder::new("l", LoopConfig::default())
    ///     .step("count", FnStep::plain(move |_| { count += 1; Ok(StepOutcome::text(count.to_string())) }))
    ///     .exit_when(|p| p.output("count") == Some("3"))
    ///     .build()?;
    /// assert_eq!(l.run("")?.output(), Some("3"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn output(&self, step: &str) -> Option<&str> {
        self.outputs.iter().rev().find(|(n, _)| n == step).map(|(_, o)| o.as_str())
    }
}

/// Why a loop finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FinishReason {
    /// The exit condition held.
    ExitCondition,
    /// `max_iterations` were made.
    MaxIterations,
}

/// How a run of the loop ended. Pausing and aborting are control flow, never errors.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoopOutcome {
    /// The loop ended.
    Finished {
        /// Iterations completed in all (a resumed loop counts those before it).
        iterations: u64,
        /// Why.
        reason: FinishReason,
        /// The last step's output of the last iteration (the iteration input when none ran).
        output: String,
    },
    /// A step waits for a human: call [`ConversationLoop::resume`] with the answer, in this
    /// process or, from the checkpoint, in another.
    Paused {
        /// The waiting step.
        step: String,
        /// What it asks.
        prompt: Option<String>,
    },
    /// A step stopped the loop; the iteration in flight was dropped.
    Aborted {
        /// The step.
        step: String,
        /// Its reason.
        reason: String,
    },
}

impl LoopOutcome {
    /// Whether the loop paused for a human.
    pub fn is_paused(&self) -> bool {
        matches!(self, LoopOutcome::Paused { .. })
    }

    /// The final output of a finished loop.
    pub fn output(&self) -> Option<&str> {
        match self {
            LoopOutcome::Finished { output, .. } => Some(output),
            _ => None,
        }
    }
}

/// What the builder hands the driver.
pub(crate) struct Parts {
    pub(crate) name: String,
    pub(crate) config: LoopConfig,
    pub(crate) steps: Vec<(String, Box<dyn Step>)>,
    pub(crate) bound: Option<Box<dyn HistoryManager>>,
    pub(crate) template: HistoryTemplate,
    pub(crate) redactor: Option<Redactor>,
    pub(crate) trace: Option<Arc<dyn TraceSink>>,
    pub(crate) exit: Option<ExitCondition>,
    pub(crate) persister: Option<Persister>,
    /// The effective history settings (the current message's rule and the budget).
    pub(crate) history: HistoryConfig,
    /// The run's quota, and the summarizers whose calls it charges.
    pub(crate) account: Account,
}

/// A conversational loop: a body of named [`Step`]s run iteration by iteration, keeping the
/// conversation as turns, sending agent steps the bounded history, checkpointing after every
/// iteration and pausing for humans. Built with [`LoopBuilder`](crate::LoopBuilder).
///
/// Each iteration is isolated: when a step fails (or a history strategy does), the turns the
/// iteration added are dropped and the error is returned, naming the step; the history is as
/// it was before the iteration. A step that pauses keeps what the iteration produced so far,
/// and [`resume`](Self::resume) continues at that step. Turns are appended in the order they
/// happen.
pub struct ConversationLoop {
    name: String,
    config: LoopConfig,
    steps: Vec<(String, Box<dyn Step>)>,
    roles: Vec<StepRole>,
    bound: Option<Box<dyn HistoryManager>>,
    template: HistoryTemplate,
    redactor: Option<Redactor>,
    trace: Option<Arc<dyn TraceSink>>,
    trace_failures: u64,
    exit: Option<ExitCondition>,
    persister: Option<Persister>,
    /// The effective history settings.
    history_config: HistoryConfig,
    /// The turns as chat messages, with the strategies' caches (token counts, redactions).
    history: History<'static>,
    iteration: u64,
    input: String,
    /// Whether a run is in progress (paused, interrupted, or stopped by an error): `run`
    /// continues it from `input` instead of starting one.
    running: bool,
    /// The iterations completed when the current run started.
    run_start: u64,
    /// The run's quota and what it used.
    account: Account,
    /// With `lens = true` and a store: what the agent steps were sent, not saved yet.
    lens: Vec<PromptTrace>,
    paused: Option<Paused>,
    /// Whether the last `drive` failed in the iteration it resumed.
    resume_failed: bool,
    /// Whether a completed iteration is not saved yet: its save is left to the next one
    /// (the pause of a human step that comes first), so that an iteration of a chat is one
    /// commit. Saved before any other step runs and whenever the loop returns.
    unsaved: bool,
    /// Template values of history positions, made once each (see `injected`).
    values: std::cell::RefCell<Vec<Option<minijinja::Value>>>,
    /// How to take back the resumed iteration while it is not saved: the answer it recorded
    /// is refused as a whole when the next agent step cannot be sent it.
    undo: Option<Undo>,
}

/// The loop as it was before a resumed iteration.
struct Undo {
    turns: usize,
    iteration: u64,
    input: String,
    used: u64,
}

impl std::fmt::Debug for ConversationLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConversationLoop")
            .field("name", &self.name)
            .field("steps", &self.steps.iter().map(|(n, _)| n).collect::<Vec<_>>())
            .field("iteration", &self.iteration)
            .field("turns", &self.history.len())
            .field("paused", &self.paused)
            .finish_non_exhaustive()
    }
}

/// How an iteration ended, short of an error.
enum Iterated {
    Done(Vec<(String, String)>),
    Stopped(LoopOutcome),
}

impl ConversationLoop {
    pub(crate) fn new(parts: Parts) -> Self {
        let Parts {
            name,
            config,
            steps,
            bound,
            template,
            redactor,
            trace,
            exit,
            persister,
            history,
            account,
        } = parts;
        let roles = roles(&steps, &config);
        Self {
            name,
            config,
            steps,
            roles,
            bound,
            template,
            redactor,
            trace,
            trace_failures: 0,
            exit,
            persister,
            history_config: history,
            history: History::new(),
            iteration: 0,
            input: String::new(),
            running: false,
            run_start: 0,
            account,
            lens: Vec::new(),
            paused: None,
            resume_failed: false,
            unsaved: false,
            undo: None,
            values: std::cell::RefCell::default(),
        }
    }

    /// Reads the saved state, when the loop has a store that holds one.
    pub(crate) fn restore(&mut self) -> Result<()> {
        let keeps_lens = self.keeps_lens();
        let Some(persister) = &mut self.persister else { return Ok(()) };
        let checkpoint = persister.head().to_owned();
        let Some(restored) = persister.load()? else { return Ok(()) };
        // An iteration paused in another process: the lens of the steps it ran is saved
        // again, whole, with the rest when it completes here.
        if keeps_lens && restored.paused.is_some() {
            let open = restored.iteration + 1;
            self.lens = persister
                .lens_of(open)?
                .into_iter()
                .map(|step| PromptTrace {
                    loop_name: self.name.clone(),
                    iteration: step.iteration,
                    step: step.step,
                    injected: step.injected,
                    messages: step.messages,
                })
                .collect();
        }
        self.set_state(
            LoopState {
                iteration: restored.iteration,
                turns: restored.turns,
                paused: restored.paused,
                input: restored.input,
                running: restored.running,
                run_start: restored.run_start,
                quota_used: restored.quota_used,
            },
            &checkpoint,
        )
    }

    /// Takes `state` as the loop's own, restoring a paused nested step's state in it.
    fn set_state(&mut self, state: LoopState, checkpoint: &str) -> Result<()> {
        let LoopState { iteration, turns, paused, input, running, run_start, quota_used } = state;
        if let Some(paused) = &paused {
            let bad =
                |reason: String| Error::BadCheckpoint { checkpoint: checkpoint.to_owned(), reason };
            let (name, step) = self.steps.get_mut(paused.step).ok_or_else(|| {
                bad(format!("paused at step {}, which the body does not have", paused.step))
            })?;
            if *name != paused.step_name {
                return Err(bad(format!(
                    "paused at step {} `{}`, which is `{name}` in this body",
                    paused.step, paused.step_name
                )));
            }
            if let Some(nested) = &paused.nested {
                step.restore_state(nested.clone())
                    .map_err(|e| bad(format!("step `{name}`'s own state: {e}")))?;
            }
        }
        let mut history = History::new();
        for turn in &turns {
            history.push(turn.to_message());
        }
        self.history = history;
        self.values.get_mut().clear();
        self.iteration = iteration;
        self.input = input;
        self.running = running;
        self.run_start = run_start.min(iteration);
        self.account.set_used(quota_used);
        self.paused = paused;
        Ok(())
    }

    /// The loop's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Iterations completed.
    pub fn iteration(&self) -> u64 {
        self.iteration
    }

    /// The iterations the current (or last) run has completed: what `max_iterations`
    /// bounds.
    pub fn run_iterations(&self) -> u64 {
        self.iteration.saturating_sub(self.run_start)
    }

    /// Where the loop waits for a human, when it does.
    pub fn paused(&self) -> Option<&Paused> {
        self.paused.as_ref()
    }

    /// Number of turns.
    pub fn turn_count(&self) -> usize {
        self.history.len()
    }

    /// The turns, oldest first (copied).
    pub fn turns(&self) -> Vec<ConversationTurn> {
        self.history.messages().iter().filter_map(ConversationTurn::from_message).collect()
    }

    /// The whole state (copied): iteration, turns, pause, next input.
    pub fn state(&self) -> LoopState {
        LoopState {
            iteration: self.iteration,
            turns: self.turns(),
            paused: self.paused.clone(),
            input: self.input.clone(),
            running: self.running,
            run_start: self.run_start,
            quota_used: self.account.used(),
        }
    }

    /// The next iteration's input: the last output of the last completed iteration, or the
    /// input the run started with.
    pub fn next_input(&self) -> &str {
        &self.input
    }

    /// Whether a run is in progress: paused, interrupted (a process killed mid-iteration,
    /// read back from the checkpoint) or stopped by an error. [`run`](Self::run) continues
    /// it.
    pub fn is_running(&self) -> bool {
        self.running
    }

    /// How many traces a failing sink refused (the loop went on each time).
    pub fn trace_failures(&self) -> u64 {
        self.trace_failures
    }

    /// Runs iterations from the current state, with `input` as the next iteration's input
    /// (and, on a fresh loop, as the seed of the first user turn), until the exit condition
    /// holds, the run has made `max_iterations` (counted per run: a loop whose run ended
    /// at the limit runs again when `run` starts the next one), a step pauses or aborts.
    ///
    /// A run that is still in progress ([`is_running`](Self::is_running): a process killed
    /// mid-iteration and read back from the checkpoint, or a run stopped by an error) is
    /// continued instead, from its saved next input ([`next_input`](Self::next_input)):
    /// `input` starts runs, it never replaces the input of one under way. So the same
    /// `run(input)` call, made again after a crash, goes on as the uninterrupted run would
    /// have. Call [`reset`](Self::reset) to start afresh instead.
    ///
    /// # Errors
    ///
    /// [`Error::WrongState`] when the loop is paused (call [`resume`](Self::resume));
    /// [`Error::Step`] when a step fails (the iteration is rolled back);
    /// [`Error::History`] or [`Error::Template`] when preparing an agent's request fails;
    /// [`Error::Store`] when a checkpoint cannot be written.
    pub fn run(&mut self, input: &str) -> Result<LoopOutcome> {
        if let Some(paused) = &self.paused {
            return Err(Error::WrongState {
                state: format!("paused at step `{}`", paused.step_name),
                hint: "call `resume` with the human's input",
            });
        }
        if !self.running {
            input.clone_into(&mut self.input);
            self.running = true;
            self.run_start = self.iteration;
            self.account.set_used(0);
        }
        self.drive(None)
    }

    /// Continues a paused loop: the waiting step gets `human_input`, then the iteration and
    /// the loop go on as [`run`](Self::run) does.
    ///
    /// # Errors
    ///
    /// [`Error::WrongState`] when the loop is not paused; otherwise as [`run`](Self::run).
    /// After a failed resume the loop is paused as before, so the call can be retried.
    pub fn resume(&mut self, human_input: &str) -> Result<LoopOutcome> {
        let Some(paused) = self.paused.take() else {
            return Err(Error::WrongState {
                state: "not paused".to_owned(),
                hint: "call `run` to start iterations",
            });
        };
        let kept = paused.clone();
        let result = self.drive(Some((paused, human_input)));
        // A failure in the resumed iteration rolls it back to where the pause left it:
        // paused again, so the call can be retried. A failure in a later iteration leaves
        // the loop as `run` would.
        if result.is_err() && self.resume_failed {
            self.paused = Some(kept);
        }
        result
    }

    /// What the agent step `step` would be sent now for `input`: the history injected as
    /// the step's configuration says (what `/history` shows in `curator chat`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] when no agent step has that name; [`Error::History`] or
    /// [`Error::Template`] as when running.
    pub fn preview(&self, step: &str, input: &str) -> Result<Vec<Message>> {
        let i = self
            .steps
            .iter()
            .position(|(n, _)| n == step)
            .filter(|&i| matches!(self.roles[i].kind, StepKind::Agent(_)))
            .ok_or_else(|| {
                Error::invalid("step", format!("`{step}` is not an agent step of the body"))
            })?;
        let StepKind::Agent(injection) = self.roles[i].kind else { return Ok(Vec::new()) };
        Ok(self.request(i, input, injection)?.0)
    }

    fn drive(&mut self, mut resume: Option<(Paused, &str)>) -> Result<LoopOutcome> {
        self.resume_failed = false;
        loop {
            if resume.is_none() && self.run_iterations() >= self.config.max_iterations {
                self.running = false;
                return Ok(LoopOutcome::Finished {
                    iterations: self.iteration,
                    reason: FinishReason::MaxIterations,
                    output: self.input.clone(),
                });
            }
            let resumed = resume.take();
            let is_resume = resumed.is_some();
            let before = is_resume.then(|| Undo {
                turns: self.history.len(),
                iteration: self.iteration,
                input: self.input.clone(),
                used: self.account.used(),
            });
            let outcome = match resumed {
                Some((paused, human)) => {
                    self.account.resume(paused.reported, paused.settled);
                    self.iterate(paused.step, paused.outputs, Some(human))
                }
                None => match self.account.open() {
                    Ok(()) => self.iterate(0, Vec::new(), None),
                    Err(e) => {
                        // Nothing ran: the run stops here, and the next `run` starts anew.
                        self.running = false;
                        self.save()?;
                        return Err(e);
                    }
                },
            };
            let outputs = match outcome {
                Ok(Iterated::Done(outputs)) => outputs,
                Ok(Iterated::Stopped(outcome)) => {
                    if !matches!(outcome, LoopOutcome::Paused { .. }) {
                        self.account.close(false);
                    }
                    return Ok(outcome);
                }
                Err(e) => {
                    self.account.close(false);
                    self.resume_failed = is_resume || self.take_back_resume(&e);
                    // A run whose first iteration cannot be sent its input has not started:
                    // the next `run` starts anew with the input it is given.
                    if !is_resume
                        && self.iteration == self.run_start
                        && matches!(e, Error::MessageTooLong { .. })
                    {
                        self.running = false;
                    }
                    return Err(e);
                }
            };
            self.account.close(true);
            self.iteration += 1;
            if let Some((_, last)) = outputs.last() {
                last.clone_into(&mut self.input);
            }
            let progress = Progress {
                iteration: self.iteration,
                outputs: &outputs,
                turns: self.history.len(),
            };
            let reason = if self.exit.as_mut().is_some_and(|exit| exit(&progress)) {
                Some(FinishReason::ExitCondition)
            } else if self.run_iterations() >= self.config.max_iterations {
                Some(FinishReason::MaxIterations)
            } else {
                None
            };
            // One save per iteration, which says whether the run goes on. When the next
            // iteration starts with a human step, its pause saves this iteration with it:
            // nothing runs in between.
            // A resumed iteration is saved with the next one too, once its first agent step
            // can be sent the answer: an answer too long for it is refused with the resume.
            self.running = reason.is_none();
            if reason.is_none() && self.roles.first().is_some_and(|r| r.kind == StepKind::Human) {
                self.unsaved = true;
            } else if reason.is_none() && before.is_some() {
                self.unsaved = true;
                self.undo = before;
            } else {
                self.save()?;
            }
            if let Some(reason) = reason {
                return Ok(LoopOutcome::Finished {
                    iterations: self.iteration,
                    reason,
                    output: self.input.clone(),
                });
            }
        }
    }

    /// After an error in the iteration that follows a resumed one, not saved yet: when the
    /// error is the current message's (the human's answer) being too long for the agent
    /// step, the resumed iteration is taken back too, so that the loop is paused as before
    /// and the answer can be given again. Returns whether it was.
    fn take_back_resume(&mut self, error: &Error) -> bool {
        let Some(undo) = self.undo.take() else { return false };
        if !self.unsaved || !matches!(error, Error::MessageTooLong { .. }) {
            return false;
        }
        self.iteration = undo.iteration;
        self.rollback(undo.turns);
        self.input = undo.input;
        self.account.set_used(undo.used);
        self.unsaved = false;
        true
    }

    /// Drops the turns after the first `len` (a failed iteration's).
    fn rollback(&mut self, len: usize) {
        // What the failed iteration's steps were sent goes with it.
        let completed = self.iteration;
        self.lens.retain(|t| t.iteration <= completed);
        if self.history.len() > len {
            // `History` is append-only (positions key its caches): a rollback, which only a
            // failure causes, rebuilds it; counts are recomputed on the next bound.
            self.history = History::from(self.history.messages()[..len].to_vec());
            self.values.get_mut().truncate(len);
        }
    }

    fn iterate(
        &mut self,
        from: usize,
        mut outputs: Vec<(String, String)>,
        human: Option<&str>,
    ) -> Result<Iterated> {
        let start = self.history.len();
        // Each run's input opens it: the first iteration of a run (a retry of it, after a
        // failure that rolled it back, too) records it as a user turn.
        if from == 0 && human.is_none() && self.iteration == self.run_start {
            self.seed();
        }
        let result = self.steps_from(from, &mut outputs, human);
        match result {
            // `steps_from` returns outputs as `None`: an `Output` never stops it.
            Ok(None | Some(StepOutcome::Output(_))) => Ok(Iterated::Done(outputs)),
            Ok(Some(StepOutcome::Pause { prompt })) => {
                let step = outputs.len();
                let step_name = self.steps[step].0.clone();
                // What the iteration's steps took so far is charged now, so that the
                // checkpoint holds it for whichever process finishes the iteration.
                let (reported, settled) = self.account.settle();
                self.paused = Some(Paused {
                    step,
                    step_name: step_name.clone(),
                    prompt: prompt.clone(),
                    outputs,
                    nested: self.steps[step].1.checkpoint_state(),
                    reported,
                    settled,
                });
                self.save()?;
                Ok(Iterated::Stopped(LoopOutcome::Paused { step: step_name, prompt }))
            }
            Ok(Some(StepOutcome::Abort { reason })) => {
                self.rollback(start);
                // The run ends here: saved as ended, so the next `run` starts a new one.
                self.running = false;
                self.save()?;
                let step = self.steps[outputs.len()].0.clone();
                Ok(Iterated::Stopped(LoopOutcome::Aborted { step, reason }))
            }
            Err(e) => {
                self.rollback(start);
                // A completed iteration whose save was left to this one is saved now (unless
                // it is a resumed one that the error takes back).
                let taken_back = self.undo.is_some() && matches!(e, Error::MessageTooLong { .. });
                if self.unsaved
                    && !taken_back
                    && let Err(saving) = self.save()
                {
                    return Err(Error::NotSaved { failed: Box::new(e), source: Box::new(saving) });
                }
                Err(e)
            }
        }
    }

    /// The user turn a run opens with, from its input.
    fn seed(&mut self) {
        let init = &self.config.init;
        if !self.config.conversation || !init.from_initial_input || self.input.trim().is_empty() {
            return;
        }
        let text = match &init.prefix {
            Some(prefix) => format!("{prefix}{}", self.input),
            None => self.input.clone(),
        };
        let text = self.as_persisted(text);
        self.history.push(Message::user(text));
    }

    /// Runs steps `from..`; `Ok(None)` when all completed, or the pause or abort that stopped
    /// them (at step `outputs.len()`).
    fn steps_from(
        &mut self,
        from: usize,
        outputs: &mut Vec<(String, String)>,
        human: Option<&str>,
    ) -> Result<Option<StepOutcome>> {
        let iteration = self.iteration + 1;
        for i in from..self.steps.len() {
            let input = outputs.last().map_or_else(|| self.input.clone(), |(_, o)| o.clone());
            let role = self.roles[i];
            let (messages, traced) = match role.kind {
                StepKind::Agent(injection) => self.request(i, &input, injection)?,
                _ => (Vec::new(), None),
            };
            // Saved before any other step runs, once its request is made.
            if self.unsaved && role.kind != StepKind::Human {
                self.save()?;
            }
            if let Some(traced) = traced {
                self.emit(iteration, i, role.use_history, traced);
            }
            let call = StepCall {
                iteration,
                input: &input,
                messages: &messages,
                human_input: if i == from { human } else { None },
                quota: self.account.share(),
            };
            let (name, step) = &mut self.steps[i];
            let outcome = step.run(call).map_err(|source| Error::Step {
                step: name.clone(),
                iteration,
                source,
            })?;
            match outcome {
                StepOutcome::Output(output) => {
                    self.account.report(output.usage);
                    let name = name.clone();
                    self.capture(role, &output);
                    outputs.push((name, output.text));
                }
                other => return Ok(Some(other)),
            }
        }
        Ok(None)
    }

    /// Appends the turn a step's output makes, if any.
    fn capture(&mut self, role: StepRole, output: &Output) {
        if !role.user_turn && !role.assistant_turn {
            return;
        }
        let mut text = output.text.clone();
        if self.config.include_tool_artifacts {
            for artifact in &output.artifacts {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(artifact);
            }
        }
        if text.trim().is_empty() {
            return;
        }
        let text = self.as_persisted(text);
        self.history.push(if role.user_turn {
            Message::user(text)
        } else {
            Message::assistant(text)
        });
    }

    /// Sends a trace; a failing sink is logged and counted, never fatal.
    fn emit(&mut self, iteration: u64, i: usize, injected: bool, messages: Vec<Message>) {
        let trace = PromptTrace {
            loop_name: self.name.clone(),
            iteration,
            step: self.steps[i].0.clone(),
            injected,
            messages,
        };
        if let Some(sink) = &self.trace {
            tracing::debug!(
                target: "curator_loop",
                loop_name = %trace.loop_name,
                iteration,
                step = %trace.step,
                injected,
                messages = trace.messages.len(),
                "agent prompt"
            );
            if let Err(e) = sink.emit(&trace) {
                self.trace_failures += 1;
                tracing::warn!(target: "curator_loop", loop_name = %trace.loop_name, step = %trace.step, error = %e, "trace sink failed; the loop goes on");
            }
        }
        if self.keeps_lens() {
            self.lens.push(trace);
        }
    }

    /// Whether what the agent steps are sent is saved with the loop session.
    fn keeps_lens(&self) -> bool {
        self.config.lens && self.persister.is_some()
    }

    /// Starts the loop afresh in memory: no turns, iteration 0 (what a nested loop does each
    /// time its parent runs it). The checkpoint, if any, is overwritten at the next save.
    pub fn reset(&mut self) {
        self.history = History::new();
        self.values.get_mut().clear();
        self.iteration = 0;
        self.input.clear();
        self.running = false;
        self.run_start = 0;
        self.account.set_used(0);
        // What an earlier life's steps were sent is not this one's.
        self.lens.clear();
        self.unsaved = false;
        self.undo = None;
        self.paused = None;
    }

    /// The state as kept: the next input and the pause redacted when the loop redacts what
    /// it persists (the turns are kept redacted already).
    fn persisted_state(&self) -> LoopState {
        let mut state = self.state();
        state.input = self.as_persisted(state.input);
        state.paused = self.paused.as_ref().map(|p| self.persisted_pause(p));
        state
    }
}

/// A loop is a step too: a nested loop runs as a plain step of its parent, with its own
/// history, which never reaches the parent (only its final output does). Each run of the
/// step starts the nested loop afresh; a pause inside it pauses the parent, and the parent's
/// resume resumes it.
impl Step for ConversationLoop {
    fn kind(&self) -> StepKind {
        StepKind::Plain
    }

    fn run(
        &mut self,
        call: StepCall<'_>,
    ) -> std::result::Result<StepOutcome, curator_model::BoxError> {
        let outcome = match (&self.paused, call.human_input) {
            (Some(_), Some(human)) => self.resume(human)?,
            (Some(paused), None) => {
                return Ok(StepOutcome::Pause { prompt: paused.prompt.clone() });
            }
            (None, _) => {
                self.reset();
                self.run(call.input)?
            }
        };
        Ok(match outcome {
            LoopOutcome::Finished { output, .. } => StepOutcome::text(output),
            LoopOutcome::Paused { prompt, .. } => StepOutcome::Pause { prompt },
            LoopOutcome::Aborted { reason, .. } => StepOutcome::Abort { reason },
        })
    }

    /// The nested loop's state (turns, next input, pause), so that a parent paused inside it
    /// resumes it in a new process.
    fn checkpoint_state(&self) -> Option<serde_json::Value> {
        serde_json::to_value(self.persisted_state()).ok()
    }

    fn restore_state(
        &mut self,
        state: serde_json::Value,
    ) -> std::result::Result<(), curator_model::BoxError> {
        let state: LoopState = serde_json::from_value(state)?;
        let name = format!("nested loop `{}`", self.name);
        self.set_state(state, &name)?;
        Ok(())
    }
}
