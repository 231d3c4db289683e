//! Properties over arbitrary conversations: the injected history is the newest turns (a
//! suffix of the record, within the budget), and a checkpoint reads back what was saved.

use std::sync::Arc;

use curator_loop::{AiTurnSource, FnStep, Injection, LoopBuilder, LoopConfig, StepOutcome};
use curator_session::MemoryStore;
use curator_strategies::Tokenizer;
use proptest::prelude::*;

use crate::support::{Recording, texts};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn the_injected_history_is_the_newest_turns_within_the_budget(
        replies in proptest::collection::vec("[a-z ]{0,60}", 1..40),
        max_tokens in 64_u64..400,
    ) {
        let mut config = LoopConfig::from_toml(&format!(
            "conversation = true\n[history_management]\nmax_tokens = {max_tokens}"
        )).unwrap();
        config.ai_turn_source = AiTurnSource::AllAgents;
        config.max_iterations = replies.len() as u64;
        let script = replies.clone();
        let (mut step, calls) = Recording::new(Injection::Messages, move |n, _| {
            Ok(StepOutcome::text(script[n - 1].clone()))
        });
        step.own_input = false; // what follows the system prompt is the history alone
        let store = Arc::new(MemoryStore::new());
        let mut l = LoopBuilder::new("p", config.clone())
            .step("agent", step)
            .store(Arc::clone(&store), "k")
            .build()
            .unwrap();
        l.run("first").unwrap();
        let counter = Tokenizer::O200k.counter().unwrap();
        let record: Vec<String> = texts(&l.turns().iter().map(curator_loop::ConversationTurn::to_message).collect::<Vec<_>>());
        for call in calls.lock().unwrap().iter() {
            let history = &call[1..];
            let sent: u64 = history.iter().map(|m| counter.count_message(m)).sum::<u64>() + 3;
            prop_assert!(sent <= max_tokens);
            // Unshortened messages are consecutive turns of the record, ending with the
            // newest at the time of the call.
            let shown = texts(history);
            // (A budget that drops the turns before an assistant turn says so in a user note.)
            let whole: Vec<&String> = shown
                .iter()
                .filter(|t| !t.contains("shortened") && !t.contains("cut by curator") && !t.contains("left out by curator"))
                .collect();
            // (Replies may repeat, so the run is looked for at every place it could start.)
            let consecutive = whole.is_empty()
                || record.windows(whole.len()).any(|w| w.iter().zip(&whole).all(|(r, t)| r == *t));
            prop_assert!(consecutive, "not consecutive turns of the record: {:?}", whole);
        }
        // The checkpoint reads back the same state (once the loop, which holds the
        // session's claim, is gone).
        let state = l.state();
        drop(l);
        let again = LoopBuilder::new("p", config)
            .step("agent", FnStep::agent(Injection::Messages, |_| Ok(StepOutcome::text("x"))))
            .store(Arc::clone(&store), "k")
            .build()
            .unwrap();
        prop_assert_eq!(again.state(), state);
    }
}
