//! The agent loop in async code (tokio): `run_async` drives an `AsyncConversation`, whose
//! store calls run on tokio's blocking threads, never on the runtime's own.
//!
//! Run it with `cargo run -p curator --features tokio --example async_agent`.

#![expect(clippy::print_stdout, reason = "an example shows what happens")]

use std::sync::Arc;

use curator::prelude::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("curator-async-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let store = Arc::new(SqliteStore::open(dir.join("agents.db"))?);
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    let outcome = runtime.block_on(async {
        let mut c = AsyncConversation::open(
            Arc::clone(&store),
            "user-42",
            PromptRef::new("weather", "v1"),
            Message::system("You report the weather."),
        )
        .await?;
        c.add_user("Is it raining in Lyon?").await?;
        let budget = TokenBudget::new(8_000);
        run_async(
            &mut c,
            &budget,
            &CurationContext::default(),
            // The model: an async call in a real program.
            async |request: &[Message]| -> Result<Message, BoxError> {
                Ok(match request.last() {
                    Some(last) if last.role() == Role::Tool => {
                        Message::assistant(format!("Lyon: {}.", last.text()))
                    }
                    _ => Message::assistant_with_calls(
                        None,
                        vec![ToolCall::new("c1", "weather", r#"{"city": "Lyon"}"#)],
                    ),
                })
            },
            // The tool.
            async |call: &ToolContext| {
                println!("tool {} for {}", call.call.name(), call.call.arguments());
                Ok("light rain, 11 °C".into())
            },
            8,
        )
        .await
    })?;
    match outcome {
        RunOutcome::Finished(answer) => println!("answer: {}", answer.text()),
        other => println!("not finished: {other:?}"),
    }
    let recorded = store.evaluations_of(&SessionKey::new("user-42"))?;
    println!("recorded: {} messages", recorded[0].messages);
    drop(store);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
