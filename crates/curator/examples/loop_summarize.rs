//! A conversational loop whose older turns are folded into summaries: after a few dozen
//! exchanges the agent is sent a compact summary of what was said early on, then the newest
//! turns, within a 300-token budget, and the summaries are computed once each.
//!
//! Run it with `cargo run -p curator --features loop --example loop_summarize`.

#![expect(clippy::print_stdout, reason = "an example shows what happens")]

use std::sync::{Arc, Mutex, PoisonError};

use curator::conversation_loop::{
    AiTurnSource, FnStep, Hitl, Injection, LoopBuilder, LoopConfig, StepOutcome,
};

const CONFIG: &str = r#"
conversation = true

[history_management]
strategy = "summarize"
summarizer = "extractive"
max_tokens = 300
"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut config = LoopConfig::from_toml(CONFIG)?;
    config.ai_turn_source = AiTurnSource::AllAgents;
    // What each request of the agent carried: its messages' count and whether a summary
    // was among them.
    let seen: Arc<Mutex<Vec<(usize, bool)>>> = Arc::default();
    let log = Arc::clone(&seen);
    let agent = FnStep::agent(Injection::Messages, move |call| {
        let summary = call.messages.iter().any(|m| m.text().contains("[Summary of the"));
        log.lock().unwrap_or_else(PoisonError::into_inner).push((call.messages.len(), summary));
        Ok(StepOutcome::text("Noted. Anything else for the visa file?"))
    })
    .with_system("You prepare visa applications.");
    let mut desk = LoopBuilder::new("visa-desk", config)
        .step("agent", agent)
        .step("applicant", Hitl::new("Your answer?"))
        .build()?;

    desk.run("I need a visa for Japan: which papers, which fees, which office?")?;
    for i in 1..40 {
        desk.resume(&format!("Document {i}: my passport X{i:04} was issued in Lisbon."))?;
    }

    let seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
    let first = seen.iter().position(|(_, summary)| *summary);
    println!("requests: {}", seen.len());
    match first {
        Some(first) => println!(
            "the first summary reached the agent at request {}; {} of the {} requests after it carried one",
            first + 1,
            seen[first..].iter().filter(|(_, s)| *s).count(),
            seen.len() - first
        ),
        None => println!("no request carried a summary"),
    }
    let longest = seen.iter().map(|(n, _)| *n).max().unwrap_or(0);
    println!("at most {longest} messages per request, whatever the conversation's length");
    Ok(())
}
