//! The exact counter (feature `tiktoken`).

use curator_model::Message;
use curator_strategies::{
    Bpe, CurationContext, Encoding, HistoryManagerExt, TokenBudget, TokenCounter,
};
use proptest::prelude::*;

#[test]
fn known_counts_match_openai() {
    let o200k = Bpe::new(Encoding::O200kBase).unwrap();
    let cl100k = Bpe::new(Encoding::Cl100kBase).unwrap();
    // Reference counts from OpenAI's tokenizer.
    assert_eq!(o200k.count_text("tiktoken is great!"), 6);
    assert_eq!(cl100k.count_text("tiktoken is great!"), 6);
    assert_eq!(cl100k.count_text("antidisestablishmentarianism"), 6);
    assert_eq!(o200k.count_text(""), 0);
    // Special-token markers in content are ordinary text.
    assert!(o200k.count_text("<|endoftext|>") > 1);
    assert_ne!(o200k.cache_key(), cl100k.cache_key());
}

proptest! {
    #[test]
    fn truncate_text_is_a_prefix_within_the_limit(text in "[a-zé😀中 ,.]{0,200}", max in 0u64..60) {
        let bpe = Bpe::new(Encoding::O200kBase).unwrap();
        let cut = bpe.truncate_text(&text, max);
        prop_assert!(text.starts_with(cut));
        prop_assert!(bpe.count_text(cut) <= max);
        if bpe.count_text(&text) <= max {
            prop_assert_eq!(cut, text.as_str());
        }
    }
}

#[test]
fn a_budget_under_the_exact_counter_is_met() {
    let bpe = Bpe::new(Encoding::O200kBase).unwrap();
    let mut messages =
        vec![Message::system("You are a coding agent."), Message::user("Fix the bug.")];
    for i in 0..40 {
        messages.push(Message::assistant(format!(
            "Step {i}: 中文 and emoji 😀 {}",
            "lorem ipsum ".repeat(i)
        )));
        messages.push(Message::user("continue"));
    }
    let budget = TokenBudget::new(500).with_counter(bpe.clone());
    let view = budget.curate_messages(&messages, &CurationContext::default()).unwrap();
    let tokens: u64 = view.iter().map(|m| bpe.count_message(m)).sum::<u64>() + bpe.reply_priming();
    assert!(tokens <= 500, "{tokens}");
    assert!(view.len() > 2);
}
