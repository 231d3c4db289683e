//! The front-page agent on tokio's multi-threaded runtime: three users asked at once, each
//! in its own task, their conversations in one SQLite file.
//!
//! Run it with `OPENAI_API_KEY=... cargo run -p curator --features openai,tokio --example
//! agent_async` (`OPENAI_BASE_URL` for another server, `AGENT_DB` for the file).

#![expect(clippy::print_stdout, reason = "an example shows what happens")]

use curator::prelude::*;
use serde_json::json;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Error> {
    let db = std::env::var("AGENT_DB").unwrap_or_else(|_| "agent.db".into());
    // The agent: ten lines.
    let store = std::sync::Arc::new(SqliteStore::open(db)?);
    let weather =
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    let tools = Tools::new().add("weather", "Today's weather in a city.", weather, |args| {
        Ok(format!("{}: light rain, 11 °C", args["city"].as_str().unwrap_or("?")))
    });
    let agent = Agent::new(OpenAiClient::from_env("gpt-4o-mini"), tools)
        .system("You answer weather questions.");
    let ask = |user: &str| {
        agent.ask_async(
            std::sync::Arc::clone(&store),
            user.to_owned(),
            "msg-1",
            "What is the weather in Lyon?",
        )
    };
    let (a, b, c) = tokio::try_join!(
        tokio::spawn(ask("user-1")),
        tokio::spawn(ask("user-2")),
        tokio::spawn(ask("user-3"))
    )
    .map_err(|e| curator::session::Error::Join(Box::new(e)))?;
    for outcome in [a?, b?, c?] {
        println!("answer: {}", outcome.text());
    }
    Ok(())
}
