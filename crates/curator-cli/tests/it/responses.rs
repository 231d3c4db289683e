//! The OpenAI Responses API items format on the command line (`--format responses`, `auto`).

use serde_json::{Value, json};

use crate::{curator, fails_with, text, write};

/// A session as the OpenAI Agents SDK stores it.
fn session(reasoning: bool) -> Value {
    let mut items = vec![
        json!({"role": "developer", "content": "You answer weather questions."}),
        json!({"role": "user", "content": "Weather in Paris?"}),
    ];
    if reasoning {
        items.push(json!({"type": "reasoning", "id": "rs_01", "summary": [
            {"type": "summary_text", "text": "I need the weather tool."}], "encrypted_content": "gAAA=="}));
    }
    items.extend([
        json!({"type": "function_call", "id": "fc_01", "call_id": "call_a", "name": "weather",
            "arguments": "{\"city\":\"Paris\"}", "status": "completed"}),
        json!({"type": "function_call_output", "call_id": "call_a", "output": "Paris: 18°C"}),
        json!({"type": "message", "id": "msg_01", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": "18°C in Paris.", "annotations": [], "logprobs": []}]}),
    ]);
    Value::Array(items)
}

fn run(args: &[&str], input: &str) -> (std::process::Output, Option<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "in.json", input);
    let mut all = vec!["curate", path.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = curator(&all);
    let doc = serde_json::from_slice(&out.stdout).ok();
    (out, doc)
}

#[test]
fn responses_items_pass_through_curate_unchanged_read_explicitly_or_detected() {
    let input = session(true);
    for format in ["responses", "auto"] {
        let (out, doc) = run(&["--format", format, "--check"], &input.to_string());
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(doc.unwrap(), input, "--format {format}");
    }
    // Only `input_text` parts (no item type) are enough to tell the format, too.
    let parts = json!([{"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"role": "assistant", "content": [{"type": "output_text", "text": "hello", "annotations": []}]}]);
    let (out, doc) = run(&["--check"], &parts.to_string());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(doc.unwrap(), parts);
}

#[test]
fn responses_items_convert_to_chat_completions_and_back() {
    let (out, doc) = run(&["--to", "openai", "--check"], &session(false).to_string());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let chat = doc.unwrap();
    assert_eq!(
        chat,
        json!([
            {"role": "system", "content": "You answer weather questions."},
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_a", "type": "function",
                "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "call_a", "content": "Paris: 18°C"},
            {"role": "assistant", "content": [{"type": "text", "text": "18°C in Paris."}]}
        ])
    );
    let (out, doc) = run(&["--to", "responses", "--check"], &chat.to_string());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        doc.unwrap()[2],
        json!({"type": "function_call", "call_id": "call_a", "name": "weather", "arguments": "{\"city\":\"Paris\"}"})
    );
    let (out, doc) = run(&["--to", "anthropic", "--check"], &session(false).to_string());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(doc.unwrap()["system"], "You answer weather questions.");
}

#[test]
fn a_reasoning_item_written_as_chat_completions_is_refused_naming_it() {
    let (out, _) = run(&["--to", "openai"], &session(true).to_string());
    fails_with(&out, 2, "unsupported value `reasoning`");
    let (out, _) = run(&["--to", "anthropic"], &session(true).to_string());
    fails_with(&out, 2, "unsupported value `reasoning`");
}

#[test]
fn responses_and_chat_signs_together_are_refused_by_name() {
    let mixed = json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"type": "function_call_output", "call_id": "c", "output": "x"}
    ]);
    let (out, _) = run(&[], &mixed.to_string());
    fails_with(&out, 2, "cannot tell the format");
    let error = text(&out.stderr);
    assert!(
        error.contains("`tool_calls` at message 1")
            && error.contains("`function_call_output` at message 2"),
        "{error}"
    );
    // Read as Responses items explicitly, a chat message is refused by name.
    let (out, _) = run(&["--format", "responses"], &mixed.to_string());
    fails_with(
        &out,
        2,
        "message 1: field `tool_calls`, which belongs to the OpenAI Chat Completions format",
    );
}

#[test]
fn check_reports_what_the_responses_api_refuses() {
    let orphan = json!([
        {"role": "user", "content": "go"},
        {"type": "function_call_output", "call_id": "nope", "output": "x"}
    ]);
    let (out, _) = run(&["--check", "--drop-unsendable"], &orphan.to_string());
    fails_with(&out, 1, "tool result for `nope` answers no open tool call");
    let (out, _) = run(
        &["--format", "responses", "--check"],
        &json!([
            {"role": "user", "content": "go"},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "x"},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "y"}
        ])
        .to_string(),
    );
    fails_with(&out, 1, "function call id `c1` was already used in message 1");
}

#[test]
fn tools_are_not_converted_between_responses_and_other_formats() {
    let input = json!({"tools": [{"type": "function", "name": "weather", "parameters": {"type": "object"}}],
        "messages": session(false)});
    let (out, doc) = run(&["--check"], &input.to_string());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(doc.unwrap(), input);
    let (out, _) = run(&["--to", "openai"], &input.to_string());
    fails_with(
        &out,
        2,
        "converting tool schemas between the Responses API and OpenAI Chat Completions is not supported",
    );
    let chat_tools = json!({"tools": [{"type": "function", "function": {"name": "weather"}}], "messages": session(false)});
    let (out, _) = run(&["--check"], &chat_tools.to_string());
    fails_with(&out, 1, "is the Chat Completions shape");
}

#[test]
fn replay_reads_json_lines_of_responses_sessions() {
    let lines = format!(
        "{}\n{}\n",
        json!({"id": "s1", "messages": session(true)}),
        json!({"id": "s2", "messages": session(false)})
    );
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "sessions.jsonl", &lines);
    let out = curator(&[
        "replay",
        path.to_str().unwrap(),
        "--format",
        "responses",
        "--check",
        "--max-tokens",
        "8000",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("total: 2 conversations"), "{}", text(&out.stdout));
    let out = curator(&["curate", path.to_str().unwrap(), "--check"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let written: Vec<Value> =
        text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(written[0], json!({"id": "s1", "messages": session(true)}));
}
