//! `Entry::write_json` writes the same bytes as serde, on every shape.

use curator_model::formats::{anthropic, openai};
use curator_model::{Entry, EvaluationId, Message, PromptRef};
use curator_testkit::arb;
use proptest::prelude::*;
use serde_json::json;

fn assert_same(message: Message, prompt: bool) {
    let mut builder = Entry::builder(EvaluationId::new(), message).sequence(3).turn(2);
    if prompt {
        builder = builder.prompt(PromptRef::new("n\"s", "k\u{1}é"));
    }
    let entry = builder.build().unwrap();
    let mut ours = String::new();
    entry.write_json(&mut ours).unwrap();
    assert_eq!(ours, serde_json::to_string(&entry).unwrap());
    assert_eq!(serde_json::from_str::<Entry>(&ours).unwrap(), entry);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn the_fast_writer_writes_what_serde_writes(
        messages in arb::history(),
        marks in prop::collection::vec(any::<bool>(), 1..16),
        prompt in any::<bool>(),
    ) {
        for (i, message) in messages.into_iter().enumerate() {
            assert_same(message.with_starts_turn(marks[i % marks.len()]), prompt);
        }
    }
}

#[test]
fn fields_read_from_providers_are_written_as_serde_writes_them() {
    // No content field at all, a participant's name, provider fields on a call.
    let chat = openai::parse(
        r#"[{"role": "user", "name": "ann", "content": "hi"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
              "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"}]"#,
    )
    .unwrap();
    // An error mark, and two user messages written apart (the second starts a turn).
    let claude = anthropic::to_messages(&json!({"messages": [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "no", "is_error": true}]},
        {"role": "user", "content": "again"}
    ]}))
    .unwrap();
    assert!(chat[1].content_omitted());
    assert!(claude.iter().any(Message::starts_turn), "{claude:?}");
    for message in chat.into_iter().chain(claude) {
        assert_same(message, true);
    }
}
