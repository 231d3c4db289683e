//! The built `curator` binary, run as a user would: one integration-test binary whose
//! topic files share the helpers below.
#![allow(
    clippy::unwrap_used,
    clippy::panic,
    clippy::print_stderr,
    reason = "test helpers fail loudly"
)]

mod chat;
mod commands;
mod corpus;
mod files;
mod formats;
mod input;
mod memory;
mod pipes;
mod postgres;
mod prune;
mod read_only;
mod report;
mod responses;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

pub(crate) fn curator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_curator")).args(args).output().unwrap()
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[track_caller]
pub(crate) fn fails_with(output: &Output, code: i32, message: &str) {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(code), "stderr: {stderr}");
    assert!(stderr.contains(message), "expected `{message}` in: {stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"), "{stderr}");
}

/// A small agent conversation with big tool outputs, in the OpenAI format.
pub(crate) fn conversation(steps: usize) -> Value {
    let mut messages = vec![
        json!({"role": "system", "content": "You are an agent."}),
        json!({"role": "user", "content": "Do the task."}),
    ];
    for i in 0..steps {
        let id = format!("call_{i}");
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": format!("output {i} {}", "x".repeat(3_000))}));
    }
    messages.push(json!({"role": "assistant", "content": "Done."}));
    Value::Array(messages)
}

pub(crate) fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path
}

/// The built binary, ready for arguments.
pub(crate) fn command() -> Command {
    Command::new(env!("CARGO_BIN_EXE_curator"))
}

/// JSON Lines of `n` conversations of `steps` tool calls each, with ids `c0`, `c1`...
pub(crate) fn lines(n: usize, steps: usize) -> String {
    (0..n).fold(String::new(), |mut out, i| {
        out.push_str(&json!({"id": format!("c{i}"), "messages": conversation(steps)}).to_string());
        out.push('\n');
        out
    })
}

/// Two conversations with ids `alice` and `bob` (their session keys when recorded), as a
/// JSON Lines file `runs.jsonl` in `dir`.
pub(crate) fn keyed_runs(dir: &Path) -> PathBuf {
    let lines: Vec<String> = ["alice", "bob"]
        .iter()
        .map(|id| {
            json!({"id": id, "messages": [
                {"role": "system", "content": "You are an agent."},
                {"role": "user", "content": format!("a task for {id}")},
                {"role": "assistant", "content": format!("done for {id}")}
            ]})
            .to_string()
        })
        .collect();
    write(dir, "runs.jsonl", &lines.join("\n"))
}
