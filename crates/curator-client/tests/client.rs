//! The model clients against a real loopback server speaking each provider's wire format:
//! the request each sends, the reply each reads, retries, and typed errors.
#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers fail loudly")]

use std::time::{Duration, Instant};

use curator_client::{
    AnthropicClient, AsyncModelClient, ClientError, ModelClient, ModelReply, ModelRequest,
    ModelSettings, OpenAiClient, Retry, Usage,
};
use curator_model::{Message, Role, ToolCall};
use curator_testkit::chat_server::{ChatServer, Reply};
use serde_json::{Value, json};

/// Retries at once (1 ms, 2 ms, ...), but honours a `retry-after` of up to 5 s.
fn fast() -> Retry {
    Retry::default().with_backoff(Duration::from_millis(1), Duration::from_secs(5)).without_jitter()
}

fn openai(server: &ChatServer) -> OpenAiClient {
    OpenAiClient::new(server.url(), "gpt-test").with_api_key("sk-test").with_retry(fast())
}

fn anthropic(server: &ChatServer) -> AnthropicClient {
    AnthropicClient::new(server.url(), "claude-test").with_api_key("sk-ant-test").with_retry(fast())
}

fn ok(body: &Value) -> Reply {
    Reply::Status(200, body.to_string())
}

/// A server that answers every request with `status` and `body`.
fn always(status: u16, body: impl Into<String>) -> ChatServer {
    let body = body.into();
    ChatServer::start(move |_, _| Reply::Status(status, body.clone()))
}

/// Sends one user message, "Hi".
fn ask(client: &dyn ModelClient) -> Result<ModelReply, ClientError> {
    client.complete(&ModelRequest::new(&[Message::user("Hi")]))
}

/// A chat completion whose first choice is `message`.
fn completion(message: &Value, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-test",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}
    })
}

/// A Messages API reply holding `content`.
fn message(content: &Value, stop_reason: &str) -> Value {
    json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": content, "stop_reason": stop_reason, "stop_sequence": null,
        "usage": {"input_tokens": 30, "output_tokens": 12}
    })
}

fn tools() -> Value {
    json!([
        {"type": "function", "function": {"name": "weather", "description": "The weather in a city.",
         "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
        {"type": "function", "function": {"name": "time", "description": "The time in a city.",
         "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
    ])
}

fn conversation() -> Vec<Message> {
    vec![Message::system("You answer briefly."), Message::user("Weather and time in Paris?")]
}

#[test]
fn openai_a_plain_answer_with_its_usage_and_stop_reason() {
    let server = ChatServer::start(|_, _| {
        ok(&completion(&json!({"role": "assistant", "content": "Hello there."}), "stop"))
    });
    let client = openai(&server).with_settings(
        ModelSettings::new("gpt-test")
            .with_temperature(0.5)
            .with_max_tokens(64)
            .with_extra("seed", json!(3)),
    );
    let reply = ask(&client).unwrap();
    assert_eq!(reply.message, Message::assistant("Hello there."));
    assert_eq!(reply.usage, Some(Usage::new(42, 7)));
    assert_eq!(reply.stop_reason.as_deref(), Some("stop"));

    let received = server.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].path, "/v1/chat/completions");
    assert_eq!(received[0].header("authorization"), Some("Bearer sk-test"));
    assert_eq!(
        received[0].body,
        json!({"model": "gpt-test", "temperature": 0.5, "max_tokens": 64, "seed": 3,
               "messages": [{"role": "user", "content": "Hi"}]})
    );
}

#[test]
fn usage_keeps_the_tokens_read_from_and_written_to_the_prompt_cache() {
    // OpenAI: `prompt_tokens` holds the cached ones, told apart in its details.
    let server = ChatServer::start(|_, _| {
        let mut body = completion(&json!({"role": "assistant", "content": "Hi."}), "stop");
        body["usage"] = json!({"prompt_tokens": 2_000, "completion_tokens": 5, "total_tokens": 2_005,
                               "prompt_tokens_details": {"cached_tokens": 1_792}});
        ok(&body)
    });
    let usage = ask(&openai(&server)).unwrap().usage.unwrap();
    assert_eq!(usage, Usage::new(2_000, 5).with_cache(1_792, 0));
    assert_eq!(usage.bill().uncached_tokens(), 208);

    // Anthropic: `input_tokens` leaves the cached ones out; they are added back.
    let server = ChatServer::start(|_, _| {
        let mut body = message(&json!([{"type": "text", "text": "Hi."}]), "end_turn");
        body["usage"] = json!({"input_tokens": 50, "output_tokens": 9,
                               "cache_read_input_tokens": 1_500, "cache_creation_input_tokens": 300});
        ok(&body)
    });
    let usage = ask(&anthropic(&server)).unwrap().usage.unwrap();
    assert_eq!(usage, Usage::new(1_850, 9).with_cache(1_500, 300));
    let bill = usage.bill();
    assert_eq!(
        (bill.uncached_tokens(), bill.cache_read_tokens, bill.cache_write_tokens),
        (50, 1_500, 300)
    );
}

#[test]
fn anthropic_requests_carry_cache_breakpoints_the_next_request_reads_back() {
    let server = ChatServer::start(|_, _| {
        ok(&message(&json!([{"type": "text", "text": "Noted."}]), "end_turn"))
    });
    let client = anthropic(&server);
    let tools = tools();
    let mut messages = vec![
        Message::system("The airline's policy. ".repeat(400)),
        Message::user("Change my flight."),
    ];
    client.complete(&ModelRequest::new(&messages).with_tools(&tools)).unwrap();
    messages.push(Message::assistant("Which one?"));
    messages.push(Message::user("The one to Lyon."));
    client.complete(&ModelRequest::new(&messages).with_tools(&tools)).unwrap();
    let bodies = server.requests();
    let marks = |body: &Value| -> Vec<String> {
        let mut at = Vec::new();
        if let Some(blocks) = body["system"].as_array() {
            at.extend(
                blocks
                    .iter()
                    .filter(|b| b.get("cache_control").is_some())
                    .map(|_| "system".to_owned()),
            );
        }
        for (i, m) in body["messages"].as_array().unwrap().iter().enumerate() {
            if let Some(blocks) = m["content"].as_array() {
                at.extend(
                    blocks
                        .iter()
                        .filter(|b| b.get("cache_control").is_some())
                        .map(|_| format!("message {i}")),
                );
            }
        }
        at
    };
    // The head's end (the task, after the tools and the system prompt) and the newest
    // messages are marked, four at most: on the first request the task is the newest.
    assert_eq!(marks(&bodies[0]), ["message 0"]);
    assert_eq!(marks(&bodies[1]), ["message 0", "message 1", "message 2"]);
    assert!(
        bodies[1]["tools"].as_array().unwrap().iter().all(|t| t.get("cache_control").is_none())
    );
    // The second request still starts with the first one's messages, byte for byte but the
    // markers: every text is written as blocks, marked or not.
    let unmarked = |mut message: Value| {
        for block in message["content"].as_array_mut().unwrap() {
            block.as_object_mut().unwrap().remove("cache_control");
        }
        message
    };
    assert_eq!(
        unmarked(bodies[0]["messages"][0].clone()),
        unmarked(bodies[1]["messages"][0].clone())
    );
    assert_eq!(
        unmarked(bodies[1]["messages"][0].clone())["content"],
        json!([{"type": "text", "text": "Change my flight."}])
    );
}

#[test]
fn openai_parallel_tool_calls_and_the_request_that_asked_for_them() {
    let calls = json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "time", "arguments": "{\"city\":\"Paris\"}"}}
    ]});
    let server = ChatServer::start(move |_, _| ok(&completion(&calls, "tool_calls")));
    let tools = tools();
    let messages = conversation();
    let reply = openai(&server).complete(&ModelRequest::new(&messages).with_tools(&tools)).unwrap();

    let got: Vec<_> = reply.message.tool_calls().iter().map(|c| (c.id(), c.name())).collect();
    assert_eq!(got, [("call_1", "weather"), ("call_2", "time")]);
    assert_eq!(reply.message.tool_calls()[1].arguments(), r#"{"city":"Paris"}"#);
    assert_eq!(reply.stop_reason.as_deref(), Some("tool_calls"));

    let body = &server.requests()[0];
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(body["tools"], tools, "OpenAI tools are sent as given");
    assert_eq!(
        body["messages"],
        json!([{"role": "system", "content": "You answer briefly."},
               {"role": "user", "content": "Weather and time in Paris?"}])
    );
}

#[test]
fn anthropic_a_plain_answer_with_its_usage_and_stop_reason() {
    let server = ChatServer::start(|_, _| {
        ok(&message(&json!([{"type": "text", "text": "Bonjour."}]), "end_turn"))
    });
    let reply = ask(&anthropic(&server)).unwrap();
    assert_eq!(
        (reply.message.role(), reply.message.text().as_ref()),
        (Role::Assistant, "Bonjour.")
    );
    assert_eq!(reply.usage, Some(Usage::new(30, 12)));
    assert_eq!(reply.stop_reason.as_deref(), Some("end_turn"));
    assert_eq!(server.received()[0].path, "/v1/messages");
}

#[test]
fn anthropic_parallel_tool_calls_with_the_system_headers_and_tools_it_sent() {
    let content = json!([
        {"type": "text", "text": "Let me check both."},
        {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "toolu_2", "name": "time", "input": {"city": "Paris"}}
    ]);
    let server = ChatServer::start(move |_, _| ok(&message(&content, "tool_use")));
    let tools = tools();
    let mut messages = conversation();
    // The history so far holds a finished tool round, read from OpenAI.
    messages.extend([
        Message::assistant_with_calls(
            None,
            vec![ToolCall::new("t0", "weather", r#"{"city":"Lyon"}"#)],
        ),
        Message::tool_result("t0", "12 °C"),
        Message::assistant("Lyon: 12 °C."),
        Message::user("And Paris?"),
    ]);
    let reply =
        anthropic(&server).complete(&ModelRequest::new(&messages).with_tools(&tools)).unwrap();

    assert_eq!(reply.message.text(), "Let me check both.");
    let got: Vec<_> =
        reply.message.tool_calls().iter().map(|c| (c.id(), c.name(), c.arguments())).collect();
    assert_eq!(
        got,
        [("toolu_1", "weather", r#"{"city":"Paris"}"#), ("toolu_2", "time", r#"{"city":"Paris"}"#)]
    );
    assert_eq!(reply.stop_reason.as_deref(), Some("tool_use"));
    assert_eq!(reply.usage, Some(Usage::new(30, 12)));

    let received = &server.received()[0];
    assert_eq!(received.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(received.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(received.header("authorization"), None);
    let body = &received.body;
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["max_tokens"], 4096, "Anthropic requires max_tokens");
    assert_eq!(body["system"], "You answer briefly.");
    assert_eq!(
        body["tools"],
        json!([
            {"name": "weather", "description": "The weather in a city.",
             "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
            {"name": "time", "description": "The time in a city.",
             "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
        ])
    );
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": "Weather and time in Paris?"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t0", "name": "weather", "input": {"city": "Lyon"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t0", "content": "12 °C"}]},
            {"role": "assistant", "content": "Lyon: 12 °C."},
            {"role": "user", "content": "And Paris?"}
        ])
    );
}

#[test]
fn a_429_is_retried_after_the_wait_its_retry_after_names() {
    let server = ChatServer::start(|n, _| {
        match n {
        1 => Reply::Full {
            status: 429,
            headers: vec![("retry-after".into(), "1".into())],
            body: json!({"type": "error", "error": {"type": "rate_limit_error", "message": "Slow down."}})
                .to_string(),
        },
        _ => ok(&message(&json!([{"type": "text", "text": "Done."}]), "end_turn")),
    }
    });
    let started = Instant::now();
    let reply = ask(&anthropic(&server)).unwrap();
    assert_eq!(reply.message.text(), "Done.");
    assert_eq!(server.received().len(), 2);
    // The backoff alone would have waited 1 ms: the wait is the server's second.
    assert!(started.elapsed() >= Duration::from_secs(1), "{:?}", started.elapsed());
}

#[test]
fn a_retry_after_longer_than_max_backoff_is_cut_to_it() {
    let server = ChatServer::start(|n, _| match n {
        1 => Reply::Full {
            status: 503,
            headers: vec![("Retry-After".into(), "30".into())],
            body: String::new(),
        },
        _ => Reply::Text("up again".into()),
    });
    let retry = Retry::default().with_backoff(Duration::ZERO, Duration::from_millis(10));
    let client = openai(&server).with_retry(retry);
    let started = Instant::now();
    assert_eq!(ask(&client).unwrap().message.text(), "up again");
    // Half a minute was asked; a generous bound that only an uncapped wait breaks.
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
}

#[test]
fn two_500s_then_a_success_is_a_success() {
    let server = ChatServer::start(|n, _| match n {
        1 | 2 => Reply::Status(500, r#"{"error": {"message": "The server had an error."}}"#.into()),
        _ => Reply::Text("third time".into()),
    });
    let reply = ask(&openai(&server)).unwrap();
    assert_eq!(reply.message.text(), "third time");
    assert_eq!(server.received().len(), 3);
}

#[test]
fn status_500_until_the_attempts_run_out_say_how_many_and_what_the_provider_said() {
    let server = always(
        500,
        r#"{"error": {"message": "The server had an error.", "type": "server_error"}}"#,
    );
    let client = openai(&server).with_retry(fast().with_max_attempts(3));
    let err = ask(&client).unwrap_err();
    let ClientError::Status { provider, status, message, error_type, attempts, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!((*provider, *status, *attempts), ("OpenAI", 500, 3));
    assert_eq!(message, "The server had an error.");
    assert_eq!(error_type.as_deref(), Some("server_error"));
    assert_eq!(err.to_string(), "OpenAI answered HTTP 500: The server had an error. (3 attempts)");
    assert!(err.is_retryable());
    assert_eq!(server.received().len(), 3);
}

#[test]
fn a_400_is_not_retried_and_carries_the_provider_message() {
    let body = json!({"error": {"message": "Invalid value for 'temperature'.",
        "type": "invalid_request_error", "param": "temperature", "code": null}});
    let server = always(400, body.to_string());
    let err = ask(&openai(&server)).unwrap_err();
    assert!(
        matches!(&err, ClientError::Status { status: 400, attempts: 1, message, .. }
            if message == "Invalid value for 'temperature'."),
        "{err:?}"
    );
    assert!(!err.is_retryable());
    assert_eq!(server.received().len(), 1);

    let body = json!({"type": "error",
        "error": {"type": "authentication_error", "message": "invalid x-api-key"}});
    let server = always(401, body.to_string());
    let err = ask(&anthropic(&server)).unwrap_err();
    assert_eq!(err.to_string(), "Anthropic answered HTTP 401: invalid x-api-key (1 attempt)");
    assert!(
        matches!(&err, ClientError::Status { error_type: Some(t), .. } if t == "authentication_error")
    );
    assert_eq!(server.received().len(), 1);
}

#[track_caller]
fn malformed(client: &dyn ModelClient, server: &ChatServer, field: Option<&str>) {
    let err = ask(client).unwrap_err();
    let ClientError::MalformedReply { field: found, .. } = &err else { panic!("{err:?}") };
    assert_eq!(found.as_deref(), field, "{err}");
    assert!(!err.is_retryable());
    assert_eq!(server.received().len(), 1, "a malformed reply is not retried");
}

#[test]
fn malformed_replies_are_typed_and_name_the_field() {
    let server = always(200, "<html>not json");
    malformed(&openai(&server), &server, None);
    let server = always(200, r#"{"id": "chatcmpl-1"}"#);
    malformed(&openai(&server), &server, Some("choices"));
    let server = always(200, r#"{"choices": [{}]}"#);
    malformed(&openai(&server), &server, Some("choices[0].message"));
    let server = always(200, String::new());
    malformed(&anthropic(&server), &server, None);
    let server = always(200, r#"{"type": "message", "role": "assistant"}"#);
    malformed(&anthropic(&server), &server, Some("content"));
    let err = ask(&anthropic(&server)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Anthropic sent a malformed reply: not a Messages API reply (field `content`): message 0: missing field `content`"
    );
}

#[test]
fn a_reply_slower_than_the_timeout_is_retried_then_fails() {
    let server = ChatServer::start(|_, _| Reply::Slow(Duration::from_secs(3), "late".into()));
    let client = openai(&server)
        .with_timeout(Duration::from_millis(300))
        .with_retry(fast().with_max_attempts(2));
    let err = ask(&client).unwrap_err();
    assert!(
        matches!(err, ClientError::Timeout { attempts: 2, timeout, .. } if timeout == Duration::from_millis(300)),
        "{err:?}"
    );
    assert!(err.is_retryable());
    assert_eq!(server.received().len(), 2);
}

#[test]
fn a_timeout_then_an_answer_is_an_answer() {
    let server = ChatServer::start(|n, _| match n {
        1 => Reply::Slow(Duration::from_secs(3), "late".into()),
        _ => Reply::Text("on time".into()),
    });
    let client = openai(&server).with_timeout(Duration::from_millis(300));
    let reply = ask(&client).unwrap();
    assert_eq!(reply.message.text(), "on time");
    assert_eq!(server.received().len(), 2);
}

#[test]
fn an_unreachable_server_is_retried_then_a_connection_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let client = OpenAiClient::new(format!("http://127.0.0.1:{port}"), "m")
        .with_retry(fast().with_max_attempts(2));
    let err = ask(&client).unwrap_err();
    assert!(matches!(err, ClientError::Connection { attempts: 2, .. }), "{err:?}");
    assert!(err.to_string().contains("cannot reach the server (2 attempts)"), "{err}");
}

#[test]
fn a_request_the_format_refuses_is_not_sent() {
    let server = ChatServer::start(|_, _| Reply::Text("never".into()));
    // Anthropic takes system messages only before the conversation.
    let messages = [Message::user("Hi"), Message::system("Late rules.")];
    let err = anthropic(&server).complete(&ModelRequest::new(&messages)).unwrap_err();
    assert!(
        matches!(
            &err,
            ClientError::Conversion {
                provider: "Anthropic",
                source: curator_model::Error::SystemInsideConversation { index: 1 }
            }
        ),
        "{err:?}"
    );
    // A custom tool has no Anthropic form.
    let custom = json!([{"type": "custom", "custom": {"name": "shell"}}]);
    let err = anthropic(&server)
        .complete(&ModelRequest::new(&[Message::user("Hi")]).with_tools(&custom))
        .unwrap_err();
    assert!(
        matches!(
            &err,
            ClientError::Conversion { source: curator_model::Error::ToolSchema { .. }, .. }
        ),
        "{err:?}"
    );
    assert!(!err.is_retryable());
    assert!(server.received().is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn complete_async_answers_from_a_blocking_thread() {
    let server = ChatServer::start(|_, body| {
        Reply::Text(format!("{} messages", body["messages"].as_array().map_or(0, Vec::len)))
    });
    let client = openai(&server);
    // Spawned: the future is `Send + 'static`; a current-thread runtime still answers, since
    // the call runs on a blocking thread.
    let task = tokio::spawn(client.complete_async(conversation(), Some(tools())));
    let reply = task.await.unwrap().unwrap();
    assert_eq!(reply.message.text(), "2 messages");
    assert_eq!(server.requests()[0]["tools"], tools());

    let shared: std::sync::Arc<dyn ModelClient> = std::sync::Arc::new(anthropic(&server));
    let err = shared.complete_async(vec![Message::user("Hi")], None).await.unwrap_err();
    assert!(matches!(err, ClientError::MalformedReply { .. }), "{err:?}");
}
