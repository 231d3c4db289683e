//! Relevance-aware retention: under a tight budget, a recency-only budget drops the early
//! tool result the agent now needs (the path of the failing test); `RelevanceBudget` keeps
//! it, because it shares rare terms with the newest messages.
//!
//! Run it with `cargo run -p curator --example relevance`.

#![expect(clippy::print_stdout, reason = "an example shows what it keeps")]

use curator::prelude::*;

fn main() -> Result<(), Error> {
    let mut history = History::new();
    history.push(Message::system("You fix failing tests."));
    history.push(Message::user("CI is red. Find and fix the failing test."));
    let call = |history: &mut History<'_>, id: &str, tool: &str, result: String| {
        history.push(Message::assistant_with_calls(None, vec![ToolCall::new(id, tool, "{}")]));
        history.push(Message::tool_result(id, result));
    };
    call(
        &mut history,
        "c1",
        "run_tests",
        "FAILED tests/billing/test_invoice_rounding.py::test_half_cent - assert 10.01 == 10.00"
            .to_owned(),
    );
    for n in 2..=12 {
        let listing = format!("src/module_{n}/file_{n}.py: {n}00 lines, no findings\n").repeat(6);
        call(&mut history, &format!("c{n}"), "scan", listing);
    }
    history.push(Message::user("Open the failing invoice rounding test and fix test_half_cent."));

    let by_recency = TokenBudget::new(700);
    let by_relevance = RelevanceBudget::new(700);
    for (name, manager) in
        [("TokenBudget", &by_recency as &dyn HistoryManager), ("RelevanceBudget", &by_relevance)]
    {
        let view = manager.curate_history(&history, &CurationContext::default())?;
        let sent = view.to_messages();
        curator::model::validate::openai(&sent)?;
        let kept = sent.iter().any(|m| m.text().contains("tests/billing/test_invoice_rounding.py"));
        println!(
            "{name}: {} of {} messages sent; the failing test's path kept: {}",
            sent.len(),
            history.len(),
            if kept { "yes" } else { "no" }
        );
    }
    Ok(())
}
