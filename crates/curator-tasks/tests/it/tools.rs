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
        "`step_id` must be a whole number from 0 to 4294967295, not \"one\"",
    );
    rejected(
        summarize_step(&history, r#"{"step_id": -1, "summary": "x"}"#),
        "`step_id` must be a whole number from 0 to 4294967295, not -1",
    );
    rejected(
        summarize_step(&history, r#"{"step_id": 1.5, "summary": "x"}"#),
        "`step_id` must be a whole number from 0 to 4294967295, not 1.5",
    );
    rejected(
        summarize_step(&history, r#"{"step_id": 1, "summary": 5}"#),
        "`summary` must be a string, not 5",
    );
    rejected(
        summarize_step(&history, r#"{"step_id": 1, "summary": "x", "extra": 1}"#),
        "unknown field `extra`; the fields are `step_id` and `summary`",
    );
    rejected(
        summarize_step(&history, "not json"),
        "invalid arguments for summarize_step: the arguments are not valid JSON",
    );
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

    let ok = summarize_step(&history, r#"{"step_id": 1, "summary": "Seed 42 fails."}"#).unwrap();
    assert_eq!(ok.message, "Step 1 summarized.");
    assert!(history.apply(&ok.event).is_ok());
}

/// Defect 4: arguments looser than the schema, errors in Rust's words, fenced JSON.
#[test]
fn arguments_are_read_as_the_schema_says_and_errors_speak_json() {
    let history = worked();
    // A JSON array was read positionally as the struct's fields.
    rejected(
        summarize_step(&history, r#"[1, "positional"]"#),
        "the arguments must be a JSON object with `step_id` and `summary`, not an array",
    );
    rejected(
        expand_step(&history, r#"[1, "why"]"#),
        "the arguments must be a JSON object with `step_id` and `reason`, not an array",
    );
    rejected(
        context_pressure(&CharEstimate::default(), "[]", "", 10),
        "the arguments must be a JSON object with no fields, not an array",
    );
    for raw in [
        r#""step 1""#,
        r#"{"step_id": 4294967296, "summary": "x"}"#,
        r#"{"step_id": null, "summary": "x"}"#,
        r#"{"step_id": 1, "summary": ["x"]}"#,
    ] {
        let message = summarize_step(&history, raw).unwrap_err().to_string();
        for rust in ["struct", "u32", "expected a string", "SummarizeArgs", "invalid type"] {
            assert!(!message.contains(rust), "{raw}: {message} speaks Rust ({rust})");
        }
    }
    // Arguments in a Markdown code fence are read inside it.
    let fenced = "```json\n{\"step_id\": 1, \"summary\": \"Seed 42 fails.\"}\n```";
    assert_eq!(summarize_step(&history, fenced).unwrap().message, "Step 1 summarized.");
}

/// Defect 2: the active step could be summarized, hiding every later turn.
#[test]
fn the_active_step_cannot_be_summarized() {
    let history = worked();
    assert_eq!(history.active_step_id(), Some(2));
    let error = summarize_step(&history, r#"{"step_id": 2, "summary": "BTreeMap."}"#).unwrap_err();
    assert!(matches!(error, Error::ActiveStep { step_id: 2 }), "{error}");
    assert_eq!(
        error.to_string(),
        "step 2 is the active step and cannot be summarized while it receives turns; \
         summarize a completed step, or finish this one first"
    );
    // The reducer refuses it too, so no path hides the turns that follow.
    let direct = history.apply(&TaskEvent::SummarizeStep { step_id: 2, summary: "x".into() });
    assert!(matches!(direct, Err(Error::ActiveStep { step_id: 2 })));
    // A later failure stays visible.
    let history = history
        .apply(&TaskEvent::append(
            curator_tasks::StepTurn::new(
                9,
                curator_tasks::TurnRole::Tool,
                "FAILED: test_login panicked",
            )
            .with_tool("cargo_test", "call_9"),
        ))
        .unwrap();
    assert!(HistorySection::new().markdown(&history).contains("FAILED: test_login panicked"));
}

/// Defect 1: a summary that does not make the step shorter is refused.
#[test]
fn a_summary_longer_than_the_step_is_refused() {
    let history = worked();
    let long = "Reproduced the flaky parser test. ".repeat(20);
    let error =
        summarize_step(&history, &format!(r#"{{"step_id": 1, "summary": "{long}"}}"#)).unwrap_err();
    assert!(
        matches!(error, Error::SummaryNotShorter { step_id: 1, unit: "characters", .. }),
        "{error}"
    );
    assert!(error.to_string().contains("keep only the outcomes"), "{error}");
}

#[test]
fn expand_step_validates_and_signals_a_rerender() {
    let history = worked()
        .apply(&TaskEvent::SummarizeStep { step_id: 1, summary: "HashMap order.".into() })
        .unwrap();
    rejected(expand_step(&history, r#"{"step_id": 1}"#), "missing field `reason`");
    rejected(expand_step(&history, r#"{"reason": "x"}"#), "missing field `step_id`");
    rejected(expand_step(&history, r#"{"step_id": 4, "reason": "x"}"#), "step 4 not found");
    // Defect 5: expanding a step that is not summarized succeeded silently.
    rejected(
        expand_step(&history, r#"{"step_id": 3, "reason": "x"}"#),
        "step 3 is not summarized: its turns already show in full",
    );

    let expansion = expand_step(&history, r#"{"step_id": 1, "reason": "need the seed"}"#).unwrap();
    assert_eq!(expansion.reason, "need the seed");
    assert_eq!(
        expansion.message,
        "Step 1 (Reproduce) expanded: its 5 turns show in full in the task history until it is summarized again."
    );
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
        "unknown field `verbose`; this tool takes no arguments",
    );
    let json = serde_json::to_value(ContextPressure::new(800, 1_000)).unwrap();
    assert_eq!(json["recommendation"], "consider_summarizing");
}

#[test]
fn definitions_are_openai_function_tools() {
    let names: Vec<_> = ToolDefinition::all().iter().map(ToolDefinition::to_openai).collect();
    let expected = ["summarize_step", "expand_step", "show_step", "context_pressure"];
    assert_eq!(names.len(), expected.len());
    for (tool, name) in names.iter().zip(expected) {
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

/// The keywords OpenAI's strict mode takes (its Structured Outputs subset of JSON Schema):
/// anything else is refused by the provider.
const STRICT_KEYWORDS: [&str; 10] = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "description",
    "enum",
    "const",
    "anyOf",
    "items",
    "$defs",
];

/// Every rule of strict mode a schema must keep, as `path: problem` lines.
fn strict_violations(schema: &serde_json::Value, path: &str, out: &mut Vec<String>) {
    let Some(map) = schema.as_object() else {
        out.push(format!("{path}: not a schema object"));
        return;
    };
    for key in map.keys() {
        if !STRICT_KEYWORDS.contains(&key.as_str()) {
            out.push(format!("{path}: keyword `{key}` is not supported in strict mode"));
        }
    }
    if map.get("type").and_then(serde_json::Value::as_str) == Some("object") {
        if map.get("additionalProperties") != Some(&serde_json::Value::Bool(false)) {
            out.push(format!("{path}: additionalProperties must be false"));
        }
        let properties = map.get("properties").and_then(serde_json::Value::as_object);
        let required: Vec<&str> = map
            .get("required")
            .and_then(serde_json::Value::as_array)
            .map(|names| names.iter().filter_map(serde_json::Value::as_str).collect())
            .unwrap_or_default();
        for (name, property) in properties.into_iter().flatten() {
            if !required.contains(&name.as_str()) {
                out.push(format!("{path}.{name}: every property must be required"));
            }
            strict_violations(property, &format!("{path}.{name}"), out);
        }
    }
}

#[test]
fn strict_definitions_keep_openais_strict_mode_rules() {
    for tool in ToolDefinition::all() {
        let definition = tool.to_openai_strict();
        assert_eq!(definition["type"], "function");
        assert_eq!(definition["function"]["strict"], true);
        assert_eq!(definition["function"]["name"], tool.name);
        let mut violations = Vec::new();
        strict_violations(&definition["function"]["parameters"], tool.name, &mut violations);
        assert!(violations.is_empty(), "{violations:#?}");
        // The plain definitions keep the limits that strict mode cannot carry, and the
        // checker sees them: it is not vacuous.
        let mut loose = Vec::new();
        strict_violations(&tool.parameters, tool.name, &mut loose);
        if tool.name != "context_pressure" {
            assert!(!loose.is_empty(), "{}: the checker found nothing to refuse", tool.name);
        }
    }
}

#[test]
fn anthropic_definitions_keep_anthropics_tool_rules() {
    let valid_name = |name: &str| {
        (1..=64).contains(&name.len())
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    assert!(!valid_name("summarize step") && !valid_name(&"x".repeat(65)) && !valid_name(""));
    for tool in ToolDefinition::all() {
        let definition = tool.to_anthropic();
        let object = definition.as_object().unwrap();
        let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["description", "input_schema", "name"]);
        assert!(definition["name"].as_str().is_some_and(valid_name), "{definition}");
        assert_eq!(definition["input_schema"]["type"], "object");
        assert!(definition["description"].as_str().is_some_and(|text| !text.is_empty()));
        assert_eq!(definition["input_schema"], tool.parameters);
    }
}
