//! Parallel bodies: one step of a loop's body that runs several branches at once over the
//! same injected history.

use curator_model::{BoxError, Message, Role};

use crate::step::{Injection, Output, Step, StepCall, StepKind, StepOutcome};

/// A step that runs its branches at once (one thread each), every branch sent the same
/// request (this step's system prompt, or the branch's own when it has one, the bounded
/// history as injected, the iteration's input), and joins what they said:
///
/// - **Order**: the output's text is each branch's text, in the order the branches were
///   added, separated by a blank line (a branch that said nothing adds nothing); its
///   artifacts are theirs in the same order; its usage is their sum. The loop records one
///   assistant turn of the joined text (when `ai_turn_source` names this step), so the
///   history stays a conversation however many branches answered.
/// - **Quota**: with a [`Quota`](crate::Quota), each branch is told an equal share of what
///   the step may take ([`StepCall::quota`]); what does not divide evenly goes one token
///   each to the first branches, so the shares add up to the step's.
/// - **Building**: a parallel step with no branch, or with a branch that waits for a person,
///   is refused when the loop is built.
/// - **Failures**: the first branch (in branch order) that fails or aborts decides the
///   step's outcome, after every branch has returned; nothing of the iteration is recorded
///   then. A branch cannot wait for a person: one that pauses fails the step.
/// - **Crash resume**: the branches' outputs are recorded only when all have returned, with
///   the iteration; a process killed while branches run resumes before the iteration, which
///   runs again whole.
///
/// # Examples
///
/// ```
/// use curator::conversation_loop::{FnStep, Injection, LoopBuilder, LoopConfig, Parallel, StepOutcome};
///
/// let config = LoopConfig::from_toml("conversation = true\nmax_iterations = 1")?;
/// // Two reviewers read the same history at once; their answers are joined in this order.
/// let review = Parallel::new(Injection::Messages)
///     .with_system("Review the change.")
///     .branch("security", FnStep::agent(Injection::Messages, |call| {
///         Ok(StepOutcome::text(format!("security: {} messages read", call.messages.len())))
///     }))
///     .branch("style", FnStep::agent(Injection::Messages, |_| Ok(StepOutcome::text("style: fine"))));
/// let mut chat = LoopBuilder::new("review", config).step("review", review).build()?;
/// let outcome = chat.run("Please review my patch.")?;
/// // Each read the system prompt and the question (the seeded turn, sent once).
/// assert_eq!(outcome.output(), Some("security: 2 messages read\n\nstyle: fine"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Parallel {
    injection: Injection,
    system: Option<String>,
    branches: Vec<(String, Box<dyn Step>)>,
}

impl Parallel {
    /// A parallel step with no branch yet, its history injected as `injection` says.
    pub fn new(injection: Injection) -> Self {
        Self { injection, system: None, branches: Vec::new() }
    }

    /// Adds a branch named `name` (named in errors), run after those added before it in the
    /// joined output.
    #[must_use]
    pub fn branch(mut self, name: impl Into<String>, step: impl Step + 'static) -> Self {
        self.branches.push((name.into(), Box::new(step)));
        self
    }

    /// The system prompt every branch is sent.
    #[must_use]
    pub fn with_system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// The branches' names, in order.
    pub fn branch_names(&self) -> Vec<&str> {
        self.branches.iter().map(|(name, _)| name.as_str()).collect()
    }
}

impl std::fmt::Debug for Parallel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parallel")
            .field("injection", &self.injection)
            .field("branches", &self.branch_names())
            .finish_non_exhaustive()
    }
}

impl Step for Parallel {
    fn kind(&self) -> StepKind {
        StepKind::Agent(self.injection)
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
        // Checked when the loop is built; again here, for a step run on its own.
        self.check()?;
        let count = self.branches.len();
        // A branch with a system prompt of its own is sent it in place of this step's.
        let lead = usize::from(
            self.system.is_some()
                && call.messages.first().is_some_and(|m| m.role() == Role::System),
        );
        let own: Vec<Option<Vec<Message>>> = self
            .branches
            .iter()
            .map(|(_, step)| {
                let system = step.request(call.input).into_iter().next()?;
                (system.role() == Role::System).then(|| {
                    std::iter::once(system).chain(call.messages[lead..].iter().cloned()).collect()
                })
            })
            .collect();
        let results: Vec<Result<StepOutcome, BoxError>> = std::thread::scope(|scope| {
            let running: Vec<_> = self
                .branches
                .iter_mut()
                .zip(&own)
                .zip(shares(call.quota, count))
                .map(|(((_, step), own), quota)| {
                    let call = StepCall {
                        messages: own.as_deref().unwrap_or(call.messages),
                        quota,
                        ..call
                    };
                    scope.spawn(move || step.run(call))
                })
                .collect();
            running
                .into_iter()
                .map(|handle| {
                    handle.join().unwrap_or_else(|panic| {
                        let text = panic
                            .downcast_ref::<&str>()
                            .map(|s| (*s).to_owned())
                            .or_else(|| panic.downcast_ref::<String>().cloned())
                            .unwrap_or_else(|| "a panic".to_owned());
                        Err(format!("the branch panicked: {text}").into())
                    })
                })
                .collect()
        });
        let mut joined = Output::default();
        for ((name, _), result) in self.branches.iter().zip(results) {
            let failed =
                |reason: String| -> BoxError { format!("branch `{name}`: {reason}").into() };
            match result.map_err(|e| failed(e.to_string()))? {
                StepOutcome::Output(output) => {
                    if !output.text.is_empty() {
                        if !joined.text.is_empty() {
                            joined.text.push_str("\n\n");
                        }
                        joined.text.push_str(&output.text);
                    }
                    joined.artifacts.extend(output.artifacts);
                    if let Some(usage) = output.usage {
                        joined = joined.with_usage(usage);
                    }
                }
                StepOutcome::Pause { .. } => {
                    return Err(failed(
                        "paused, and the branches of a parallel step cannot wait for a person"
                            .to_owned(),
                    ));
                }
                StepOutcome::Abort { reason } => {
                    return Ok(StepOutcome::Abort { reason: format!("branch `{name}`: {reason}") });
                }
            }
        }
        Ok(StepOutcome::Output(joined))
    }

    fn check(&self) -> Result<(), String> {
        if self.branches.is_empty() {
            return Err("a parallel step needs at least one branch".to_owned());
        }
        for (name, step) in &self.branches {
            if step.kind() == StepKind::Human {
                return Err(format!(
                    "branch `{name}` waits for a person, and the branches of a parallel step cannot"
                ));
            }
            step.check().map_err(|e| format!("branch `{name}`: {e}"))?;
        }
        Ok(())
    }

    fn checkpoint_state(&self) -> Option<serde_json::Value> {
        let states: Vec<serde_json::Value> = self
            .branches
            .iter()
            .map(|(_, step)| step.checkpoint_state().unwrap_or(serde_json::Value::Null))
            .collect();
        states.iter().any(|s| !s.is_null()).then_some(serde_json::Value::Array(states))
    }

    fn restore_state(&mut self, state: serde_json::Value) -> Result<(), BoxError> {
        let serde_json::Value::Array(states) = state else {
            return Err("a parallel step's state is a list, one per branch".into());
        };
        if states.len() != self.branches.len() {
            return Err(format!(
                "a parallel step's state holds {} branches, this step has {}",
                states.len(),
                self.branches.len()
            )
            .into());
        }
        for ((name, step), state) in self.branches.iter_mut().zip(states) {
            if !state.is_null() {
                step.restore_state(state).map_err(|e| format!("branch `{name}`: {e}"))?;
            }
        }
        Ok(())
    }
}

/// `quota` shared by `count` branches: equal shares, the remainder one token each to the
/// first branches.
fn shares(quota: Option<u64>, count: usize) -> impl Iterator<Item = Option<u64>> {
    let count = count.max(1) as u64;
    (0..count).map(move |i| quota.map(|q| q / count + u64::from(i < q % count)))
}
