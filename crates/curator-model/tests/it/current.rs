//! Current OpenAI input (the `developer` role, `custom` tool calls) and the shapes providers
//! refuse that the validators must catch.

use curator_model::formats::{anthropic, openai};
use curator_model::validate::{self, ViolationKind};
use curator_model::{Content, Error, ImageSource, Message, Part, Role, ToolCall};
use serde_json::json;

#[test]
fn the_developer_role_is_a_system_message_that_is_written_back_as_it_came() {
    let wire = json!([
        {"role": "developer", "content": "Answer in French."},
        {"role": "user", "content": "Hello"}
    ]);
    let messages = openai::to_messages(&wire).unwrap();
    assert_eq!(messages[0].role(), Role::System);
    assert_eq!(openai::from_messages(&messages).unwrap(), wire);
    // Other formats see a system prompt.
    let request = anthropic::from_messages(&messages).unwrap();
    assert_eq!(request.system.as_ref().and_then(|s| s.as_str()), Some("Answer in French."));
    validate::openai(&messages).unwrap();
    validate::anthropic(&messages).unwrap();
}

#[test]
fn custom_tool_calls_keep_their_free_form_input() {
    let wire = json!([
        {"role": "user", "content": "patch it"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "custom", "custom": {"name": "apply_patch", "input": "*** Begin Patch\n-old\n+new"}}
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": "done"}
    ]);
    let messages = openai::to_messages(&wire).unwrap();
    let call = &messages[1].tool_calls()[0];
    assert_eq!((call.name(), call.arguments()), ("apply_patch", "*** Begin Patch\n-old\n+new"));
    assert_eq!(openai::from_messages(&messages).unwrap(), wire);
    validate::openai(&messages).unwrap();
    // Anthropic has no free-form tool input: a typed refusal, not a lossy conversion.
    assert!(matches!(
        anthropic::from_messages(&messages),
        Err(Error::UnsupportedValue { index: 1, ref value, .. }) if value == "custom"
    ));
}

#[track_caller]
fn openai_kind(messages: &[Message]) -> ViolationKind {
    validate::openai(messages).unwrap_err().kind
}

#[test]
fn the_openai_validator_refuses_what_the_api_refuses() {
    let empty_calls = openai::to_messages(&json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "ok", "tool_calls": []}
    ]))
    .unwrap();
    assert_eq!(openai_kind(&empty_calls), ViolationKind::EmptyToolCalls);

    let unnamed = vec![
        Message::user("go"),
        Message::assistant_with_calls(None, vec![ToolCall::new("c1", "", "{}")]),
        Message::tool_result("c1", "x"),
    ];
    assert_eq!(openai_kind(&unnamed), ViolationKind::EmptyToolName { call_id: "c1".into() });
    assert!(matches!(
        validate::anthropic(&unnamed).unwrap_err().kind,
        ViolationKind::EmptyToolName { .. }
    ));

    let image = Part::image(ImageSource::from_url("https://x/a.png"));
    let system_image = vec![
        Message::system(Content::Parts(vec![Part::text("look"), image.clone()])),
        Message::user("hi"),
    ];
    assert_eq!(
        openai_kind(&system_image),
        ViolationKind::UnsupportedPart { role: Role::System, part: "image".into() }
    );
    let tool_image = vec![
        Message::user("go"),
        Message::assistant_with_calls(None, vec![ToolCall::new("c1", "shot", "{}")]),
        Message::tool_result("c1", Content::Parts(vec![image])),
    ];
    assert_eq!(
        openai_kind(&tool_image),
        ViolationKind::UnsupportedPart { role: Role::Tool, part: "image".into() }
    );
    // Anthropic takes images in tool results.
    validate::anthropic(&tool_image).unwrap();
}

#[test]
fn the_anthropic_validator_refuses_blank_text() {
    let blank = vec![Message::user("go"), Message::assistant("   \n")];
    let v = validate::anthropic(&blank).unwrap_err();
    assert_eq!((v.index, v.kind), (1, ViolationKind::BlankText { role: Role::Assistant }));
    let blank_part = vec![Message::user(Content::Parts(vec![Part::text("a"), Part::text(" ")]))];
    assert!(matches!(
        validate::anthropic(&blank_part).unwrap_err().kind,
        ViolationKind::BlankText { role: Role::User }
    ));
    validate::anthropic(&[Message::user("go"), Message::assistant("fine")]).unwrap();
}
