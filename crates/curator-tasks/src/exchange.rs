//! How the task tools' own calls and answers show in the section: compactly, since they
//! manage the context and say nothing about the task.
//!
//! - A `summarize_step` or `expand_step` call shows its step alone, `{"step_id":1}`: the
//!   summary it carried shows as the step's summary once accepted, and a refused one is
//!   not worth its length again (the answer says why it was refused).
//! - A `context_pressure` call does not show; of its answers only the step's latest does,
//!   on one line (`2110 tokens of 8000 (26%): ok`): an older reading is stale.
//!
//! The turns themselves are kept as they came (the record replays from them).

use std::borrow::Cow;

use serde_json::Value;

use crate::escape::unfenced;
use crate::history::{StepTurn, TurnRole};
use crate::names::CONTEXT_PRESSURE;

/// A turn as the section shows it: the turn, and the text to show for it.
#[derive(Debug)]
pub(crate) struct Shown<'a> {
    pub(crate) turn: &'a StepTurn,
    pub(crate) content: Cow<'a, str>,
}

/// The turns the section shows of `turns`, in order, each with its text.
pub(crate) fn shown(turns: &[StepTurn]) -> impl Iterator<Item = Shown<'_>> {
    let pressure = |turn: &StepTurn| turn.tool_name.as_deref() == Some(CONTEXT_PRESSURE);
    let latest_pressure = turns
        .iter()
        .rev()
        .find(|turn| turn.role == TurnRole::Tool && pressure(turn))
        .map(|turn| turn.turn_id);
    turns.iter().filter_map(move |turn| {
        if !turn.is_task_tool() {
            return Some(Shown { turn, content: Cow::Borrowed(turn.content.as_str()) });
        }
        let content = match (turn.role, pressure(turn)) {
            (TurnRole::ToolCall, true) => return None,
            (_, true) if Some(turn.turn_id) != latest_pressure => return None,
            (_, true) => pressure_line(&turn.content),
            (TurnRole::ToolCall, false) => step_only(&turn.content),
            _ => Cow::Borrowed(turn.content.as_str()),
        };
        Some(Shown { turn, content })
    })
}

/// The longest raw argument text a call that does not parse shows, in characters.
const RAW_ARGUMENTS_CHARS: usize = 40;

/// A step tool's arguments reduced to `{"step_id":N}`; arguments that are not an object
/// with a `step_id` show their first characters.
fn step_only(arguments: &str) -> Cow<'_, str> {
    if let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(unfenced(arguments))
        && let Some(step_id) = fields.get("step_id")
    {
        return Cow::Owned(format!("{{\"step_id\":{step_id}}}"));
    }
    if arguments.chars().count() <= RAW_ARGUMENTS_CHARS {
        return Cow::Borrowed(arguments);
    }
    let mut clipped: String = arguments.chars().take(RAW_ARGUMENTS_CHARS - 1).collect();
    clipped.push('…');
    Cow::Owned(clipped)
}

/// A `context_pressure` answer on one line: `2110 tokens of 8000 (26%): ok`. An answer that
/// is not a reading (an error's text) shows as it is.
fn pressure_line(answer: &str) -> Cow<'_, str> {
    let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(answer) else {
        return Cow::Borrowed(answer);
    };
    let (Some(used), Some(max), Some(recommendation)) = (
        fields.get("used_tokens").and_then(Value::as_u64),
        fields.get("max_tokens").and_then(Value::as_u64),
        fields.get("recommendation").and_then(Value::as_str),
    ) else {
        return Cow::Borrowed(answer);
    };
    let percent = used.saturating_mul(100).checked_div(max).unwrap_or(100);
    Cow::Owned(format!("{used} tokens of {max} ({percent}%): {recommendation}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turns() -> Vec<StepTurn> {
        vec![
            StepTurn::new(1, TurnRole::User, "go"),
            StepTurn::tool_call(2, "context_pressure", "p1", "{}"),
            StepTurn::new(3, TurnRole::Tool, r#"{"used_tokens":50,"max_tokens":200,"utilization":0.25,"recommendation":"ok"}"#)
                .with_tool("context_pressure", "p1"),
            StepTurn::tool_call(4, "summarize_step", "s1", r#"{"step_id": 1, "summary": "a long summary"}"#),
            StepTurn::new(5, TurnRole::Tool, "Step 1 summarized.").with_tool("summarize_step", "s1"),
            StepTurn::tool_call(6, "expand_step", "e1", "not json at all, and longer than forty characters"),
            StepTurn::tool_call(7, "context_pressure", "p2", "{}"),
            StepTurn::new(8, TurnRole::Tool, r#"{"used_tokens":190,"max_tokens":200,"utilization":0.95,"recommendation":"urgent"}"#)
                .with_tool("context_pressure", "p2"),
        ]
    }

    #[test]
    fn task_tool_exchanges_show_compactly() {
        let turns = turns();
        let shown: Vec<(u64, String)> =
            shown(&turns).map(|s| (s.turn.turn_id, s.content.into_owned())).collect();
        assert_eq!(
            shown,
            [
                (1, "go".to_owned()),
                (4, r#"{"step_id":1}"#.to_owned()),
                (5, "Step 1 summarized.".to_owned()),
                (6, "not json at all, and longer than forty …".to_owned()),
                (8, "190 tokens of 200 (95%): urgent".to_owned()),
            ]
        );
    }

    #[test]
    fn other_turns_show_as_they_are() {
        let turns = [StepTurn::tool_call(1, "grep", "g", r#"{"pattern":"x"}"#)];
        let first = shown(&turns).next().map(|s| s.content);
        assert!(matches!(first, Some(Cow::Borrowed(r#"{"pattern":"x"}"#))));
    }
}
