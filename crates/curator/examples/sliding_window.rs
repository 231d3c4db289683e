//! A sliding window over an agent's history: the newest messages, the system message and
//! the task always, and never a tool result without the call that asked for it.
//!
//! Run it with `cargo run -p curator --example sliding_window`.

#![expect(clippy::print_stdout, reason = "an example shows what it keeps")]

use curator::prelude::*;

fn main() -> Result<(), Error> {
    let mut history = History::new();
    history.push(Message::system("You are a build assistant."));
    history.push(Message::user("Make the build pass."));
    for step in 1..=4 {
        let id = format!("call-{step}");
        history.push(Message::assistant_with_calls(
            None,
            vec![ToolCall::new(id.as_str(), "cargo", r#"{"args": ["build"]}"#)],
        ));
        history.push(Message::tool_result(id.as_str(), format!("error[E0{step}00]: step {step}")));
    }
    history.push(Message::assistant("The build passes."));

    // The last 4 messages begin with call-3's result, whose call falls outside the window:
    // that result goes with its call instead of being sent alone.
    let window = SlidingWindow::new(4);
    let view = window.curate_history(&history, &CurationContext::default())?;
    let sent = view.to_messages();
    curator::model::validate::openai(&sent)?;
    curator::model::validate::anthropic(&sent)?;

    println!("kept {} of {} messages:", sent.len(), history.len());
    for message in &sent {
        let calls: Vec<&str> = message.tool_calls().iter().map(ToolCall::id).collect();
        let text = message.text();
        match (message.role(), calls.is_empty()) {
            (Role::Assistant, false) => println!("  assistant calls {}", calls.join(", ")),
            (Role::Tool, _) => {
                println!(
                    "  tool result for {}: {text}",
                    message.tool_call_id().unwrap_or_default()
                );
            }
            (role, _) => println!("  {role}: {text}"),
        }
    }
    println!("valid for OpenAI and Anthropic: yes");
    Ok(())
}
