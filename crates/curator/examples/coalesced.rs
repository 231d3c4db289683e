//! A code-executing agent with `SingleUserCoalesced`: each reply's program runs, its
//! definitions, tool calls and output become a turn, and every request is one USER message
//! built from the turns.
//!
//! The glue is the five lines between the markers; the rest stands in for a real model and
//! a real interpreter. Run it with `cargo run -p curator --features coalesce --example coalesced`.

#![expect(clippy::print_stdout, reason = "an example shows what it sends")]

use curator::coalesce::{
    CoalescedConversation, CoalescedOutcome, Definition, Executed, Limits, RecordedToolCall, Run,
    SingleUserCoalesced, ToolSpec, TurnDraft, TurnResult, Value, to_clojure,
};
use curator::prelude::*;

const SYSTEM: &str = "You write PTC-Lisp.";

fn prompt() -> PromptRef {
    PromptRef::new("demo", "lisp")
}

fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec::new("search-reviews", ["query"], "query:string -> list")]
}

/// A stand-in for the model: one program per call.
fn model() -> impl FnMut(&[Message]) -> Result<Message, BoxError> {
    let mut programs =
        ["(def reviews (tool/search-reviews \"laptops\"))", "(return (best reviews))"].into_iter();
    move |request| {
        assert!(request[1].text().starts_with("Find the best-rated laptop"));
        let program = programs.next().ok_or("no more programs")?;
        Ok(Message::assistant(format!("```clojure\n{program}\n```")))
    }
}

/// A stand-in for the interpreter: a tool result that arrives as JSON becomes a value.
#[expect(clippy::unnecessary_wraps, reason = "the shape the loop takes; real ones fail")]
fn execute(mut draft: TurnDraft) -> Result<Executed, BoxError> {
    if draft.program.starts_with("(return") {
        draft.result = Some(TurnResult::Returned(Value::from("L1")));
        return Ok(Executed::Finished(draft));
    }
    let json = serde_json::json!([{"sku": "L1", "stars": 4.6}, {"sku": "L2", "stars": 3.1}]);
    let reviews = Value::from(json);
    let call = RecordedToolCall::new("search-reviews", Value::from("laptops"), reviews.clone());
    draft.tool_calls = vec![call];
    draft.memory = vec![Definition { name: "reviews".into(), value: reviews }];
    Ok(Executed::Continue(draft))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // --- glue: 5 lines ---
    let run = Run::new(SYSTEM, "Find the best-rated laptop").with_tools(tools());
    let system = Message::system(run.system.as_str());
    let conversation = Conversation::open(MemoryStore::new(), "job-1", prompt(), system)?;
    let mut agent = CoalescedConversation::open(conversation, run, SingleUserCoalesced::default())?;
    let outcome = agent.run_blocking(model(), execute)?;
    // --- end of glue ---

    let CoalescedOutcome::Finished(turn) = outcome else { return Err("out of turns".into()) };
    let answer = match turn.result() {
        TurnResult::Returned(value) => to_clojure(value, Limits::SAMPLE),
        TurnResult::Failed(error) => format!("failed: {error}"),
    };
    println!("{}\n\nanswer: {answer}", agent.request()[1].text());
    Ok(())
}
