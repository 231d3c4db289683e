//! What each step of a loop's body is, decided once from the configuration, and the
//! configuration mistakes that shows.

use crate::config::{AiTurnSource, LoopConfig, UserTurnSource};
use crate::error::{Error, Result};
use crate::step::{Step, StepKind};

/// What each step of the body is, decided once from the configuration.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StepRole {
    pub(crate) kind: StepKind,
    pub(crate) use_history: bool,
    pub(crate) user_turn: bool,
    pub(crate) assistant_turn: bool,
}

/// What each step of `steps` is under `config`: its kind, whether it is sent history, and
/// which turn its output makes.
pub(crate) fn roles(steps: &[(String, Box<dyn Step>)], config: &LoopConfig) -> Vec<StepRole> {
    let last = steps.len().saturating_sub(1);
    steps
        .iter()
        .enumerate()
        .map(|(i, (step_name, step))| {
            let kind = step.kind();
            let agent = matches!(kind, StepKind::Agent(_));
            let on = config.conversation;
            let named = |list: &[String]| list.iter().any(|n| n == step_name);
            let user_turn = on
                && ((kind == StepKind::Human
                    && config.user_turn_sources.contains(&UserTurnSource::Hitl))
                    || (config.user_turn_sources.contains(&UserTurnSource::NamedSteps)
                        && named(&config.user_named_steps)));
            let assistant_turn = on
                && !user_turn
                && match config.ai_turn_source {
                    AiTurnSource::Last => agent && i == last,
                    AiTurnSource::AllAgents => agent,
                    AiTurnSource::NamedSteps => named(&config.named_steps),
                };
            let use_history = on
                && agent
                && config.steps.get(step_name).and_then(|s| s.use_history).unwrap_or(true);
            StepRole { kind, use_history, user_turn, assistant_turn }
        })
        .collect()
}

/// The configuration errors a loop's roles show: a conversational body with an agent step
/// that would record no assistant turn, `use_history` set on a step that is not an agent.
///
/// # Errors
///
/// [`Error::InvalidConfig`] naming the key.
pub(crate) fn check_roles(
    steps: &[(String, Box<dyn Step>)],
    config: &LoopConfig,
    roles: &[StepRole],
) -> Result<()> {
    for ((name, _), role) in steps.iter().zip(roles) {
        let set = config.steps.get(name).and_then(|s| s.use_history);
        if set.is_some() && !matches!(role.kind, StepKind::Agent(_)) {
            return Err(Error::invalid(
                format!("steps.{name}.use_history"),
                format!("`{name}` is not an agent step: only agent steps are sent history"),
            ));
        }
    }
    let has_agent = roles.iter().any(|r| matches!(r.kind, StepKind::Agent(_)));
    if config.conversation && has_agent && !roles.iter().any(|r| r.assistant_turn) {
        let why = match config.ai_turn_source {
            AiTurnSource::Last => {
                "the body's last step is not an agent step (set `ai_turn_source = \"all_agents\"` or list the steps in `named_steps`)"
            }
            AiTurnSource::AllAgents => "the body has no agent step",
            AiTurnSource::NamedSteps => "no step listed in `named_steps` makes an assistant turn",
        };
        return Err(Error::invalid(
            "ai_turn_source",
            format!("this conversational loop would record no assistant turn: {why}"),
        ));
    }
    Ok(())
}
