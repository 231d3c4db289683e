//! `tools` schemas converted both ways (issue 29).

use curator_model::Error;
use curator_model::formats::{anthropic, openai};
use serde_json::json;

#[test]
fn openai_tools_become_anthropic_tools_and_back() {
    let openai_tools = json!([
        {"type": "function", "function": {"name": "ls", "description": "List a folder.",
            "parameters": {"type": "object", "properties": {"dir": {"type": "string"}}, "required": ["dir"]}}},
        {"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}
    ]);
    let anthropic_tools = json!([
        {"name": "ls", "description": "List a folder.",
            "input_schema": {"type": "object", "properties": {"dir": {"type": "string"}}, "required": ["dir"]}},
        {"name": "now", "input_schema": {"type": "object", "properties": {}}}
    ]);
    assert_eq!(anthropic::tools_from_openai(&openai_tools).unwrap(), anthropic_tools);
    assert_eq!(openai::tools_from_anthropic(&anthropic_tools).unwrap(), openai_tools);
}

#[test]
fn a_function_without_parameters_takes_an_empty_object_schema() {
    let tools = json!([{"type": "function", "function": {"name": "now"}}]);
    assert_eq!(
        anthropic::tools_from_openai(&tools).unwrap(),
        json!([{"name": "now", "input_schema": {"type": "object", "properties": {}}}])
    );
}

#[test]
fn tools_without_a_counterpart_are_typed_errors_naming_the_tool() {
    let server = json!([{"name": "ls", "input_schema": {"type": "object"}},
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}]);
    match openai::tools_from_anthropic(&server) {
        Err(Error::ToolSchema { index: 1, field, .. }) => assert_eq!(field, "type"),
        other => panic!("{other:?}"),
    }
    let custom = json!([{"type": "custom", "custom": {"name": "sh"}}]);
    match anthropic::tools_from_openai(&custom) {
        Err(Error::ToolSchema { index: 0, field, .. }) => assert_eq!(field, "type"),
        other => panic!("{other:?}"),
    }
    let missing = json!([{"type": "function", "function": {"description": "?"}}]);
    match anthropic::tools_from_openai(&missing) {
        Err(Error::ToolSchema { index: 0, field, .. }) => assert_eq!(field, "function.name"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn tools_already_in_the_target_shape_are_refused_not_passed() {
    let anthropic_tools = json!([{"name": "ls", "input_schema": {"type": "object"}}]);
    assert!(matches!(
        anthropic::tools_from_openai(&anthropic_tools),
        Err(Error::ToolSchema { index: 0, .. })
    ));
}
