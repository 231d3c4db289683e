//! Task history in an agent loop: the plan's steps organise the conversation, the model
//! summarizes and expands steps itself, and the task survives a restart (SQLite).
//!
//! The glue is the seven lines between the markers; the rest stands in for a real model
//! and real tools. Run it with `cargo run -p curator --features tasks --example task_history`.

#![expect(clippy::print_stdout, reason = "an example shows what it sends")]

use curator::model::formats::openai;
use curator::prelude::*;
use curator::tasks::{Plan, StepStatus, TaskConversation, TaskOutcome, ToolDefinition};

const SYSTEM: &str = "You fix bugs. Summarize finished steps when the context fills up.";
const STEPS: [(u32, &str); 2] = [(1, "Reproduce"), (2, "Fix")];

fn prompt() -> PromptRef {
    PromptRef::new("demo", "fixer")
}

/// A stand-in for a chat-completion client: the body a real one would send (the messages
/// in OpenAI's format, the task tools beside the caller's), and a scripted reply.
fn model(tools: &[serde_json::Value]) -> impl FnMut(&[Message]) -> Result<Message, BoxError> {
    let mut calls = 0;
    move |request| {
        let body = serde_json::json!({"messages": openai::from_messages(request)?, "tools": tools});
        assert_eq!(body["tools"].as_array().map(Vec::len), Some(4));
        calls += 1;
        Ok(match calls {
            1 => Message::assistant_with_calls(None, vec![ToolCall::new("c1", "cargo_test", "{}")]),
            2 => Message::assistant_with_calls(
                None,
                vec![ToolCall::new("p1", "context_pressure", "{}")],
            ),
            _ => Message::assistant("The test depends on HashMap order; seed 42 reproduces it."),
        })
    }
}

/// A stand-in for the caller's own tools.
fn run_tool(call: &ToolContext) -> Result<Content, Content> {
    match call.call.name() {
        "cargo_test" => Ok("test result: FAILED. 45 passed; 5 failed (seed 42)".into()),
        other => Err(format!("no tool named {other}").into()),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    // --- glue: 7 lines ---
    let store = SqliteStore::open(dir.path().join("agent.db"))?;
    let conversation = Conversation::open(&store, "job-1", prompt(), Message::system(SYSTEM))?;
    let plan = Plan::new("Fix the flaky test", STEPS).with_status(1, StepStatus::InProgress);
    let mut agent = TaskConversation::open(conversation, &plan)?;
    let tools = ToolDefinition::all().map(|tool| tool.to_openai_strict());
    agent.add_user("The parser test fails one run in ten.")?;
    let outcome = agent.run_blocking(model(&tools), run_tool, 10)?;
    // --- end of glue ---

    let TaskOutcome::Finished(answer) = outcome else { return Err("no answer".into()) };
    println!("{}\n\nanswer: {}", agent.request()?[1].text(), answer.text());
    Ok(())
}
