//! Provider responses read into the assistant's `Message`.

use curator_model::formats::{anthropic, openai};
use curator_model::{Error, Role};
use serde_json::json;

#[test]
fn a_chat_completion_reads_into_the_assistant_message() {
    let response = json!({
        "id": "chatcmpl-9", "object": "chat.completion", "model": "gpt",
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": null,
            "message": {"role": "assistant", "content": "Paris.", "refusal": null, "annotations": []}}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}
    });
    let reply = openai::response_message(&response).unwrap();
    assert_eq!((reply.role(), reply.text().as_ref()), (Role::Assistant, "Paris."));
    // The message's own provider fields survive a trip back to the wire format.
    let wire = openai::message_to_value(0, &reply).unwrap();
    assert_eq!(wire, response["choices"][0]["message"]);
}

#[test]
fn chat_completion_errors_are_typed() {
    let check = |value: serde_json::Value, field: &str| match openai::response_message(&value) {
        Err(
            Error::MissingField { field: f, .. }
            | Error::WrongType { field: f, .. }
            | Error::UnsupportedValue { field: f, .. },
        ) => {
            assert_eq!(f, field);
        }
        other => panic!("expected a typed error at {field}, got {other:?}"),
    };
    check(json!({"object": "chat.completion"}), "choices");
    check(json!({"choices": {}}), "choices");
    check(json!({"choices": []}), "choices[0].message");
    check(json!({"choices": [{"message": "text"}]}), "choices[0].message");
    check(
        json!({"choices": [{"message": {"role": "user", "content": "x"}}]}),
        "choices[0].message.role",
    );
    assert!(matches!(openai::parse_response("{not json"), Err(Error::NotJson { .. })));
}

#[test]
fn a_messages_response_reads_into_the_assistant_message() {
    let response = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {"city": "Rome"}}
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 5}
    });
    let reply = anthropic::response_message(&response).unwrap();
    assert_eq!(reply.role(), Role::Assistant);
    assert_eq!(reply.tool_calls().len(), 2);
    // Written back, the turn holds the same blocks (text before tool use).
    let request = anthropic::from_messages(&[reply]).unwrap();
    assert_eq!(request.messages[0]["content"], response["content"]);
}

#[test]
fn messages_response_errors_are_typed() {
    assert!(matches!(
        anthropic::response_message(&json!({"role": "user", "content": []})),
        Err(Error::UnsupportedValue { field, .. }) if field == "role"
    ));
    assert!(matches!(
        anthropic::response_message(&json!({"type": "error", "error": {"type": "overloaded_error"}})),
        Err(Error::UnsupportedValue { field, .. }) if field == "type"
    ));
    assert!(matches!(
        anthropic::response_message(&json!({"role": "assistant"})),
        Err(Error::MissingField { field, .. }) if field == "content"
    ));
    // A tool result is the user's, never inside the assistant's reply.
    assert!(
        anthropic::response_message(
            &json!({"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "no"}]})
        )
        .is_err()
    );
    assert!(matches!(anthropic::parse_response("]"), Err(Error::NotJson { .. })));
}
