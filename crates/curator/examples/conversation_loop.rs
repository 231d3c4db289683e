//! A conversational loop configured in TOML: a support desk whose agent step sees the
//! conversation so far (injected as a templated block), a human step that pauses the loop,
//! and a resume in another "process" from the SQLite checkpoint.
//!
//! Run it with `cargo run -p curator --features loop --example conversation_loop`.

#![expect(clippy::print_stdout, reason = "an example shows what happens")]

use curator::conversation_loop::{
    ConversationLoop, Defaults, FnStep, Hitl, Injection, LoopBuilder, LoopConfig, LoopOutcome,
    StepOutcome,
};
use curator::prelude::*;

const CONFIG: &str = r#"
conversation = true
ai_turn_source = "named_steps"
named_steps = ["clarify"]
user_turn_sources = ["hitl"]
max_iterations = 5
history_template = """
<history>
{% for turn in history %}<turn role="{{ turn.role }}">{{ turn.content }}</turn>
{% endfor %}</history>"""

[history_management]
strategy = "truncate_tokens"
max_tokens = 1200
"#;

/// The desk: the agent asks until it knows the order number, then the loop ends.
fn desk(store: SqliteStore) -> Result<ConversationLoop, Error> {
    let config = LoopConfig::from_toml(CONFIG)?;
    Ok(LoopBuilder::new("support", config)
        .defaults(Defaults::default())
        .step(
            "clarify",
            FnStep::agent(Injection::Prompt, |call| {
                // The prompt holds the history block: the agent sees every earlier turn.
                let prompt =
                    call.messages.last().map(|m| m.text().into_owned()).unwrap_or_default();
                Ok(StepOutcome::text(if prompt.contains("order 42") {
                    "Thanks: order 42 is on its way."
                } else {
                    "Which order is it?"
                }))
            })
            .with_system("You are a support agent."),
        )
        .step("customer", Hitl::new("Your answer?"))
        .exit_when(|p| p.output("clarify").is_some_and(|o| o.starts_with("Thanks")))
        .store(store, "customer-7")
        .build()?)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("curator-loop-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("support.db");

    let mut l = desk(SqliteStore::open(&path)?)?;
    let outcome = l.run("My parcel never arrived.")?;
    if let LoopOutcome::Paused { step, prompt } = &outcome {
        println!("paused at {step}: {}", prompt.as_deref().unwrap_or_default());
    }
    drop(l); // the process ends while the customer thinks

    let mut l = desk(SqliteStore::open(&path)?)?; // another process
    let mut outcome = l.resume("It is order 42.")?;
    while let LoopOutcome::Paused { .. } = outcome {
        outcome = l.resume("Thank you.")?;
    }
    println!("finished: {}", matches!(outcome, LoopOutcome::Finished { .. }));
    for turn in l.turns() {
        println!("{}: {}", turn.role, turn.content);
    }
    drop(l);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
