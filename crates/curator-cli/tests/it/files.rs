//! Several files and folders, session files, `--check` on inputs, labels, `inspect` and the
//! demo.

use serde_json::{Value, json};

use super::{command, conversation, curator, fails_with, lines, text, write};

#[test]
fn replay_takes_several_files_and_folders() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("corpus");
    std::fs::create_dir_all(folder.join("nested")).unwrap();
    write(&folder, "a.json", &conversation(3).to_string());
    write(&folder, "b.jsonl", &lines(2, 2));
    write(&folder.join("nested"), "c.json", &conversation(1).to_string());
    write(&folder, "README.md", "not a conversation");
    let extra = write(dir.path(), "extra.jsonl", &lines(3, 1));
    let out = curator(&["replay", folder.to_str().unwrap(), extra.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    // One row per file, then the totals: 1 + 2 + 1 + 3 conversations.
    for name in ["a.json", "b.jsonl", "c.json", "extra.jsonl"] {
        assert!(stdout.contains(name), "{name} in {stdout}");
    }
    assert!(!stdout.contains("README"), "{stdout}");
    assert!(stdout.contains("total: 7 conversations, 18 calls"), "{stdout}");
    assert!(stdout.contains("tokens saved: ") && stdout.contains("evidence kept: "), "{stdout}");
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    fails_with(&curator(&["replay", empty.to_str().unwrap()]), 2, "holds no .json or .jsonl file");
}

#[test]
fn curate_takes_several_files_into_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.json", &conversation(3).to_string());
    let b = write(dir.path(), "b.jsonl", &lines(2, 2));
    fails_with(
        &curator(&["curate", a.to_str().unwrap(), b.to_str().unwrap()]),
        2,
        "give --output FOLDER",
    );
    let out_dir = dir.path().join("out");
    let out = curator(&[
        "curate",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--window",
        "2",
        "-o",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let a_out: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("a.json")).unwrap()).unwrap();
    assert!(a_out.as_array().unwrap().len() < 9);
    let b_out = std::fs::read_to_string(out_dir.join("b.jsonl")).unwrap();
    assert_eq!(b_out.lines().count(), 2);
}

#[test]
fn db_skips_a_conversation_already_recorded_or_records_it_under_a_new_id() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "convs.jsonl", &lines(2, 2));
    let db = dir.path().join("s.db");
    let replay = |extra: &[&str]| {
        let mut args = vec!["replay", file.to_str().unwrap(), "--db", db.to_str().unwrap()];
        args.extend_from_slice(extra);
        curator(&args)
    };
    let out = replay(&[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("recorded 2 conversations into"), "{}", text(&out.stderr));
    let out = replay(&[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("c0: already recorded as evaluation"), "{stderr}");
    assert!(
        stderr.contains("recorded 0 conversations") && stderr.contains("2 already there, skipped"),
        "{stderr}"
    );
    let listing = text(&curator(&["inspect", db.to_str().unwrap()]).stdout);
    assert!(listing.contains(": 2 evaluations\n"), "{listing}");
    let out = replay(&["--db-again"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listing = text(&curator(&["inspect", db.to_str().unwrap()]).stdout);
    assert!(listing.contains(": 4 evaluations\n"), "{listing}");
    assert!(listing.contains("replay/c0 (2)") && listing.contains("replay/c1 (2)"), "{listing}");
}

/// Two conversations that give one id but hold different messages are both recorded, the
/// second under `ID (2)` with a note; replayed again, each is recognised and skipped.
#[test]
fn db_records_two_conversations_that_share_an_id_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let line = |user: &str| {
        json!({"id": "same", "messages": [{"role": "user", "content": user},
            {"role": "assistant", "content": "ok"}]})
        .to_string()
    };
    let file = write(dir.path(), "dup.jsonl", &format!("{}\n{}\n", line("hello"), line("other")));
    let db = dir.path().join("s.db");
    let replay = || curator(&["replay", file.to_str().unwrap(), "--db", db.to_str().unwrap()]);
    let out = replay();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("recorded 2 conversations into"), "{stderr}");
    assert!(
        stderr.contains("same: another conversation with this id, whose messages differ, is already recorded; recorded this one as `same (2)`"),
        "{stderr}"
    );
    let out = replay();
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("recorded 0 conversations") && stderr.contains("2 already there, skipped"),
        "{stderr}"
    );
    let listing = text(&curator(&["inspect", db.to_str().unwrap()]).stdout);
    assert!(listing.contains(": 2 evaluations\n"), "{listing}");
}

/// Conversations without an `id` are named by their file, and recorded by what they hold:
/// two different ones are both recorded, the same one replayed again is skipped.
#[test]
fn db_tells_conversations_without_an_id_apart() {
    let dir = tempfile::tempdir().unwrap();
    let conversation = |task: &str| {
        json!([
            {"role": "system", "content": "s"},
            {"role": "user", "content": task},
            {"role": "assistant", "content": "done"}
        ])
        .to_string()
    };
    let a = write(dir.path(), "a.json", &conversation("task one"));
    let b = write(dir.path(), "b.json", &conversation("task two"));
    std::fs::create_dir(dir.path().join("other")).unwrap();
    let other_a = write(&dir.path().join("other"), "a.json", &conversation("task three"));
    let db = dir.path().join("s.db");
    let replay = |files: &[&std::path::Path]| {
        let mut args: Vec<&str> = vec!["replay"];
        args.extend(files.iter().map(|f| f.to_str().unwrap()));
        args.extend(["--db", db.to_str().unwrap()]);
        curator(&args)
    };
    let out = replay(&[&a, &b]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("recorded 2 conversations into"), "{stderr}");
    // Tables name them by their files, not both `1`.
    let table = text(&out.stdout);
    assert!(table.contains("a.json") && table.contains("b.json"), "{table}");
    let out = replay(&[&a, &b, &other_a]);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("recorded 1 conversation into"), "{stderr}");
    assert!(stderr.contains("2 already there, skipped"), "{stderr}");
    let listing = text(&curator(&["inspect", db.to_str().unwrap()]).stdout);
    assert!(listing.contains(": 3 evaluations\n"), "{listing}");
}

#[test]
fn replay_check_treats_an_invalid_input_as_a_violation() {
    let dir = tempfile::tempdir().unwrap();
    let orphan = json!([{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "nope", "content": "orphan"}]);
    let file = write(dir.path(), "orphan.json", &orphan.to_string());
    let out = curator(&["replay", file.to_str().unwrap(), "--check"]);
    fails_with(&out, 1, "orphan.json: the input breaks a provider rule");
    fails_with(&out, 1, "answers no open tool call");
    // Without --check it is counted, not fatal.
    let out = curator(&["replay", file.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["violations"], 1);
}

#[test]
fn labels_say_what_they_count() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "convs.jsonl", &lines(3, 2));
    let out = curator(&["replay", file.to_str().unwrap(), "--window", "3"]);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("tokens over all calls"), "{stdout}");
    assert!(stdout.contains("summed over calls"), "{stdout}");
    assert!(stdout.contains("total: 3 conversations, 9 calls"), "{stdout}");
    let single = write(dir.path(), "one.jsonl", &lines(1, 2));
    let stdout = text(&curator(&["replay", single.to_str().unwrap(), "--per-conversation"]).stdout);
    assert!(stdout.contains("total: 1 conversation, 3 calls"), "{stdout}");
}

#[test]
fn inspect_columns_align_with_long_prompt_names() {
    let dir = tempfile::tempdir().unwrap();
    let long = "a-very-long-conversation-identifier-that-goes-on-and-on-for-a-while";
    let content = format!(
        "{}\n{}\n",
        json!({"id": long, "messages": conversation(1)}),
        json!({"id": "short", "messages": conversation(2)})
    );
    let file = write(dir.path(), "ids.jsonl", &content);
    let db = dir.path().join("s.db");
    assert!(
        curator(&["replay", file.to_str().unwrap(), "--db", db.to_str().unwrap()]).status.success()
    );
    let listing = text(&curator(&["inspect", db.to_str().unwrap()]).stdout);
    let rows: Vec<&str> = listing.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{listing}");
    // The right edge of the `messages` column is at the same place on every row.
    let header_end = rows[0].find("messages").unwrap() + "messages".len();
    for row in &rows[1..] {
        let end = row[..header_end].trim_end().len();
        assert_eq!(end, header_end, "misaligned:\n{listing}");
        assert!(row[..header_end].ends_with(|c: char| c.is_ascii_digit()), "{listing}");
    }
    assert!(listing.contains(long), "{listing}");
}

#[test]
fn the_demo_binds_the_budget_and_prints_a_command_the_user_can_run() {
    let out = curator(&["demo"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("total: 1 conversation, 112 calls"), "{stdout}");
    // The table ends with the tokens saved, the bill with the cache and the evidence kept.
    let table_end: Vec<&str> =
        stdout.lines().skip_while(|l| !l.starts_with("total: ")).take(5).collect();
    assert!(
        table_end[1].starts_with("tokens saved: ")
            && table_end[2].starts_with("billed input, prompt cache counted: ")
            && table_end[3].starts_with("evidence kept: ")
            && table_end[4].starts_with("evidence kept verbatim"),
        "{stdout}"
    );
    // The report path, once; the hint runs from a checkout (the test binary is not on PATH).
    let all = format!("{stdout}{}", text(&out.stderr));
    assert_eq!(all.matches("demo-report.html").count(), 1, "{all}");
    assert!(stdout.contains("cargo run -p curator-cli -- inspect "), "{stdout}");
    assert!(!stdout.contains("\n  curator inspect"), "{stdout}");

    // Installed (on PATH), the hint is the plain command.
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_curator")).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = command().arg("demo").env("PATH", path).output().unwrap();
    assert!(text(&out.stdout).contains("\n  curator inspect "), "{}", text(&out.stdout));
}

#[test]
fn the_demo_session_is_long_enough_that_the_budget_binds() {
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/data/demo.json");
    let out = curator(&["replay", demo, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let calls = doc["conversations"][0]["calls"].as_array().unwrap();
    assert!(calls.len() >= 100, "{} calls", calls.len());
    let sent: Vec<u64> = calls.iter().map(|c| c["sent_tokens"].as_u64().unwrap()).collect();
    let full: Vec<u64> = calls.iter().map(|c| c["full_tokens"].as_u64().unwrap()).collect();
    // The budget acts: no call sends more than 32,000 tokens while the full history keeps
    // rising past twice that; a view grows by what was appended and is compacted a few
    // times, not on every call, so that the calls are billed less than sending everything
    // with the prompt cache counted.
    assert!(sent.iter().all(|&s| s <= 32_000), "{sent:?}");
    assert!(full[full.len() - 1] > 2 * 32_000 && full[full.len() - 1] > full[full.len() - 30]);
    let compactions = sent.windows(2).filter(|w| w[1] < w[0]).count();
    assert!((1..=calls.len() / 5).contains(&compactions), "{compactions}: {sent:?}");
    for rule in ["openai", "anthropic"] {
        let ratio = doc["cost"][rule]["ratio"].as_f64().unwrap();
        assert!(ratio < 1.0, "{rule}: {ratio}");
    }
    let scored = doc["evidence"]["scored"].as_u64().unwrap();
    assert!(scored > 50, "the demo's replies use what the tools showed: {}", doc["evidence"]);
}

#[test]
fn curate_refuses_to_write_over_one_of_its_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "in.jsonl", &lines(3, 2));
    let other = write(dir.path(), "other.json", &conversation(2).to_string());
    let before = std::fs::read(&input).unwrap();
    let input_name = input.to_str().unwrap();
    // The same path, the same file by another path, a hard link, and a folder that holds it.
    let same_by_another_path = dir.path().join(".").join("in.jsonl");
    let link = dir.path().join("link.jsonl");
    std::fs::hard_link(&input, &link).unwrap();
    for output in [&input, &same_by_another_path, &link] {
        let out = curator(&["curate", input_name, "--window", "2", "-o", output.to_str().unwrap()]);
        fails_with(&out, 2, "is one of the inputs");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(input_name) && stderr.contains(output.to_str().unwrap()),
            "{stderr}"
        );
    }
    let folder = dir.path().to_str().unwrap();
    fails_with(&curator(&["curate", input_name, "-o", folder]), 2, "is one of the inputs");
    fails_with(
        &curator(&["curate", other.to_str().unwrap(), input_name, "-o", folder]),
        2,
        "is one of the inputs",
    );
    assert_eq!(std::fs::read(&input).unwrap(), before, "the input is unchanged");
    assert_eq!(std::fs::read(&link).unwrap(), before);
    // Another file is fine.
    let elsewhere = dir.path().join("out.jsonl");
    let out = curator(&["curate", input_name, "--window", "2", "-o", elsewhere.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap().lines().count(), 3);
}

/// A conversation that cannot be read is named once (its file and line), and a lone UTF-16
/// surrogate is explained.
#[test]
fn unreadable_conversations_are_named_once_and_explained() {
    let dir = tempfile::tempdir().unwrap();
    let lines = "{\"messages\":[{\"role\":\"bogus\",\"content\":\"x\"}]}\n{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}\n";
    let file = write(dir.path(), "bad.jsonl", lines);
    let out = curator(&["curate", file.to_str().unwrap()]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bad.jsonl line 1: message 0: unknown role `bogus`"), "{stderr}");
    assert_eq!(stderr.matches("line 1").count(), 1, "{stderr}");
    let file = write(dir.path(), "surrogate.json", r#"[{"role":"user","content":"\ud800 x"}]"#);
    let out = curator(&["curate", file.to_str().unwrap()]);
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("surrogate.json: ") || stderr.contains("surrogate.json: "),
        "{stderr}"
    );
    assert!(stderr.contains("must be followed by the"), "{stderr}");
    assert!(!stderr.contains("conversation 1"), "{stderr}");
}

/// `trace` prints a record's secrets redacted, unless `--show-secrets`.
#[test]
fn trace_redacts_what_it_prints_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let key = "sk-proj-4f9Qx7LmN2pR8sT1vW3yZ6bC0dE5gH";
    let conversation = json!([
        {"role": "system", "content": "s"},
        {"role": "user", "content": format!("my key is {key}")},
        {"role": "assistant", "content": "noted"}
    ]);
    let file = write(dir.path(), "secret.json", &conversation.to_string());
    let db = dir.path().join("s.db");
    let out = curator(&["replay", file.to_str().unwrap(), "--db", db.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for extra in [&[][..], &["--raw"][..], &["--view", "curated"][..]] {
        let mut args = vec!["trace", db.to_str().unwrap()];
        args.extend_from_slice(extra);
        let shown = text(&curator(&args).stdout);
        assert!(
            !shown.contains(key) && shown.contains("[REDACTED:openai_key]"),
            "{extra:?}: {shown}"
        );
    }
    let shown = text(&curator(&["trace", db.to_str().unwrap(), "--show-secrets"]).stdout);
    assert!(shown.contains(key), "{shown}");
}
