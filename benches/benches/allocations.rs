//! Heap allocations per curate call, counted by a global allocator (dhat in testing mode).
//!
//! `SlidingWindow` and `TokenBudget` over 10,000 messages, on two histories that differ only
//! in how long the message contents are (10x): if kept messages were cloned, the longer
//! history would allocate more (or bigger) blocks. Results go to
//! `target/curator-bench/allocations.json` for `cargo xtask bench`.
#![expect(
    clippy::expect_used,
    clippy::print_stdout,
    reason = "a bench program that reports what it measures"
)]

use curator_benches::report_dir;
use curator_model::{Content, Message};
use curator_strategies::{
    CurationContext, History, HistoryManager, SlidingWindow, TokenBudget, View,
};

/// A strategy's name, and the instance run on the short and on the long history.
type Pair = (&'static str, Box<dyn HistoryManager>, Box<dyn HistoryManager>);

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// The synthetic history with every content repeated `factor` times.
fn history(factor: usize) -> History<'static> {
    let messages = curator_testkit::synthetic::agent_history(10_000, 42)
        .into_iter()
        .take(10_000)
        .map(|m| {
            let text = m.text().repeat(factor);
            let content = m.content().map(|_| Content::Text(text));
            m.clone_with_content(content)
        })
        .collect::<Vec<Message>>();
    History::from(messages)
}

/// (blocks, bytes) allocated by one curate call, after a warm-up call.
fn count(manager: &dyn HistoryManager, history: &History<'_>) -> (u64, u64) {
    let ctx = CurationContext::default();
    drop(manager.curate(View::full(history), &ctx).expect("warm-up"));
    let before = dhat::HeapStats::get();
    let view = manager.curate(View::full(history), &ctx).expect("curate");
    let after = dhat::HeapStats::get();
    drop(view);
    (after.total_blocks - before.total_blocks, after.total_bytes - before.total_bytes)
}

fn main() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let short = history(1);
    let long = history(10);
    let mut rows = Vec::new();
    // Each strategy runs on both histories with a bound that keeps the same messages: a
    // window counts messages; a budget ten times larger covers contents ten times longer.
    let pairs: [Pair; 2] = [
        ("sliding_window", Box::new(SlidingWindow::new(50)), Box::new(SlidingWindow::new(50))),
        (
            "truncate_tokens",
            Box::new(TokenBudget::new(32_000)),
            Box::new(TokenBudget::new(320_000)),
        ),
    ];
    for (name, for_short, for_long) in &pairs {
        let kept_short = for_short
            .curate(View::full(&short), &CurationContext::default())
            .expect("curate")
            .len();
        let kept_long =
            for_long.curate(View::full(&long), &CurationContext::default()).expect("curate").len();
        let (short_blocks, short_bytes) = count(for_short.as_ref(), &short);
        let (long_blocks, long_bytes) = count(for_long.as_ref(), &long);
        println!(
            "alloc/{name}/10k: {short_blocks} blocks ({short_bytes} B) keeping {kept_short} messages; \
             {long_blocks} blocks ({long_bytes} B) keeping {kept_long} messages 10x longer"
        );
        rows.push(serde_json::json!({
            "strategy": name, "messages": 10_000,
            "short": {"blocks": short_blocks, "bytes": short_bytes, "kept": kept_short},
            "long": {"blocks": long_blocks, "bytes": long_bytes, "kept": kept_long},
        }));
    }
    let dir = report_dir();
    std::fs::create_dir_all(&dir).expect("report dir");
    std::fs::write(
        dir.join("allocations.json"),
        serde_json::to_string_pretty(&rows).expect("json"),
    )
    .expect("write report");
}
