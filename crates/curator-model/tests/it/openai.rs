//! The OpenAI format: what it reads, and that it writes back exactly that.

use curator_model::formats::openai;
use curator_model::{Content, Format, ImageSource, Part, Role};
use serde_json::json;

#[track_caller]
fn round_trip(wire: &serde_json::Value) -> Vec<curator_model::Message> {
    let messages = openai::to_messages(wire).unwrap();
    assert_eq!(&openai::from_messages(&messages).unwrap(), wire);
    messages
}

#[test]
fn null_absent_and_empty_content_stay_apart() {
    let m = round_trip(&json!([
        {"role": "assistant", "content": null, "tool_calls": [{"id": "1", "type": "function", "function": {"name": "a", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "1", "content": ""},
        {"role": "assistant", "tool_calls": [{"id": "2", "type": "function", "function": {"name": "a", "arguments": "{}"}}]},
    ]));
    assert!(m[0].content().is_none() && !m[0].content_omitted());
    assert_eq!(m[1].content(), Some(&Content::Text(String::new())));
    assert!(m[2].content_omitted());
}

#[test]
fn content_parts_and_unknown_fields_survive() {
    let m = round_trip(&json!([
        {"role": "user", "name": "alice", "content": [
            {"type": "text", "text": "look", "cache_control": {"type": "ephemeral"}},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA", "detail": "high"}},
            {"type": "input_audio", "input_audio": {"data": "UklGR", "format": "wav"}}
        ]},
        {"role": "assistant", "content": "ok", "refusal": null, "annotations": []},
    ]));
    let Some(Content::Parts(parts)) = m[0].content() else { panic!("parts expected") };
    assert_eq!(parts[0].as_text(), Some("look"));
    assert!(
        matches!(&parts[1], Part::Image { source: ImageSource::Base64 { media_type, .. }, .. } if media_type == "image/png")
    );
    assert!(matches!(&parts[2], Part::Raw { format: Format::OpenAi, .. }));
    assert_eq!(m[0].name(), Some("alice"));
    assert_eq!(m[1].extra().map(|e| e.fields().len()), Some(2));
}

#[test]
fn tool_calls_keep_their_exact_argument_text_and_extra_fields() {
    let args = "{ \"path\" :\n  \"a.txt\" }";
    let m = round_trip(&json!([
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": args}, "index": 0}
        ]},
        {"role": "tool", "tool_call_id": "c1", "name": "read", "content": [{"type": "text", "text": "hello"}]},
    ]));
    assert_eq!(m[0].tool_calls()[0].arguments(), args);
    assert_eq!(m[1].role(), Role::Tool);
    assert_eq!(m[1].text(), "hello");
}

#[test]
fn null_and_empty_tool_calls_round_trip() {
    round_trip(&json!([
        {"role": "assistant", "content": "a", "tool_calls": null},
        {"role": "assistant", "content": "b", "tool_calls": []},
    ]));
}
