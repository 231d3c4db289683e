//! Pipelines from JSON and TOML.

use curator_model::{Message, ToolCall};
use curator_strategies::{CurationContext, HistoryManagerExt, StrategyConfig};
use curator_testkit::error_chain;

#[test]
fn json_and_toml_build_the_same_pipeline() {
    let json = StrategyConfig::from_json(
        r#"{"strategy": "compose", "steps": [
            {"strategy": "redact"},
            {"strategy": "truncate_tool_results", "max_length": 50, "suffix": "…"},
            {"strategy": "clear_old_tool_results", "keep_last": 2, "exclude": ["memory"]},
            {"strategy": "filter_tools", "tools": ["noise"]},
            {"strategy": "sliding_window", "window_size": 20},
            {"strategy": "truncate_turns", "max_turns": 5},
            {"strategy": "truncate_tokens", "max_tokens": 4000, "reserve": 500, "tokenizer": "estimate"},
            {"strategy": "passthrough"}
        ]}"#,
    )
    .unwrap();
    let toml: StrategyConfig = toml::from_str(
        r#"
        strategy = "compose"
        [[steps]]
        strategy = "redact"
        [[steps]]
        strategy = "truncate_tool_results"
        max_length = 50
        suffix = "…"
        [[steps]]
        strategy = "clear_old_tool_results"
        keep_last = 2
        exclude = ["memory"]
        [[steps]]
        strategy = "filter_tools"
        tools = ["noise"]
        [[steps]]
        strategy = "sliding_window"
        window_size = 20
        [[steps]]
        strategy = "truncate_turns"
        max_turns = 5
        [[steps]]
        strategy = "truncate_tokens"
        max_tokens = 4000
        reserve = 500
        tokenizer = "estimate"
        [[steps]]
        strategy = "passthrough"
        "#,
    )
    .unwrap();
    assert_eq!(json, toml);
    let manager = toml.build().unwrap();
    assert_eq!(
        manager.name(),
        "redactor -> tool_result_truncator -> clear_old_tool_results -> tool_filter -> sliding_window -> turn_limit -> token_budget -> passthrough"
    );
    let messages = vec![
        Message::user("task"),
        Message::assistant_with_calls(None, vec![ToolCall::new("1", "cat", "{}")]),
        Message::tool_result("1", "x".repeat(200)),
    ];
    let view = manager.curate_messages(&messages, &CurationContext::default()).unwrap();
    assert_eq!(view[2].text().chars().count(), 50);
}

#[test]
fn errors_name_what_was_wrong() {
    let unknown = StrategyConfig::from_json(r#"{"strategy": "shrink"}"#).unwrap_err();
    assert!(
        error_chain(&unknown).contains("unknown variant `shrink`"),
        "{}",
        error_chain(&unknown)
    );
    let bad_value =
        StrategyConfig::from_json(r#"{"strategy": "sliding_window", "window_size": -1}"#)
            .unwrap_err();
    assert!(
        error_chain(&bad_value).contains("invalid value: integer `-1`"),
        "{}",
        error_chain(&bad_value)
    );
    // The message itself says it, without serde's empty position.
    assert_eq!(
        bad_value.to_string(),
        "strategy configuration: cannot read it: invalid value: integer `-1`, expected usize"
    );
    let missing = StrategyConfig::from_json(r#"{"strategy": "truncate_tokens"}"#).unwrap_err();
    assert!(
        error_chain(&missing).contains("missing field `max_tokens`"),
        "{}",
        error_chain(&missing)
    );
    let unknown_key =
        StrategyConfig::from_json(r#"{"strategy": "sliding_window", "window_size": 3, "size": 4}"#)
            .unwrap_err();
    assert!(
        error_chain(&unknown_key).contains("unknown field `size`"),
        "{}",
        error_chain(&unknown_key)
    );
    let too_short = StrategyConfig::from_json(
        r#"{"strategy": "truncate_tool_results", "max_length": 3, "suffix": "[cut]"}"#,
    )
    .unwrap()
    .build()
    .err()
    .unwrap();
    assert!(error_chain(&too_short).contains("max_length"), "{}", error_chain(&too_short));
    let no_summarizer =
        StrategyConfig::from_json(r#"{"strategy": "summarize", "threshold_messages": 50}"#)
            .unwrap_err();
    assert!(
        error_chain(&no_summarizer).contains("missing field `summarizer`"),
        "{}",
        error_chain(&no_summarizer)
    );
    let both = StrategyConfig::from_json(
        r#"{"strategy": "summarize", "summarizer": "extractive", "threshold_messages": 5, "threshold_tokens": 5}"#,
    )
    .unwrap()
    .build()
    .err()
    .unwrap();
    assert!(both.to_string().contains("exactly one of"), "{both}");
    let bad_regex =
        StrategyConfig::from_json(r#"{"strategy": "redact", "patterns": {"x": "(oops"}}"#)
            .unwrap()
            .build()
            .err()
            .unwrap();
    assert!(bad_regex.to_string().contains("redaction pattern `x`"));
}

#[test]
fn configs_round_trip_through_json() {
    let config =
        StrategyConfig::from_json(r#"{"strategy": "truncate_tokens", "max_tokens": 10}"#).unwrap();
    let json = serde_json::to_string(&config).unwrap();
    assert_eq!(StrategyConfig::from_json(&json).unwrap(), config);
}

#[test]
fn strategies_are_named_as_their_types_and_old_names_still_read() {
    let cases = [
        ("token_budget", "truncate_tokens", r#""max_tokens": 100"#),
        ("turn_limit", "truncate_turns", r#""max_turns": 2"#),
        ("tool_filter", "filter_tools", r#""tools": ["think"]"#),
        ("tool_result_truncator", "truncate_tool_results", r#""max_length": 100"#),
        ("redactor", "redact", r#""builtin": true"#),
    ];
    for (name, alias, options) in cases {
        let current =
            StrategyConfig::from_json(&format!(r#"{{"strategy": "{name}", {options}}}"#)).unwrap();
        let old =
            StrategyConfig::from_json(&format!(r#"{{"strategy": "{alias}", {options}}}"#)).unwrap();
        assert_eq!(current, old, "{alias} reads as {name}");
        // Written back, and named in events, with the current name only.
        assert_eq!(serde_json::to_value(&old).unwrap()["strategy"], name);
        assert_eq!(old.build().unwrap().name(), name);
    }
}
