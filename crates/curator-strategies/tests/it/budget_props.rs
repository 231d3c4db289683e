//! The budget's promises for all inputs: valid, within budget, the head kept and within its
//! share, the newest unit kept, more budget never keeping less.

use curator_model::{Content, Message, Role, validate};
use curator_strategies::{
    CharEstimate, CurationContext, Error, History, HistoryManager, TokenBudget, TokenCounter, View,
};
use curator_testkit::arb;
use proptest::prelude::*;

/// A history whose task is `task_chars` characters long (the head's size varies widely).
fn with_task(mut messages: Vec<Message>, task_chars: usize) -> Vec<Message> {
    if let Some(task) = messages.iter_mut().find(|m| m.role() == Role::User) {
        let text = format!("TASK {} END", "detail ".repeat(task_chars / 7));
        *task = Message::user(text);
    }
    messages
}

/// History positions the budget kept outside the head, and the view as messages.
fn curate(input: &[Message], budget: u64, share: f64) -> Result<(Vec<usize>, Vec<Message>), Error> {
    let history = History::from(input);
    let ctx = CurationContext::default();
    let head: Vec<usize> = View::full(&history).head(&ctx).pinned().to_vec();
    let manager = TokenBudget::new(budget).with_head_share(share).unwrap();
    let view = manager.curate(View::full(&history), &ctx)?;
    let body = view.iter().filter_map(|e| e.pos).filter(|p| !head.contains(p)).collect();
    Ok((body, view.to_messages()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn every_view_keeps_the_promises(
        input in arb::history(),
        task_chars in 0usize..6_000,
        budget in 0u64..3_000,
        share in prop_oneof![Just(0.25), Just(0.5), Just(0.75)],
    ) {
        let input = with_task(input, task_chars);
        let counter = CharEstimate::default();
        match curate(&input, budget, share) {
            Err(Error::BudgetTooSmall(shortfall)) => {
                prop_assert!(shortfall.needed() > shortfall.max_tokens, "{shortfall:?}");
            }
            Err(other) => prop_assert!(false, "unexpected error {other}"),
            Ok((_, view)) => {
                prop_assert_eq!(validate::openai(&view), Ok(()), "{:#?}", view);
                prop_assert_eq!(validate::anthropic(&view), Ok(()), "{:#?}", view);
                let tokens: u64 = view.iter().map(|m| counter.count_message(m)).sum::<u64>()
                    + counter.reply_priming();
                prop_assert!(tokens <= budget, "{tokens} > {budget}");
                let systems = |ms: &[Message]| ms.iter().filter(|m| m.role() == Role::System).count();
                prop_assert_eq!(systems(&view), systems(&input), "a system message was dropped");
                if let Some(task) = input.iter().find(|m| m.role() == Role::User) {
                    let start: String = task.text().chars().take(4).collect();
                    prop_assert!(
                        view.iter().any(|m| m.role() == Role::User && m.text().starts_with(&start)),
                        "the task is not recognisable: {:#?}", view
                    );
                }
                // The newest unit is kept (maybe shortened) when the body's share leaves room
                // for it: its last message is the view's last message.
                // What the newest history can send: the input as coherence leaves it (calls
                // still pending at the end are not sent).
                let sendable = {
                    let history = History::from(input.as_slice());
                    View::full(&history).repaired().to_messages()
                };
                let last = sendable.last();
                let head_tokens: u64 = input.iter().take(2).map(|m| counter.count_message(m)).sum();
                #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
                let body_share = budget.saturating_sub(3).saturating_sub(((budget as f64 * share) as u64).max(head_tokens.min(80)));
                let newest_floor: u64 = input.iter().rev().take(4).map(|m| 60 + 30 * m.tool_calls().len() as u64 + content_floor(m)).sum();
                if body_share > newest_floor && sendable.len() > 2 {
                    let (Some(got), Some(want)) = (view.last(), last) else { return Ok(()) };
                    prop_assert_eq!((got.role(), got.tool_call_id()), (want.role(), want.tool_call_id()));
                }
            }
        }
    }

    #[test]
    fn a_larger_budget_never_keeps_less_of_the_newest_history(
        input in arb::history(),
        task_chars in 0usize..4_000,
        budget in 0u64..2_500,
        more in 1u64..500,
    ) {
        let input = with_task(input, task_chars);
        let (Ok((small, _)), Ok((large, _))) = (curate(&input, budget, 0.5), curate(&input, budget + more, 0.5)) else {
            return Ok(());
        };
        // Kept body positions: at least as many, reaching at least as far back.
        prop_assert!(large.len() >= small.len(), "{small:?} then {large:?}");
        if let (Some(s), Some(l)) = (small.iter().min(), large.iter().min()) {
            prop_assert!(l <= s, "{small:?} then {large:?}");
        }
    }
}

/// Tokens a message keeps at least when shortened: what is not text (images count at most
/// 1,445 under the default rules).
fn content_floor(message: &Message) -> u64 {
    match message.content() {
        Some(Content::Parts(parts)) => {
            parts.iter().filter(|p| p.as_text().is_none()).count() as u64 * 1_445
        }
        _ => 0,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// A budget that keeps messages whole cuts no text: every message of its view is an
    /// input message as it was (or a note it made), the view is within the budget and valid,
    /// and every system message, the task and the newest sendable message are in it. It
    /// fails only when those alone do not fit whole.
    #[test]
    fn a_budget_keeping_messages_whole_changes_no_text(
        input in arb::history(),
        task_chars in 0usize..3_000,
        budget in 0u64..3_000,
    ) {
        let input = with_task(input, task_chars);
        let counter = CharEstimate::default();
        let history = History::from(input.as_slice());
        let manager = TokenBudget::new(budget).keeping_messages_whole();
        let sendable = View::full(&history).repaired().to_messages();
        match manager.curate(View::full(&history), &CurationContext::default()) {
            Err(Error::BudgetTooSmall(shortfall)) => {
                // What is never left out is over the budget at its full size: the system
                // messages and the task are counted whole, not at what they shorten to.
                prop_assert!(shortfall.needed() > shortfall.max_tokens, "{shortfall:?}");
                let systems: u64 = input
                    .iter()
                    .filter(|m| m.role() == Role::System)
                    .map(|m| counter.count_message(m))
                    .sum();
                prop_assert_eq!(shortfall.system, systems);
                if let Some(task) = input.iter().take_while(|m| m.role() != Role::Assistant).find(|m| m.role() == Role::User) {
                    prop_assert!(shortfall.task >= counter.count_message(task), "{shortfall:?}");
                }
            }
            Err(other) => prop_assert!(false, "unexpected error {other}"),
            Ok(view) => {
                let view = view.to_messages();
                prop_assert_eq!(validate::openai(&view), Ok(()), "{:#?}", view);
                let tokens: u64 = view.iter().map(|m| counter.count_message(m)).sum::<u64>()
                    + counter.reply_priming();
                prop_assert!(tokens <= budget, "{tokens} > {budget}");
                for message in &view {
                    prop_assert!(
                        sendable.contains(message) || message.text().starts_with('['),
                        "a message was changed: {:#?}", message
                    );
                }
                let systems = |ms: &[Message]| ms.iter().filter(|m| m.role() == Role::System).count();
                prop_assert_eq!(systems(&view), systems(&sendable));
                if let Some(task) = sendable.iter().find(|m| m.role() == Role::User) {
                    prop_assert!(view.contains(task), "the task was left out");
                }
                if let Some(last) = sendable.last() {
                    prop_assert_eq!(view.last(), Some(last), "the newest message was left out");
                }
            }
        }
    }
}
