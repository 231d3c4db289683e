//! The front-page agent on tokio's multi-threaded runtime: the ask is a `Send + 'static`
//! future, spawned as it is.
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
    let store = SqliteStore::open(db)?;
    let model = OpenAiClient::from_env("gpt-4o-mini");
    let weather = json!({"type": "object", "properties": {"city": {"type": "string"}}});
    let tools = Tools::new().add("weather", "Today's weather in a city.", weather, |args| {
        Ok(format!("{}: light rain, 11 °C", args["city"].as_str().unwrap_or("?")))
    });
    let agent = Agent::new(model, tools).system("You answer weather questions.").max_tokens(8_000);
    let ask = agent.ask_async(store, "user-42", "msg-1", "What is the weather in Lyon?");
    let outcome = tokio::spawn(ask).await??;
    println!("answer: {}", outcome.text());
    Ok(())
}
