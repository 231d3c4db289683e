//! Views of Responses items keep each reasoning item with the item it produced
//! (`View::responses_entries`).

use curator_model::formats::responses;
use curator_strategies::{CurationContext, History, HistoryManagerExt, SlidingWindow, View};
use serde_json::{Value, json};

fn items(items: &[Value]) -> History<'static> {
    History::from(responses::to_messages(items).unwrap())
}

fn positions(view: &View<'_>) -> Vec<Option<usize>> {
    view.responses_entries().iter().map(|e| e.pos).collect()
}

#[test]
fn a_reasoning_item_left_out_before_a_kept_message_is_put_back() {
    let history = items(&[
        json!({"type": "message", "role": "user", "content": "hi"}),
        json!({"type": "reasoning", "id": "rs_1", "summary": []}),
        json!({"type": "reasoning", "id": "rs_2", "summary": []}),
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hello"}]}),
    ]);
    let view = SlidingWindow::new(1).curate_history(&history, &CurationContext::default()).unwrap();
    assert_eq!(positions(&view), [Some(0), Some(1), Some(2), Some(3)]);
    // Sent as items, in the history's order.
    let sent: Vec<_> = view.responses_entries().into_iter().map(|e| e.message).collect();
    let sent = responses::from_messages(&sent).unwrap();
    assert_eq!(sent[1]["id"], "rs_1");
    assert_eq!(sent[2]["id"], "rs_2");
}

#[test]
fn a_reasoning_item_whose_calls_are_still_pending_is_not_sent_alone() {
    // The reasoning item and its call are one message; the call has no output yet, so the
    // view sends the message without the call, and the reasoning item has nothing after it.
    let history = items(&[
        json!({"type": "message", "role": "user", "content": "list the files"}),
        json!({"type": "reasoning", "id": "rs_1", "summary": []}),
        json!({"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"}),
        json!({"type": "message", "role": "user", "content": "never mind"}),
    ]);
    assert_eq!(history.len(), 3, "the call joins its reasoning item");
    let view = View::full(&history).repaired();
    assert_eq!(positions(&view), [Some(0), Some(2)]);
}

#[test]
fn other_views_are_unchanged() {
    let history = items(&[
        json!({"type": "message", "role": "user", "content": "hi"}),
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hello"}]}),
    ]);
    let view = View::full(&history);
    assert_eq!(positions(&view), [Some(0), Some(1)]);
}

/// The kinds of calls the caller answers with an item of its own, and their answers.
fn answered_calls() -> Vec<(Value, Value)> {
    vec![
        (
            json!({"type": "custom_tool_call", "call_id": "ct_1", "name": "sql", "input": "SELECT 1"}),
            json!({"type": "custom_tool_call_output", "call_id": "ct_1", "output": "1"}),
        ),
        (
            json!({"type": "computer_call", "id": "cu_a", "call_id": "cu_1", "action": {"type": "screenshot"}, "pending_safety_checks": [], "status": "completed"}),
            json!({"type": "computer_call_output", "call_id": "cu_1", "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,AAAA"}}),
        ),
        (
            json!({"type": "local_shell_call", "id": "lsc_1", "call_id": "ls_1", "status": "completed", "action": {"type": "exec", "command": ["ls"], "env": {}}}),
            json!({"type": "local_shell_call_output", "id": "ls_1", "output": "a.txt"}),
        ),
        (
            json!({"type": "mcp_approval_request", "id": "mcpr_1", "arguments": "{}", "name": "deploy", "server_label": "ops"}),
            json!({"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": true}),
        ),
    ]
}

#[test]
fn an_answer_whose_call_the_view_left_out_is_sent_with_its_call() {
    for (call, answer) in answered_calls() {
        let history = items(&[
            json!({"type": "message", "role": "user", "content": "go"}),
            call.clone(),
            answer.clone(),
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}),
        ]);
        // A window of two keeps the answer and the reply: the call goes back before them.
        let view =
            SlidingWindow::new(2).curate_history(&history, &CurationContext::default()).unwrap();
        assert_eq!(positions(&view), [Some(0), Some(1), Some(2), Some(3)], "{call}");
        let sent: Vec<_> = view.responses_entries().into_iter().map(|e| e.message).collect();
        let sent = responses::from_messages(&sent).unwrap();
        assert_eq!((&sent[1], &sent[2]), (&call, &answer));
    }
}

#[test]
fn a_call_whose_answer_the_view_left_out_is_sent_with_its_answer() {
    for (call, answer) in answered_calls() {
        let history = items(&[
            json!({"type": "message", "role": "user", "content": "go"}),
            call.clone(),
            json!({"type": "message", "role": "user", "content": "note"}),
            answer.clone(),
        ]);
        // Keep the task and the call only (a view a strategy could make).
        let view = View::full(&history).retain(|e| e.pos.is_some_and(|pos| pos <= 1));
        let sent: Vec<_> = view.responses_entries().into_iter().map(|e| e.message).collect();
        let sent = responses::from_messages(&sent).unwrap();
        assert_eq!(sent.len(), 3, "{call}");
        assert_eq!((&sent[1], &sent[2]), (&call, &answer));
    }
}
