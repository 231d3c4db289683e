//! The reproductions of issue 31: what the USER message must never do, whatever the input.

use curator_coalesce::{CoalescedConversation, Error, Run, SingleUserCoalesced, Value};
use curator_model::{Message, PromptRef};
use curator_session::{Conversation, MemoryStore};

/// `depth` lists, each the only item of the one around it, built without recursion.
fn nested(depth: usize) -> Value {
    let mut value = Value::from("bottom");
    for _ in 0..depth {
        value = Value::list([value]);
    }
    value
}

#[test]
fn a_value_too_deep_to_save_is_refused_by_the_conversation_not_a_crash() {
    let run = Run::new("You write PTC-Lisp.", "Dig");
    let conversation = Conversation::open(
        MemoryStore::new(),
        "job-1",
        PromptRef::new("demo", "lisp"),
        Message::system(run.system.as_str()),
    )
    .unwrap();
    let mut agent =
        CoalescedConversation::open(conversation, run, SingleUserCoalesced::default()).unwrap();
    let mut draft = agent.record_reply(Message::assistant("(dig)")).unwrap();
    draft.result = Some(curator_coalesce::TurnResult::Returned(nested(100_000)));
    let error = agent.record_execution(draft).unwrap_err();
    assert!(matches!(error, Error::Checkpoint { action: "written", .. }), "{error:?}");
    let source = std::error::Error::source(&error).map(ToString::to_string).unwrap_or_default();
    assert_eq!(source, "a value nested deeper than 128 levels cannot be serialized");
    assert!(agent.turns().is_empty(), "nothing recorded");
}

#[test]
fn json_text_deeper_than_the_parser_allows_is_an_error_not_a_crash() {
    let text = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let error = serde_json::from_str::<serde_json::Value>(&text).unwrap_err();
    assert!(error.to_string().contains("recursion limit exceeded"), "{error}");
    // Up to the parser's limit (128 levels), text converts like any JSON.
    let text = format!("{}{}", "[".repeat(100), "]".repeat(100));
    let value = Value::from(serde_json::from_str::<serde_json::Value>(&text).unwrap());
    assert_eq!(value.type_label(), "list[1]");
}
