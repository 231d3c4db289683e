//! Runs every example of the facade (`examples/`) and checks what it prints.
//!
//! The examples are built by `cargo test` (all targets) before the tests run; this test finds
//! their binaries beside its own (`target/<profile>/examples/`) and fails, saying why, when
//! one is missing or older than its source (`cargo test -p curator --test examples` alone
//! does not rebuild them: run `cargo build -p curator --examples --all-features` first).
#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers fail loudly")]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The example's binary, checked to be newer than its source.
fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(Path::parent).unwrap().join("examples");
    let path = dir.join(name);
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("examples/{name}.rs"));
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified());
    match (modified(&path), modified(&source)) {
        (Ok(built), Ok(written)) if built >= written => path,
        (Ok(_), Ok(_)) => {
            panic!("{} is older than {}: rebuild the examples", path.display(), source.display())
        }
        (Err(e), _) => panic!(
            "the example `{name}` is not built ({}: {e}): `cargo test` builds the examples, or \
             run `cargo build -p curator --examples --all-features`",
            path.display()
        ),
        (_, Err(e)) => panic!("cannot read {}: {e}", source.display()),
    }
}

/// Runs the example as `command` sets it up and returns what it printed, checking that it
/// succeeded.
fn run_with(name: &str, setup: impl FnOnce(&mut Command)) -> String {
    let mut command = Command::new(binary(name));
    setup(&mut command);
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{name} failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

fn run(name: &str) -> String {
    run_with(name, |_| {})
}

#[test]
fn sliding_window_keeps_the_head_and_whole_pairs() {
    assert_eq!(
        run("sliding_window"),
        "kept 5 of 11 messages:\n  system: You are a build assistant.\n  \
         user: Make the build pass.\n  assistant calls call-4\n  \
         tool result for call-4: error[E0400]: step 4\n  assistant: The build passes.\n\
         valid for OpenAI and Anthropic: yes\n"
    );
}

#[cfg(feature = "tiktoken")]
#[test]
fn token_budget_fits_with_exact_counts() {
    let out = run("token_budget");
    assert!(out.contains("history: 62 messages, 5001 tokens (o200k_base)\n"), "{out}");
    assert!(out.contains("within 2000 - 500 reserved: true\n"), "{out}");
    assert!(out.contains("first two: system / Why did the nightly job fail?\n"), "{out}");
    assert!(
        out.contains("newest kept: 2026-11-30 nightly: 30000 rows copied, 0 errors\n"),
        "{out}"
    );
}

#[test]
fn relevance_keeps_what_recency_drops() {
    let out = run("relevance");
    assert!(
        out.contains("TokenBudget: 17 of 27 messages sent; the failing test's path kept: no\n"),
        "{out}"
    );
    assert!(
        out.contains(
            "RelevanceBudget: 14 of 27 messages sent; the failing test's path kept: yes\n"
        ),
        "{out}"
    );
}

#[cfg(feature = "sqlite")]
#[test]
fn agent_loop_resume_reruns_only_the_killed_call() {
    assert_eq!(
        run("agent_loop_resume"),
        "worker 1: opened: resumed = false\nworker 1: running call-1 (is_resume = false)\n\
         worker 1: tool started\nworker 1: killed (signal: 9 (SIGKILL))\n\
         opened: resumed = true\nrunning call-1 (is_resume = true)\n\
         answer: The invoice total is EUR 1,250.00.\nrecorded: 1 conversation, 5 messages\n"
    );
}

#[cfg(all(feature = "sqlite", feature = "tokio"))]
#[test]
fn async_agent_finishes() {
    assert_eq!(
        run("async_agent"),
        "tool weather for {\"city\": \"Lyon\"}\nanswer: Lyon: light rain, 11 °C.\n\
         recorded: 5 messages\n"
    );
}

#[cfg(all(feature = "loop", feature = "sqlite"))]
#[test]
fn conversation_loop_pauses_and_resumes() {
    assert_eq!(
        run("conversation_loop"),
        "paused at customer: Your answer?\nfinished: true\nuser: My parcel never arrived.\n\
         assistant: Which order is it?\nuser: It is order 42.\n\
         assistant: Thanks: order 42 is on its way.\nuser: Thank you.\n"
    );
}

#[cfg(feature = "loop")]
#[test]
fn loop_summarize_sends_the_summary_within_the_budget() {
    assert_eq!(
        run("loop_summarize"),
        "requests: 40\nthe first summary reached the agent at request 10; 31 of the 31 requests \
         after it carried one\nat most 18 messages per request, whatever the conversation's length\n"
    );
}

#[cfg(feature = "postgres")]
#[test]
fn postgres_claims_records_and_resumes() {
    // Without a server to go to, the example says so and succeeds.
    let skipped = run_with("postgres", |c| {
        c.env_remove("CURATOR_PG_URL").env_remove("PGHOST");
    });
    assert!(skipped.starts_with("skipping: set CURATOR_PG_URL"), "{skipped}");
    let Some(server) = curator_testkit::postgres::PgServer::shared() else { return };
    let out = run_with("postgres", |c| {
        c.env("CURATOR_PG_URL", server.url());
    });
    assert!(out.starts_with("a second worker is refused the claim\n"), "{out}");
    assert!(out.contains("resumed by another worker: 5 messages, next step Finished\n"), "{out}");
}

#[cfg(feature = "coalesce")]
#[test]
fn coalesced_sends_one_user_message_and_answers() {
    let out = run("coalesced");
    assert!(out.starts_with("Find the best-rated laptop\n"), "{out}");
    assert!(
        out.contains(
            "reviews                          ; = list[2], sample: {:sku \"L1\", :stars 4.6}\n"
        ),
        "{out}"
    );
    assert!(out.contains(";   search-reviews(\"laptops\")\n"), "{out}");
    assert!(out.ends_with("answer: \"L1\"\n"), "{out}");
}

#[cfg(all(feature = "tasks", feature = "sqlite"))]
#[test]
fn task_history_renders_the_plan_and_answers() {
    let out = run("task_history");
    assert!(out.starts_with("## Task History\n\n**Objective**: Fix the flaky test\n"), "{out}");
    assert!(out.contains("### 1. Reproduce [active]\n"), "{out}");
    assert!(
        out.contains("**[cargo_test]**: test result: FAILED. 45 passed; 5 failed (seed 42)\n"),
        "{out}"
    );
    assert!(
        out.ends_with("answer: The test depends on HashMap order; seed 42 reproduces it.\n"),
        "{out}"
    );
}

/// A loopback OpenAI-compatible server for the agent examples: a question gets a call to
/// `weather` for Lyon, a tool result gets the answer built from it.
#[cfg(feature = "openai")]
fn weather_server() -> curator_testkit::chat_server::ChatServer {
    use curator_testkit::chat_server::{ChatServer, Reply};
    ChatServer::start(|_, body| {
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let last = messages.last().cloned().unwrap_or_default();
        let message = if last["role"] == "tool" {
            serde_json::json!({"role": "assistant", "content": format!("In Lyon: {}.", last["content"].as_str().unwrap_or("?"))})
        } else {
            let user = messages.iter().filter(|m| m["role"] == "user").count();
            serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{
                "id": format!("call_{user}"), "type": "function",
                "function": {"name": "weather", "arguments": "{\"city\":\"Lyon\"}"}}]})
        };
        Reply::Status(
            200,
            serde_json::json!({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})
                .to_string(),
        )
    })
}

#[cfg(all(feature = "openai", feature = "sqlite"))]
#[test]
fn the_front_page_agent_killed_mid_tool_call_resumes_and_answers_once() {
    use std::io::{BufRead as _, BufReader};
    use std::process::Stdio;
    let server = weather_server();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("agent.db");
    let env = |c: &mut Command| {
        c.env("OPENAI_BASE_URL", server.url()).env("OPENAI_API_KEY", "test").env("AGENT_DB", &db);
    };
    // First run: killed while its tool runs.
    let mut first = Command::new(binary("agent"));
    env(&mut first);
    let mut child = first.env("AGENT_SLOW_TOOL", "1").stdout(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "tool started");
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(server.requests().len(), 1, "one model call before the kill");
    // The same command again: the pending call runs, then the model answers.
    let out = run_with("agent", |c| env(c));
    assert_eq!(out, "answer: In Lyon: Lyon: light rain, 11 °C.\n");
    assert_eq!(server.requests().len(), 2, "the recorded reply was not asked for again");
    // And again (a redelivered message): its own answer, no model call.
    assert_eq!(run_with("agent", |c| env(c)), out);
    assert_eq!(server.requests().len(), 2);
    // What the model was sent counts the tool's schema and holds the question once.
    let second = &server.requests()[1];
    assert_eq!(second["tools"][0]["function"]["name"], "weather");
    let questions = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["content"] == "What is the weather in Lyon?")
        .count();
    assert_eq!(questions, 1);
}

#[cfg(all(feature = "openai", feature = "sqlite", feature = "tokio"))]
#[test]
fn the_async_agent_answers_on_the_multi_threaded_runtime() {
    let server = weather_server();
    let dir = tempfile::tempdir().unwrap();
    let env = |c: &mut Command| {
        c.env("OPENAI_BASE_URL", server.url())
            .env("OPENAI_API_KEY", "test")
            .env("AGENT_DB", dir.path().join("agent.db"));
    };
    assert_eq!(run_with("agent_async", env), "answer: In Lyon: Lyon: light rain, 11 °C.\n");
    assert_eq!(server.requests().len(), 2);
    // Asked again: the message's own answer, no model call.
    assert_eq!(run_with("agent_async", env), "answer: In Lyon: Lyon: light rain, 11 °C.\n");
    assert_eq!(server.requests().len(), 2);
}

#[cfg(all(feature = "openai", feature = "postgres"))]
#[test]
fn the_postgres_agent_answers_under_a_claim() {
    let skipped = run_with("agent_postgres", |c| {
        c.env_remove("CURATOR_PG_URL");
    });
    assert!(skipped.starts_with("skipping: set CURATOR_PG_URL"), "{skipped}");
    let Some(pg) = curator_testkit::postgres::PgServer::shared() else { return };
    let server = weather_server();
    let env = |c: &mut Command| {
        c.env("CURATOR_PG_URL", pg.url())
            .env("OPENAI_BASE_URL", server.url())
            .env("OPENAI_API_KEY", "test");
    };
    let first = run_with("agent_postgres", env);
    assert_eq!(first, "answer: In Lyon: Lyon: light rain, 11 °C.\n");
    // The session and its message are kept in the server: asked again, the same answer.
    let requests = server.requests().len();
    assert_eq!(run_with("agent_postgres", env), first);
    assert_eq!(server.requests().len(), requests);
}
