//! `curator chat` in a real terminal (tmux), against a loopback OpenAI-compatible server:
//! two exchanges, Ctrl-C, the same command again, and the history is there.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use curator_testkit::chat_server::ChatServer;

/// A tmux server of our own (its own socket), killed when the test ends.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(dir: &Path) -> Option<Self> {
        if Command::new("tmux").arg("-V").output().is_err() {
            assert!(
                std::env::var_os("CI").is_none(),
                "tmux is required under CI (.ci/run installs it)"
            );
            eprintln!("skipped: tmux is not installed");
            return None;
        }
        let socket = format!("curator-chat-test-{}", std::process::id());
        let tmux = Self { socket };
        // A plain shell in a wide window, in the test's folder, as a person would have.
        let shell = format!("cd {} && exec sh", dir.display());
        tmux.run(&["new-session", "-d", "-s", "chat", "-x", "200", "-y", "50", &shell]);
        Some(tmux)
    }

    fn run(&self, args: &[&str]) -> String {
        let output = Command::new("tmux").args(["-L", &self.socket]).args(args).output().unwrap();
        assert!(
            output.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    fn type_line(&self, line: &str) {
        self.run(&["send-keys", "-t", "chat", "-l", line]);
        self.run(&["send-keys", "-t", "chat", "Enter"]);
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "chat", "-S", "-200"])
    }

    /// Waits until the screen shows `text` `times` times.
    #[track_caller]
    fn wait_for(&self, text: &str, times: usize) -> String {
        let deadline = Instant::now() + Duration::from_mins(1);
        loop {
            let screen = self.screen();
            if screen.matches(text).count() >= times {
                return screen;
            }
            assert!(Instant::now() < deadline, "`{text}` not shown {times} times:\n{screen}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).output();
    }
}

#[test]
fn two_turns_ctrl_c_restart_and_the_history_is_there() {
    let dir = tempfile::tempdir().unwrap();
    let Some(tmux) = Tmux::start(dir.path()) else { return };
    let server = ChatServer::counting("reply");
    let command = format!(
        "{} chat --base-url {} --model test-model --session trip --db chat.db --system 'Be brief.'",
        env!("CARGO_BIN_EXE_curator"),
        server.url()
    );
    tmux.type_line(&command);
    tmux.wait_for("you>", 1);
    tmux.type_line("Plan a weekend in Rome");
    tmux.wait_for("assistant> reply 1 (2 messages)", 1);
    tmux.type_line("Add a museum on Sunday");
    tmux.wait_for("assistant> reply 2 (4 messages)", 1);
    tmux.run(&["send-keys", "-t", "chat", "C-c"]);
    tmux.wait_for("[paused: session `trip`", 1);

    // The same command again: the conversation is there, shown and sent.
    tmux.run(&["send-keys", "-t", "chat", "clear", "Enter"]);
    std::thread::sleep(Duration::from_millis(200));
    tmux.type_line(&command);
    tmux.wait_for("resumed session `trip` (4 turns)", 1);
    // The turns are printed after that line: wait until the last one follows it, then all
    // must be there.
    let marker = "resumed session `trip` (4 turns)";
    let deadline = Instant::now() + Duration::from_mins(1);
    let screen = loop {
        let screen = tmux.screen();
        let after = screen.rfind(marker).map(|at| screen[at..].to_owned());
        if let Some(after) = after.filter(|after| after.contains("assistant> reply 2 (4 messages)"))
        {
            break after;
        }
        assert!(Instant::now() < deadline, "the turns were not shown after the restart:\n{screen}");
        std::thread::sleep(Duration::from_millis(50));
    };
    for line in [
        "you> Plan a weekend in Rome",
        "assistant> reply 1 (2 messages)",
        "you> Add a museum on Sunday",
        "assistant> reply 2 (4 messages)",
    ] {
        assert!(screen.contains(line), "{line} missing after the restart:\n{screen}");
    }
    tmux.type_line("/history");
    tmux.wait_for("--- what the model is sent next (5 messages", 1);
    // The listing's last message, printed after its header: wait for it, not the header.
    let screen = tmux.wait_for("[assistant] reply 2 (4 messages)", 1);
    assert!(screen.contains("[system] Be brief."), "{screen}");
    tmux.type_line("And a restaurant");
    tmux.wait_for("assistant> reply 3 (6 messages)", 1);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[2]["messages"][1]["content"], "Plan a weekend in Rome");
    assert_eq!(requests[2]["messages"][5]["content"], "And a restaurant");
    tmux.type_line("/quit");
    tmux.wait_for("[paused: session `trip`", 1);
}

#[test]
fn a_bad_server_address_or_a_missing_key_variable_is_refused_before_the_first_message() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chat.db");
    let db = db.to_str().unwrap();
    let run =
        |extra: &[&str]| crate::curator(&[&["chat", "--model", "m", "--db", db], extra].concat());
    let output = run(&["--base-url", "localhost:11434"]);
    crate::fails_with(&output, 2, "--base-url localhost:11434: give the server as http://HOST");
    let output =
        run(&["--base-url", "http://127.0.0.1:9", "--api-key-env", "CURATOR_TEST_NO_SUCH_KEY"]);
    crate::fails_with(&output, 2, "the variable CURATOR_TEST_NO_SUCH_KEY is not set");
}

#[test]
fn the_system_prompt_is_kept_with_the_session() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chat.db");
    let db = db.to_str().unwrap();
    let chat = |extra: &[&str], input: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_curator"))
            .args(
                [&["chat", "--base-url", "http://127.0.0.1:9", "--model", "m", "--db", db], extra]
                    .concat(),
            )
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", crate::text(&output.stderr));
        crate::text(&output.stdout)
    };
    chat(&["--system", "Answer in French."], "/quit\n");
    // Started again without --system: the model is still sent the session's prompt.
    let out = chat(&[], "/history\n/quit\n");
    assert!(out.contains("[system] Answer in French."), "{out}");
    // A new --system replaces it.
    let out = chat(&["--system", "Answer in German."], "/history\n/quit\n");
    assert!(out.contains("[system] Answer in German.") && !out.contains("French"), "{out}");
}

/// Runs `curator chat` on `db` against `url` with `input` on stdin.
fn chat_with(db: &str, url: &str, extra: &[&str], input: &str) -> std::process::Output {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_curator"))
        .args(
            [&["chat", "--base-url", url, "--model", "m", "--db", db, "--session", "s"], extra]
                .concat(),
        )
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn a_reply_that_only_calls_a_tool_is_shown_and_recorded_and_an_empty_one_is_said() {
    use curator_testkit::chat_server::Reply;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chat.db");
    let db = db.to_str().unwrap();
    let server = ChatServer::start(|n, _| {
        let message = if n == 1 {
            serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Rome\"}"}}]})
        } else {
            serde_json::json!({"role": "assistant", "content": ""})
        };
        Reply::Status(200, serde_json::json!({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}).to_string())
    });
    let output = chat_with(db, &server.url(), &[], "Weather in Rome?\nAnd tomorrow?\n/quit\n");
    let (out, err) = (crate::text(&output.stdout), crate::text(&output.stderr));
    assert!(output.status.success(), "{err}");
    assert!(out.contains(r#"assistant> [tool call] get_weather({"city":"Rome"})"#), "{out}");
    assert!(err.contains("the model sent an empty reply"), "{err}");
    // Recorded: the chat session is read by `inspect` and `trace`.
    let output = crate::curator(&["inspect", db]);
    let out = crate::text(&output.stdout);
    assert!(output.status.success(), "{}", crate::text(&output.stderr));
    assert!(out.contains("1 loop session"), "{out}");
    assert!(out.contains("s    chat") || out.contains("s  chat"), "{out}");
    let line = out.lines().find(|l| l.contains("waiting at step `user`")).unwrap_or_default();
    assert!(line.split_whitespace().any(|w| w == "3"), "three turns: {out}");
    let output = crate::curator(&["trace", db, "--key", "s"]);
    let out = crate::text(&output.stdout);
    assert!(output.status.success(), "{}", crate::text(&output.stderr));
    assert!(out.contains("loop `chat` of session `s`"), "{out}");
    assert!(out.contains("Weather in Rome?") && out.contains("get_weather"), "{out}");
    assert!(out.contains("And tomorrow?"), "{out}");
    // The lens: what the model was sent at each turn, with the conversation injected.
    assert!(
        out.contains(
            "sent in iteration 1 to step `assistant` (conversation injected, 1 messages):"
        ),
        "{out}"
    );
    let second = out
        .split("sent in iteration 2 to step `assistant` (conversation injected")
        .nth(1)
        .unwrap_or_else(|| panic!("no lens of the second turn: {out}"));
    assert!(second.contains("Weather in Rome?") && second.contains("And tomorrow?"), "{out}");
}

#[test]
fn a_failed_exchange_keeps_the_message_exits_non_zero_and_sends_it_at_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chat.db");
    let db = db.to_str().unwrap();
    // Nothing listens on port 9: the exchange fails.
    let output = chat_with(db, "http://127.0.0.1:9", &["--timeout", "2"], "Book the 9:40 train\n");
    let err = crate::text(&output.stderr);
    assert_ne!(output.status.code(), Some(0), "{err}");
    assert!(err.contains("your message is kept in session `s`"), "{err}");
    // The same command with the server up: the message goes first, once.
    let server = ChatServer::counting("reply");
    let output = chat_with(db, &server.url(), &[], "/quit\n");
    let out = crate::text(&output.stdout);
    assert!(output.status.success(), "{}", crate::text(&output.stderr));
    assert!(out.contains("you> Book the 9:40 train"), "{out}");
    assert!(out.contains("assistant> reply 1 (1 messages)"), "{out}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["messages"][0]["content"], "Book the 9:40 train");
    // Started again: nothing is sent twice.
    let output = chat_with(db, &server.url(), &[], "/quit\n");
    assert!(output.status.success());
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_message_over_the_budget_is_refused_whole_not_cut_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chat.db");
    let db = db.to_str().unwrap();
    let server = ChatServer::counting("reply");
    let long = "word ".repeat(2_000);
    let output = chat_with(db, &server.url(), &["--max-tokens", "100"], &format!("{long}\n"));
    let err = crate::text(&output.stderr);
    assert_ne!(output.status.code(), Some(0), "{err}");
    assert!(err.contains("the history budget of 100 cannot send it whole"), "{err}");
    assert!(err.contains("your message is kept"), "{err}");
    assert!(server.requests().is_empty(), "nothing cut was sent");
    // With a budget that holds it, it goes whole.
    let output = chat_with(db, &server.url(), &["--max-tokens", "4096"], "/quit\n");
    assert!(output.status.success(), "{}", crate::text(&output.stderr));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["messages"][0]["content"].as_str().unwrap(), long);
}

#[test]
fn a_system_prompt_is_kept_redacted_when_the_chat_redacts_what_it_persists() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chat.db");
    let config = dir.path().join("red.toml");
    std::fs::write(&config, "conversation = true\n[redact]\npersisted = true\n").unwrap();
    let key = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3i";
    let system = format!("system {key}");
    let output = chat_with(
        db.to_str().unwrap(),
        "http://127.0.0.1:9",
        &["--config", config.to_str().unwrap(), "--system", &system],
        "/quit\n",
    );
    assert!(output.status.success(), "{}", crate::text(&output.stderr));
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let bytes = std::fs::read(&path).unwrap();
            assert!(!bytes.windows(key.len()).any(|w| w == key.as_bytes()), "{}", path.display());
        }
    }
}

#[test]
fn a_message_is_sent_as_typed_only_its_line_ending_removed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chat.db");
    let server = ChatServer::counting("reply");
    let output =
        chat_with(db.to_str().unwrap(), &server.url(), &[], "    let x = 1;  \r\n  /quit  \n");
    assert!(output.status.success(), "{}", crate::text(&output.stderr));
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "the indented `/quit` is a command");
    let sent = requests[0]["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    assert_eq!(sent, "    let x = 1;  ");
}
