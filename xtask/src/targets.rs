//! The targets each scenario is measured against, from the issues that asked for them.

/// A target: scenarios whose id matches `pattern` (exactly, or by prefix when it ends with
/// `*`) must have a median at most `max_ns`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Target {
    pub(crate) pattern: &'static str,
    pub(crate) max_ns: f64,
    pub(crate) why: &'static str,
}

const US: f64 = 1_000.0;
const MS: f64 = 1_000_000.0;

/// Every target, most specific first: the first that matches a scenario applies.
pub(crate) const TARGETS: &[Target] = &[
    Target {
        pattern: "shorten/words/3mb",
        max_ns: 500.0 * MS,
        why: "a 3 MB text shortened in linear time",
    },
    Target {
        pattern: "shorten/words/50mb",
        max_ns: 10_000.0 * MS,
        why: "a 50 MB text shortened in linear time",
    },
    Target {
        pattern: "shorten/run/3mb",
        max_ns: 500.0 * MS,
        why: "a 3 MB run of one character (one piece for the encoder) shortened in linear time",
    },
    Target {
        pattern: "shorten/run/50mb",
        max_ns: 10_000.0 * MS,
        why: "a 50 MB run of one character shortened in linear time",
    },
    Target {
        pattern: "strategy/sliding_window/10k",
        max_ns: 10.0 * US,
        why: "cost grows with what is kept",
    },
    Target {
        pattern: "strategy/sliding_window/100k",
        max_ns: 10.0 * US,
        why: "cost grows with what is kept",
    },
    Target {
        pattern: "strategy/truncate_turns/10k",
        max_ns: 10.0 * US,
        why: "cost grows with what is kept",
    },
    Target {
        pattern: "strategy/truncate_turns/100k",
        max_ns: 10.0 * US,
        why: "cost grows with what is kept",
    },
    Target {
        pattern: "strategy/truncate_tokens/10k",
        max_ns: 10.0 * US,
        why: "over an already counted history",
    },
    Target {
        pattern: "strategy/truncate_tokens/100k",
        max_ns: 10.0 * US,
        why: "over an already counted history",
    },
    Target {
        pattern: "coalesce/user_message/50_turns",
        max_ns: 100.0 * US,
        why: "coalesced USER message, 50 turns, 100 definitions",
    },
    Target {
        pattern: "tasks/render_markdown/20x50",
        max_ns: 200.0 * US,
        why: "task history section, 20 steps of 50 turns",
    },
    Target {
        pattern: "tasks/append_turn/20x50",
        max_ns: 20.0 * US,
        why: "one AppendTurn on 20 steps of 50 turns",
    },
    Target {
        pattern: "strategy/relevance_budget/10k",
        max_ns: 300.0 * US,
        why: "relevance-aware retention, issue 18",
    },
    Target {
        pattern: "strategy/relevance_budget/100k",
        max_ns: 1.0 * MS,
        why: "relevance-aware retention, issue 18",
    },
    Target {
        pattern: "strategy/stable_budget/10k",
        max_ns: 300.0 * US,
        why: "as the relevance budget it compacts with, issue 46",
    },
    Target {
        pattern: "strategy/stable_budget/100k",
        max_ns: 1.0 * MS,
        why: "as the relevance budget it compacts with, issue 46",
    },
    Target { pattern: "strategy/*/1k", max_ns: 100.0 * US, why: "every strategy at 1k messages" },
    Target {
        pattern: "strategy/truncate_tokens_exact_growing/10k",
        max_ns: 1.0 * MS,
        why: "one iteration, exact counter",
    },
    Target {
        pattern: "strategy/truncate_tokens_exact_growing/100k",
        max_ns: 1.0 * MS,
        why: "one iteration, exact counter",
    },
    Target {
        pattern: "strategy/default_pipeline_growing/*",
        max_ns: 2.0 * MS,
        why: "one iteration of the default pipeline: within 2x of the token budget's target, issue 46",
    },
    Target {
        pattern: "pipeline/truncate_then_budget/10k",
        max_ns: 50.0 * US,
        why: "truncate then budget, warm",
    },
    Target {
        pattern: "session/record_and_request/*",
        max_ns: 50.0 * US,
        why: "record + curate, MemoryStore",
    },
    Target {
        pattern: "sqlite/latest_of_key/1m",
        max_ns: 1.0 * MS,
        why: "a key's latest evaluation in 1M rows: an index lookup",
    },
    Target {
        pattern: "postgres/latest_of_key/1m",
        max_ns: 1.0 * MS,
        why: "a key's latest evaluation among 1M rows: an index lookup",
    },
    Target { pattern: "session/snapshot/10k", max_ns: 20.0 * MS, why: "snapshot of 10k messages" },
    Target { pattern: "session/restore/10k", max_ns: 20.0 * MS, why: "restore of 10k messages" },
    Target {
        pattern: "sqlite/append_one/normal",
        max_ns: 200.0 * US,
        why: ">= 5k single appends/s",
    },
    Target {
        pattern: "sqlite/append_batch*/10k",
        max_ns: 100.0 * MS,
        why: ">= 100k messages/s in batches",
    },
    Target {
        pattern: "loop/memory/*/p99",
        max_ns: 100.0 * US,
        why: "loop overhead p99, MemoryStore",
    },
    Target {
        pattern: "loop/sqlite/*/p99",
        max_ns: 1.0 * MS,
        why: "loop overhead p99, SqliteStore Normal",
    },
    Target { pattern: "loop/*/*/p50", max_ns: 5.0 * MS, why: "the spec's 5 ms per iteration" },
    Target {
        pattern: "conversation/hitl_*/*/p50",
        max_ns: 5.0 * MS,
        why: "the spec's 5 ms per iteration, wall clock, checkpointed (issue 31)",
    },
    Target {
        pattern: "conversation/hitl_*/*/p99",
        max_ns: 25.0 * MS,
        why: "a human-in-the-loop iteration's tail, wall clock, checkpointed",
    },
    Target {
        pattern: "conversation/hitl_*/*/cpu_*",
        max_ns: 1.0 * MS,
        why: "what the loop computes per human-in-the-loop iteration",
    },
    Target {
        pattern: "conversation/summarize_*/*/p50",
        max_ns: 5.0 * MS,
        why: "the summarize strategy, the spec's 5 ms per iteration at up to 40,000 turns (issue 50)",
    },
    Target {
        pattern: "conversation/summarize_*/*/p99",
        max_ns: 25.0 * MS,
        why: "a summarizing iteration's tail: the one that folds a new chunk",
    },
    Target {
        pattern: "conversation/*/*/p99",
        max_ns: 200.0 * US,
        why: "conversational loop overhead p99, flat in history length (issue 19)",
    },
    Target {
        pattern: "conversation/*/*/p50",
        max_ns: 200.0 * US,
        why: "conversational loop overhead p50",
    },
    Target {
        pattern: "summarize/memoised_then_budget/10k",
        max_ns: 1.0 * MS,
        why: "memoised summary, then a token budget",
    },
];

/// Whether `id` matches `pattern`: `*` matches one path segment, or the rest when last.
pub(crate) fn matches(pattern: &str, id: &str) -> bool {
    let mut p = pattern.split('/');
    let mut i = id.split('/');
    loop {
        match (p.next(), i.next()) {
            (None, None) => return true,
            (Some("*"), Some(_)) => {}
            (Some(p), Some(i)) if p.ends_with('*') && i.starts_with(&p[..p.len() - 1]) => {}
            (Some(p), Some(i)) if p == i => {}
            _ => return false,
        }
    }
}

/// The target for a scenario, if any.
pub(crate) fn target_for(id: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| matches(t.pattern, id))
}

/// A target relative to another scenario of the same run: the median of `scenario` at most
/// `ratio` times the median of `of`. It takes the place of a fixed target when both ran.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Relative {
    pub(crate) scenario: &'static str,
    pub(crate) of: &'static str,
    pub(crate) ratio: f64,
    pub(crate) why: &'static str,
}

const IN_A_SESSION: &str =
    "a loop iteration in a session, the default pipeline against the bare token budget (issue 46)";

/// Every relative target.
pub(crate) const RELATIVE: &[Relative] = &[
    Relative {
        scenario: "session/sqlite_loop/default_pipeline/10k",
        of: "session/sqlite_loop/token_budget/10k",
        ratio: 2.0,
        why: IN_A_SESSION,
    },
    Relative {
        scenario: "session/sqlite_loop/default_pipeline/100k",
        of: "session/sqlite_loop/token_budget/100k",
        ratio: 2.0,
        why: IN_A_SESSION,
    },
];

/// The relative target of scenario `id`, if it has one.
pub(crate) fn relative_for(id: &str) -> Option<&'static Relative> {
    RELATIVE.iter().find(|r| r.scenario == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_segments() {
        assert!(matches("strategy/*/1k", "strategy/redact/1k"));
        assert!(!matches("strategy/*/1k", "strategy/redact/10k"));
        assert!(matches("sqlite/append_batch*/10k", "sqlite/append_batch_corpus/10k"));
        assert!(matches("loop/memory/*/p99", "loop/memory/10000/p99"));
        assert!(!matches("loop/memory/*/p99", "loop/memory/10000/p50"));
        assert_eq!(target_for("strategy/sliding_window/1k").map(|t| t.max_ns), Some(100_000.0));
        assert_eq!(target_for("strategy/sliding_window/10k").map(|t| t.max_ns), Some(10_000.0));
        assert!(target_for("strategy/passthrough/100").is_none());
        // The summarize strategy's own targets come before the loop's general ones.
        assert_eq!(
            target_for("conversation/summarize_turns/40000/p50").map(|t| t.max_ns),
            Some(5.0 * MS)
        );
        assert_eq!(
            target_for("conversation/truncate_tokens_template/10000/p50").map(|t| t.max_ns),
            Some(200.0 * US)
        );
    }
}
