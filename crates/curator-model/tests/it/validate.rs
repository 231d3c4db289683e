//! The validators' rules, one by one.

use curator_model::validate::{self, Violation, ViolationKind};
use curator_model::{Content, Message, Role, ToolCall};

fn call(id: &str) -> ToolCall {
    ToolCall::new(id, "t", "{}")
}

fn calls(ids: &[&str]) -> Message {
    Message::assistant_with_calls(None, ids.iter().map(|id| call(id)).collect())
}

#[track_caller]
fn openai_fails(messages: &[Message], index: usize, kind: ViolationKind) {
    assert_eq!(validate::openai(messages), Err(Violation { index, kind }));
}

#[track_caller]
fn anthropic_fails(messages: &[Message], index: usize, kind: ViolationKind) {
    assert_eq!(validate::anthropic(messages), Err(Violation { index, kind }));
}

fn unanswered(id: &str, call_index: usize) -> ViolationKind {
    ViolationKind::UnansweredToolCall { call_id: id.into(), call_index }
}

#[test]
fn empty_lists() {
    openai_fails(&[], 0, ViolationKind::EmptyConversation);
    anthropic_fails(&[], 0, ViolationKind::EmptyConversation);
    anthropic_fails(&[Message::system("s")], 1, ViolationKind::EmptyConversation);
    assert!(validate::openai(&[Message::system("s")]).is_ok());
}

#[test]
fn pending_calls_at_the_end_are_not_violations() {
    let m = [Message::user("u"), calls(&["a", "b"]), Message::tool_result("a", "x")];
    assert!(validate::openai(&m).is_ok());
    assert!(validate::anthropic(&m).is_ok());
}

#[test]
fn a_non_tool_message_while_calls_are_open() {
    let m = [
        Message::user("u"),
        calls(&["a", "b"]),
        Message::tool_result("b", "x"),
        Message::user("?"),
    ];
    openai_fails(&m, 3, unanswered("a", 1));
    anthropic_fails(&m, 3, unanswered("a", 1));
}

#[test]
fn a_result_that_answers_nothing() {
    let m = [
        Message::user("u"),
        calls(&["a"]),
        Message::tool_result("a", "x"),
        Message::tool_result("a", "again"),
    ];
    let kind = ViolationKind::ToolResultWithoutCall { call_id: "a".into() };
    openai_fails(&m, 3, kind.clone());
    anthropic_fails(&m, 3, kind);
}

#[test]
fn reused_ids_pair_with_the_most_recent_open_call() {
    let m = [
        Message::user("u"),
        calls(&["a"]),
        Message::tool_result("a", "1"),
        calls(&["a"]),
        Message::tool_result("a", "2"),
        Message::assistant("done"),
    ];
    assert!(validate::openai(&m).is_ok());
    assert!(validate::anthropic(&m).is_ok());
}

#[test]
fn duplicate_open_ids() {
    let m = [Message::user("u"), calls(&["a", "a"])];
    openai_fails(&m, 1, ViolationKind::DuplicateOpenCallId { call_id: "a".into() });
    // Anthropic merges consecutive assistant messages, so their calls are open together.
    let m = [Message::user("u"), calls(&["a"]), calls(&["a"])];
    anthropic_fails(&m, 2, ViolationKind::DuplicateOpenCallId { call_id: "a".into() });
    // ...while for OpenAI the second assistant message arrives with `a` unanswered.
    openai_fails(&m, 2, unanswered("a", 1));
}

#[test]
fn anthropic_merges_consecutive_assistant_messages() {
    let m = [
        Message::user("u"),
        calls(&["a"]),
        Message::assistant("and"),
        Message::tool_result("a", "x"),
    ];
    assert!(validate::anthropic(&m).is_ok());
    openai_fails(&m, 2, unanswered("a", 1));
}

#[test]
fn anthropic_first_message_and_system_position() {
    anthropic_fails(
        &[Message::assistant("hi")],
        0,
        ViolationKind::FirstMessageNotUser { role: Role::Assistant },
    );
    anthropic_fails(
        &[Message::tool_result("a", "x")],
        0,
        ViolationKind::ToolResultWithoutCall { call_id: "a".into() },
    );
    let m = [Message::system("a"), Message::user("b"), Message::system("c")];
    anthropic_fails(&m, 2, ViolationKind::SystemInsideConversation);
    assert!(validate::openai(&m).is_ok());
}

#[test]
fn missing_content() {
    let no_content = Message::user("").with_content(None);
    openai_fails(
        std::slice::from_ref(&no_content),
        0,
        ViolationKind::MissingContent { role: Role::User },
    );
    openai_fails(
        &[Message::user("u"), Message::assistant("").with_content(None)],
        1,
        ViolationKind::MissingContent { role: Role::Assistant },
    );
    // Anthropic refuses a turn with no blocks, but allows an empty final assistant turn.
    anthropic_fails(
        &[Message::user(""), Message::assistant("a")],
        0,
        ViolationKind::MissingContent { role: Role::User },
    );
    anthropic_fails(
        &[Message::user("u"), Message::assistant(Content::Parts(vec![])), Message::user("v")],
        1,
        ViolationKind::MissingContent { role: Role::Assistant },
    );
    assert!(validate::anthropic(&[Message::user("u"), Message::assistant("")]).is_ok());
    assert!(validate::anthropic(&[Message::user(""), no_content, Message::user("x")]).is_ok());
}

#[test]
fn violations_display_index_and_rule() {
    let v = validate::openai(&[Message::user("u"), calls(&["a"]), Message::user("?")]).unwrap_err();
    assert_eq!(
        v.to_string(),
        "message 2: tool call `a` of message 1 is unanswered when this message arrives"
    );
}
