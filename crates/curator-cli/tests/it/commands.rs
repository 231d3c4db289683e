//! The commands on small inputs: what they print, write and record, and every error case.

use std::process::Command;

use serde_json::{Value, json};

use super::{conversation, curator, fails_with, text, write};

#[test]
fn curate_writes_the_view_in_the_input_format_and_reports_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "conv.json", &conversation(10).to_string());
    let out = curator(&["curate", file.to_str().unwrap(), "--truncate-tools", "100", "--check"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let view: Value = serde_json::from_slice(&out.stdout).unwrap();
    let messages = view.as_array().unwrap();
    assert_eq!(messages.len(), 23);
    assert_eq!(messages[3]["content"].as_str().unwrap().chars().count(), 100);
    assert!(text(&out.stderr).contains("23 messages"), "{}", text(&out.stderr));

    // To Anthropic, into a file.
    let target = dir.path().join("out.json");
    let out = curator(&[
        "curate",
        file.to_str().unwrap(),
        "--to",
        "anthropic",
        "--window",
        "4",
        "-o",
        target.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let request: Value = serde_json::from_str(&std::fs::read_to_string(&target).unwrap()).unwrap();
    assert_eq!(request["system"], "You are an agent.");
    assert_eq!(request["messages"][0]["content"], "Do the task.");
}

#[test]
fn curate_reads_json_lines_and_anthropic_and_keeps_the_envelope() {
    let dir = tempfile::tempdir().unwrap();
    let lines = format!(
        "{}\n{}\n",
        json!({"id": "a", "meta": {"k": 1}, "messages": conversation(2)}),
        json!({"id": "b", "system": "Be brief.", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}]}
        ]})
    );
    let file = write(dir.path(), "convs.jsonl", &lines);
    let out = curator(&["curate", file.to_str().unwrap(), "--max-tokens", "100000"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let docs: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[0]["meta"]["k"], 1);
    assert_eq!(docs[1]["system"], "Be brief.");
    assert_eq!(docs[1]["messages"][2]["content"][0]["type"], "tool_result");
}

#[test]
fn check_fails_on_a_broken_input() {
    let dir = tempfile::tempdir().unwrap();
    let broken = json!([{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "nope", "content": "orphan"}]);
    let file = write(dir.path(), "broken.json", &broken.to_string());
    // The orphan is written out of the view only when asked; without it, refused (exit 2).
    let out = curator(&["curate", file.to_str().unwrap(), "--check", "--drop-unsendable"]);
    fails_with(&out, 1, "the input breaks a provider rule");
    fails_with(&out, 1, "answers no open tool call");
    let out = curator(&["curate", file.to_str().unwrap(), "--check"]);
    fails_with(&out, 2, "answers no open tool call");
}

#[test]
fn replay_prints_a_table_writes_a_report_and_records() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "conv.json", &conversation(12).to_string());
    let report = dir.path().join("report.html");
    let db = dir.path().join("sessions.db");
    let out = curator(&[
        "replay",
        file.to_str().unwrap(),
        "--check",
        "--max-tokens",
        "3000",
        "--report",
        report.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("total: 1 conversation, 13 calls"), "{stdout}");
    assert!(stdout.contains("tokens saved: ") && stdout.contains("evidence kept: "), "{stdout}");
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    assert!(html.contains("<svg") && html.contains("<polyline"));
    assert!(html.contains(r#"id="overview""#) && html.contains(r#"class="map""#));
    // Self-contained: nothing to fetch.
    assert!(!html.contains("http://") && !html.contains("https://"), "no external assets");
    assert!(!html.contains("<script src") && !html.contains("<link") && !html.contains("@import"));
    assert!(html.contains("@media print"), "printable");

    let out = curator(&["inspect", db.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(": 1 evaluation\n"), "{}", text(&out.stdout));

    let out = curator(&["trace", db.to_str().unwrap(), "--usage"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("tok"), "{}", text(&out.stdout));
    let out = curator(&[
        "trace",
        db.to_str().unwrap(),
        "--view",
        "curated",
        "--max-tokens",
        "3000",
        "--raw",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("\"role\":\"system\""));
}

#[test]
fn replay_json_output_has_totals() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "conv.json", &conversation(5).to_string());
    let out = curator(&["replay", file.to_str().unwrap(), "--json", "--window", "3"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["totals"]["calls"], 6);
    // System, task, then the newest whole units that fit in 3 messages: one call and result.
    assert_eq!(doc["conversations"][0]["calls"][5]["sent_messages"], 4);
    assert!(doc["totals"]["sent_tokens"].as_u64() < doc["totals"]["full_tokens"].as_u64());
}

#[test]
fn replay_check_names_the_conversation_the_call_and_the_violation() {
    let dir = tempfile::tempdir().unwrap();
    // A conversation whose view will break Anthropic's rules: a system message mid-way.
    let mut bad = conversation(2);
    bad.as_array_mut()
        .unwrap()
        .insert(4, json!({"role": "system", "content": "late instructions"}));
    let line = json!({"id": "broken-one", "messages": bad});
    let file = write(
        dir.path(),
        "bad.jsonl",
        &format!("{}\n{}\n", json!({"id": "fine", "messages": conversation(1)}), line),
    );
    let out = curator(&["replay", file.to_str().unwrap(), "--check", "--window", "50"]);
    // Named with its file: conversation ids repeat across files (a bare array's is `1`).
    let expected =
        format!("{}: conversation broken-one: call 2: Anthropic rule broken", file.display());
    fails_with(&out, 1, &expected);
}

#[test]
fn errors_are_one_clear_message_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    fails_with(&curator(&["curate", "/no/such/file.json"]), 2, "cannot read /no/such/file.json");
    let bad =
        write(dir.path(), "bad.json", "[{\"role\": \"user\", \"content\": \"hi\"},\n {\"role\": ");
    fails_with(&curator(&["curate", bad.to_str().unwrap()]), 2, "line 2, column");
    let wrong_role = write(dir.path(), "role.json", r#"[{"role": "wizard", "content": "x"}]"#);
    fails_with(&curator(&["curate", wrong_role.to_str().unwrap()]), 2, "unknown role `wizard`");
    let file = write(dir.path(), "ok.json", &conversation(1).to_string());
    fails_with(
        &curator(&["curate", file.to_str().unwrap(), "--format", "yaml"]),
        2,
        "invalid value 'yaml'",
    );
    let config =
        write(dir.path(), "pipeline.toml", "strategy = \"sliding_window\"\nwindow_sizee = 3\n");
    fails_with(
        &curator(&["curate", file.to_str().unwrap(), "--config", config.to_str().unwrap()]),
        2,
        "window_sizee",
    );
    let config = write(dir.path(), "pipeline.json", r#"{"strategy": "magic"}"#);
    fails_with(
        &curator(&["replay", file.to_str().unwrap(), "--config", config.to_str().unwrap()]),
        2,
        "unknown variant `magic`",
    );
    let not_db = write(dir.path(), "not.db", "this is not a database at all, just text");
    fails_with(&curator(&["inspect", not_db.to_str().unwrap()]), 2, "not a SQLite database");
    fails_with(
        &curator(&["inspect", dir.path().join("missing.db").to_str().unwrap()]),
        2,
        "cannot open the session file",
    );
}

#[test]
fn replay_with_summarization_folds_old_history() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "conv.json", &conversation(30).to_string());
    let out = curator(&[
        "replay",
        file.to_str().unwrap(),
        "--json",
        "--check",
        "--truncate-tools",
        "1000",
        "--summarize",
        "extractive",
        "--summarize-ratio",
        "0.5",
        "--summarize-after",
        "3000",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let last = &doc["conversations"][0]["calls"][30];
    assert!(last["sent_messages"].as_u64() < last["full_messages"].as_u64(), "{last}");
    assert_eq!(doc["pipeline"]["steps"][1]["strategy"], "summarize");
    let out = curator(&[
        "replay",
        file.to_str().unwrap(),
        "--summarize",
        "extractive",
        "--summarize-ratio",
        "2",
    ]);
    fails_with(&out, 2, "summarize_ratio");
}

/// On a terminal, replaying many conversations shows a progress bar on stderr; through a pipe
/// it does not. The terminal comes from `script` (util-linux); skipped when it is missing.
#[test]
fn replay_shows_progress_on_a_terminal_only() {
    let dir = tempfile::tempdir().unwrap();
    let lines = (0..8).fold(String::new(), |mut out, i| {
        out.push_str(&json!({"id": format!("c{i}"), "messages": conversation(2)}).to_string());
        out.push('\n');
        out
    });
    let file = write(dir.path(), "many.jsonl", &lines);
    let piped = curator(&["replay", file.to_str().unwrap()]);
    assert!(piped.status.success());
    assert!(!text(&piped.stderr).contains("8/8 conversations"), "{}", text(&piped.stderr));
    if Command::new("which").arg("script").output().map_or(true, |o| !o.status.success()) {
        eprintln!("skipping the terminal half: no `script` command");
        return;
    }
    let command =
        format!("{} replay {} > /dev/null", env!("CARGO_BIN_EXE_curator"), file.display());
    let on_terminal =
        Command::new("script").args(["-qec", &command, "/dev/null"]).output().unwrap();
    assert!(on_terminal.status.success(), "{}", text(&on_terminal.stderr));
    let shown = text(&on_terminal.stdout);
    assert!(shown.contains("8/8 conversations") && shown.contains("[###"), "{shown}");
}

#[test]
fn inspect_and_trace_filter_by_session_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = crate::keyed_runs(dir.path());
    let db = dir.path().join("keys.db");
    let out = curator(&["replay", file.to_str().unwrap(), "--db", db.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let db = db.to_str().unwrap();

    let all = text(&curator(&["inspect", db]).stdout);
    assert!(all.contains("2 evaluations"), "{all}");
    let out = curator(&["inspect", db, "--key", "alice"]);
    let alice = text(&out.stdout);
    assert!(alice.contains("1 evaluation of session `alice`"), "{alice}");
    assert!(!alice.contains("bob"), "{alice}");
    assert!(text(&curator(&["inspect", db, "--key", "carol"]).stdout).contains("0 evaluations"));

    let bob = text(&curator(&["trace", db, "--key", "bob"]).stdout);
    assert!(bob.contains("a task for bob") && !bob.contains("alice"), "{bob}");
    fails_with(
        &curator(&["trace", db, "--key", "carol"]),
        2,
        "no evaluation or loop session of session `carol`",
    );
    // An evaluation of another key is refused.
    let evaluation = alice
        .lines()
        .find(|l| l.contains("alice") && !l.contains("of session"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_owned();
    fails_with(
        &curator(&["trace", db, "--evaluation", &evaluation, "--key", "bob"]),
        2,
        "belongs to session `alice`, not `bob`",
    );
}

#[test]
fn messages_say_it_once_and_missing_inputs_stop_before_any_output() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "conv.json", &conversation(2).to_string());
    let db = dir.path().join("s.db");
    assert!(
        curator(&["replay", file.to_str().unwrap(), "--db", db.to_str().unwrap()]).status.success()
    );
    let out = curator(&["trace", db.to_str().unwrap(), "--evaluation", "123"]);
    fails_with(&out, 2, "--evaluation `123` is not an evaluation id");
    assert_eq!(text(&out.stderr).matches("123").count(), 1, "{}", text(&out.stderr));

    let missing = dir.path().join("missing.jsonl");
    for command in ["replay", "curate"] {
        let out = curator(&[command, file.to_str().unwrap(), missing.to_str().unwrap()]);
        fails_with(&out, 2, "missing.jsonl");
        assert_eq!(text(&out.stdout), "", "{command} printed before failing");
    }
}

/// A session file whose records were written before keys were checked (restored from a
/// snapshot, which keeps the keys it holds): `keys` each with one evaluation.
fn file_with_old_keys(db: &std::path::Path, keys: &[&str]) {
    use curator::model::{Message, PromptRef};
    use curator::session::{Conversation, MemoryStore, SessionStore as _};

    let memory = MemoryStore::new();
    let mut placeholders = Vec::new();
    for n in 0..keys.len() {
        let placeholder = format!("placeholder-{n}");
        Conversation::open(
            &memory,
            placeholder.as_str(),
            PromptRef::new("d", "a"),
            Message::system("s"),
        )
        .unwrap();
        placeholders.push(placeholder);
    }
    let mut json = memory.snapshot_json().unwrap();
    for (placeholder, key) in placeholders.iter().zip(keys) {
        json = json.replace(&format!("\"{placeholder}\""), &serde_json::to_string(key).unwrap());
    }
    curator::sqlite::SqliteStore::open(db).unwrap().restore_json(&json).unwrap();
}

#[test]
fn inspect_shows_control_characters_in_keys_escaped_and_long_keys_shortened() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let long = "k".repeat(5_000);
    file_with_old_keys(&db, &["line one\nline\ttwo", &long]);
    let out = curator(&["inspect", db.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains(r"line one\nline\ttwo"), "{stdout}");
    assert!(stdout.contains("… (5000 bytes)"), "{stdout}");
    assert!(stdout.lines().all(|l| l.chars().count() < 300), "{stdout}");
    assert_eq!(stdout.lines().count(), 4, "a title, the header and two rows: {stdout}");
}

#[test]
fn a_bad_session_key_is_refused_naming_the_rule() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let store = curator::sqlite::SqliteStore::open(&db).unwrap();
    let err = curator::session::Conversation::open(
        &store,
        "user\u{0}42",
        curator::model::PromptRef::new("d", "a"),
        curator::model::Message::system("s"),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        r"session key `user\u{0}42`: holds a control character (U+0000) at byte 4"
    );
}

#[test]
fn replay_and_curate_help_name_the_default_pipeline() {
    for command in ["replay", "curate"] {
        let out = curator(&[command, "--help"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let help = text(&out.stdout);
        assert!(help.contains("--redact --max-tokens 32000 --stable"), "{command}: {help}");
        assert!(help.contains("--budget 32000"), "{command}: {help}");
    }
}

#[test]
fn inspect_and_trace_show_the_recorded_usage_of_each_model_call_and_its_price() {
    use curator::client::Usage;
    use curator::model::{Message, PromptRef, ToolCall};
    use curator::session::Conversation;

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let store = curator::sqlite::SqliteStore::open(&db).unwrap();
    let mut c =
        Conversation::open(&store, "ann", PromptRef::new("d", "a"), Message::system("s")).unwrap();
    c.add_user("time in Paris?").unwrap();
    c.record_assistant(Message::assistant_with_calls(
        None,
        vec![ToolCall::new("c1", "time", "{}")],
    ))
    .unwrap();
    c.record_usage(Usage::new(1_500, 9)).unwrap();
    c.record_tool_result("c1", Ok::<_, String>("12:00")).unwrap();
    c.record_assistant(Message::assistant("Noon.")).unwrap();
    c.record_usage(Usage::new(1_540, 4).with_cache(1_024, 0)).unwrap();
    drop(c);
    drop(store);
    let db = db.to_str().unwrap();

    let out = text(&curator(&["inspect", db, "--model", "gpt-4o"]).stdout);
    // gpt-4o: $2.50 per million input, $1.25 cached, $10 output.
    let price = (2_016.0 * 2.5 + 1_024.0 * 1.25 + 13.0 * 10.0) / 1e6;
    assert!(
        out.contains(&format!("2 calls: 3,040 in (1,024 cached, 0 written), 13 out, ${price:.4}")),
        "{out}"
    );
    let out = text(&curator(&["inspect", db]).stdout);
    assert!(out.contains("2 calls: 3,040 in (1,024 cached, 0 written), 13 out\n"), "{out}");

    let out = text(&curator(&["trace", db, "--model", "gpt-4o"]).stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[1].starts_with("recorded model 2 calls: 3,040 in"), "{out}");
    let reply = lines.iter().position(|l| l.contains("Noon.")).unwrap();
    assert!(
        lines[reply + 1].contains("1 call: 1,540 in (1,024 cached, 0 written), 4 out, $"),
        "{out}"
    );
    // Under --raw every message stays one JSON line.
    let out = text(&curator(&["trace", db, "--raw"]).stdout);
    assert!(out.lines().skip(2).all(|l| l.contains('{')), "{out}");
    fails_with(&curator(&["inspect", db, "--model", "no-such-model-x"]), 2, "--model");
}

/// A record longer than the pages `inspect` and `trace` read it in: every message is shown
/// once, in order, a secret on a later page redacted, and the calls still open at the end
/// found.
#[test]
fn inspect_and_trace_read_a_long_record_page_by_page_whole_and_in_order() {
    use curator::model::{Entry, EvaluationId, Message, ToolCall};
    use curator::session::{SessionKey, SessionStore};

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("long.db");
    let store = curator::sqlite::SqliteStore::open(&db).unwrap();
    let evaluation = EvaluationId::new();
    let count = 4_501_u64;
    let entries: Vec<Entry> = (0..count)
        .map(|i| {
            let message = match i {
                0 => Message::system("s"),
                3_000 => Message::user("my key is sk-proj-abcdefghijklmnopqrstuvwx"),
                i if i + 1 == count => {
                    Message::assistant_with_calls(None, vec![ToolCall::new("last", "look", "{}")])
                }
                i if i % 2 == 1 => Message::user(format!("question {i}")),
                i => Message::assistant(format!("answer {i}")),
            };
            let turn = u32::try_from(i / 2 + 1).unwrap();
            Entry::builder(evaluation, message).sequence(i).turn(turn).build().unwrap()
        })
        .collect();
    store.append_batch(&SessionKey::new("long"), &entries).unwrap();
    drop(store);
    let db = db.to_str().unwrap();

    let out = curator(&["trace", db]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = text(&out.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].contains("4501 messages shown of 4501 recorded"), "{}", lines[0]);
    assert_eq!(lines.len(), 4_502);
    for (i, line) in lines[1..].iter().enumerate() {
        assert!(line.starts_with(&format!("#{i:<4} ")), "line {i}: {line}");
    }
    assert!(lines[3_001].contains("my key is [REDACTED:openai_key]"), "{}", lines[3_001]);
    assert!(!out.contains("sk-proj-"), "no secret printed");

    let out = text(&curator(&["inspect", db]).stdout);
    assert!(out.contains("last (look)"), "{out}");
}

/// A long conversation shows, on a terminal, how many of its messages are replayed (a
/// terminal made by `script`; piped, stderr stays quiet: `replay_shows_progress_on_a_terminal_only`).
#[test]
fn replay_shows_progress_through_a_long_conversation_on_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let mut messages = vec![json!({"role": "system", "content": "s"})];
    for i in 0..500 {
        messages.push(json!({"role": "user", "content": format!("question {i}")}));
        messages.push(json!({"role": "assistant", "content": format!("answer {i}")}));
    }
    let path =
        write(dir.path(), "long.json", &json!({"id": "long", "messages": messages}).to_string());
    let path = path.to_str().unwrap();
    let command = format!("'{}' replay '{path}' > /dev/null", env!("CARGO_BIN_EXE_curator"));
    let out = Command::new("script").args(["-qec", &command, "/dev/null"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(shown.contains("conversation long: 1001/1001 messages replayed (100%)"), "{shown}");
}

/// A secret in a session key (a token in a conversation's id) is redacted in `inspect`'s
/// listing unless `--show-secrets` is given.
#[test]
fn inspect_redacts_a_secret_in_a_session_key() {
    let dir = tempfile::tempdir().unwrap();
    let token = "ghp_R8kQ2vX7mT4yL9wN3bP6cH1dF5sJ0gZaE2uK8";
    let conversation = json!({"id": format!("deploy {token}"), "messages": [
        {"role": "user", "content": "go"}, {"role": "assistant", "content": "done"}]});
    let file = write(dir.path(), "c.json", &conversation.to_string());
    let db = dir.path().join("s.db");
    let out = curator(&["replay", file.to_str().unwrap(), "--db", db.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listing = text(&curator(&["inspect", db.to_str().unwrap()]).stdout);
    assert!(!listing.contains(token) && listing.contains("deploy [REDACTED:"), "{listing}");
    let shown = curator(&["inspect", db.to_str().unwrap(), "--show-secrets"]);
    assert!(text(&shown.stdout).contains(token), "{}", text(&shown.stdout));
}

/// A share given as a negative number is read as the option's value and refused by name,
/// not taken for an unknown flag.
#[test]
fn a_negative_share_is_refused_by_its_option() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "conv.json", &conversation(4).to_string());
    for option in ["--first-opening-share", "--opening-share", "--low-water"] {
        let out = curator(&["curate", file.to_str().unwrap(), "--budget", "2000", option, "-0.5"]);
        assert!(!out.status.success());
        let err = text(&out.stderr);
        let name = option.trim_start_matches("--").replace('-', "_");
        assert!(err.contains(&format!("`{name}` is -0.5, not between 0 and 1")), "{option}: {err}");
    }
}
