//! Curation strategies: each one at 100 to 100k messages, pipelines, and a growing history.
#![expect(
    clippy::expect_used,
    reason = "a bench of a failing setup measures nothing and must stop"
)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use curator_benches::{history, sizes, touch, warm};
use curator_strategies::{
    Bpe, ClearOldToolResults, CurationContext, Encoding, Extractive, History, HistoryManager,
    HistoryManagerExt, Passthrough, Redactor, RelevanceBudget, SlidingWindow, StableBudget,
    StrategyConfig, Summarize, Threshold, TokenBudget, ToolFilter, ToolResultTruncator, TurnLimit,
};

fn strategies() -> Vec<(&'static str, Box<dyn HistoryManager>)> {
    vec![
        ("passthrough", Box::new(Passthrough)),
        ("sliding_window", Box::new(SlidingWindow::new(50))),
        ("truncate_turns", Box::new(TurnLimit::new(20))),
        ("truncate_tokens", Box::new(TokenBudget::new(32_000))),
        ("relevance_budget", Box::new(RelevanceBudget::new(32_000))),
        ("stable_budget", Box::new(StableBudget::new(32_000))),
        ("truncate_tool_results", Box::new(ToolResultTruncator::new(2_000).expect("valid"))),
        ("clear_old_tool_results", Box::new(ClearOldToolResults::new(5))),
        ("filter_tools", Box::new(ToolFilter::names(["search"]))),
        ("redact", Box::new(Redactor::new())),
    ]
}

fn each_strategy(c: &mut Criterion) {
    let ctx = CurationContext::default();
    for &(len, label) in sizes() {
        let history = history(len);
        for (name, manager) in strategies() {
            warm(&*manager, &history);
            let mut group = c.benchmark_group(format!("strategy/{name}"));
            if len >= 10_000 {
                group.sample_size(20);
            }
            group.bench_function(BenchmarkId::from_parameter(label), |b| {
                b.iter(|| {
                    let view = manager.curate_history(&history, &ctx).expect("curate");
                    black_box(touch(&view))
                });
            });
            group.finish();
        }
    }
}

fn pipeline(c: &mut Criterion) {
    let ctx = CurationContext::default();
    let manager = ToolResultTruncator::new(2_000).expect("valid").then(TokenBudget::new(32_000));
    for &(len, label) in &sizes()[1..] {
        let history = history(len);
        warm(&manager, &history);
        c.bench_function(&format!("pipeline/truncate_then_budget/{label}"), |b| {
            b.iter(|| black_box(touch(&manager.curate_history(&history, &ctx).expect("curate"))));
        });
    }
}

/// One agent-loop iteration with the exact counter: append a message, curate, read the view.
/// The history grows by one message per iteration from 10k.
fn growing_exact(c: &mut Criterion) {
    let bpe = Bpe::new(Encoding::O200kBase).expect("o200k");
    let budget = TokenBudget::new(GROWING_BUDGET).with_counter(bpe);
    growing(c, "strategy/truncate_tokens_exact_growing/10k", &budget, 10_000);
    if !curator_benches::quick() {
        growing(c, "strategy/truncate_tokens_exact_growing/100k", &budget, 100_000);
    }
}

/// One agent-loop iteration of the default pipeline (redaction, then the budget whose views
/// keep the prompt cache, exact counts), as [`growing_exact`] does: between compactions a
/// call costs what was appended, within 2x of the token budget's.
fn growing_default(c: &mut Criterion) {
    let pipeline = StrategyConfig::default_pipeline(GROWING_BUDGET).build().expect("default");
    growing(c, "strategy/default_pipeline_growing/10k", &*pipeline, 10_000);
    if !curator_benches::quick() {
        growing(c, "strategy/default_pipeline_growing/100k", &*pipeline, 100_000);
    }
}

/// One agent-loop iteration with the default (estimating) counter, the budget alone, as
/// [`growing_exact`] does. The history and the appended messages are written for the
/// pure-Python reference (`benches/python/pair_safe.py`), which does the same job on the
/// same data.
fn growing_estimate(c: &mut Criterion) {
    let budget = TokenBudget::new(GROWING_BUDGET);
    export_for_python(&history(10_000), &appended());
    growing(c, "strategy/truncate_tokens_growing/10k", &budget, 10_000);
}

/// The budget of the growing scenarios.
const GROWING_BUDGET: u64 = 32_000;

/// The messages the growing scenarios append, in turn.
fn appended() -> Vec<curator_model::Message> {
    curator_testkit::synthetic::agent_history(2_000, 7).split_off(2)
}

/// Times `budget` over a history growing from `from` messages: per iteration, append the
/// next message, curate, read the view. One history grows through the samples (built and
/// curated once first, untimed, as the loop's earlier iterations would have), so a sample
/// times iterations of a live loop, not the first call of a new process; it starts over
/// from `from` messages once it has grown by a fifth.
fn growing(c: &mut Criterion, name: &str, budget: &dyn HistoryManager, from: usize) {
    let ctx = CurationContext::default();
    let pool = appended();
    let mut history: History<'static> = history(from);
    warm(budget, &history);
    let mut appended_so_far = 0;
    c.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                if history.len() >= from + from / 5 {
                    history = self::history(from);
                    warm(budget, &history);
                }
                let message = curator_benches::next_message(&pool, appended_so_far);
                appended_so_far += 1;
                let start = Instant::now();
                history.push(message);
                let view = budget.curate_history(&history, &ctx).expect("curate");
                black_box(touch(&view));
                total += start.elapsed();
            }
            total
        });
    });
}

/// Writes `history` and the messages appended to it, as OpenAI chat dicts, to
/// `curator-bench/pair_safe_data.json` in the target directory, with the default estimate's
/// count of each history message, which the Python reference checks its own counts against.
fn export_for_python(history: &History<'_>, pool: &[curator_model::Message]) {
    use curator_model::formats::openai::from_messages;
    use curator_strategies::{CharEstimate, TokenCounter};
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"),
        std::path::PathBuf::from,
    );
    let estimate = CharEstimate::default();
    let counts: Vec<u64> = history.messages().iter().map(|m| estimate.count_message(m)).collect();
    let data = serde_json::json!({
        "budget": GROWING_BUDGET,
        "chars_per_token": 4,
        "per_message": 3,
        "counts": counts,
        "history": from_messages(history.messages()).expect("openai"),
        "appended": from_messages(pool).expect("openai"),
    });
    let dir = target.join("curator-bench");
    std::fs::create_dir_all(&dir).expect("target dir");
    std::fs::write(dir.join("pair_safe_data.json"), data.to_string()).expect("write data");
}

/// One iteration of `Summarize` then `TokenBudget` over 10k messages once the summaries are
/// memoised (the history is already folded in earlier iterations).
fn summarize_memoised(c: &mut Criterion) {
    let ctx = CurationContext::default();
    let history = history(10_000);
    let summarize = Summarize::new(Extractive::default())
        .with_threshold(Threshold::Tokens(32_000))
        .with_keep_recent(20)
        .then(TokenBudget::new(32_000));
    warm(&summarize, &history);
    c.bench_function("summarize/memoised_then_budget/10k", |b| {
        b.iter(|| black_box(touch(&summarize.curate_history(&history, &ctx).expect("curate"))));
    });
}

/// Redaction as the first call of a process sees it: every message of the corpus (the
/// first 2,000), not memoised, each through every rule its keywords and literals call for.
fn redact_cold(c: &mut Criterion) {
    let Some(corpus) = curator_testkit::corpus::load() else { return };
    let messages: Vec<curator_model::Message> = corpus
        .iter()
        .flat_map(|c| curator_model::formats::openai::to_messages(&c.messages).expect("corpus"))
        .take(2_000)
        .collect();
    let redactor = Redactor::new();
    let mut group = c.benchmark_group("redact");
    group.sample_size(10);
    group.bench_function("cold_corpus/2k", |b| {
        b.iter(|| messages.iter().filter(|m| redactor.redact_message(m).is_some()).count());
    });
    group.finish();
}

/// Text of `len` bytes from a small vocabulary of words, paths and numbers, as tool output
/// and pasted files are.
fn words(len: usize) -> String {
    const WORDS: [&str; 12] =
        ["error", "src/parser.rs", "the", "value", "42", "0x1f", "fn", "{", "}", "=", "line", "ok"];
    let mut text = String::with_capacity(len + 16);
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    while text.len() < len {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        text.push_str(WORDS[(seed % 12) as usize]);
        text.push(if seed.is_multiple_of(9) { '\n' } else { ' ' });
    }
    text
}

/// One long task shortened to a 2,000-token budget under the exact counter, from a new
/// history each time (nothing counted beforehand): the time follows the text's length. Each
/// iteration's text differs in its last byte, so no count is remembered from the one before.
fn shorten_long(c: &mut Criterion) {
    let bpe = Bpe::new(Encoding::O200kBase).expect("o200k");
    let budget = TokenBudget::new(2_000).with_counter(bpe);
    let ctx = CurationContext::default();
    let mut group = c.benchmark_group("shorten");
    group.sample_size(10);
    for (name, text) in [
        ("words/3mb", words(3_000_000)),
        ("words/50mb", words(50_000_000)),
        // A line of `=` is one piece for the encoder, the worst case of byte-pair merging.
        ("run/3mb", "=".repeat(3_000_000)),
        ("run/50mb", "=".repeat(50_000_000)),
    ] {
        let mut round = 0_u32;
        group.bench_function(name, |b| {
            b.iter_batched(
                || {
                    round += 1;
                    let mut text = text.clone();
                    text.push_str(&round.to_string());
                    vec![
                        curator_model::Message::system("be brief"),
                        curator_model::Message::user(text),
                    ]
                },
                |messages| black_box(budget.curate_messages(&messages, &ctx).expect("shortened")),
                criterion::BatchSize::PerIteration,
            );
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    targets = each_strategy, pipeline, growing_exact, growing_default, growing_estimate, summarize_memoised, redact_cold, shorten_long
}
criterion_main!(benches);
