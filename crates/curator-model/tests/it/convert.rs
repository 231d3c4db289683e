//! Conversion between the formats yields valid requests (issue 29), and OpenAI to Anthropic
//! to OpenAI is the identity wherever the formats overlap.

use curator_model::formats::{anthropic, openai};
use curator_model::validate;
use curator_testkit::corpus;
use serde_json::{Value, json};

fn anthropic_to_openai(request: &Value) -> Value {
    let messages = anthropic::to_messages(request).unwrap();
    let wire = openai::convert(&messages).unwrap();
    validate::openai(&openai::to_messages(&wire).unwrap()).unwrap();
    wire
}

#[test]
fn split_parallel_tool_use_becomes_one_assistant_message() {
    let wire = anthropic_to_openai(&json!({"messages": [
        {"role": "user", "content": "both"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "a", "input": {}}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "b", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"},
            {"type": "tool_result", "tool_use_id": "t2", "content": "y"}]}
    ]}));
    assert_eq!(wire.as_array().unwrap().len(), 4, "{wire:#}");
    assert_eq!(wire[1]["tool_calls"].as_array().unwrap().len(), 2);
}

#[test]
fn an_empty_tool_result_gets_empty_text_content() {
    let wire = anthropic_to_openai(&json!({"messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "a", "input": {}},
            {"type": "tool_use", "id": "t2", "name": "b", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"},
            {"type": "tool_result", "tool_use_id": "t2", "content": []}]}
    ]}));
    assert_eq!(wire[2], json!({"role": "tool", "tool_call_id": "t1", "content": ""}));
    assert_eq!(wire[3], json!({"role": "tool", "tool_call_id": "t2", "content": ""}));
}

#[test]
fn an_image_in_a_tool_result_moves_to_a_user_message_after_the_results() {
    let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}});
    let wire = anthropic_to_openai(&json!({"messages": [
        {"role": "user", "content": "shoot"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "shot", "input": {}},
            {"type": "tool_use", "id": "t2", "name": "ls", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "taken"}, image]},
            {"type": "tool_result", "tool_use_id": "t2", "content": "a.txt"}]}
    ]}));
    assert_eq!(wire[2], json!({"role": "tool", "tool_call_id": "t1", "content": "taken"}));
    assert_eq!(wire[3]["role"], "tool");
    assert_eq!(wire[4]["role"], "user");
    assert_eq!(
        wire[4]["content"][0],
        json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}})
    );
}

#[test]
fn openai_to_anthropic_writes_no_blank_text_blocks() {
    let messages = openai::to_messages(&json!([
        {"role": "user", "content": [{"type": "text", "text": ""},
            {"type": "image_url", "image_url": {"url": "https://x/a.png"}}]},
        {"role": "assistant", "content": " ", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"}
    ]))
    .unwrap();
    let request = anthropic::convert(&messages).unwrap();
    let back = anthropic::to_messages(&request.to_value()).unwrap();
    validate::anthropic(&back).unwrap();
    assert_eq!(request.messages[0]["content"].as_array().unwrap().len(), 1, "{request:?}");
    assert_eq!(request.messages[1]["content"].as_array().unwrap().len(), 1, "{request:?}");
}

/// JSON text without the whitespace between tokens (what Anthropic's `input` object keeps).
fn compact(text: &str) -> String {
    let (mut out, mut in_string, mut escaped) = (String::new(), false, false);
    for c in text.chars() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            out.push(c);
        } else if !c.is_ascii_whitespace() {
            in_string = c == '"';
            out.push(c);
        }
    }
    out
}

/// What OpenAI has that Anthropic cannot carry: the `name` of a tool message, and the
/// whitespace between the tokens of arguments (Anthropic's `input` is an object), and
/// empty text beside tool calls.
fn overlap(messages: &Value) -> Value {
    let mut messages = messages.clone();
    for m in messages.as_array_mut().unwrap() {
        if m["role"] == "tool" {
            m.as_object_mut().unwrap().remove("name");
        }
        // Empty text beside tool calls is no block in Anthropic: it comes back `null`.
        if m["role"] == "assistant" && m["content"] == "" && m.get("tool_calls").is_some() {
            m["content"] = Value::Null;
        }
        for call in m.get_mut("tool_calls").and_then(Value::as_array_mut).into_iter().flatten() {
            let arguments = &mut call["function"]["arguments"];
            *arguments = Value::String(compact(arguments.as_str().unwrap()));
        }
    }
    messages
}

#[test]
fn corpus_openai_to_anthropic_to_openai_is_the_identity_where_formats_overlap() {
    let Some(conversations) = corpus::load() else { return };
    for c in &conversations {
        let here = format!("{} {}", c.file, c.id);
        let text = serde_json::to_string(&c.messages).unwrap();
        let messages = openai::parse(&text).unwrap();
        let json = anthropic::to_json(&anthropic::adapt(&messages)).unwrap();
        let back = openai::convert(&anthropic::parse(&json).unwrap()).unwrap();
        let (back, original) = (overlap(&back), overlap(&c.messages));
        let (back, original) = (back.as_array().unwrap(), original.as_array().unwrap());
        if let Some(i) =
            (0..back.len().max(original.len())).find(|&i| back.get(i) != original.get(i))
        {
            panic!("{here}: message {i} differs:\n{:?}\n{:?}", back.get(i), original.get(i));
        }
    }
}

#[test]
fn corpus_as_anthropic_passes_through_anthropic_exactly() {
    let Some(conversations) = corpus::load() else { return };
    for c in &conversations {
        let here = format!("{} {}", c.file, c.id);
        let messages = openai::to_messages(&c.messages).unwrap();
        let text = anthropic::to_json(&anthropic::adapt(&messages)).unwrap();
        let again = anthropic::to_json(&anthropic::parse(&text).unwrap()).unwrap();
        // Exact up to the whitespace between tokens (arguments written with spaces are
        // read back compact), numbers included.
        let (a, b): (Value, Value) =
            (serde_json::from_str(&again).unwrap(), serde_json::from_str(&text).unwrap());
        if let Some(i) = (0..a["messages"].as_array().unwrap().len())
            .find(|&i| a["messages"][i] != b["messages"][i])
        {
            panic!("{here}: message {i}:\n{}\n{}", a["messages"][i], b["messages"][i]);
        }
        let (x, y) = (compact(&again), compact(&text));
        if let Some(at) = x.chars().zip(y.chars()).position(|(p, q)| p != q) {
            let near =
                |s: &str| s.chars().skip(at.saturating_sub(80)).take(160).collect::<String>();
            panic!("{here}: at {at}:\n{}\n{}", near(&x), near(&y));
        }
        assert_eq!(x.len(), y.len(), "{here}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    #[test]
    fn generated_openai_to_anthropic_to_openai_is_the_identity_where_formats_overlap(
        messages in curator_testkit::arb::history(),
    ) {
        let wire = openai::from_messages(&messages).unwrap();
        let read = openai::to_messages(&wire).unwrap();
        let json = anthropic::to_json(&anthropic::adapt(&read)).unwrap();
        let back = openai::convert(&anthropic::parse(&json).unwrap()).unwrap();
        proptest::prop_assert_eq!(overlap(&back), overlap(&wire));
    }
}
