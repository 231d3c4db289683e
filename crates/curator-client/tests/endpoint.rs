//! The endpoint, and the model summarizer over the OpenAI client, against a small HTTP
//! server on loopback.
#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers fail loudly")]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use curator_client::{ModelSummarizer, OpenAiClient, Retry};
use curator_model::Message;
use curator_strategies::Summarizer;
use serde_json::{Value, json};

/// What the server answers.
enum Answer {
    Status(u16, String),
    Hang,
}

/// Reads one request: its head (request line and headers) and its body; `None` when the
/// client closed the connection.
fn read_request(reader: &mut impl BufRead) -> Option<(String, Vec<u8>)> {
    let mut head = String::new();
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 {
            return None;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().unwrap();
        }
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    Some((head, body))
}

/// Serves one request with `answer`; returns the base URL and the request the server got.
fn serve(answer: Answer) -> (String, mpsc::Receiver<(String, Value)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let (head, body) = read_request(&mut reader).unwrap();
        let _ = tx.send((head, serde_json::from_slice(&body).unwrap_or(Value::Null)));
        let mut stream = stream;
        match answer {
            Answer::Status(code, body) => {
                let _ = write!(
                    stream,
                    "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
            Answer::Hang => std::thread::sleep(Duration::from_secs(3)),
        }
    });
    (base, rx)
}

fn messages() -> Vec<Message> {
    vec![Message::user("Refund order 42."), Message::assistant("Looking it up.")]
}

fn ask(base: &str, timeout: Duration) -> curator_strategies::Result<String> {
    let client = OpenAiClient::new(base, "test-model")
        .with_api_key("sk-test")
        .with_timeout(timeout)
        .with_retry(Retry::none());
    let summarizer = ModelSummarizer::new(client).with_prompt("Summarize.");
    let owned = messages();
    let refs: Vec<&Message> = owned.iter().collect();
    summarizer.summarize(Some("Earlier: greeting."), &refs)
}

#[test]
fn a_successful_answer_is_the_summary_and_the_request_is_well_formed() {
    let answer = json!({"choices": [{"message": {"role": "assistant", "content": "The user wants a refund for order 42."}}]});
    let (base, got) = serve(Answer::Status(200, answer.to_string()));
    assert_eq!(
        ask(&base, Duration::from_secs(5)).unwrap(),
        "The user wants a refund for order 42."
    );
    let (head, body) = got.recv().unwrap();
    assert!(head.starts_with("POST /v1/chat/completions HTTP/1.1"), "{head}");
    assert!(head.to_ascii_lowercase().contains("authorization: bearer sk-test"), "{head}");
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["messages"][0], json!({"role": "system", "content": "Summarize."}));
    let user = body["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.contains("Summary so far:\nEarlier: greeting.")
            && user.contains("user: Refund order 42."),
        "{user}"
    );
}

/// The error and its sources, joined by `: `.
fn chain(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(next) = source {
        out.push_str(": ");
        out.push_str(&next.to_string());
        source = next.source();
    }
    out
}

#[track_caller]
fn fails(answer: Answer, timeout: Duration, expected: &str) {
    let (base, _got) = serve(answer);
    let err = ask(&base, timeout).unwrap_err();
    assert!(matches!(err, curator_strategies::Error::Summarizer { .. }));
    let chain = chain(&err);
    assert!(chain.contains(expected), "{chain}");
}

#[test]
fn error_answers_are_typed_errors() {
    fails(
        Answer::Status(401, r#"{"error": {"message": "bad key"}}"#.into()),
        Duration::from_secs(5),
        "HTTP 401",
    );
    fails(
        Answer::Status(429, r#"{"error": {"message": "slow down"}}"#.into()),
        Duration::from_secs(5),
        "HTTP 429",
    );
    fails(Answer::Status(500, "internal error".into()), Duration::from_secs(5), "HTTP 500");
    fails(Answer::Status(200, "{not json".into()), Duration::from_secs(5), "is not JSON");
    fails(
        Answer::Status(200, r#"{"choices": []}"#.into()),
        Duration::from_secs(5),
        "field `choices[0].message`",
    );
    fails(Answer::Hang, Duration::from_millis(300), "no answer");
}

#[test]
fn an_unreachable_endpoint_is_a_typed_error() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let err = ask(&format!("http://127.0.0.1:{port}"), Duration::from_secs(2)).unwrap_err();
    assert!(chain(&err).contains("cannot reach"), "{err}");
}

#[test]
fn a_base_url_ending_in_v1_is_not_doubled() {
    let answer = json!({"choices": [{"message": {"role": "assistant", "content": "ok"}}]});
    let (base, got) = serve(Answer::Status(200, answer.to_string()));
    assert_eq!(ask(&format!("{base}/v1/"), Duration::from_secs(5)).unwrap(), "ok");
    let (head, _) = got.recv().unwrap();
    assert!(head.starts_with("POST /v1/chat/completions HTTP/1.1"), "{head}");
}

/// Serves `answers.len()` requests on one connection, answering each with the next answer
/// and keeping the connection open; returns the base URL and the paths asked for.
fn serve_on_one_connection(answers: Vec<String>) -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut stream = stream;
        for body in answers {
            let Some((head, _)) = read_request(&mut reader) else { return };
            let first = head.lines().next().unwrap_or_default().to_owned();
            let _ = tx.send(first);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (base, rx)
}

#[test]
fn one_endpoint_reuses_its_connection_across_calls() {
    use curator_client::Endpoint;
    // The server accepts a single connection: a second call that opened a new one would
    // wait for an answer that never comes and fail on its timeout.
    let (base, got) =
        serve_on_one_connection(vec![r#"{"n": 1}"#.to_owned(), r#"{"n": 2}"#.to_owned()]);
    let endpoint = Endpoint::new(&base).with_timeout(Duration::from_secs(3));
    let shared = endpoint.clone();
    assert_eq!(endpoint.post_json("chat/completions", &json!({})).unwrap()["n"], 1);
    assert_eq!(shared.post_json("chat/completions", &json!({})).unwrap()["n"], 2);
    assert_eq!(got.recv().unwrap(), "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(got.recv().unwrap(), "POST /v1/chat/completions HTTP/1.1");
}

#[test]
fn endpoint_errors_name_the_url_the_status_and_whether_to_retry() {
    use curator_client::Endpoint;
    for (status, retryable) in [(429, true), (500, true), (503, true), (401, false), (404, false)] {
        let (base, _got) = serve(Answer::Status(status, r#"{"error": "x"}"#.into()));
        let err = Endpoint::new(&base).post_json("chat/completions", &json!({})).unwrap_err();
        assert_eq!(err.status, Some(status));
        assert_eq!(err.is_retryable(), retryable, "{status}");
        assert_eq!(
            err.to_string(),
            format!("{base}/v1/chat/completions: HTTP {status}: {{\"error\": \"x\"}}")
        );
    }
    let (base, _got) = serve(Answer::Status(200, "{not json".into()));
    let err = Endpoint::new(&base).post_json("chat/completions", &json!({})).unwrap_err();
    assert!(!err.is_retryable() && err.reason.contains("not JSON"), "{err}");
    let (base, _got) = serve(Answer::Hang);
    let err = Endpoint::new(&base)
        .with_timeout(Duration::from_millis(300))
        .post_json("chat/completions", &json!({}))
        .unwrap_err();
    assert!(err.is_retryable() && err.reason.contains("no answer within"), "{err}");
}

#[test]
fn endpoint_headers_are_sent_and_error_answers_keep_their_body_and_retry_after() {
    use curator_client::{Endpoint, HttpErrorKind};
    use curator_testkit::chat_server::{ChatServer, Reply};

    let body =
        r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#;
    let server = ChatServer::start(move |_, _| Reply::Full {
        status: 529,
        headers: vec![("retry-after".into(), "7".into())],
        body: body.into(),
    });
    let endpoint = Endpoint::new(server.url())
        .with_header("x-api-key", "first")
        .with_header("X-Api-Key", "sk-ant-secret")
        .with_header("anthropic-version", "2023-06-01");
    let debug = format!("{endpoint:?}");
    assert!(!debug.contains("secret") && debug.contains("anthropic-version"), "{debug}");
    let err = endpoint.post_json("messages", &json!({})).unwrap_err();
    assert_eq!((err.kind, err.status), (HttpErrorKind::Status, Some(529)));
    assert_eq!(err.body.as_deref(), Some(body));
    assert_eq!(err.retry_after, Some(Duration::from_secs(7)));
    assert!(err.is_retryable());
    let received = &server.received()[0];
    assert_eq!(received.path, "/v1/messages");
    assert_eq!(
        received.header("x-api-key"),
        Some("sk-ant-secret"),
        "one header per name, the last"
    );
    assert_eq!(
        received.headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case("x-api-key")).count(),
        1
    );
    assert_eq!(received.header("anthropic-version"), Some("2023-06-01"));

    let server = ChatServer::start(|_, _| Reply::Status(200, "{not json".into()));
    let err = Endpoint::new(server.url()).post_json("messages", &json!({})).unwrap_err();
    assert_eq!(
        (err.kind, err.body.as_deref(), err.retry_after),
        (HttpErrorKind::NotJson, Some("{not json"), None)
    );
}
