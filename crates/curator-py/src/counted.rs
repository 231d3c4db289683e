//! A token budget over counts the caller gives, one per message: `trim_messages` with a
//! LangChain token counter (`count_tokens_approximately`, a model's counter, any callable),
//! which counts in Python. The budget keeps, drops and pins messages as curator's budget
//! does; only the numbers come from the caller.

use std::sync::atomic::{AtomicU64, Ordering};

use curator::model::Message;
use curator::strategies::{
    CharEstimate, CurationContext, History, HistoryManagerExt, StrategyConfig, TokenBudget,
    TokenCounter,
};

use crate::error::Failure;
use crate::lazy::{self, Lazy};

/// Counts a history's messages as the caller counted them, by their place in the history;
/// a message the budget makes (a note) is estimated. Nothing is primed for the reply: the
/// caller's counts are the whole count, as LangChain's `trim_messages` takes them.
#[derive(Debug)]
struct GivenCounts {
    /// The address of the history's first message, and the number of messages.
    base: usize,
    len: usize,
    counts: Vec<u64>,
    fallback: CharEstimate,
    key: u64,
}

impl GivenCounts {
    fn over(messages: &[Message], counts: Vec<u64>) -> Self {
        // Each set of counts is its own way of counting, for the history's count cache.
        static NEXT: AtomicU64 = AtomicU64::new(0x6769_7665_6e00_0000);
        Self {
            base: messages.as_ptr().addr(),
            len: messages.len(),
            counts,
            fallback: CharEstimate::default(),
            key: NEXT.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The place of `message` in the history, when it is one of the history's messages.
    fn place(&self, message: &Message) -> Option<usize> {
        let size = size_of::<Message>();
        let offset = std::ptr::from_ref(message).addr().checked_sub(self.base)?;
        (offset % size == 0).then_some(offset / size).filter(|&i| i < self.len)
    }
}

impl TokenCounter for GivenCounts {
    fn cache_key(&self) -> u64 {
        self.key
    }

    fn count_text(&self, text: &str) -> u64 {
        self.fallback.count_text(text)
    }

    fn reply_priming(&self) -> u64 {
        0
    }

    fn count_message(&self, message: &Message) -> u64 {
        match self.place(message) {
            Some(i) => self.counts[i],
            None => self.fallback.count_message(message),
        }
    }
}

/// Curates every message of `source` with `config`, a lone token budget, counting message
/// `i` as `counts[i]`.
///
/// # Errors
///
/// [`Failure::Config`] when `config` is not a lone token budget or `counts` does not give one
/// count per message; the first message that cannot be read; what the budget raises
/// ([`BudgetTooSmall`](crate::error::BudgetTooSmall)).
pub(crate) fn curate_counted(
    source: &mut impl Lazy,
    counts: &[u64],
    config: &StrategyConfig,
) -> Result<lazy::Curated, Failure> {
    let StrategyConfig::TokenBudget { max_tokens, reserve, head_share, shorten, .. } = config
    else {
        return Err(Failure::Config {
            kind: "invalid_argument",
            message: "`counts` are taken with a lone `token_budget` pipeline only".to_owned(),
        });
    };
    if counts.len() != source.len() {
        return Err(Failure::Config {
            kind: "invalid_argument",
            message: format!(
                "`counts` gives {} counts for {} messages: give one per message",
                counts.len(),
                source.len()
            ),
        });
    }
    // Only what the budget may keep is read (see `lazy`): the head and the newest messages
    // as far as their counts reach.
    let messages = lazy::subset_counted(source, *max_tokens, &mut |index, _| counts[index])?;
    let read: Vec<u64> = messages.iter().map(|(index, _)| counts[*index]).collect();
    let budget =
        TokenBudget::new(*max_tokens).with_reserve(*reserve).with_head_share(*head_share)?;
    lazy::curate_subset_with(messages, move |history: &History<'static>| {
        let counter = GivenCounts::over(history.messages(), read);
        let budget = budget.with_counter(counter);
        let budget = if *shorten { budget } else { budget.keeping_messages_whole() };
        Ok(budget.curate_history(history, &CurationContext::default())?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lazy::Kept;

    struct Listed(Vec<Message>);

    impl Lazy for Listed {
        fn len(&self) -> usize {
            self.0.len()
        }
        fn role(&mut self, index: usize) -> Result<curator::model::Role, Failure> {
            Ok(self.0[index].role())
        }
        fn message(&mut self, index: usize) -> Result<Message, Failure> {
            Ok(self.0[index].clone())
        }
    }

    fn budget(max_tokens: u64) -> StrategyConfig {
        StrategyConfig::TokenBudget {
            max_tokens,
            reserve: 0,
            tokenizer: curator::strategies::Tokenizer::Estimate,
            head_share: 0.5,
            shorten: false,
        }
    }

    fn conversation() -> Vec<Message> {
        vec![
            Message::system("be brief"),
            Message::user("task"),
            Message::assistant("a1"),
            Message::user("u2"),
            Message::assistant("a2"),
            Message::user("u3"),
        ]
    }

    #[test]
    fn the_given_counts_decide_what_fits() {
        // The same texts, counted as the caller says: the big middle messages are left out
        // whole, the head and the newest are kept.
        let counts = vec![10, 10, 500, 500, 20, 20];
        let curated = curate_counted(&mut Listed(conversation()), &counts, &budget(60)).unwrap();
        let kept: Vec<_> = curated
            .kept
            .iter()
            .map(|k| match k {
                Kept::Position(p) => *p,
                other => panic!("changed or made {other:?}"),
            })
            .collect();
        assert_eq!(kept, [0, 1, 4, 5]);
        // Exactly the budget fits (nothing is primed): one token less does not hold a2.
        let counts = vec![10, 10, 500, 500, 20, 20];
        let curated = curate_counted(&mut Listed(conversation()), &counts, &budget(59)).unwrap();
        assert_eq!(curated.kept.len(), 3);
    }

    #[test]
    fn what_is_never_left_out_over_the_budget_is_refused_not_cut() {
        let counts = vec![10, 100, 1, 1, 1, 1];
        let error = curate_counted(&mut Listed(conversation()), &counts, &budget(50)).unwrap_err();
        assert_eq!(error.kind(), "budget_too_small");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]

        /// Reading only what the counts let the budget keep gives the view reading every
        /// message gives.
        #[test]
        fn reading_what_the_counts_reach_curates_like_reading_everything(
            messages in curator_testkit::arb::history_with(40, true),
            seed in proptest::prelude::any::<u64>(),
            max_tokens in 20_u64..2_000,
            shorten in proptest::prelude::any::<bool>(),
        ) {
            let counts: Vec<u64> = (0..messages.len() as u64)
                .map(|i| (seed.rotate_left((i % 64) as u32) ^ i.wrapping_mul(0x9e37)) % 300)
                .collect();
            let config = StrategyConfig::TokenBudget {
                max_tokens,
                reserve: 0,
                tokenizer: curator::strategies::Tokenizer::Estimate,
                head_share: 0.5,
                shorten,
            };
            let lazy = curate_counted(&mut Listed(messages.clone()), &counts, &config);
            let all: Vec<(usize, Message)> = messages.iter().cloned().enumerate().collect();
            let whole = lazy::curate_subset_with(all, |history: &History<'static>| {
                let budget = TokenBudget::new(max_tokens)
                    .with_counter(GivenCounts::over(history.messages(), counts.clone()));
                let budget = if shorten { budget } else { budget.keeping_messages_whole() };
                Ok(budget.curate_history(history, &CurationContext::default())?)
            });
            match (whole, lazy) {
                (Ok(whole), Ok(lazy)) => proptest::prop_assert_eq!(whole.kept, lazy.kept),
                (Err(whole), Err(lazy)) => proptest::prop_assert_eq!(whole.kind(), lazy.kind()),
                (whole, lazy) => proptest::prop_assert!(false, "whole {:?}, lazily {:?}", whole, lazy),
            }
        }
    }

    #[test]
    fn counts_must_match_the_messages_and_the_pipeline_be_a_budget() {
        let error = curate_counted(&mut Listed(conversation()), &[1; 5], &budget(50)).unwrap_err();
        let Failure::Config { message, .. } = error else { panic!("{error:?}") };
        assert!(message.contains("5 counts for 6 messages"), "{message}");
        let window = StrategyConfig::SlidingWindow { window_size: 2 };
        let error = curate_counted(&mut Listed(conversation()), &[1; 6], &window).unwrap_err();
        assert_eq!(error.kind(), "invalid_argument");
    }
}
