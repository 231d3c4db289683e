//! Reading and writing formats (issue 29): strict readers, `tools` converted by `--to`.

use serde_json::{Value, json};

use crate::{curator, fails_with, text, write};

fn anthropic_request() -> Value {
    json!({
        "system": "You are terse.",
        "tools": [{"name": "ls", "description": "List.", "input_schema": {"type": "object", "properties": {"dir": {"type": "string"}}}}],
        "messages": [
            {"role": "user", "content": "List /tmp."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {"dir": "/tmp"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}]},
            {"role": "assistant", "content": "One file."}
        ]
    })
}

fn run(args: &[&str], input: &Value) -> (std::process::Output, Option<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "in.json", &input.to_string());
    let mut all = vec!["curate", path.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = curator(&all);
    let doc = serde_json::from_slice(&out.stdout).ok();
    (out, doc)
}

#[test]
fn an_anthropic_file_read_as_openai_is_refused_naming_system() {
    let (out, _) = run(&["--format", "openai", "--check"], &anthropic_request());
    fails_with(&out, 2, "`system`");
    assert!(text(&out.stderr).contains("Anthropic"), "{}", text(&out.stderr));
}

#[test]
fn anthropic_blocks_read_as_openai_are_refused_naming_them() {
    let mut request = anthropic_request();
    request.as_object_mut().unwrap().remove("system");
    let (out, _) = run(&["--format", "openai"], &request);
    fails_with(&out, 2, "`tools[0].input_schema` belongs to the Anthropic format");
    request.as_object_mut().unwrap().remove("tools");
    let (out, _) = run(&["--format", "openai", "--check"], &request);
    fails_with(&out, 2, "content[0].type");
    assert!(text(&out.stderr).contains("tool_use"), "{}", text(&out.stderr));
}

#[test]
fn to_converts_tools_both_ways() {
    let (out, doc) = run(&["--to", "openai"], &anthropic_request());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = doc.unwrap();
    let openai_tools = json!([{"type": "function", "function": {"name": "ls", "description": "List.",
        "parameters": {"type": "object", "properties": {"dir": {"type": "string"}}}}}]);
    assert_eq!(doc["tools"], openai_tools);
    let (out, back) = run(&["--to", "anthropic"], &doc);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(back.unwrap()["tools"], anthropic_request()["tools"]);
}

/// Numbers as written (past a float's range too) and keys out of order.
const EXACT: &str =
    r#"{"path":"p","z":2,"n":1e2,"big":-12345678901234567890123,"huge":1E400,"f":1.50,"a":-2e500}"#;

fn anthropic_line() -> String {
    format!(
        r#"{{"id": "n1", "messages": [{{"role": "user", "content": "go"}}, {{"role": "assistant", "content": [{{"type": "tool_use", "id": "t1", "name": "f", "input": {EXACT}}}]}}, {{"role": "user", "content": [{{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}}]}}, {{"role": "assistant", "content": "done"}}]}}"#
    )
}

#[test]
fn anthropic_numbers_keep_their_text_through_passthrough_and_conversion() {
    let dir = tempfile::tempdir().unwrap();
    let lines = format!("{}\n{}\n", anthropic_line(), anthropic_line().replace("\"n1\"", "\"n2\""));
    let path = write(dir.path(), "in.jsonl", &lines);
    let out = curator(&["curate", path.to_str().unwrap(), "--format", "anthropic"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains(&format!(r#""input":{EXACT}"#)), "{stdout}");
    let out = curator(&["curate", path.to_str().unwrap(), "--to", "openai"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let first: Value = serde_json::from_str(text(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(first["messages"][1]["tool_calls"][0]["function"]["arguments"], EXACT);
}

/// A number a float cannot hold is kept where its text is (a tool input); anywhere else the
/// value would hold it, so the input is refused, naming where.
#[test]
fn a_number_out_of_range_outside_a_tool_input_is_refused_with_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let line = anthropic_line().replace(r#""id": "n1""#, r#""id": "n1", "weight": 1e999"#);
    let path = write(dir.path(), "in.json", &line);
    let out = curator(&["curate", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("line 1, column 24: the number `1e999` cannot be kept"), "{stderr}");
    assert_eq!(stderr.matches("column").count(), 1, "the place is said once: {stderr}");
    // A value would change a 30-digit integer or a 40-digit decimal: refused by its place,
    // in a JSON Lines file the other lines go on; a number a value holds (`0.70`) passes.
    let lines = format!(
        "{}\n{}\n{}\n",
        anthropic_line()
            .replace(r#""id": "n1""#, r#""id": "n1", "seed": 123456789012345678901234567890"#),
        anthropic_line()
            .replace(r#""id": "n1""#, r#""id": "n2", "t": 0.1000000000000000055511151231257827"#),
        anthropic_line().replace(r#""id": "n1""#, r#""id": "n3", "t": 0.70"#),
    );
    let path = write(dir.path(), "in.jsonl", &lines);
    let out = curator(&["curate", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "line 1: column 22: the number `123456789012345678901234567890` cannot be kept"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("line 2: column 19: the number `0.1000000000000000055511151231257827`"),
        "{stderr}"
    );
    assert!(text(&out.stdout).contains(r#""id":"n3""#), "{}", text(&out.stdout));
}

/// A bare array of Anthropic messages, over several lines, keeps its numbers too.
#[test]
fn an_anthropic_array_keeps_the_numbers_of_tool_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let line = anthropic_line();
    let messages = &line[line.find('[').unwrap()..=line.rfind(']').unwrap()];
    for (name, content) in
        [("one.json", messages.to_owned()), ("lines.json", messages.replace("}, {", "},\n{"))]
    {
        let path = write(dir.path(), name, &content);
        for format in ["auto", "anthropic"] {
            let out = curator(&["curate", path.to_str().unwrap(), "--format", format]);
            assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
            let stdout = text(&out.stdout);
            let compact: String = stdout.split_whitespace().collect();
            assert!(compact.contains(&format!(r#""input":{EXACT}"#)), "{name} {format}: {stdout}");
        }
    }
}

#[test]
fn an_anthropic_passthrough_keeps_consecutive_user_messages() {
    let request = json!({"messages": [u("a"), u("b"), {"role": "assistant", "content": "c"}]});
    let (out, doc) = run(&["--format", "anthropic"], &request);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(doc.unwrap()["messages"], request["messages"]);
}

fn u(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

#[test]
fn check_passes_a_record_that_ends_with_calls_because_the_view_leaves_them_out() {
    // The input is a record (stopped mid-call); the view sent drops the pending call and is
    // checked as a request (`validate::openai_request`), which refuses pending calls.
    let request = json!([u("go"), {"role": "assistant", "content": null, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]);
    let (out, doc) = run(&["--check"], &request);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(doc.unwrap(), json!([u("go")]));
}

#[test]
fn to_openai_merges_split_parallel_calls_and_checks_what_is_sent() {
    let request = json!({"messages": [u("both"),
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "a", "input": {}}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "b", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"},
            {"type": "tool_result", "tool_use_id": "t2", "content": "y"}]},
        {"role": "assistant", "content": "done"}]});
    let (out, doc) = run(&["--to", "openai", "--check"], &request);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let messages = doc.unwrap()["messages"].clone();
    assert_eq!(messages[1]["tool_calls"].as_array().unwrap().len(), 2, "{messages}");
    assert_eq!(messages[2], json!({"role": "tool", "tool_call_id": "t1", "content": ""}));
}

#[test]
fn a_document_over_several_lines_keeps_anthropic_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let line = anthropic_line();
    let spread = line.replace(", ", ",\n  ");
    assert!(spread.lines().count() > 2);
    let path = write(dir.path(), "in.json", &spread);
    let out = curator(&["curate", path.to_str().unwrap(), "--format", "anthropic"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains(&format!(r#""input":{EXACT}"#)), "{stdout}");
}

#[test]
fn check_refuses_tools_in_the_other_shape() {
    let mut request = anthropic_request();
    request["tools"] =
        json!([{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}]);
    let (out, _) = run(&["--check"], &request);
    fails_with(&out, 1, "tool 0: field `type` is OpenAI's `function` shape");
}

/// Converting says which fields of the messages the other format has no place for.
#[test]
fn a_conversion_names_the_fields_it_leaves_out() {
    let request = json!({"messages": [
        {"role": "user", "content": "do it", "weight": 1.5, "z": 1},
        {"role": "assistant", "content": "done"}]});
    let (out, doc) = run(&["--format", "anthropic", "--to", "openai"], &request);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(doc.unwrap()["messages"][0], json!({"role": "user", "content": "do it"}));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(
            "--to openai leaves out fields it has no place for: `weight`, `z` (1 message)"
        ),
        "{stderr}"
    );
    let (out, _) = run(&["--format", "anthropic"], &request);
    assert!(!text(&out.stderr).contains("leaves out"), "{}", text(&out.stderr));
    let failed = json!({"messages": [u("go"),
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "no", "is_error": true}]},
        {"role": "assistant", "content": "sorry"}]});
    let (out, _) = run(&["--format", "anthropic", "--to", "openai"], &failed);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("leaves out fields it has no place for: `is_error` (1 message)"),
        "{}",
        text(&out.stderr)
    );
}
