//! Bad input gives a typed error naming the message and the field, never a panic.

use curator_model::formats::{anthropic, openai};
use curator_model::{Error, Message, ToolCall};
use serde_json::json;

#[track_caller]
fn check(err: &Error, expected: &str) {
    assert_eq!(err.to_string(), expected);
}

#[test]
fn not_json() {
    let err = openai::parse("[{\"role\": \"user\",").unwrap_err();
    assert!(matches!(err, Error::NotJson { .. }));
    assert!(err.to_string().contains("line 1"), "{err}");
    assert!(matches!(anthropic::parse("nope"), Err(Error::NotJson { .. })));
}

#[test]
fn wrong_role() {
    let err = openai::to_messages(
        &json!([{"role": "user", "content": "a"}, {"role": "wizard", "content": "b"}]),
    )
    .unwrap_err();
    assert!(matches!(&err, Error::UnknownRole { index: 1, role } if role == "wizard"));
    check(&err, "message 1: unknown role `wizard` in field `role`");
    let err = anthropic::to_messages(&json!([{"role": "system", "content": "a"}])).unwrap_err();
    assert!(matches!(err, Error::UnknownRole { index: 0, .. }));
}

#[test]
fn missing_and_mistyped_fields() {
    check(
        &openai::to_messages(&json!([{"content": "a"}])).unwrap_err(),
        "message 0: missing field `role`",
    );
    check(
        &openai::to_messages(&json!([{"role": "user", "content": 5}])).unwrap_err(),
        "message 0: field `content` should be a string, an array or null, found a number",
    );
    check(
        &openai::to_messages(&json!([{"role": "tool", "content": "x"}])).unwrap_err(),
        "message 0: missing field `tool_call_id`",
    );
    check(
        &openai::to_messages(&json!([{"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "a", "arguments": "{}"}}]}]))
            .unwrap_err(),
        "message 0: missing field `tool_calls[0].id`",
    );
    check(
        &openai::to_messages(&json!([{"role": "assistant", "tool_calls": [{"id": "1", "function": {"name": "a", "arguments": {"x": 1}}}]}]))
            .unwrap_err(),
        "message 0: field `tool_calls[0].function.arguments` should be a string, found an object",
    );
    check(
        &openai::to_messages(
            &json!([{"role": "user", "content": "a", "tool_calls": [{"id": "1"}]}]),
        )
        .unwrap_err(),
        "message 0: a user message cannot carry field `tool_calls`",
    );
    check(
        &openai::to_messages(&json!({"role": "user"})).unwrap_err(),
        "message 0: field `messages` should be an array, found an object",
    );
    check(
        &openai::to_messages(&json!(["hi"])).unwrap_err(),
        "message 0: field `message` should be an object, found a string",
    );
    check(
        &openai::to_messages(&json!([{"role": "assistant", "tool_calls": [{"id": "1", "type": "custom", "custom": {}}]}])).unwrap_err(),
        "message 0: missing field `tool_calls[0].custom.name`",
    );
    check(
        &openai::to_messages(&json!([{"role": "assistant", "tool_calls": [{"id": "1", "type": "mcp_call", "mcp_call": {}}]}])).unwrap_err(),
        "message 0: field `tool_calls[0].type` has unsupported value `mcp_call`",
    );
}

#[test]
fn tool_use_without_id() {
    let err = anthropic::to_messages(&json!({"messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}, {"type": "tool_use", "name": "ls", "input": {}}]}
    ]}))
    .unwrap_err();
    assert!(matches!(&err, Error::MissingField { index: 1, field } if field == "content[1].id"));
    check(
        &anthropic::to_messages(
            &json!([{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}]),
        )
        .unwrap_err(),
        "message 0: missing field `content[0].tool_use_id`",
    );
    check(
        &anthropic::to_messages(&json!([{"role": "assistant", "content": [{"type": "tool_use", "id": "1", "name": "a", "input": "{}"}]}]))
            .unwrap_err(),
        "message 0: field `content[0].input` should be an object, found a string",
    );
}

#[test]
fn arguments_that_are_not_json_where_json_is_required() {
    let messages = vec![
        Message::user("go"),
        Message::assistant_with_calls(
            None,
            vec![ToolCall::new("1", "ok", "{}"), ToolCall::new("2", "bad", "{\"a\": ")],
        ),
    ];
    let err = anthropic::from_messages(&messages).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArguments { index: 1, field, .. } if field == "tool_calls[1].function.arguments")
    );
    assert!(
        err.to_string()
            .starts_with("message 1: field `tool_calls[1].function.arguments` is not valid JSON"),
        "{err}"
    );
    // Not valid JSON is fine for OpenAI, which carries the text as it is.
    assert!(openai::from_messages(&messages).is_ok());

    let not_object = vec![
        Message::user("go"),
        Message::assistant_with_calls(None, vec![ToolCall::new("1", "a", "[1, 2]")]),
    ];
    check(
        &anthropic::from_messages(&not_object).unwrap_err(),
        "message 1: field `tool_calls[0].function.arguments` must hold a JSON object, found an array",
    );
}

#[test]
fn system_inside_conversation_cannot_go_to_anthropic() {
    let messages = vec![Message::system("a"), Message::user("b"), Message::system("c")];
    assert!(matches!(
        anthropic::from_messages(&messages),
        Err(Error::SystemInsideConversation { index: 2 })
    ));
}

#[test]
fn cross_format_parts_are_refused_not_dropped() {
    let wire =
        json!({"messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}]});
    let messages = anthropic::to_messages(&wire).unwrap();
    check(
        &openai::from_messages(&messages).unwrap_err(),
        "message 0: field `content[0].type` has unsupported value `document`",
    );
}
