//! The front-page agent: a tool-using agent against an OpenAI-compatible server, its
//! conversations in SQLite keyed by user, the default pipeline, exactly-once resume. Kill it
//! while its tool runs and run it again: it finishes the call and answers, the message
//! recorded once.
//!
//! Run it with `OPENAI_API_KEY=... cargo run -p curator --features openai --example agent`
//! (`OPENAI_BASE_URL` for another server: vLLM, Ollama, `LiteLLM`...; `AGENT_DB` for the
//! file, `agent.db` by default).

#![expect(clippy::print_stdout, reason = "an example shows what happens")]

use curator::prelude::*;
use serde_json::json;

fn main() -> Result<(), Error> {
    let db = std::env::var("AGENT_DB").unwrap_or_else(|_| "agent.db".into());
    // The agent: ten lines.
    let store = SqliteStore::open(db)?;
    let model = OpenAiClient::from_env("gpt-4o-mini");
    let weather = json!({"type": "object", "properties": {"city": {"type": "string"}}});
    let tools = Tools::new().add("weather", "Today's weather in a city.", weather, |args| {
        slow_when_asked(); // for the example's test: a tool that is killed while it runs
        Ok(format!("{}: light rain, 11 °C", args["city"].as_str().unwrap_or("?")))
    });
    let agent = Agent::new(model, tools).system("You answer weather questions.").max_tokens(8_000);
    let outcome = agent.ask(&store, "user-42", "msg-1", "What is the weather in Lyon?")?;
    println!("answer: {}", outcome.text());
    Ok(())
}

/// With `AGENT_SLOW_TOOL` set, the tool says it started and takes its time.
fn slow_when_asked() {
    if std::env::var_os("AGENT_SLOW_TOOL").is_some() {
        println!("tool started");
        std::thread::sleep(std::time::Duration::from_mins(1));
    }
}
