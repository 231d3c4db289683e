//! Input formats and fields: detection, `tools` schemas, `--reserve`, the default counter,
//! and JSON Lines with a failing conversation.

use serde_json::{Value, json};

use super::{conversation, curator, fails_with, text, write};

#[test]
fn an_anthropic_request_with_no_system_and_no_tool_blocks_is_read_as_anthropic() {
    let dir = tempfile::tempdir().unwrap();
    let request = json!({
        "model": "claude-sonnet-4", "max_tokens": 1024, "stop_sequences": ["END"],
        "messages": [
            {"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                {"type": "text", "text": "What is in this picture?"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "A cat."}]}
        ]
    });
    let file = write(dir.path(), "request.json", &request.to_string());
    let out = curator(&["curate", file.to_str().unwrap(), "--check"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let written: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Written back in Anthropic's format: the image keeps its `source`, the request its fields.
    assert_eq!(written["messages"][0]["content"][0]["source"]["media_type"], "image/png");
    assert_eq!(written["stop_sequences"][0], "END");
    let contradictory = json!([
        {"role": "developer", "content": "be brief"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "?"}]}
    ]);
    let file = write(dir.path(), "both.json", &contradictory.to_string());
    fails_with(&curator(&["curate", file.to_str().unwrap()]), 2, "cannot tell the format");
}

/// A conversation of `steps` tool calls whose results are varied text (about 700 tokens
/// each once cut to 2,000 characters).
fn varied(steps: usize) -> Value {
    let mut messages = vec![
        json!({"role": "system", "content": "You are an agent."}),
        json!({"role": "user", "content": "Do the task."}),
    ];
    for i in 0..steps {
        let id = format!("call_{i}");
        let output: String = (0..150)
            .map(|k| format!("row {k}: value {} of {i}\n", k * 7919 % 1000))
            .collect::<Vec<_>>()
            .concat();
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": output}));
    }
    messages.push(json!({"role": "assistant", "content": "Done."}));
    Value::Array(messages)
}

/// A conversation with big `tools` schemas.
fn with_tools(schema_chars: usize) -> Value {
    let description =
        "Reads a file of the repository and returns its text. ".repeat(schema_chars / 54);
    json!({
        "id": "tooled",
        "tools": [{"type": "function", "function": {"name": "read_file", "description": description,
                   "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}],
        "messages": varied(20)
    })
}

fn replay_json(file: &std::path::Path, extra: &[&str]) -> Value {
    let mut args = vec!["replay", file.to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    let out = curator(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn largest_sent(doc: &Value) -> u64 {
    doc["conversations"][0]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["sent_tokens"].as_u64().unwrap())
        .max()
        .unwrap()
}

#[test]
fn tools_schemas_and_reserve_are_counted_against_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let plain = write(
        dir.path(),
        "plain.json",
        &json!({"id": "tooled", "messages": varied(20)}).to_string(),
    );
    let tooled = write(dir.path(), "tools.json", &with_tools(8_000).to_string());
    let budget = ["--truncate-tools", "2000", "--max-tokens", "4000"];
    let without = replay_json(&plain, &budget);
    let with = replay_json(&tooled, &budget);
    let tools_tokens = with["conversations"][0]["tools_tokens"].as_u64().unwrap();
    assert!(tools_tokens > 1_000, "the schemas are counted: {tools_tokens}");
    assert_eq!(without["conversations"][0]["tools_tokens"], 0);
    // Messages and schemas together stay within the budget.
    assert!(
        largest_sent(&with) + tools_tokens <= 4_000,
        "{} + {tools_tokens}",
        largest_sent(&with)
    );
    assert!(largest_sent(&without) > largest_sent(&with));
    let reserved = replay_json(&plain, &[&budget[..], &["--reserve", "1500"]].concat());
    assert!(largest_sent(&reserved) <= 2_500, "{}", largest_sent(&reserved));
    assert_eq!(reserved["pipeline"]["steps"][1]["reserve"], 1500);
}

#[test]
fn the_default_counter_is_o200k_and_the_estimate_stays_available() {
    let dir = tempfile::tempdir().unwrap();
    // CJK text: o200k counts far more tokens than four characters a token.
    let cjk = json!([{"role": "user", "content": "日本語のテキストを数える。".repeat(40)}, {"role": "assistant", "content": "はい。"}]);
    let file = write(dir.path(), "cjk.json", &cjk.to_string());
    let exact = replay_json(&file, &["--max-tokens", "100000"]);
    assert_eq!(exact["pipeline"]["steps"][0]["tokenizer"], "o200k");
    let estimate = replay_json(&file, &["--max-tokens", "100000", "--tokenizer", "estimate"]);
    assert_eq!(estimate["pipeline"]["steps"][0]["tokenizer"], "estimate");
    let count = |doc: &Value| doc["totals"]["full_tokens"].as_u64().unwrap();
    assert!(count(&exact) > count(&estimate), "{} vs {}", count(&exact), count(&estimate));
}

#[test]
fn a_failing_conversation_in_json_lines_is_named_and_the_others_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let content = format!(
        "{}\n{}\n{}\n",
        json!({"id": "first", "messages": conversation(2)}),
        json!({"id": "bad-one", "messages": [{"role": "wizard", "content": "x"}]}),
        json!({"id": "third", "messages": conversation(3)}),
    );
    let file = write(dir.path(), "mixed.jsonl", &content);
    let out = curator(&["replay", file.to_str().unwrap()]);
    fails_with(&out, 2, "conversation bad-one: line 2: message 0: unknown role `wizard`");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("first") && stdout.contains("third"), "{stdout}");
    assert!(stdout.contains("total: 2 conversations, 7 calls"), "{stdout}");
    let out = curator(&["curate", file.to_str().unwrap()]);
    fails_with(&out, 2, "conversation bad-one");
    let written = text(&out.stdout);
    let ids: Vec<String> = written
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, ["first", "third"]);
}

#[test]
fn a_conversation_the_pipeline_cannot_curate_is_named_and_the_others_go_on() {
    let dir = tempfile::tempdir().unwrap();
    // Its tools alone take more than the budget.
    let content =
        format!("{}\n{}\n", with_tools(40_000), json!({"id": "plain", "messages": varied(3)}));
    let file = write(dir.path(), "mixed.jsonl", &content);
    // Replay counts and names its calls refused, and goes on.
    let out = curator(&["replay", file.to_str().unwrap(), "--max-tokens", "4000"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("conversation tooled: 21 calls refused"),
        "{}",
        text(&out.stderr)
    );
    let stdout = text(&out.stdout);
    assert!(stdout.contains("total: 2 conversations, 4 calls"), "{stdout}");
    assert!(
        stdout.contains("refused: 21 calls whose budget cannot hold what is never dropped"),
        "{stdout}"
    );
    let out = curator(&["curate", file.to_str().unwrap(), "--max-tokens", "4000"]);
    fails_with(&out, 2, "conversation tooled: ");
    assert_eq!(text(&out.stdout).lines().count(), 1);
}

#[test]
fn a_budget_too_small_says_the_tools_schemas_take_part_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let tooled = write(dir.path(), "tools.json", &with_tools(8_000).to_string());
    let tools_tokens =
        replay_json(&tooled, &[])["conversations"][0]["tools_tokens"].as_u64().unwrap();
    // Ten tokens left after the schemas: not enough for the system message.
    let budget = (tools_tokens + 10).to_string();
    let explained = format!("token budget of {budget} tokens cannot hold what is never dropped");
    let schemas = format!("tool schemas {tools_tokens}, ");
    let out = curator(&["curate", tooled.to_str().unwrap(), "--max-tokens", &budget]);
    fails_with(&out, 2, &explained);
    assert!(text(&out.stderr).contains(&schemas), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("reserve"), "{}", text(&out.stderr));
    // Replay names the refused calls with the same sizes, and goes on.
    let out = curator(&["replay", tooled.to_str().unwrap(), "--max-tokens", &budget]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains(&explained) && text(&out.stderr).contains(&schemas));
}

/// `--to auto` is the input's own format, as leaving `--to` out is (the fresh-eyes review
/// found Anthropic input turned into OpenAI output by it).
#[test]
fn to_auto_writes_the_input_format() {
    let dir = tempfile::tempdir().unwrap();
    let messages = json!([
        {"role": "user", "content": "Read a."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {"n": 12_345_678_901_234_567_890_u64}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "A"}]}
    ]);
    let file = write(dir.path(), "anthropic.json", &messages.to_string());
    let out = curator(&["curate", file.to_str().unwrap(), "--to", "auto"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let written = text(&out.stdout);
    assert!(
        written.contains(r#""type":"tool_use""#) && !written.contains("tool_calls"),
        "{written}"
    );
    // A bare Anthropic array keeps a 20-digit integer's text.
    assert!(written.contains("12345678901234567890"), "{written}");
}

/// Messages no provider takes (a call closed by a system message before its result came,
/// and that orphaned result; a lone result; one of two calls sharing an id) are never
/// dropped silently: `curate` refuses the conversation (exit 2, nothing written), and with
/// `--drop-unsendable` writes the view without them, naming them.
#[test]
fn messages_no_provider_takes_are_named_not_dropped_silently() {
    let dir = tempfile::tempdir().unwrap();
    let closed = json!([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{}"}}]},
        {"role": "system", "content": "New rule: answer in French."},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"}
    ]);
    let lone = json!({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "r"}]}]});
    let twins = json!([
        {"role": "user", "content": "do"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "e", "arguments": "{}"}},
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "r"},
        {"role": "assistant", "content": "ok"}
    ]);
    for (name, input, named) in [
        ("closed.json", closed, "2 message(s) of the input (at 2, 4)"),
        ("lone.json", lone, "1 message(s) of the input (at 0)"),
        ("twins.json", twins, "1 message(s) of the input (at 1)"),
    ] {
        let file = write(dir.path(), name, &input.to_string());
        let out = curator(&["curate", file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", text(&out.stderr));
        assert!(out.stdout.is_empty(), "{name}: {}", text(&out.stdout));
        let stderr = text(&out.stderr);
        assert!(stderr.contains(named) && stderr.contains("--drop-unsendable"), "{stderr}");
        let out = curator(&["curate", file.to_str().unwrap(), "--drop-unsendable"]);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        let stderr = text(&out.stderr);
        assert!(stderr.contains(named) && stderr.contains("leaves them out"), "{stderr}");
    }
}

/// A JSON Lines line that is not UTF-8 is reported by its line and column, and the lines
/// around it are curated; a whole document says where its text stops being UTF-8; a UTF-8
/// byte order mark is read past.
#[test]
fn text_that_is_not_utf8_is_named_by_line_and_column_and_the_other_lines_go_on() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [
        ("lines.jsonl", &b"{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}]}\n{\"messages\":[{\"role\":\"user\",\"content\":\"caf\xe9\"}]}\n{\"messages\":[{\"role\":\"user\",\"content\":\"b\"}]}\n"[..]),
        ("first.jsonl", &b"{\"messages\":[{\"role\":\"user\",\"content\":\"caf\xe9\"}]}\n{\"messages\":[{\"role\":\"user\",\"content\":\"b\"}]}\n"[..]),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let out = curator(&["curate", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        let stdout = text(&out.stdout);
        assert!(stdout.contains(r#""content":"b""#), "{name}: the next line is curated: {stdout}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(": column 43: not UTF-8 text (byte 0xE9)"), "{name}: {stderr}");
        let said = stderr.lines().find(|l| l.contains("not UTF-8")).unwrap();
        assert_eq!(said.matches(" line ").count(), 1, "{name}: the line is named once: {said}");
    }
    let path = dir.path().join("array.json");
    std::fs::write(
        &path,
        b"[{\"role\":\"user\",\"content\":\"a\"},\n{\"role\":\"user\",\"content\":\"caf\xe9\"}]",
    )
    .unwrap();
    let out = curator(&["curate", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("line 2, column 30: not UTF-8 text (byte 0xE9)"),
        "{}",
        text(&out.stderr)
    );
    let path = dir.path().join("bom.json");
    std::fs::write(&path, b"\xef\xbb\xbf[{\"role\":\"user\",\"content\":\"a\"}]").unwrap();
    let out = curator(&["curate", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}
