//! Issue 29's property: over conversations with the shapes agents produce (both formats,
//! parallel and split calls, thinking and redacted thinking, images and documents, the
//! developer role, system messages anywhere, empty and whitespace content, 100 KB
//! arguments, grapheme clusters at cut points, numbers such as `1e2`, `2.50` and 20-digit
//! integers, tool schemas taking most of the budget), every strategy and the CLI's default
//! pipeline, at budgets from 200 to 16,000 exact tokens, either send a view that keeps what
//! is never lost or say `BudgetTooSmall` with numbers that prove it.

use curator_model::formats::{anthropic, openai};
use curator_model::{Message, Role, validate};
use curator_strategies::{
    Bpe, CurationContext, Encoding, Error, History, HistoryManager, HistoryManagerExt,
    RelevanceBudget, StrategyConfig, TokenCounter, Tokenizer,
};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Text with grapheme clusters that a careless cut would split.
fn words() -> impl Strategy<Value = String> {
    let word = prop::sample::select(vec![
        "fix",
        "the",
        "parser",
        "src/lib.rs",
        "ERROR:",
        "naïve",
        "café",
        "日本語",
        "👨‍👩‍👧",
        "é",
        "🇫🇷",
        "a\u{301}",
        "test_parse",
        "line",
        "42",
        "\n",
        " ",
    ]);
    prop::collection::vec(word, 0..60).prop_map(|w| w.join(" "))
}

/// Content text, sometimes empty or only whitespace, sometimes long.
fn content() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => words(),
        1 => Just(String::new()),
        1 => Just("  \n\t ".to_owned()),
        2 => (words(), 10usize..400).prop_map(|(w, n)| w.repeat(n.min(4_000 / (w.len() + 1) + 1))),
    ]
}

/// Numbers whose text arguments keep, however they are read, shortened and written.
const NUMBERS: &[&str] = &["1e2", "2.50", "-12345678901234567890123", "-0.0"];

/// Tool-call arguments whose numbers must keep their text, sometimes 100 KB long.
fn arguments() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => (words(), prop::sample::select(NUMBERS.to_vec()))
            .prop_map(|(w, n)| format!(r#"{{"path": {}, "n": {n}, "flags": [1, 2.50]}}"#, json!(w))),
        1 => Just(format!(r#"{{"content": {}, "n": 1e2}}"#, json!("x".repeat(100_000)))),
        1 => Just("{}".to_owned()),
    ]
}

fn image_url() -> Value {
    json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}})
}

/// One step of an OpenAI conversation (after the task).
fn openai_step() -> impl Strategy<Value = Vec<Value>> {
    prop_oneof![
        // Parallel calls with their results.
        3 => (prop::collection::vec((arguments(), content()), 1..4), any::<u16>()).prop_map(|(calls, tag)| {
            let ids: Vec<String> = (0..calls.len()).map(|i| format!("call_{tag}_{i}")).collect();
            let tool_calls: Vec<Value> = calls.iter().zip(&ids).map(|((args, _), id)| json!({
                "id": id, "type": "function", "function": {"name": "read", "arguments": args}})).collect();
            let mut out = vec![json!({"role": "assistant", "content": null, "tool_calls": tool_calls})];
            out.extend(calls.iter().zip(&ids).map(|((_, result), id)| json!({"role": "tool", "tool_call_id": id, "content": result})));
            out
        }),
        2 => content().prop_map(|t| vec![json!({"role": "assistant", "content": if t.trim().is_empty() { "ok".to_owned() } else { t }})]),
        2 => (content(), any::<bool>()).prop_map(|(t, image)| {
            let text = if t.trim().is_empty() { "go on".to_owned() } else { t };
            vec![if image {
                json!({"role": "user", "content": [{"type": "text", "text": text}, image_url()]})
            } else {
                json!({"role": "user", "content": text})
            }]
        }),
        1 => (words(), any::<bool>()).prop_map(|(t, developer)| {
            let role = if developer { "developer" } else { "system" };
            vec![json!({"role": role, "content": format!("New rule: {t}")})]
        }),
    ]
}

/// An OpenAI conversation: a system (or developer) message, the task, then steps.
fn openai_conversation() -> impl Strategy<Value = Vec<Message>> {
    let trailing = prop_oneof![2 => Just(None), 1 => words().prop_map(Some)];
    (words(), content(), any::<bool>(), prop::collection::vec(openai_step(), 0..8), trailing)
        .prop_map(|(system, task, image, steps, trailing)| {
            let task = if task.trim().is_empty() { "Fix the bug.".to_owned() } else { task };
            let mut body =
                vec![json!({"role": "system", "content": format!("You are an agent. {system}")})];
            body.push(if image {
                json!({"role": "user", "content": [{"type": "text", "text": task}, image_url()]})
            } else {
                json!({"role": "user", "content": task})
            });
            body.extend(steps.into_iter().flatten());
            // A rule given last, after the newest results (which a budget may shorten).
            if let Some(rule) = trailing {
                body.push(json!({"role": "system", "content": format!("New rule: {rule}")}));
            }
            openai::to_messages(&Value::Array(body)).unwrap()
        })
}

/// One step of an Anthropic conversation (an assistant turn and the user turn answering it).
fn anthropic_step() -> impl Strategy<Value = Vec<Value>> {
    (
        prop::collection::vec(arguments(), 1..3),
        content(),
        prop::sample::select(vec!["none", "thinking", "redacted"]),
        any::<bool>(),
        any::<bool>(),
        words(),
        any::<u16>(),
    )
        .prop_map(|(calls, result, thinking, split, with_text, text, tag)| {
            let mut blocks = Vec::new();
            match thinking {
                "thinking" => blocks.push(json!({"type": "thinking", "thinking": format!("I think {text}"), "signature": "c2lnbmF0dXJl"})),
                "redacted" => blocks.push(json!({"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"})),
                _ => {}
            }
            let ids: Vec<String> = (0..calls.len()).map(|i| format!("toolu_{tag}_{i}")).collect();
            // Each input is a placeholder the conversation replaces with the arguments' text,
            // so that their numbers reach the reader as written.
            let uses: Vec<Value> = calls.iter().zip(&ids).map(|(args, id)| {
                json!({"type": "tool_use", "id": id, "name": "read", "input": format!("\u{1}{args}\u{1}")})
            }).collect();
            let mut turns = Vec::new();
            if split && uses.len() > 1 {
                // Parallel calls split over two assistant messages.
                let mut first = blocks.clone();
                first.push(uses[0].clone());
                turns.push(json!({"role": "assistant", "content": first}));
                turns.push(json!({"role": "assistant", "content": uses[1..].to_vec()}));
            } else {
                blocks.extend(uses);
                turns.push(json!({"role": "assistant", "content": blocks}));
            }
            let mut results: Vec<Value> = ids.iter().map(|id| {
                let content = if result.trim().is_empty() { "done".to_owned() } else { result.clone() };
                json!({"type": "tool_result", "tool_use_id": id, "content": content})
            }).collect();
            if with_text {
                results.push(json!({"type": "text", "text": format!("What does it say? {text}")}));
            }
            turns.push(json!({"role": "user", "content": results}));
            turns
        })
}

/// An Anthropic conversation: the top-level system, the task (text, sometimes with an image
/// or a document), then steps.
fn anthropic_conversation() -> impl Strategy<Value = Vec<Message>> {
    (words(), content(), 0u8..3, prop::collection::vec(anthropic_step(), 0..6)).prop_map(
        |(system, task, extra, steps)| {
            let task = if task.trim().is_empty() { "Fix the bug.".to_owned() } else { task };
            let mut first = vec![json!({"type": "text", "text": task})];
            match extra {
                1 => first.push(json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}})),
                2 => first.push(json!({"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "a document"}})),
                _ => {}
            }
            let mut messages = vec![json!({"role": "user", "content": first})];
            messages.extend(steps.into_iter().flatten());
            let body = json!({"system": format!("You are an agent. {system}"), "messages": messages});
            // The placeholders become the arguments' own text (read as written).
            let text = body.to_string();
            let mut out = String::with_capacity(text.len());
            let mut pieces = text.split("\"\\u0001");
            out.push_str(pieces.next().unwrap_or_default());
            for piece in pieces {
                let (escaped, rest) = piece.split_once("\\u0001\"").unwrap();
                let args: String = serde_json::from_str(&format!("\"{escaped}\"")).unwrap();
                out.push_str(&args);
                out.push_str(rest);
            }
            anthropic::parse(&out).unwrap()
        },
    )
}

pub(crate) fn conversation() -> impl Strategy<Value = Vec<Message>> {
    prop_oneof![openai_conversation(), anthropic_conversation()]
}

/// Every strategy, and the CLI's default pipeline, with a budget of `max_tokens` less
/// `tools` tokens of schemas where a strategy has a budget.
fn pipelines(max_tokens: u64, tools: u64) -> Vec<(String, Box<dyn HistoryManager>)> {
    let o200k = Tokenizer::O200k;
    let relevance = || StrategyConfig::RelevanceBudget {
        max_tokens,
        reserve: tools,
        tokenizer: o200k,
        head_share: 0.5,
        recent_share: RelevanceBudget::DEFAULT_RECENT_SHARE,
        fold_note: true,
        note_terms: true,
        cut_tool_results: true,
    };
    let configs = vec![
        StrategyConfig::Passthrough,
        StrategyConfig::SlidingWindow { window_size: 0 },
        StrategyConfig::SlidingWindow { window_size: 3 },
        StrategyConfig::TurnLimit { max_turns: 0 },
        StrategyConfig::TurnLimit { max_turns: 2 },
        StrategyConfig::ToolResultTruncator { max_length: 50, suffix: None },
        StrategyConfig::ToolFilter { tools: vec!["read".to_owned()] },
        StrategyConfig::ClearOldToolResults {
            keep_last: 0,
            placeholder: None,
            exclude: vec![],
            essentials: 100,
        },
        StrategyConfig::Redactor { builtin: true, patterns: std::collections::BTreeMap::default() },
        StrategyConfig::Summarize {
            summarizer: curator_strategies::SummarizerConfig::Extractive,
            threshold_messages: Some(4),
            threshold_tokens: None,
            tokenizer: Tokenizer::Estimate,
            keep_recent: 1,
            summarize_ratio: 0.5,
            max_summary_chars: 400,
            on_error: curator_strategies::OnError::Fallback,
            then: None,
        },
        StrategyConfig::TokenBudget {
            max_tokens,
            reserve: tools,
            tokenizer: o200k,
            head_share: 0.5,
            shorten: true,
        },
        relevance(),
        // The default pipeline (redaction, then views that keep the prompt cache).
        StrategyConfig::default_pipeline(max_tokens).with_reserve(tools),
        // The per-call relevance pipeline.
        StrategyConfig::Compose {
            steps: vec![
                StrategyConfig::Redactor {
                    builtin: true,
                    patterns: std::collections::BTreeMap::default(),
                },
                StrategyConfig::ToolResultTruncator { max_length: 4_000, suffix: None },
                relevance(),
            ],
        },
    ];
    configs
        .into_iter()
        .map(|c| {
            let name = serde_json::to_string(&c).unwrap();
            (name, c.build().unwrap())
        })
        .collect()
}

fn has_budget(name: &str) -> bool {
    name.contains("budget")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn what_is_never_lost_is_kept_or_refused_with_numbers(
        input in conversation(),
        // Mostly budgets that bind on these conversations, so that the newest unit is often
        // shortened or refused.
        max_tokens in prop_oneof![3 => 200u64..1_500, 1 => 1_500u64..16_000],
        tools_share in prop_oneof![Just(0.0), 0.0f64..0.95],
        preserve_task in prop_oneof![3 => Just(true), 1 => Just(false)],
    ) {
        let bpe = Bpe::new(Encoding::O200kBase).unwrap();
        #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss, reason = "a share of a budget")]
        let tools = (max_tokens as f64 * tools_share) as u64;
        let history = History::from(&input);
        let ctx = CurationContext::default().with_preserve_task(preserve_task);
        let systems: Vec<(usize, &Message)> =
            input.iter().enumerate().filter(|(_, m)| m.role() == Role::System).collect();
        // A view is held to the rules of each provider whose rules its input keeps (late
        // system messages are OpenAI's, split parallel calls Anthropic's).
        // Reading kept the numbers as generated: every generated argument but `{}` holds
        // `2.50` (in `flags`) or `1e2` (the 100 KB one), which a reader through `f64` rewrites.
        for call in input.iter().flat_map(Message::tool_calls).filter(|c| c.arguments() != "{}") {
            prop_assert!(["2.50", "1e2"].iter().any(|n| call.arguments().contains(n)), "read as {}", call.arguments());
        }
        let openai_valid = validate::openai(&input).is_ok();
        let anthropic_valid = validate::anthropic(&input).is_ok();
        prop_assert!(openai_valid || anthropic_valid, "the generator made an invalid input");
        for (name, manager) in pipelines(max_tokens, tools) {
            let first = manager.curate_history(&history, &ctx);
            let again = manager.curate_history(&history, &ctx);
            match (first, again) {
                (Ok(view), Ok(again)) => {
                    let messages = view.to_messages();
                    prop_assert_eq!(&messages, &again.to_messages(), "{} is not deterministic", name);
                    let positions: Vec<Option<usize>> = view.iter().map(|e| e.pos).collect();
                    // Order preserved: history positions rise (inserted notes have none).
                    let kept: Vec<usize> = positions.iter().flatten().copied().collect();
                    prop_assert!(kept.windows(2).all(|w| w[0] < w[1]), "{}: order {:?}", name, kept);
                    if anthropic_valid {
                        prop_assert_eq!(validate::anthropic(&messages), Ok(()), "{}: {:#?}", name, messages);
                    }
                    if openai_valid {
                        prop_assert_eq!(validate::openai(&messages), Ok(()), "{}: {:#?}", name, messages);
                    }
                    // Every system message, unchanged (redaction aside) and in place.
                    for (pos, system) in &systems {
                        let at = positions.iter().position(|p| *p == Some(*pos));
                        prop_assert!(at.is_some(), "{}: system message {} dropped", name, pos);
                        if !name.contains("redactor") {
                            prop_assert_eq!(&messages[at.unwrap()], *system, "{}: system {} edited", name, pos);
                        }
                    }
                    // The task, and the newest message that coherence keeps.
                    if let Some(task) = input.iter().position(|m| m.role() == Role::User).filter(|_| preserve_task) {
                        prop_assert!(kept.contains(&task), "{}: the task dropped", name);
                    }
                    let last = input.len() - 1;
                    let pending = input[last].role() == Role::Assistant && input[last].has_tool_calls();
                    if !pending {
                        prop_assert!(kept.contains(&last), "{}: the newest message dropped: {:#?}", name, messages);
                    }
                    // Numbers keep their text wherever arguments are sent, shortened or not.
                    for call in messages.iter().flat_map(Message::tool_calls) {
                        let original = input.iter().flat_map(Message::tool_calls).find(|c| c.id() == call.id()).unwrap();
                        for number in NUMBERS.iter().filter(|n| original.arguments().contains(*n)) {
                            prop_assert!(call.arguments().contains(*number), "{}: {} lost from {}", name, number, call.arguments());
                        }
                    }
                    if has_budget(&name) {
                        let tokens: u64 = messages.iter().map(|m| bpe.count_message(m)).sum::<u64>() + bpe.reply_priming();
                        prop_assert!(tokens + tools <= max_tokens, "{}: {} + {} tools > {}", name, tokens, tools, max_tokens);
                    }
                }
                (Err(Error::BudgetTooSmall(s)), Err(Error::BudgetTooSmall(again))) => {
                    prop_assert!(has_budget(&name), "{} refused without a budget: {}", name, s);
                    prop_assert_eq!(&s, &again);
                    prop_assert!(s.needed() > max_tokens, "{}: {} fits {}", name, s, max_tokens);
                    prop_assert_eq!(s.max_tokens, max_tokens);
                    prop_assert_eq!(s.reserve, tools);
                    let system: u64 = systems.iter().map(|(_, m)| bpe.count_message(m)).sum();
                    prop_assert_eq!(s.system, system, "{}: system messages counted whole", name);
                }
                (first, again) => prop_assert!(false, "{}: {:?} then {:?}", name, first.err(), again.err()),
            }
        }
    }
}
