//! Shared helpers of the benchmark suite: histories counted and memoised before timing, so
//! that benches measure one agent-loop iteration, not the first curate call; and the store
//! benches, one set for every session store ([`store`]).
#![expect(
    clippy::expect_used,
    reason = "a bench of a failing setup measures nothing and must stop"
)]

use curator_model::{Message, PromptRef, Role};
use curator_session::{Conversation, SessionStore};
use curator_strategies::{CurationContext, History, HistoryManager, View};

pub mod store;

/// The history sizes most scenarios run at: up to 100k, or up to 10k in a quick run.
pub fn sizes() -> &'static [(usize, &'static str)] {
    const ALL: &[(usize, &str)] =
        &[(100, "100"), (1_000, "1k"), (10_000, "10k"), (100_000, "100k")];
    if quick() { &ALL[..3] } else { ALL }
}

/// A synthetic agent history of `len` messages, as a [`History`].
pub fn history(len: usize) -> History<'static> {
    let mut messages = curator_testkit::synthetic::agent_history(len, 42);
    messages.truncate(len);
    History::from(messages)
}

/// Runs `manager` once over `history` and reads every message of the view, as a warm-up that
/// fills the history's caches the way earlier loop iterations would.
///
/// # Panics
///
/// When the manager fails: a bench of a failing configuration measures nothing.
pub fn warm(manager: &dyn HistoryManager, history: &History<'_>) {
    let view = manager
        .curate(View::full(history), &CurationContext::default())
        .expect("warm-up curate failed");
    touch(&view);
}

/// Reads every message of a view (applying lazy transformations), returning a checksum so
/// the work cannot be optimised away.
pub fn touch(view: &View<'_>) -> usize {
    view.iter().map(|e| e.message.text().len() + usize::from(e.message.role() as u8)).sum()
}

/// One message an agent loop appends per iteration, cycling through a pool.
pub fn next_message(pool: &[Message], i: usize) -> Message {
    pool[i % pool.len()].clone()
}

/// A conversation in `store` with the first `len` messages of the synthetic history
/// recorded through the driver, plus results for any calls the cut left waiting, so that it
/// is ready for the next assistant reply.
///
/// # Panics
///
/// When recording fails.
pub fn recorded_conversation<S: SessionStore>(store: S, len: usize) -> Conversation<S> {
    let messages = curator_testkit::synthetic::agent_history(len, 42);
    let mut iter = messages.into_iter();
    let system = iter.next().expect("a system message");
    let mut conversation =
        Conversation::start(store, "bench", PromptRef::new("bench", "agent"), system)
            .expect("start");
    for message in iter.take(len - 1) {
        match message.role() {
            Role::User => conversation
                .add_user(message.content().cloned().unwrap_or_else(|| "".into()))
                .map(|_| ()),
            Role::Assistant => conversation.record_assistant(message).map(|_| ()),
            Role::Tool => {
                let id = message.tool_call_id().unwrap_or_default().to_owned();
                let output = message.content().cloned().unwrap_or_else(|| "".into());
                conversation.record_tool_result(&id, Ok::<_, String>(output)).map(|_| ())
            }
            Role::System => Ok(()),
        }
        .expect("record");
    }
    // A cut in the middle of a step leaves calls waiting: answer them, as the loop would.
    for context in conversation.tool_contexts() {
        conversation
            .record_tool_result(context.call_id(), Ok::<_, String>("done"))
            .expect("record");
    }
    conversation
}

/// Where benches that compute their own statistics write them, for `cargo xtask bench`:
/// `<target>/curator-bench/`.
pub fn report_dir() -> std::path::PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"),
        std::path::PathBuf::from,
    );
    target.join("curator-bench")
}

/// Whether `cargo xtask bench --quick` asked for a shortened run.
pub fn quick() -> bool {
    std::env::var_os("CURATOR_BENCH_QUICK").is_some()
}

/// The `p`-th percentile (0 to 100) of sorted durations, by nearest rank.
pub fn percentile(sorted_ns: &[u64], p: usize) -> u64 {
    if sorted_ns.is_empty() {
        return 0;
    }
    let rank = (p * sorted_ns.len()).div_ceil(100);
    sorted_ns[rank.clamp(1, sorted_ns.len()) - 1]
}
