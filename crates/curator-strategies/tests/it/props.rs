//! Invariants of every strategy and composition, over arbitrary valid histories.

use curator_model::{Message, Role, validate};
use curator_strategies::{
    CharEstimate, CurationContext, Error, HistoryManagerExt, RelevanceBudget, StrategyConfig,
    TokenCounter,
};
use curator_testkit::arb;
use proptest::prelude::*;

fn leaf() -> impl Strategy<Value = StrategyConfig> {
    let tool = prop::sample::select(vec!["ls", "cat", "run", "search"]).prop_map(str::to_owned);
    prop_oneof![
        Just(StrategyConfig::Passthrough),
        (0usize..12).prop_map(|window_size| StrategyConfig::SlidingWindow { window_size }),
        (30usize..200).prop_map(|max_length| StrategyConfig::ToolResultTruncator {
            max_length,
            suffix: None
        }),
        (200u64..3_000, 0u64..100, any::<bool>()).prop_map(|(max_tokens, reserve, shorten)| {
            StrategyConfig::TokenBudget {
                max_tokens,
                reserve,
                tokenizer: curator_strategies::Tokenizer::Estimate,
                head_share: 0.5,
                shorten,
            }
        }),
        (0u64..3_000, 0u64..300, 0.0f64..=1.0, any::<bool>(), any::<bool>(), any::<bool>())
            .prop_map(
                |(max_tokens, reserve, recent_share, fold_note, note_terms, cut_tool_results)| {
                    StrategyConfig::RelevanceBudget {
                        max_tokens,
                        reserve,
                        tokenizer: curator_strategies::Tokenizer::Estimate,
                        head_share: 0.5,
                        recent_share,
                        fold_note,
                        note_terms,
                        cut_tool_results,
                    }
                }
            ),
        (0usize..6).prop_map(|max_turns| StrategyConfig::TurnLimit { max_turns }),
        prop::collection::vec(tool.clone(), 0..3)
            .prop_map(|tools| StrategyConfig::ToolFilter { tools }),
        (0usize..4, prop::collection::vec(tool, 0..2), 0usize..300).prop_map(
            |(keep_last, exclude, essentials)| StrategyConfig::ClearOldToolResults {
                keep_last,
                placeholder: None,
                exclude,
                essentials,
            }
        ),
        Just(StrategyConfig::Redactor {
            builtin: true,
            patterns: std::collections::BTreeMap::default()
        }),
        (3usize..40, 0usize..8, 0.0f64..=1.0).prop_map(
            |(threshold, keep_recent, summarize_ratio)| {
                StrategyConfig::Summarize {
                    summarizer: curator_strategies::SummarizerConfig::Extractive,
                    threshold_messages: Some(threshold),
                    threshold_tokens: None,
                    tokenizer: curator_strategies::Tokenizer::Estimate,
                    keep_recent,
                    summarize_ratio,
                    max_summary_chars: 4_000,
                    on_error: curator_strategies::OnError::Fallback,
                    then: None,
                }
            }
        ),
    ]
}

fn pipeline() -> impl Strategy<Value = StrategyConfig> {
    prop_oneof![
        leaf(),
        prop::collection::vec(leaf(), 1..5).prop_map(|steps| StrategyConfig::Compose { steps })
    ]
}

fn context() -> impl Strategy<Value = (bool, bool, usize)> {
    (
        prop::bool::weighted(0.8),
        prop::bool::weighted(0.8),
        prop_oneof![3 => Just(0usize), 1 => 1usize..8],
    )
}

/// Leading system messages and the task that follows them.
fn head(messages: &[Message]) -> (usize, Option<&Message>) {
    let systems = messages.iter().take_while(|m| m.role() == Role::System).count();
    (systems, messages.get(systems).filter(|m| m.role() == Role::User))
}

/// Whether `view` is a subsequence of `input`, allowing changed content, removed calls and
/// inserted summaries and folded-history notes.
fn is_subsequence(view: &[Message], input: &[Message]) -> bool {
    let mut rest = input.iter();
    let written =
        |v: &Message| v.text().starts_with("[Summary of the ") || RelevanceBudget::is_note(v);
    view.iter().filter(|v| !written(v)).all(|v| {
        rest.any(|m| {
            m.role() == v.role()
                && m.tool_call_id() == v.tool_call_id()
                && v.tool_calls().iter().all(|c| {
                    m.tool_calls().iter().any(|o| o.id() == c.id() && o.name() == c.name())
                })
                && (v.has_tool_calls() || !m.has_tool_calls() || v.role() == Role::Assistant)
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_composition_keeps_the_contract(
        input in arb::history(),
        config in pipeline(),
        (preserve_system, preserve_task, last_n) in context(),
    ) {
        let manager = config.build().unwrap();
        let ctx = CurationContext::default()
            .with_preserve_system(preserve_system)
            .with_preserve_task(preserve_task)
            .with_preserve_last_n(last_n);
        let before = input.clone();
        let view = match manager.curate_messages(&input, &ctx) {
            Err(Error::BudgetTooSmall(_)) => return Ok(()),
            other => other.unwrap(),
        };
        prop_assert_eq!(&input, &before, "the input was changed");
        prop_assert_eq!(validate::openai(&view), Ok(()), "view: {:#?}", view);
        prop_assert!(is_subsequence(&view, &input), "not a subsequence: {:#?}", view);
        let (systems, task) = head(&input);
        if preserve_system {
            prop_assert_eq!(&view[..systems], &input[..systems]);
        }
        if let (true, Some(task)) = (preserve_task, task) {
            let kept = &view[if preserve_system { systems } else { 0 }..];
            let found = kept.iter().take(1 + systems).any(|m| {
                m.role() == Role::User && (m.text() == task.text() || m.text().ends_with("shortened to fit the token budget]"))
            });
            prop_assert!(found, "task missing: {:#?}", view);
        }
        let again = manager.curate_messages(&input, &ctx).unwrap();
        prop_assert_eq!(again, view, "not deterministic");
    }

    #[test]
    fn a_budget_last_in_the_pipeline_is_always_met(
        input in arb::history(),
        steps in prop::collection::vec(leaf(), 0..3),
        max_tokens in 60u64..3_000,
        reserve in 0u64..50,
        last_n in 0usize..10,
    ) {
        let mut steps = steps;
        steps.push(StrategyConfig::TokenBudget { max_tokens, reserve, tokenizer: curator_strategies::Tokenizer::Estimate, head_share: 0.5, shorten: true });
        let manager = StrategyConfig::Compose { steps }.build().unwrap();
        let ctx = CurationContext::default().with_preserve_last_n(last_n);
        match manager.curate_messages(&input, &ctx) {
            Err(Error::BudgetTooSmall(s)) => prop_assert!(s.needed() > s.max_tokens, "{s:?}"),
            Ok(view) => {
                let c = CharEstimate::default();
                let tokens: u64 = view.iter().map(|m| c.count_message(m)).sum::<u64>() + c.reply_priming();
                prop_assert!(tokens <= max_tokens - reserve, "{} > {}", tokens, max_tokens - reserve);
                prop_assert_eq!(validate::openai(&view), Ok(()));
            }
            Err(e) => prop_assert!(false, "unexpected error {}", e),
        }
    }
}
