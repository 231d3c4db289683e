//! Passthrough is lossless (issue 29): reading a provider's messages and writing them back
//! in the same format gives the input, consecutive same-role messages included.

use curator_model::formats::anthropic;
use curator_testkit::arb;
use proptest::prelude::*;
use serde_json::{Value, json};

#[track_caller]
fn same(wire: &Value) {
    let messages = anthropic::to_messages(wire).unwrap();
    assert_eq!(&anthropic::from_messages(&messages).unwrap().to_value(), wire);
    let text = wire.to_string();
    let back = anthropic::to_json(&anthropic::parse(&text).unwrap()).unwrap();
    assert_eq!(&serde_json::from_str::<Value>(&back).unwrap(), wire);
}

#[test]
fn consecutive_same_role_messages_stay_apart() {
    same(&json!({"messages": [
        {"role": "user", "content": "first"},
        {"role": "user", "content": [{"type": "text", "text": "second"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "a", "input": {}}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "b", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "y"},
            {"type": "text", "text": "go on"}]},
        {"role": "assistant", "content": "done"},
        {"role": "assistant", "content": "really"}
    ]}));
}

/// Splits each wire message's blocks into runs, each its own message of the same role.
fn split(request: &Value, cuts: &[bool]) -> Value {
    let mut cut = cuts.iter().cycle();
    let mut out = Vec::new();
    for message in request["messages"].as_array().unwrap() {
        let Some(blocks) = message["content"].as_array() else {
            out.push(message.clone());
            continue;
        };
        let mut run: Vec<Value> = Vec::new();
        for block in blocks {
            if !run.is_empty() && *cut.next().unwrap() {
                out.push(json!({"role": message["role"], "content": std::mem::take(&mut run)}));
            }
            run.push(block.clone());
        }
        out.push(json!({"role": message["role"], "content": run}));
    }
    let mut request = request.clone();
    request["messages"] = Value::Array(out);
    request
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn anthropic_passthrough_keeps_every_message(
        messages in arb::history(),
        cuts in proptest::collection::vec(any::<bool>(), 1..8),
    ) {
        let request = split(&anthropic::from_messages(&messages).unwrap().to_value(), &cuts);
        let read = anthropic::to_messages(&request).unwrap();
        prop_assert_eq!(anthropic::from_messages(&read).unwrap().to_value(), request);
    }
}

#[test]
fn message_level_fields_are_kept_or_refused_never_dropped() {
    same(&json!({"messages": [
        {"role": "user", "content": "a", "id": "m1"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "a", "input": {}}], "id": "m2"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}
    ]}));
    let err = anthropic::to_messages(&json!([{"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "a", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}], "id": "m3"}]))
    .unwrap_err();
    assert_eq!(err.to_string(), "message 2: a user message cannot carry field `id`");
}
