//! The Anthropic format: blocks, tool results, `is_error`, the top-level system prompt.

use curator_model::formats::anthropic;
use curator_model::{Content, Message, Role, ToolCall, ToolCallStatus, tool_call_states};
use serde_json::json;

#[track_caller]
fn round_trip(wire: &serde_json::Value) -> Vec<Message> {
    let messages = anthropic::to_messages(wire).unwrap();
    assert_eq!(&anthropic::from_messages(&messages).unwrap().to_value(), wire);
    messages
}

#[test]
fn several_tool_results_in_one_user_message_become_tool_messages() {
    let m = round_trip(&json!({
        "system": [{"type": "text", "text": "Be exact.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": "Check both files."},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Reading them."},
                {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}},
                {"type": "tool_use", "id": "t2", "name": "read", "input": {"path": "b"}, "cache_control": {"type": "ephemeral"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "A"},
                {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "no such file"}], "is_error": true},
                {"type": "text", "text": "Then summarise."}
            ]}
        ]
    }));
    let roles: Vec<Role> = m.iter().map(Message::role).collect();
    assert_eq!(
        roles,
        [Role::System, Role::User, Role::Assistant, Role::Tool, Role::Tool, Role::User]
    );
    assert_eq!(m[2].text(), "Reading them.");
    assert_eq!(m[2].tool_calls()[1].arguments(), r#"{"path":"b"}"#);
    assert!(m[4].is_error());
    let states = tool_call_states(&m);
    assert_eq!(states[0].status, ToolCallStatus::Completed);
    assert_eq!(states[1].status, ToolCallStatus::Failed);
}

#[test]
fn thinking_blocks_and_explicit_is_error_false_survive() {
    round_trip(&json!({
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "go"}, {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "x"}}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "tool_use", "id": "t1", "name": "run", "input": {}}
            ]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": false}]},
            {"role": "assistant", "content": "done"}
        ]
    }));
}

#[test]
fn openai_style_messages_merge_into_alternating_turns() {
    let messages = vec![
        Message::system("s"),
        Message::user("task"),
        Message::assistant_with_calls(Some("".into()), vec![ToolCall::new("1", "ls", "")]),
        Message::tool_result("1", "x").with_name("ls"),
        Message::user("and now?"),
        Message::assistant("first"),
        Message::assistant("second"),
    ];
    let request = anthropic::from_messages(&messages).unwrap();
    assert_eq!(request.system, Some(json!("s")));
    assert_eq!(
        serde_json::Value::Array(request.messages),
        json!([
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "1", "name": "ls", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "1", "content": "x"},
                {"type": "text", "text": "and now?"}
            ]},
            {"role": "assistant", "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}]}
        ])
    );
}

#[test]
fn images_convert_between_formats() {
    let wire = json!([{"role": "user", "content": [
        {"type": "text", "text": "what is this"},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4A"}}
    ]}]);
    let messages = curator_model::formats::openai::to_messages(&wire).unwrap();
    let request = anthropic::from_messages(&messages).unwrap();
    assert_eq!(
        request.messages[0]["content"][1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4A"}})
    );
    let back = anthropic::to_messages(&request.to_value()).unwrap();
    assert_eq!(curator_model::formats::openai::from_messages(&back).unwrap(), wire);
}

#[test]
fn empty_user_content_array_round_trips() {
    let m = round_trip(&json!({"messages": [{"role": "user", "content": []}]}));
    assert_eq!(m[0].content(), Some(&Content::Parts(vec![])));
}
