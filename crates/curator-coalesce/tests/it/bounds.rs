//! The reproductions of issue 31: what the USER message must never do, whatever the input.

use curator_coalesce::{
    CoalescedConversation, DataEntry, Definition, Error, RecordedToolCall, Run,
    SingleUserCoalesced, TurnDraft, Turns, Value,
};
use curator_model::{Message, PromptRef};
use curator_session::{Conversation, MemoryStore};

fn user_message(run: &Run, turns: &Turns) -> String {
    SingleUserCoalesced::default().user_message(run, turns)
}

fn one_turn(draft: TurnDraft) -> Turns {
    let mut turns = Turns::new();
    turns.push(draft);
    turns
}

/// `depth` lists, each the only item of the one around it, built without recursion.
fn nested(depth: usize) -> Value {
    let mut value = Value::from("bottom");
    for _ in 0..depth {
        value = Value::list([value]);
    }
    value
}

/// Lists `depth` deep, each holding `width` copies of the level below.
fn deep_and_wide(depth: usize, width: usize) -> Value {
    let mut value = Value::from(1);
    for _ in 0..depth {
        value = Value::list(vec![value; width]);
    }
    value
}

#[test]
fn lists_ten_deep_and_four_wide_give_a_short_sample() {
    let run = Run::new("s", "Look").with_data(vec![DataEntry::new("grid", deep_and_wide(10, 4))]);
    let text = user_message(&run, &Turns::new());
    let line = text.lines().find(|line| line.starts_with("data/grid")).unwrap_or_default();
    assert!(line.len() <= 500, "{} bytes: {line}", line.len());
    assert!(line.contains("... 4 more]"), "the collapsed levels say how much they hold: {line}");
    assert!(line.contains("] ... 1 more]"), "the cut items are counted: {line}");
}

#[test]
fn a_value_100_000_levels_deep_renders_without_overflowing_the_stack() {
    let deep = nested(100_000);
    let run = Run::new("s", "Dig").with_data(vec![DataEntry::new("deep", deep.clone())]);
    let mut draft = TurnDraft::returned("(def d data/deep)", deep.clone());
    draft.memory = vec![Definition { name: "d".to_owned(), value: deep.clone() }];
    draft.tool_calls = vec![RecordedToolCall::new("dig", deep.clone(), deep)];
    let mut turns = one_turn(draft.clone());
    // The second turn defines the same name again: the prelude compares the two values.
    turns.push(draft);
    let text = user_message(&run, &turns);
    assert!(
        text.contains("data/deep                        ; list[1], sample: [[[[... 1 more]]]]")
    );
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
fn json_100_000_levels_deep_converts_without_overflowing_the_stack() {
    let mut json = serde_json::json!("bottom");
    for _ in 0..100_000 {
        json = serde_json::Value::Array(vec![json]);
    }
    let value = Value::from(json);
    assert_eq!(value.type_label(), "list[1]");
    let run = Run::new("s", "Dig").with_data(vec![DataEntry::new("deep", value)]);
    assert!(user_message(&run, &Turns::new()).contains("sample: [[[[... 1 more]]]]"));
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
