//! A reader that goes away early (`curator ... | head`): a quiet exit, never a panic.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use super::{command, conversation, curator, lines, text, write};

/// Runs the binary with stdout into a real pipe, reads one line, closes the pipe, and
/// returns the exit code and stderr.
fn read_one_line_then_close(args: &[&str]) -> (Option<i32>, String) {
    let mut child =
        command().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut first = String::new();
    BufReader::new(stdout).read_line(&mut first).unwrap();
    assert!(!first.is_empty(), "the command printed nothing");
    // The reader (and the pipe's read end) is dropped here, as `head -1` exits.
    let output = child.wait_with_output().unwrap();
    (output.status.code(), text(&output.stderr))
}

#[test]
fn replay_json_into_a_closed_pipe_exits_quietly() {
    let dir = tempfile::tempdir().unwrap();
    // Far more than a pipe holds (64 KiB), so that writing goes on after the close.
    let file = write(dir.path(), "many.jsonl", &lines(60, 12));
    let (code, stderr) =
        read_one_line_then_close(&["replay", file.to_str().unwrap(), "--json", "--window", "4"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{stderr}");
}

#[test]
fn trace_raw_into_a_closed_pipe_exits_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "long.json", &conversation(120).to_string());
    let db = dir.path().join("s.db");
    assert!(
        curator(&["replay", file.to_str().unwrap(), "--db", db.to_str().unwrap()]).status.success()
    );
    let (code, stderr) = read_one_line_then_close(&["trace", db.to_str().unwrap(), "--raw"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{stderr}");
}

#[test]
fn curate_into_a_closed_pipe_exits_quietly() {
    let dir = tempfile::tempdir().unwrap();
    // Far more than a pipe holds once curated (a line per conversation, each over 6 KB).
    let file = write(dir.path(), "many.jsonl", &lines(60, 12));
    let (code, stderr) =
        read_one_line_then_close(&["curate", file.to_str().unwrap(), "--window", "4"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{stderr}");
}

#[test]
fn replay_stops_early_when_its_reader_has_gone() {
    let dir = tempfile::tempdir().unwrap();
    // Many conversations, then one that cannot be read: a replay that ran to the end would
    // report it and exit 2. The reader closes the pipe after the first line, long before the
    // replay reaches the last line.
    let mut text_lines = lines(200, 2);
    text_lines.push_str("{\"id\": \"last\", \"messages\": [{\"role\": \"nobody\"}]}\n");
    let file = write(dir.path(), "many.jsonl", &text_lines);
    let (code, stderr) =
        read_one_line_then_close(&["replay", file.to_str().unwrap(), "--tokenizer", "estimate"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("last"), "the replay went on to the end: {stderr}");
}
