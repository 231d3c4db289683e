//! Strict readers (issue 29): a field or part of the other format is a typed error naming
//! it and where, never dropped or passed through.

use curator_model::Error;
use curator_model::formats::{anthropic, openai};
use serde_json::{Value, json};

#[track_caller]
fn foreign(result: Result<Vec<curator_model::Message>, Error>, index: usize, field: &str) {
    match result {
        Err(Error::ForeignField { index: i, field: f, .. }) => {
            assert_eq!((i, f.as_str()), (index, field));
        }
        other => panic!("expected ForeignField at {index} `{field}`, got {other:?}"),
    }
}

fn user_with(part: &Value) -> Value {
    json!([{"role": "user", "content": "go"}, {"role": "user", "content": [part]}])
}

#[test]
fn openai_refuses_anthropic_blocks() {
    for part in [
        json!({"type": "tool_use", "id": "t", "name": "f", "input": {}}),
        json!({"type": "tool_result", "tool_use_id": "t", "content": "x"}),
        json!({"type": "image", "source": {"type": "url", "url": "https://x/a.png"}}),
        json!({"type": "thinking", "thinking": "hm", "signature": "s"}),
        json!({"type": "document", "source": {"type": "text", "data": "d"}}),
    ] {
        foreign(openai::to_messages(&user_with(&part)), 1, "content[0].type");
    }
    let assistant = json!([{"role": "assistant", "content": [
        {"type": "text", "text": "a"},
        {"type": "tool_use", "id": "t", "name": "f", "input": {}}
    ]}]);
    foreign(openai::to_messages(&assistant), 0, "content[1].type");
}

#[test]
fn openai_error_names_the_block_and_format() {
    let err = openai::to_messages(&user_with(&json!({"type": "tool_result", "tool_use_id": "t"})))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "message 1: field `content[0].type` is `tool_result`, which belongs to the Anthropic format"
    );
}

#[test]
fn anthropic_refuses_openai_fields_and_parts() {
    for part in [
        json!({"type": "image_url", "image_url": {"url": "https://x/a.png"}}),
        json!({"type": "input_audio", "input_audio": {"data": "", "format": "wav"}}),
        json!({"type": "file", "file": {"file_id": "f"}}),
        json!({"type": "refusal", "refusal": "no"}),
    ] {
        foreign(anthropic::to_messages(&user_with(&part)), 1, "content[0].type");
    }
    let calls = json!([{"role": "user", "content": "go"}, {"role": "assistant", "content": "x",
        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]);
    foreign(anthropic::to_messages(&calls), 1, "tool_calls");
    let id = json!([{"role": "user", "content": "go", "tool_call_id": "c"}]);
    foreign(anthropic::to_messages(&id), 0, "tool_call_id");
    let null = json!([{"role": "user", "content": null}]);
    assert!(anthropic::to_messages(&null).is_err());
}

#[test]
fn shared_shapes_still_read_in_both() {
    let plain = json!([{"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": "hello"}]);
    assert!(openai::to_messages(&plain).is_ok());
    assert!(anthropic::to_messages(&plain).is_ok());
}

/// A field that is itself foreign is named once (it read "field `tool_calls` is
/// `tool_calls`" before).
#[test]
fn a_foreign_field_is_named_once() {
    let messages = json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "ok", "tool_calls": []}
    ]);
    let err = anthropic::to_messages(&messages).unwrap_err();
    assert_eq!(
        err.to_string(),
        "message 1: field `tool_calls`, which belongs to the OpenAI format"
    );
}
