//! The default pipeline against `TokenBudget` alone on the real transcripts: the evidence
//! kept must be higher at hardly more tokens (issue 18's measure, at 4,000 tokens).

use serde_json::Value;

use super::{curator, text};

/// Tokens sent over all calls, mean evidence and the worst decile's mean, from `--json`.
fn totals(args: &[&str]) -> (u64, f64, f64) {
    let out = curator(args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let sent = doc["totals"]["sent_tokens"].as_u64().unwrap();
    let mean = doc["evidence"]["mean"].as_f64().unwrap();
    let worst = doc["evidence"]["worst_decile"].as_f64().unwrap();
    (sent, mean, worst)
}

#[test]
fn the_default_pipeline_keeps_more_evidence_than_the_budget_alone_at_4000_tokens() {
    if curator_testkit::corpus::load().is_none() {
        return;
    }
    let dir = curator_testkit::corpus::dir();
    let dir = dir.to_str().unwrap();
    let config = r#"{"strategy": "compose", "steps": [
        {"strategy": "redactor"},
        {"strategy": "tool_result_truncator", "max_length": 4000},
        {"strategy": "relevance_budget", "max_tokens": 4000, "tokenizer": "o200k"}]}"#;
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), config).unwrap();
    let config = file.path().to_str().unwrap();
    let (budget_sent, budget_mean, budget_worst) =
        totals(&["replay", dir, "--max-tokens", "4000", "--json"]);
    let (sent, mean, worst) = totals(&["replay", dir, "--config", config, "--json"]);
    assert!(
        mean > budget_mean && worst > budget_worst,
        "{mean} {worst} against {budget_mean} {budget_worst}"
    );
    // Measured on the corpus: 97.6% and 75.9% (issue 29: system messages are sent whole, so
    // OpenHands' 1,158-token system prompt beside 1,749 tokens of tool schemas leaves about
    // 1,090 of 4,000 tokens to the rest; 97.9% and 78.8% when system prompts were cut). A
    // margin below those numbers, so that a change of tokenisation by a point does not fail
    // this.
    assert!(mean >= 0.97 && worst >= 0.74, "mean {mean}, worst decile {worst}");
    #[expect(clippy::cast_precision_loss, reason = "token totals")]
    let ratio = sent as f64 / budget_sent as f64;
    assert!(ratio <= 1.05, "{sent} tokens sent against {budget_sent}");
}
