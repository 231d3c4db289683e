//! The front-page agent for workers on many machines: its conversations in PostgreSQL, each
//! run holding a claim on its session (two workers never drive one session; a worker that
//! lost its claim stops before its next step).
//!
//! Run it with `CURATOR_PG_URL=postgres://user@host/db OPENAI_API_KEY=... cargo run -p
//! curator --features postgres,openai --example agent_postgres`. Without
//! `CURATOR_PG_URL`, it says so and exits.

#![expect(clippy::print_stdout, reason = "an example shows what happens")]

use curator::postgres::PgOptions;
use curator::prelude::*;
use serde_json::json;

fn main() -> Result<(), Error> {
    let Ok(url) = std::env::var("CURATOR_PG_URL") else {
        println!("skipping: set CURATOR_PG_URL to a PostgreSQL server");
        return Ok(());
    };
    // The agent: twelve lines.
    let store = PgStore::open(PgOptions::from_url(&url)?.with_schema("curator_agent")?)?;
    let model = OpenAiClient::from_env("gpt-4o-mini");
    let weather = json!({"type": "object", "properties": {"city": {"type": "string"}}});
    let tools = Tools::new().add("weather", "Today's weather in a city.", weather, |args| {
        Ok(format!("{}: light rain, 11 °C", args["city"].as_str().unwrap_or("?")))
    });
    let agent = Agent::new(model, tools)
        .system("You answer weather questions.")
        .claim(std::time::Duration::from_mins(1), std::time::Duration::from_secs(30));
    let outcome = agent.ask_claimed(&store, "user-42", "msg-1", "What is the weather in Lyon?")?;
    println!("answer: {}", outcome.text());
    Ok(())
}
