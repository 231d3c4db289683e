//! Configuration mistakes give their typed error on the first call, before any request;
//! replies that are not JSON are shown; error chains do not repeat their sources' text.
#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers fail loudly")]

use std::time::{Duration, Instant};

use curator_client::{
    AnthropicClient, ClientError, ModelClient, ModelRequest, OpenAiClient, Retry,
};
use curator_model::Message;
use curator_testkit::chat_server::{ChatServer, Reply};

fn ask(client: &dyn ModelClient) -> ClientError {
    client.complete(&ModelRequest::new(&[Message::user("Hi")])).unwrap_err()
}

/// Each error of the chain, in order.
fn chain(err: &dyn std::error::Error) -> Vec<String> {
    let mut out = vec![err.to_string()];
    let mut source = err.source();
    while let Some(next) = source {
        out.push(next.to_string());
        source = next.source();
    }
    out
}

/// No error of the chain says again the whole text of the one under it.
#[track_caller]
fn no_repeats(err: &dyn std::error::Error) {
    let texts = chain(err);
    for pair in texts.windows(2) {
        assert!(!pair[0].contains(&pair[1]), "{:?} repeats its source {:?}", pair[0], pair[1]);
    }
}

#[test]
fn a_base_url_without_a_scheme_fails_at_once_naming_it() {
    for client in [
        Box::new(OpenAiClient::new("localhost:11434", "m")) as Box<dyn ModelClient>,
        Box::new(AnthropicClient::new("api.anthropic.com", "m").with_api_key("k")),
        Box::new(OpenAiClient::new("https://", "m")),
        Box::new(OpenAiClient::new("ftp://example.com", "m")),
    ] {
        let started = Instant::now();
        let err = ask(&*client);
        assert!(started.elapsed() < Duration::from_millis(200), "{:?}", started.elapsed());
        let ClientError::Config { problem, .. } = &err else { panic!("{err:?}") };
        assert!(problem.contains("base URL"), "{problem}");
        assert!(!err.is_retryable());
        no_repeats(&err);
    }
    let err = ask(&OpenAiClient::new("localhost:11434", "m"));
    assert!(
        err.to_string().contains("`localhost:11434` has no http:// or https:// scheme"),
        "{err}"
    );
}

#[test]
fn a_provider_server_without_a_key_fails_at_once_naming_the_variable() {
    let err = ask(&OpenAiClient::new("https://api.openai.com/v1", "gpt-4o-mini"));
    assert!(matches!(err, ClientError::Config { provider: "OpenAI", .. }), "{err:?}");
    assert!(err.to_string().contains("OPENAI_API_KEY"), "{err}");
    let err = ask(&AnthropicClient::new("https://API.anthropic.com", "claude-haiku-4-5"));
    assert!(matches!(err, ClientError::Config { provider: "Anthropic", .. }), "{err:?}");
    assert!(err.to_string().contains("ANTHROPIC_API_KEY"), "{err}");
    // A key given as a header counts; another server needs none.
    let client = OpenAiClient::with_endpoint(
        curator_client::Endpoint::new("https://api.openai.com")
            .with_header("Authorization", "Bearer k"),
        "m",
    );
    assert!(client.check().is_ok());
    let server = ChatServer::counting("fine");
    let reply = OpenAiClient::new(server.url(), "m")
        .complete(&ModelRequest::new(&[Message::user("Hi")]))
        .unwrap();
    assert!(reply.message.text().starts_with("fine"));
    assert!(server.requests()[0]["model"] == "m");
}

#[test]
fn a_reply_that_is_not_json_is_shown() {
    let server =
        ChatServer::start(|_, _| Reply::Status(200, "<html>502 Bad Gateway</html>".into()));
    let err = ask(&OpenAiClient::new(server.url(), "m").with_retry(Retry::none()));
    let ClientError::MalformedReply { detail, .. } = &err else { panic!("{err:?}") };
    assert!(
        detail.contains("<html>502 Bad Gateway</html>") && detail.contains("HTTP 200"),
        "{detail}"
    );
    no_repeats(&err);

    // A long body is cut, and says so.
    let server = ChatServer::start(|_, _| Reply::Status(200, "x".repeat(10_000)));
    let err = ask(&AnthropicClient::new(server.url(), "m").with_retry(Retry::none()));
    let ClientError::MalformedReply { detail, .. } = &err else { panic!("{err:?}") };
    assert!(detail.len() < 400 && detail.contains('…'), "{detail}");

    // An error status with an HTML body shows the body's start.
    let server =
        ChatServer::start(|_, _| Reply::Status(502, "<html>502 Bad Gateway</html>".into()));
    let err = ask(&OpenAiClient::new(server.url(), "m").with_retry(Retry::none()));
    assert!(matches!(err, ClientError::Status { status: 502, .. }), "{err:?}");
    assert!(err.to_string().contains("<html>502 Bad Gateway</html>"), "{err}");
    no_repeats(&err);

    // Nothing listens on port 9 of the loopback interface; a slow server times out.
    let err = ask(&OpenAiClient::new("http://127.0.0.1:9", "m").with_retry(Retry::none()));
    assert!(matches!(err, ClientError::Connection { .. }), "{err:?}");
    no_repeats(&err);
    let server = ChatServer::start(|_, _| Reply::Slow(Duration::from_secs(3), "late".into()));
    let client = OpenAiClient::new(server.url(), "m")
        .with_timeout(Duration::from_millis(200))
        .with_retry(Retry::none());
    let err = ask(&client);
    assert!(matches!(err, ClientError::Timeout { .. }), "{err:?}");
    no_repeats(&err);
}
