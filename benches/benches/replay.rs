//! Replaying the real transcripts of `../shared/corpus/` as an agent loop would run them:
//! the record grows message by message and is curated before every assistant message.
#![expect(clippy::expect_used, clippy::print_stderr, reason = "a bench reports why it skips")]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use curator_model::{Message, Role, formats::openai};
use curator_strategies::{
    CurationContext, History, HistoryManager, HistoryManagerExt, TokenBudget, ToolResultTruncator,
    View,
};

fn replay(c: &mut Criterion) {
    let Some(corpus) = curator_testkit::corpus::load() else {
        eprintln!("replay: skipped, no corpus");
        return;
    };
    let conversations: Vec<Vec<Message>> = corpus
        .iter()
        .map(|c| openai::to_messages(&c.messages).expect("corpus conversation"))
        .collect();
    let calls: usize = conversations
        .iter()
        .map(|m| m.iter().filter(|m| m.role() == Role::Assistant).count())
        .sum();
    let pipeline = ToolResultTruncator::new(2_000)
        .expect("valid")
        .then(TokenBudget::new(32_000).with_reserve(4_000));
    let ctx = CurationContext::default();
    let mut group = c.benchmark_group("replay");
    group.sample_size(10);
    group.throughput(Throughput::Elements(calls as u64));
    group.bench_function("corpus", |b| {
        b.iter(|| {
            for messages in &conversations {
                let mut history = History::new();
                for message in messages {
                    if message.role() == Role::Assistant {
                        let view = pipeline.curate(View::full(&history), &ctx).expect("curate");
                        black_box(view.messages());
                    }
                    history.push(message.clone());
                }
            }
        });
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(5));
    targets = replay
}
criterion_main!(benches);
