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

    #[test]
    fn truncate_text_start_is_a_suffix_within_the_limit(
        text in "[a-zé😀中 ,.]{0,200}",
        max in 0u64..60,
    ) {
        let bpe = Bpe::new(Encoding::O200kBase).unwrap();
        let cut = bpe.truncate_text_start(&text, max);
        prop_assert!(text.ends_with(cut));
        prop_assert!(bpe.count_text(cut) <= max);
        if bpe.count_text(&text) <= max {
            prop_assert_eq!(cut, text.as_str());
        }
    }

    /// Long texts (runs the tokenizer merges, words, mixed scripts) are cut by looking only
    /// at the part a cut can reach: within the limit, and near what a search over the whole
    /// text finds (the exact counter cuts after its first tokens, which in a long run of one
    /// character can end short of the longest prefix within the limit: 64 `=` of a 96 `=`
    /// token).
    #[test]
    fn long_texts_are_cut_as_a_whole_search_cuts_them(
        piece in "[=a é中\n]{1,6}",
        times in 200usize..3_000,
        max in 1u64..400,
    ) {
        let bpe = Bpe::new(Encoding::O200kBase).unwrap();
        let text = piece.repeat(times);
        let whole = Searched(bpe.clone());
        for (cut, searched, is_prefix) in [
            (bpe.truncate_text(&text, max), whole.truncate_text(&text, max), true),
            (bpe.truncate_text_start(&text, max), whole.truncate_text_start(&text, max), false),
        ] {
            let placed = if is_prefix { text.starts_with(cut) } else { text.ends_with(cut) };
            prop_assert!(placed);
            prop_assert!(bpe.count_text(cut) <= max);
            prop_assert!(cut.len() * 2 + 16 >= searched.len(), "{} against {}", cut.len(), searched.len());
        }
    }
}

/// The exact counter with the trait's own searches for cuts.
#[derive(Debug)]
struct Searched(Bpe);

impl TokenCounter for Searched {
    fn cache_key(&self) -> u64 {
        self.0.cache_key()
    }
    fn count_text(&self, text: &str) -> u64 {
        self.0.count_text(text)
    }
}

#[test]
fn a_long_run_is_cut_to_the_limit_from_either_end() {
    let bpe = Bpe::new(Encoding::O200kBase).unwrap();
    let text = "=".repeat(1_000_000);
    let head = bpe.truncate_text(&text, 100);
    let tail = bpe.truncate_text_start(&text, 100);
    assert_eq!(bpe.count_text(head), 100);
    assert_eq!(bpe.count_text(tail), 100);
    assert!(head.len() > 1_000 && tail.len() > 1_000, "{} {}", head.len(), tail.len());
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

/// Long texts' counts are remembered, and a remembered count is the encoder's: texts of one
/// length and different bytes, each counted twice in turn under both encodings.
#[test]
fn long_texts_are_counted_exactly_and_remembered_by_their_bytes() {
    let o200k = Bpe::new(Encoding::O200kBase).unwrap();
    let cl100k = Bpe::new(Encoding::Cl100kBase).unwrap();
    let texts = ["lorem ipsum ".repeat(8_000), "dolorsitamet".repeat(8_000), "=".repeat(96_000)];
    for _ in 0..2 {
        for text in &texts {
            assert_eq!(text.len(), 96_000);
            for (bpe, name) in [(&o200k, "o200k_base"), (&cl100k, "cl100k_base")] {
                let exact = tiktoken::get_encoding(name).unwrap().count(text) as u64;
                assert_eq!(bpe.count_text(text), exact, "{name}: {}", &text[..12]);
            }
        }
    }
}
