//! The model's tools: argument validation, the expand signal, context-pressure thresholds.

use curator_strategies::CharEstimate;
use curator_tasks::{
    ContextPressure, Error, HistorySection, Recommendation, StepVisibilityResolver, TaskEvent,
    ToolDefinition, Visibility, context_pressure, expand_step, summarize_step,
};

use crate::render::worked;

#[track_caller]
fn rejected(result: Result<impl std::fmt::Debug, Error>, expected: &str) {
    let message = result.map_or_else(|error| error.to_string(), |ok| format!("accepted: {ok:?}"));
    assert!(message.contains(expected), "{message:?} does not contain {expected:?}");
}

#[test]
fn summarize_step_validates_every_argument() {
    let history = worked();
    rejected(
        summarize_step(&history, r#"{"summary": "x"}"#),
        "invalid arguments for summarize_step: missing field `step_id`",
    );
    rejected(summarize_step(&history, r#"{"step_id": 1}"#), "missing field `summary`");
    rejected(
        summarize_step(&history, r#"{"step_id": "one", "summary": "x"}"#),
        "invalid type: string \"one\"",
    );
    rejected(
        summarize_step(&history, r#"{"step_id": -1, "summary": "x"}"#),
        "invalid value: integer `-1`",
    );
    rejected(
        summarize_step(&history, r#"{"step_id": 1, "summary": 5}"#),
        "invalid type: integer `5`, expected a string",
    );
    rejected(
        summarize_step(&history, r#"{"step_id": 1, "summary": "x", "extra": 1}"#),
        "unknown field `extra`",
    );
    rejected(summarize_step(&history, "not json"), "invalid arguments for summarize_step");
    rejected(
        summarize_step(&history, r#"{"step_id": 1, "summary": "   "}"#),
        "summary must not be empty",
    );
    rejected(
        summarize_step(
            &history,
            &format!(r#"{{"step_id": 1, "summary": "{}"}}"#, "é".repeat(1_001)),
        ),
        "summary must be at most 1000 characters (got 1001)",
    );
    rejected(
        summarize_step(&history, r#"{"step_id": 9, "summary": "x"}"#),
        "step 9 not found; known steps: 1, 2, 3",
    );

    let ok = summarize_step(
        &history,
        &format!(r#"{{"step_id": 1, "summary": "{}"}}"#, "é".repeat(1_000)),
    )
    .unwrap();
    assert_eq!(ok.message, "Step 1 summarized.");
    assert!(history.apply(&ok.event).is_ok());
}

#[test]
fn expand_step_validates_and_signals_a_rerender() {
    let history = worked()
        .apply(&TaskEvent::SummarizeStep { step_id: 1, summary: "HashMap order.".into() })
        .unwrap();
    rejected(expand_step(&history, r#"{"step_id": 1}"#), "missing field `reason`");
    rejected(expand_step(&history, r#"{"reason": "x"}"#), "missing field `step_id`");
    rejected(expand_step(&history, r#"{"step_id": 4, "reason": "x"}"#), "step 4 not found");

    let expansion = expand_step(&history, r#"{"step_id": 1, "reason": "need the seed"}"#).unwrap();
    assert_eq!(expansion.reason, "need the seed");
    assert_eq!(expansion.step.turns().len(), 5, "the full step comes back");
    // Either apply the event, or keep the stored summary and override one render.
    let expanded = history.apply(&expansion.event).unwrap();
    let once =
        HistorySection::new().with_resolver(expansion.resolver(StepVisibilityResolver::new()));
    assert_eq!(once.markdown(&history), HistorySection::new().markdown(&expanded));
    assert_eq!(
        HistorySection::new().markdown(&expanded),
        HistorySection::new().markdown(&worked())
    );
    assert_eq!(
        expanded.step(1).map(curator_tasks::StepHistory::visibility),
        Some(Visibility::Full)
    );
}

#[test]
fn context_pressure_thresholds() {
    for (used, expected) in [
        (0, Recommendation::Ok),
        (699, Recommendation::Ok),
        (700, Recommendation::ConsiderSummarizing),
        (899, Recommendation::ConsiderSummarizing),
        (900, Recommendation::Urgent),
        (1_500, Recommendation::Urgent),
    ] {
        assert_eq!(ContextPressure::new(used, 1_000).recommendation, expected, "{used}");
    }
    assert_eq!(ContextPressure::new(0, 0).recommendation, Recommendation::Urgent);

    let counter = CharEstimate::default();
    let rendered = HistorySection::new().markdown(&worked());
    let pressure = context_pressure(&counter, "", &rendered, 10_000).unwrap();
    assert_eq!(
        pressure.used_tokens,
        curator_strategies::TokenCounter::count_text(&counter, &rendered)
    );
    assert_eq!(pressure.recommendation, Recommendation::Ok);
    assert!(context_pressure(&counter, "{}", &rendered, 10_000).is_ok());
    rejected(
        context_pressure(&counter, r#"{"verbose": true}"#, &rendered, 10_000),
        "unknown field `verbose`",
    );
    let json = serde_json::to_value(ContextPressure::new(800, 1_000)).unwrap();
    assert_eq!(json["recommendation"], "consider_summarizing");
}

#[test]
fn definitions_are_openai_function_tools() {
    let names: Vec<_> = ToolDefinition::all().iter().map(ToolDefinition::to_openai).collect();
    for (tool, name) in names.iter().zip(["summarize_step", "expand_step", "context_pressure"]) {
        assert_eq!(tool["type"], "function");
        assert_eq!(tool["function"]["name"], name);
        assert_eq!(tool["function"]["parameters"]["type"], "object");
        assert!(tool["function"]["description"].as_str().is_some_and(|text| !text.is_empty()));
    }
    assert_eq!(
        names[1]["function"]["parameters"]["required"],
        serde_json::json!(["step_id", "reason"])
    );
}
