//! Properties over arbitrary valid message lists.

use curator_model::formats::{anthropic, openai};
use curator_model::validate::{self, Violation, ViolationKind};
use curator_model::{Message, Role, ToolCall};
use curator_testkit::{arb, projection};
use proptest::prelude::*;

/// Index of the first user message (the task); generated histories always have one.
fn task_index(messages: &[Message]) -> usize {
    messages.iter().position(|m| m.role() == Role::User).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn openai_round_trip(messages in arb::history()) {
        let wire = openai::from_messages(&messages).unwrap();
        let back = openai::to_messages(&wire).unwrap();
        // OpenAI has no error mark on tool results; everything else comes back identical.
        for (a, b) in messages.iter().zip(&back) {
            let mut pa = projection::project(a);
            pa.is_error = false;
            prop_assert_eq!(pa, projection::project(b));
            prop_assert_eq!(a.name(), b.name());
            prop_assert_eq!(a.content(), b.content());
            prop_assert_eq!(a.tool_calls(), b.tool_calls());
        }
        prop_assert_eq!(messages.len(), back.len());
        prop_assert_eq!(openai::from_messages(&back).unwrap(), wire);
    }

    #[test]
    fn anthropic_round_trip(messages in arb::history()) {
        let request = anthropic::from_messages(&messages).unwrap().to_value();
        let back = anthropic::to_messages(&request).unwrap();
        prop_assert_eq!(projection::project_merged(&back), projection::project_merged(&messages));
        // Once in Anthropic shape, the JSON is a fixed point.
        prop_assert_eq!(anthropic::from_messages(&back).unwrap().to_value(), request);
    }

    #[test]
    fn neutral_serde_round_trip(messages in arb::history()) {
        let json = serde_json::to_string(&messages).unwrap();
        let back: Vec<Message> = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(back, messages);
    }

    #[test]
    fn validators_accept_generated_lists(messages in arb::history()) {
        prop_assert_eq!(validate::openai(&messages), Ok(()));
        prop_assert_eq!(validate::anthropic(&messages), Ok(()));
    }

    #[test]
    fn orphan_result_is_reported_where_inserted(messages in arb::history()) {
        let at = task_index(&messages) + 1;
        let mut m = messages;
        m.insert(at, Message::tool_result("orphan", "x"));
        let expected = Violation { index: at, kind: ViolationKind::ToolResultWithoutCall { call_id: "orphan".into() } };
        prop_assert_eq!(validate::openai(&m), Err(expected.clone()));
        prop_assert_eq!(validate::anthropic(&m), Err(expected));
    }

    #[test]
    fn interrupted_calls_are_reported_at_the_interruption(messages in arb::history()) {
        let Some(at) = messages.iter().position(Message::has_tool_calls) else { return Ok(()) };
        let first_id = messages[at].tool_calls()[0].id().to_owned();
        let mut m = messages;
        m.insert(at + 1, Message::user("interrupting"));
        let expected = Violation { index: at + 1, kind: ViolationKind::UnansweredToolCall { call_id: first_id, call_index: at } };
        prop_assert_eq!(validate::openai(&m), Err(expected.clone()));
        prop_assert_eq!(validate::anthropic(&m), Err(expected));
    }

    #[test]
    fn duplicate_open_ids_are_reported_at_the_call(messages in arb::history()) {
        let Some(at) = messages.iter().position(Message::has_tool_calls) else { return Ok(()) };
        let mut m = messages;
        let mut calls: Vec<ToolCall> = m[at].tool_calls().to_vec();
        calls.push(calls[0].clone());
        let id = calls[0].id().to_owned();
        m[at] = Message::assistant_with_calls(m[at].content().cloned(), calls);
        let expected = Violation { index: at, kind: ViolationKind::DuplicateOpenCallId { call_id: id } };
        prop_assert_eq!(validate::openai(&m), Err(expected.clone()));
        prop_assert_eq!(validate::anthropic(&m), Err(expected));
    }

    #[test]
    fn anthropic_specific_rules(messages in arb::history()) {
        let task = task_index(&messages);
        let mut m = messages.clone();
        m[task] = Message::assistant("I go first");
        prop_assert_eq!(
            validate::anthropic(&m),
            Err(Violation { index: task, kind: ViolationKind::FirstMessageNotUser { role: Role::Assistant } })
        );
        let mut m = messages;
        m.insert(task + 1, Message::system("late"));
        prop_assert_eq!(validate::anthropic(&m), Err(Violation { index: task + 1, kind: ViolationKind::SystemInsideConversation }));
    }

    #[test]
    fn missing_content_is_reported(messages in arb::history()) {
        let at = task_index(&messages) + 1;
        let mut m = messages;
        m.insert(at, Message::user("").with_content(None));
        prop_assert_eq!(validate::openai(&m), Err(Violation { index: at, kind: ViolationKind::MissingContent { role: Role::User } }));
    }
}
