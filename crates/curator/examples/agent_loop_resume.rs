//! The main job with a real crash: a worker process records its conversation in SQLite
//! under its session key, curating before each model call, and is killed (SIGKILL) while
//! its tool runs. A new process opens the same key, finds the pending call, runs it (and
//! only it), and finishes.
//!
//! Run it with `cargo run -p curator --example agent_loop_resume`.

#![expect(clippy::print_stdout, reason = "an example shows what happens")]

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use curator::prelude::*;

/// A stand-in for the model: it asks for the invoice total once, then answers with it.
fn model(request: &[Message]) -> Message {
    match request.last() {
        Some(last) if last.role() == Role::Tool => {
            Message::assistant(format!("The invoice total is {}.", last.text()))
        }
        _ => Message::assistant_with_calls(
            None,
            vec![ToolCall::new("call-1", "invoice_total", r#"{"invoice": "INV-7"}"#)],
        ),
    }
}

/// One process of the worker. With `slow_tool`, the tool announces that it started and
/// then takes its time (long enough to be killed).
fn worker(db: &Path, slow_tool: bool) -> Result<Option<String>, Error> {
    let store = SqliteStore::open(db)?;
    let budget = TokenBudget::new(4_000).with_reserve(500);
    let system = Message::system("You answer billing questions.");
    let mut c = Conversation::open(&store, "customer-7", PromptRef::new("billing", "v1"), system)?;
    println!("opened: resumed = {}", c.is_resumed());
    loop {
        match c.next_step() {
            Action::WaitForUser => {
                c.add_user("What is the total of invoice INV-7?")?;
            }
            Action::CallModel => {
                let request = c.request(&budget, &CurationContext::default())?.to_messages();
                c.record_assistant(model(&request))?;
            }
            Action::Run(calls) => {
                for call in calls {
                    println!("running {} (is_resume = {})", call.call_id(), call.is_resume);
                    if slow_tool {
                        println!("tool started");
                        std::thread::sleep(std::time::Duration::from_mins(1));
                    }
                    c.record_tool_result(call.call_id(), Ok::<_, String>("EUR 1,250.00"))?;
                }
            }
            _ => return Ok(c.history().messages().last().map(|m| m.text().into_owned())),
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some("--worker") {
        let db = args.next().ok_or("--worker needs the database path")?;
        worker(Path::new(&db), true)?;
        return Ok(());
    }
    let dir = std::env::temp_dir().join(format!("curator-example-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let db = dir.join("agents.db");

    // The first process: killed as soon as its tool has started.
    let mut child = Command::new(std::env::current_exe()?)
        .arg("--worker")
        .arg(&db)
        .stdout(Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no output from the worker")?;
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        println!("worker 1: {line}");
        if line == "tool started" {
            child.kill()?; // SIGKILL: no destructor, no flush
            break;
        }
    }
    println!("worker 1: killed ({})", child.wait()?);

    // A new process (here, the same one) opens the same key and finishes.
    let answer = worker(&db, false)?;
    println!("answer: {}", answer.unwrap_or_default());
    let store = SqliteStore::open(&db)?;
    let evaluations = store.evaluations_of(&SessionKey::new("customer-7"))?;
    println!("recorded: {} conversation, {} messages", evaluations.len(), evaluations[0].messages);
    drop(store);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
