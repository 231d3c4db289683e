//! The edge cases every trimming strategy must get right.

use curator_model::{Message, Role, ToolCall, validate};
use curator_strategies::{
    CurationContext, HistoryManager, HistoryManagerExt, SlidingWindow, TokenBudget, TurnLimit,
};

fn call(id: &str) -> ToolCall {
    ToolCall::new(id, "ls", "{}")
}

/// A system message, the task, then `steps` of call + result.
fn agent(steps: usize) -> Vec<Message> {
    let mut m = vec![Message::system("sys"), Message::user("task")];
    for i in 0..steps {
        let id = format!("c{i}");
        m.push(Message::assistant_with_calls(None, vec![call(&id)]));
        m.push(Message::tool_result(id, format!("out {i}")));
    }
    m
}

#[track_caller]
fn check(
    manager: &dyn HistoryManager,
    ctx: &CurationContext<'_>,
    input: &[Message],
    expected: &[usize],
) {
    let view = manager.curate_messages(input, ctx).unwrap();
    let want: Vec<Message> = expected.iter().map(|&i| input[i].clone()).collect();
    assert_eq!(view, want);
}

fn default() -> CurationContext<'static> {
    CurationContext::default()
}

#[test]
fn empty_input_gives_empty_view() {
    for m in
        [&SlidingWindow::new(3) as &dyn HistoryManager, &TurnLimit::new(1), &TokenBudget::new(100)]
    {
        check(m, &default(), &[], &[]);
    }
}

#[test]
fn only_a_system_message() {
    let input = [Message::system("s")];
    for m in
        [&SlidingWindow::new(0) as &dyn HistoryManager, &TurnLimit::new(0), &TokenBudget::new(100)]
    {
        check(m, &default(), &input, &[0]);
    }
}

#[test]
fn window_keeps_the_task_it_would_have_dropped() {
    let input = agent(3);
    check(&SlidingWindow::new(2), &default(), &input, &[0, 1, 6, 7]);
    // Without the task, what is kept would start with an assistant message, which Anthropic
    // refuses: a short user note says that earlier messages were left out.
    let ctx = default().with_preserve_task(false);
    for manager in [&SlidingWindow::new(2) as &dyn HistoryManager, &TurnLimit::new(1)] {
        let view = manager.curate_messages(&input, &ctx).unwrap();
        assert_eq!(view.len(), 4);
        assert_eq!((&view[0], &view[2], &view[3]), (&input[0], &input[6], &input[7]));
        assert_eq!(view[1].role(), Role::User);
        assert!(view[1].text().contains("left out by curator"));
        validate::anthropic(&view).unwrap();
        validate::openai(&view).unwrap();
    }
}

#[test]
fn no_system_message() {
    let input = &agent(3)[1..];
    check(&SlidingWindow::new(2), &default(), input, &[0, 5, 6]);
    check(&TurnLimit::new(2), &default(), input, &[0, 3, 4, 5, 6]);
}

#[test]
fn several_system_messages_are_all_kept() {
    let mut input = agent(3);
    input.insert(1, Message::system("more rules"));
    check(&SlidingWindow::new(2), &default(), &input, &[0, 1, 2, 7, 8]);
    check(&SlidingWindow::new(2), &default().with_preserve_system(false), &input, &[2, 7, 8]);
}

#[test]
fn window_zero_and_window_at_least_the_length() {
    let input = agent(3);
    // The newest unit is never dropped, not even by a window of 0.
    check(&SlidingWindow::new(0), &default(), &input, &[0, 1, 6, 7]);
    check(&SlidingWindow::new(6), &default(), &input, &[0, 1, 2, 3, 4, 5, 6, 7]);
    check(&SlidingWindow::new(100), &default(), &input, &[0, 1, 2, 3, 4, 5, 6, 7]);
    // Nothing needs trimming, so even an unpinned system message stays.
    check(
        &SlidingWindow::new(100),
        &default().with_preserve_system(false),
        &input,
        &[0, 1, 2, 3, 4, 5, 6, 7],
    );
}

#[test]
fn a_unit_longer_than_the_window_is_kept_whole_never_split() {
    let mut input = vec![Message::system("s"), Message::user("task"), Message::assistant("hello")];
    input.push(Message::assistant_with_calls(None, vec![call("a"), call("b"), call("c")]));
    for id in ["a", "b", "c"] {
        input.push(Message::tool_result(id, id));
    }
    check(&SlidingWindow::new(2), &default(), &input, &[0, 1, 3, 4, 5, 6]);
    // An older unit that does not fit is dropped whole.
    check(&SlidingWindow::new(4), &default(), &input, &[0, 1, 3, 4, 5, 6]);
    check(&SlidingWindow::new(5), &default(), &input, &[0, 1, 2, 3, 4, 5, 6]);
}

#[test]
fn orphaned_tool_results_at_the_start_are_dropped() {
    let input = vec![
        Message::tool_result("gone", "orphan"),
        Message::tool_result("gone2", "orphan"),
        Message::user("task"),
        Message::assistant_with_calls(None, vec![call("a")]),
        Message::tool_result("a", "x"),
    ];
    check(&SlidingWindow::new(10), &default(), &input, &[2, 3, 4]);
    check(&TurnLimit::new(5), &default(), &input, &[2, 3, 4]);
    check(&TokenBudget::new(10_000), &default(), &input, &[2, 3, 4]);
}

#[test]
fn half_answered_calls_lose_the_unanswered_call() {
    let input = vec![
        Message::user("task"),
        Message::assistant_with_calls(Some("two calls".into()), vec![call("a"), call("b")]),
        Message::tool_result("a", "x"),
        Message::user("next"),
    ];
    for m in [
        &SlidingWindow::new(10) as &dyn HistoryManager,
        &TurnLimit::new(5),
        &TokenBudget::new(10_000),
    ] {
        let view = m.curate_messages(&input, &default()).unwrap();
        assert_eq!(view.len(), 4);
        assert_eq!(view[1].tool_calls().len(), 1);
        assert_eq!(view[1].tool_calls()[0].id(), "a");
        assert_eq!(view[1].text(), "two calls");
        validate::openai(&view).unwrap();
    }
    // With no content, an assistant message left with no call is dropped.
    let input = vec![
        Message::user("task"),
        Message::assistant_with_calls(None, vec![call("z")]),
        Message::user("next"),
    ];
    check(&SlidingWindow::new(10), &default(), &input, &[0, 2]);
}

#[test]
fn content_none_is_kept_as_none() {
    let input = vec![
        Message::user("task"),
        Message::assistant_with_calls(None, vec![call("a")]),
        Message::tool_result("a", "x"),
    ];
    let view = SlidingWindow::new(5).curate_messages(&input, &default()).unwrap();
    assert!(view[1].content().is_none());
    assert_eq!(view, input);
}

#[test]
fn preserve_last_n_widens_windows_and_turns() {
    let input = agent(4);
    check(&SlidingWindow::new(2), &default().with_preserve_last_n(4), &input, &[0, 1, 6, 7, 8, 9]);
    check(&TurnLimit::new(1), &default().with_preserve_last_n(4), &input, &[0, 1, 6, 7, 8, 9]);
}

#[test]
fn turns_count_round_trips_and_keep_unanswered_user_messages() {
    let input = vec![
        Message::system("s"),
        Message::user("task"),
        Message::assistant("a1"),
        Message::user("u2"),
        Message::assistant_with_calls(None, vec![call("x")]),
        Message::tool_result("x", "r"),
        Message::assistant("a3"),
        Message::user("u4"),
    ];
    check(&TurnLimit::new(0), &default(), &input, &[0, 1, 7]);
    check(&TurnLimit::new(1), &default(), &input, &[0, 1, 6, 7]);
    // The user message u2 belongs to the round-trip that answered it.
    check(&TurnLimit::new(2), &default(), &input, &[0, 1, 3, 4, 5, 6, 7]);
    check(&TurnLimit::new(3), &default(), &input, &[0, 1, 2, 3, 4, 5, 6, 7]);
}

#[test]
fn ids_reused_after_an_answer_pair_with_the_latest_call() {
    let input = vec![
        Message::user("task"),
        Message::assistant_with_calls(None, vec![call("same")]),
        Message::tool_result("same", "first"),
        Message::assistant_with_calls(None, vec![call("same")]),
        Message::tool_result("same", "second"),
    ];
    check(&SlidingWindow::new(2), &default(), &input, &[0, 3, 4]);
    check(&SlidingWindow::new(1), &default(), &input, &[0, 3, 4]);
}

#[test]
fn the_input_is_never_changed() {
    let input = agent(5);
    let before = input.clone();
    let _ = SlidingWindow::new(1)
        .then(TokenBudget::new(40))
        .curate_messages(&input, &default())
        .unwrap();
    assert_eq!(input, before);
}

#[test]
fn a_window_never_empties_a_conversation_with_nothing_pinned() {
    let input =
        vec![Message::user("中"), Message::assistant_with_calls(None, vec![call("call_0_0")])];
    let ctx = default().with_preserve_system(false).with_preserve_task(false);
    let view = SlidingWindow::new(0).curate_messages(&input, &ctx).unwrap();
    assert_eq!(view, vec![input[0].clone()]);
    validate::openai(&view).unwrap();
}

#[test]
fn the_task_is_kept_once_when_the_system_message_is_not_pinned() {
    let input = agent(3);
    let ctx = default().with_preserve_system(false);
    check(&SlidingWindow::new(2), &ctx, &input, &[1, 6, 7]);
    check(&TurnLimit::new(1), &ctx, &input, &[1, 6, 7]);
    check(&TokenBudget::new(40), &ctx, &input, &[1, 6, 7]);
    // A window that reaches back over the task keeps it once, in place, and does not count
    // it (pinned messages are never the window's); the unpinned system message is an
    // ordinary message for the window.
    check(&SlidingWindow::new(7), &ctx, &input, &[0, 1, 2, 3, 4, 5, 6, 7]);
    check(&SlidingWindow::new(6), &ctx, &input, &[1, 2, 3, 4, 5, 6, 7]);
    check(&SlidingWindow::new(5), &ctx, &input, &[1, 4, 5, 6, 7]);
}

#[test]
fn kept_messages_are_borrowed_from_the_history_never_cloned() {
    use curator_strategies::{History, View};

    let input = agent(30);
    let history = History::from(input.as_slice());
    for manager in [
        &SlidingWindow::new(6) as &dyn HistoryManager,
        &TurnLimit::new(3),
        &TokenBudget::new(10_000),
    ] {
        let view = manager.curate(View::full(&history), &default()).unwrap();
        for entry in view.iter() {
            let pos = entry.pos.unwrap();
            assert!(entry.message.is_borrowed(), "{}: message {pos} was copied", manager.name());
            assert!(
                std::ptr::eq(&raw const *entry.message, &raw const input[pos]),
                "{}: message {pos} is not the history's",
                manager.name()
            );
        }
    }
}
