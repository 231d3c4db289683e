//! Numbers in tool-call arguments survive every conversion as written (issue 14, item 12):
//! `serde_json::Value` would turn `123456789012345678901234567890` into
//! `1.2345678901234568e+29` and `1e2` into `100.0`.

use curator_model::formats::{anthropic, openai};
use curator_model::{Message, ToolCall};
use proptest::prelude::*;

const ODD: &str = r#"{"id":123456789012345678901234567890,"n":1e2,"x":-0,"f":1.50,"small":5E-324}"#;

fn conversation(arguments: &str) -> Vec<Message> {
    vec![
        Message::user("go"),
        Message::assistant_with_calls(None, vec![ToolCall::new("t1", "order", arguments)]),
        Message::tool_result("t1", "ok"),
    ]
}

#[test]
fn anthropic_text_keeps_the_numbers_of_tool_inputs() {
    let json = r#"{"messages": [{"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "order",
          "input": { "id": 123456789012345678901234567890, "n": 1e2, "x": -0, "f": 1.50, "small": 5E-324 } }]}]}"#;
    let messages = anthropic::parse(json).unwrap();
    assert_eq!(messages[1].tool_calls()[0].arguments(), ODD);
    // The value reader cannot know the text: it keeps what `Value` holds.
    let value: serde_json::Value = serde_json::from_str(json).unwrap();
    let from_value = anthropic::to_messages(&value).unwrap();
    assert!(from_value[1].tool_calls()[0].arguments().contains("1.2345678901234568e+29"));
}

#[test]
fn anthropic_writer_keeps_the_numbers_of_arguments() {
    let messages = conversation(ODD);
    let json = anthropic::to_json(&messages).unwrap();
    assert!(json.contains(&format!(r#""input":{ODD}"#)), "{json}");
    assert_eq!(anthropic::parse(&json).unwrap(), messages);
    // The value form agrees with the text on everything else.
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value, anthropic::from_messages(&messages).unwrap().to_value());
}

#[test]
fn openai_to_anthropic_and_back_keeps_the_numbers() {
    let openai_json =
        serde_json::to_string(&openai::from_messages(&conversation(ODD)).unwrap()).unwrap();
    let messages = openai::parse(&openai_json).unwrap();
    let back = anthropic::parse(&anthropic::to_json(&messages).unwrap()).unwrap();
    assert_eq!(back[1].tool_calls()[0].arguments(), ODD);
    assert_eq!(serde_json::to_string(&openai::from_messages(&back).unwrap()).unwrap(), openai_json);
}

#[test]
fn anthropic_response_text_keeps_the_numbers() {
    let reply = anthropic::parse_response(
        r#"{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {"n": 1e2}}]}"#,
    )
    .unwrap();
    assert_eq!(reply.tool_calls()[0].arguments(), r#"{"n":1e2}"#);
}

#[test]
fn whitespace_inside_strings_is_kept_and_between_tokens_dropped() {
    let json = r#"[{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f",
        "input": { "cmd" : "a  b\n\"c\"" , "n" : [ 1 , 2 ] }}]}]"#;
    let messages = anthropic::parse(json).unwrap();
    assert_eq!(messages[0].tool_calls()[0].arguments(), r#"{"cmd":"a  b\n\"c\"","n":[1,2]}"#);
}

/// A JSON number as text, of any precision and form, within the range of a double (beyond
/// it, see `numbers_beyond_a_double_are_written_as_text_and_refused_only_as_values`).
fn number() -> impl Strategy<Value = String> {
    "-?(0|[1-9][0-9]{0,40})(\\.[0-9]{1,25})?([eE][+-]?[0-9]{1,2})?"
}

#[test]
fn numbers_beyond_a_double_are_written_as_text_and_refused_only_as_values() {
    // Issue 29: `1E400` was refused on the way to Anthropic. The text writer keeps it; a
    // `serde_json::Value` cannot hold it, so the value writer still refuses it, by name.
    let messages = conversation(r#"{"n":1E400,"s":"x"}"#);
    let json = anthropic::to_json(&messages).unwrap();
    assert!(json.contains(r#""input":{"n":1E400,"s":"x"}"#), "{json}");
    let error = anthropic::from_messages(&messages).unwrap_err();
    assert_eq!(
        error.to_string(),
        "message 1: field `tool_calls[0].function.arguments` is not valid JSON: number out of range at line 1 column 10"
    );
    // Arguments that are not JSON at all are refused by both.
    assert!(anthropic::to_json(&conversation(r#"{"n":"#)).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_number_survives_anthropic_text(n in number(), m in number()) {
        let arguments = format!(r#"{{"a":{n},"b":[{m},{{"c":{n}}}]}}"#);
        let messages = conversation(&arguments);
        let back = anthropic::parse(&anthropic::to_json(&messages).unwrap()).unwrap();
        prop_assert_eq!(back[1].tool_calls()[0].arguments(), arguments.as_str());
    }
}
