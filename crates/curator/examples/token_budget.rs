//! A token budget with exact OpenAI counts (`o200k_base`, the encoding of GPT-4o and later):
//! the newest history that fits, with the system message and the task pinned, and room kept
//! for the reply.
//!
//! Run it with `cargo run -p curator --features tiktoken --example token_budget`.

#![expect(clippy::print_stdout, reason = "an example shows what it sends")]

use curator::prelude::*;
use curator::strategies::{Bpe, Encoding};

fn main() -> Result<(), Error> {
    let mut history = History::new();
    history.push(Message::system("You are a log analyst."));
    history.push(Message::user("Why did the nightly job fail?"));
    for day in 1..=30 {
        let id = format!("read-{day}");
        history.push(Message::assistant_with_calls(
            None,
            vec![ToolCall::new(id.as_str(), "read_log", format!(r#"{{"day": {day}}}"#))],
        ));
        let log =
            format!("2026-11-{day:02} nightly: {} rows copied, 0 errors\n", 1_000 * day).repeat(8);
        history.push(Message::tool_result(id.as_str(), log));
    }

    let counter = Bpe::new(Encoding::O200kBase)?;
    let total: u64 = history.messages().iter().map(|m| counter.count_message(m)).sum();
    let budget = TokenBudget::new(2_000).with_reserve(500).with_counter(counter.clone());
    let view = budget.curate_history(&history, &CurationContext::default())?;
    let sent = view.to_messages();
    let used: u64 = sent.iter().map(|m| counter.count_message(m)).sum();
    curator::model::validate::openai(&sent)?;

    println!("history: {} messages, {total} tokens (o200k_base)", history.len());
    println!(
        "sent: {} messages, {used} tokens, within 2000 - 500 reserved: {}",
        sent.len(),
        used <= 1_500
    );
    println!("first two: {} / {}", sent[0].role(), sent[1].text());
    let newest = sent.last().map(|m| m.text().lines().next().unwrap_or_default().to_owned());
    println!("newest kept: {}", newest.unwrap_or_default());
    Ok(())
}
