//! The one pairing rule: the validator, the derived call status, the history index and
//! coherence repair agree on every list, however malformed.

use curator_model::pairing::{Link, pairing};
use curator_model::validate::{self, ViolationKind};
use curator_model::{Message, Role, ToolCall, ToolCallStatus, tool_call_states};
use curator_strategies::{History, View};
use proptest::prelude::*;

/// Lists built from few ids, so that ids are reused, results interleave, calls are closed
/// by later messages, assistant messages follow each other and results come without calls.
fn messy_list() -> impl Strategy<Value = Vec<Message>> {
    let id = prop_oneof![Just("a"), Just("b"), Just("c")];
    let message = prop_oneof![
        Just(Message::user("u")),
        Just(Message::system("s")),
        Just(Message::assistant("text")),
        prop::collection::vec(id.clone(), 1..4).prop_map(|ids| Message::assistant_with_calls(
            None,
            ids.into_iter().map(|id| ToolCall::new(id, "t", "{}")).collect()
        )),
        (id.clone(), any::<bool>()).prop_map(|(id, failed)| if failed {
            Message::tool_error(id, "no")
        } else {
            Message::tool_result(id, "ok")
        }),
        Just(Message::tool_result("z", "for no call")),
    ];
    prop::collection::vec(message, 0..24)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn every_consumer_pairs_results_with_calls_the_same_way(messages in messy_list()) {
        // The rule itself: which call each tool message answers.
        let answers: Vec<Option<(usize, usize)>> = pairing(&messages)
            .map(|step| match step.link {
                Link::Answers(call) => Some((call.message, call.call)),
                _ => None,
            })
            .collect();

        // Derived status: a call's result is the tool message the rule pairs with it.
        let states = tool_call_states(&messages);
        for state in &states {
            let call = (state.message_index, state.call.id());
            match state.result_index {
                Some(result) => {
                    let (m, c) = answers[result].expect("a result the status knows is paired");
                    prop_assert_eq!((m, messages[m].tool_calls()[c].id()), call);
                    prop_assert!(matches!(state.status, ToolCallStatus::Completed | ToolCallStatus::Failed));
                }
                None => prop_assert!(matches!(state.status, ToolCallStatus::Pending | ToolCallStatus::Unanswered)),
            }
        }
        let paired_by_status = states.iter().filter(|s| s.result_index.is_some()).count();
        prop_assert_eq!(paired_by_status, answers.iter().flatten().count());

        // History index: a tool message's unit head is the message whose call it answers.
        let history = History::from(messages.as_slice());
        for (index, message) in messages.iter().enumerate() {
            if message.role() == Role::Tool {
                prop_assert_eq!(history.unit_head(index), answers[index].map(|(m, _)| m));
            }
        }

        // Coherence keeps exactly the paired results, and each kept call is answered.
        let view = View::full(&history).repaired();
        let kept_results: Vec<usize> = view
            .iter()
            .filter(|e| e.message.role() == Role::Tool)
            .filter_map(|e| e.pos)
            .collect();
        let paired: Vec<usize> = (0..messages.len()).filter(|i| answers[*i].is_some()).collect();
        prop_assert_eq!(kept_results, paired);
        for entry in view.iter().filter(|e| e.message.has_tool_calls()) {
            let pos = entry.pos.expect("calls come from the history");
            let answered = states
                .iter()
                .filter(|s| s.message_index == pos && s.result_index.is_some())
                .count();
            prop_assert_eq!(entry.message.tool_calls().len(), answered);
        }

        // The validators: a result the rule leaves unpaired is the first pairing violation
        // they may report, and a repaired view leaves no result or call unpaired for
        // Anthropic. (Two open calls of one id are paired consistently but not renamed:
        // the validators still report them, and the session driver refuses to record them.)
        if let Some(orphan) = answers
            .iter()
            .enumerate()
            .position(|(i, a)| messages[i].role() == Role::Tool && a.is_none())
        {
            for result in [validate::openai(&messages), validate::anthropic(&messages)] {
                let violation = result.expect_err("an orphan result is a violation");
                prop_assert!(violation.index <= orphan, "{violation} after orphan {orphan}");
            }
        }
        let repaired = view.to_messages();
        if let Err(violation) = validate::anthropic(&repaired) {
            prop_assert!(
                !matches!(
                    violation.kind,
                    ViolationKind::ToolResultWithoutCall { .. }
                        | ViolationKind::UnansweredToolCall { .. }
                ),
                "{violation} in {repaired:?}"
            );
        }
    }
}

#[test]
fn a_non_tool_message_between_a_call_and_its_result_closes_the_call_everywhere() {
    let messages = vec![
        Message::assistant_with_calls(None, vec![ToolCall::new("a", "ls", "{}")]),
        Message::user("are you done?"),
        Message::tool_result("a", "late"),
    ];
    assert_eq!(tool_call_states(&messages)[0].status, ToolCallStatus::Unanswered);
    assert_eq!(History::from(messages.as_slice()).unit_head(2), None);
    let v = validate::openai(&messages).unwrap_err();
    assert_eq!(v.index, 1);
    assert!(matches!(v.kind, ViolationKind::UnansweredToolCall { .. }));
    let history = History::from(messages.as_slice());
    assert_eq!(View::full(&history).repaired().to_messages(), [Message::user("are you done?")]);
}

#[test]
fn parallel_calls_split_over_two_assistant_messages_stay_paired() {
    // Anthropic merges consecutive assistant messages into one turn, so this is a valid
    // Anthropic history; coherence keeps it whole (it used to drop the first pair).
    let messages = vec![
        Message::user("go"),
        Message::assistant_with_calls(None, vec![ToolCall::new("a", "ls", "{}")]),
        Message::assistant_with_calls(None, vec![ToolCall::new("b", "cat", "{}")]),
        Message::tool_result("a", "x"),
        Message::tool_result("b", "y"),
    ];
    validate::anthropic(&messages).unwrap();
    let history = History::from(messages.as_slice());
    assert_eq!(View::full(&history).repaired().to_messages(), messages);
    assert_eq!((history.unit_head(3), history.unit_head(4)), (Some(1), Some(2)));
    // OpenAI sends no such thing: its validator reports the split.
    assert!(matches!(
        validate::openai(&messages).unwrap_err().kind,
        ViolationKind::UnansweredToolCall { call_index: 1, .. }
    ));
}
