//! Memory on a large input: about twice the input at most, measured on the real process
//! (its peak resident set, `VmHWM`, which the binary prints when `CURATOR_PEAK_RSS` is set).

use std::fmt::Write as _;

use serde_json::json;

use super::{command, text, write};

/// One conversation of about `bytes` bytes: tool results of varied text.
fn big_conversation(bytes: usize) -> serde_json::Value {
    let mut messages = vec![
        json!({"role": "system", "content": "You are an agent."}),
        json!({"role": "user", "content": "Read the logs."}),
    ];
    let mut size = 0;
    let mut i = 0;
    while size < bytes {
        let mut output = String::with_capacity(20_000);
        let mut k = 0;
        while output.len() < 20_000 {
            let _ = writeln!(
                output,
                "line {k} of log {i}: request_{k} served in {}.{} ms",
                k % 97,
                i % 13
            );
            k += 1;
        }
        size += output.len();
        let id = format!("c{i}");
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": "read_log", "arguments": "{}"}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": output}));
        i += 1;
    }
    messages.push(json!({"role": "assistant", "content": "Done."}));
    serde_json::Value::Array(messages)
}

/// Peak RSS in bytes of `curator replay` on `file`.
fn peak_rss(file: &std::path::Path) -> u64 {
    let out = command()
        .args([
            "replay",
            file.to_str().unwrap(),
            "--tokenizer",
            "estimate",
            "--window",
            "20",
            "--json",
        ])
        .env("CURATOR_PEAK_RSS", "1")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let kb: u64 = stderr
        .lines()
        .find_map(|l| l.strip_prefix("peak RSS: ")?.strip_suffix(" kB")?.parse().ok())
        .unwrap_or_else(|| panic!("no peak RSS in {stderr}"));
    kb * 1024
}

#[test]
fn a_large_input_stays_within_about_twice_its_size() {
    let dir = tempfile::tempdir().unwrap();
    // A baseline: the binary on a tiny input.
    let tiny = write(dir.path(), "tiny.json", &big_conversation(1).to_string());
    let baseline = peak_rss(&tiny);
    // One 24 MB document, and JSON Lines of 12 conversations of 2 MB.
    let document = big_conversation(24 << 20).to_string();
    let size = document.len() as u64;
    let array = write(dir.path(), "big.json", &document);
    drop(document);
    let used = peak_rss(&array) - baseline;
    assert!(used <= 2 * size, "a {size}-byte array took {used} bytes");
    let mut jsonl = String::new();
    for i in 0..12 {
        jsonl.push_str(
            &json!({"id": format!("big-{i}"), "messages": big_conversation(2 << 20)}).to_string(),
        );
        jsonl.push('\n');
    }
    let size = jsonl.len() as u64;
    let file = write(dir.path(), "big.jsonl", &jsonl);
    drop(jsonl);
    let used = peak_rss(&file) - baseline;
    // Lines are read one at a time: far below the file's size.
    assert!(used <= size / 2, "a {size}-byte JSON Lines file took {used} bytes");
}
