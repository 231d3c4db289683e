//! The Responses API client against a real loopback server speaking its wire format: the
//! request it sends, the reply it reads (whole and streamed), and typed errors.
#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers fail loudly")]

use std::time::{Duration, Instant};

use curator_client::{
    ClientError, Delta, ModelClient, ModelReply, ModelRequest, ModelSettings, OpenAiClient,
    ResponsesClient, Retry, Usage,
};
use curator_model::{Message, ToolCall};
use curator_testkit::chat_server::{ChatServer, Reply};
use serde_json::{Value, json};

fn client(server: &ChatServer) -> ResponsesClient {
    OpenAiClient::new(server.url(), "gpt-test")
        .with_api_key("sk-test")
        .with_retry(
            Retry::default()
                .with_backoff(Duration::from_millis(1), Duration::from_secs(5))
                .without_jitter(),
        )
        .with_settings(ModelSettings::new("gpt-test").with_max_tokens(500))
        .responses()
}

/// A response whose output is reasoning, text, then two parallel function calls.
fn response() -> Value {
    json!({
        "id": "resp_1", "object": "response", "status": "completed", "model": "gpt-test",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Two files to read."}]},
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Reading both.", "annotations": []}]},
            {"type": "function_call", "id": "fc_a", "call_id": "call_a", "name": "read",
             "arguments": "{\"path\":\"a.rs\"}", "status": "completed"},
            {"type": "function_call", "id": "fc_b", "call_id": "call_b", "name": "read",
             "arguments": "{\"path\":\"b.rs\"}", "status": "completed"},
        ],
        "usage": {"input_tokens": 2000, "input_tokens_details": {"cached_tokens": 1536},
                  "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 12}, "total_tokens": 2040}
    })
}

fn expected_message() -> Message {
    Message::assistant_with_calls(
        Some("Reading both.".into()),
        vec![
            ToolCall::new("call_a", "read", r#"{"path":"a.rs"}"#),
            ToolCall::new("call_b", "read", r#"{"path":"b.rs"}"#),
        ],
    )
}

#[test]
fn a_call_posts_items_and_reads_one_assistant_message_with_its_usage() {
    let server = ChatServer::start(|_, _| Reply::Status(200, response().to_string()));
    let client = client(&server);
    let tools = json!([{"type": "function", "function": {"name": "read", "description": "Reads a file",
                        "parameters": {"type": "object"}}}, {"type": "web_search"}]);
    let messages = [Message::system("Be brief."), Message::user("Read a.rs and b.rs")];
    let reply = client
        .complete(&ModelRequest::new(&messages).with_tools(&tools).with_cache_key("session-1"))
        .unwrap();
    assert_eq!(reply.message, expected_message());
    assert_eq!(reply.usage, Some(Usage::new(2000, 40).with_cache(1536, 0)));
    assert_eq!(reply.stop_reason.as_deref(), Some("completed"));
    let received = server.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].path, "/v1/responses");
    assert_eq!(received[0].header("authorization"), Some("Bearer sk-test"));
    assert_eq!(
        received[0].body,
        json!({
            "model": "gpt-test", "max_output_tokens": 500, "prompt_cache_key": "session-1",
            "input": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Read a.rs and b.rs"}],
            "tools": [{"type": "function", "name": "read", "description": "Reads a file", "parameters": {"type": "object"}},
                      {"type": "web_search"}],
        })
    );
}

#[test]
fn the_reply_goes_back_as_function_calls_without_the_reasoning_items_ids() {
    let server = ChatServer::start(|_, _| Reply::Status(200, response().to_string()));
    let client = client(&server);
    let first = client.complete(&ModelRequest::new(&[Message::user("Read both")])).unwrap();
    let next = [
        Message::user("Read both"),
        first.message,
        Message::tool_result("call_a", "fn a() {}"),
        Message::tool_result("call_b", "fn b() {}"),
    ];
    client.complete(&ModelRequest::new(&next)).unwrap();
    let sent = &server.received()[1].body["input"];
    assert_eq!(
        sent,
        &json!([
            {"role": "user", "content": "Read both"},
            {"role": "assistant", "content": "Reading both."},
            {"type": "function_call", "call_id": "call_a", "name": "read", "arguments": "{\"path\":\"a.rs\"}"},
            {"type": "function_call", "call_id": "call_b", "name": "read", "arguments": "{\"path\":\"b.rs\"}"},
            {"type": "function_call_output", "call_id": "call_a", "output": "fn a() {}"},
            {"type": "function_call_output", "call_id": "call_b", "output": "fn b() {}"},
        ])
    );
}

#[test]
fn an_incomplete_response_says_why_and_a_failed_one_is_a_typed_error() {
    let mut incomplete = response();
    incomplete["status"] = json!("incomplete");
    incomplete["incomplete_details"] = json!({"reason": "max_output_tokens"});
    let server = ChatServer::start(move |_, _| Reply::Status(200, incomplete.to_string()));
    let reply = client(&server).complete(&ModelRequest::new(&[Message::user("Hi")])).unwrap();
    assert_eq!(reply.stop_reason.as_deref(), Some("max_output_tokens"));

    let failed = json!({"id": "resp_2", "object": "response", "status": "failed", "output": [],
                        "error": {"code": "server_error", "message": "The model crashed."}});
    let server = ChatServer::start(move |_, _| Reply::Status(200, failed.to_string()));
    let err = client(&server).complete(&ModelRequest::new(&[Message::user("Hi")])).unwrap_err();
    assert!(
        matches!(&err, ClientError::StreamError { message, error_type: Some(code), .. }
            if message == "The model crashed." && code == "server_error"),
        "{err:?}"
    );

    let server =
        ChatServer::start(|_, _| Reply::Status(200, json!({"object": "response"}).to_string()));
    let err = client(&server).complete(&ModelRequest::new(&[Message::user("Hi")])).unwrap_err();
    assert!(
        matches!(&err, ClientError::MalformedReply { field: Some(f), .. } if f == "output"),
        "{err:?}"
    );
}

fn event(name: &str, value: &Value) -> String {
    let mut value = value.clone();
    value["type"] = json!(name);
    format!("event: {name}\ndata: {value}")
}

/// A stream: a reasoning summary, text, two function calls whose arguments arrive in pieces,
/// interleaved, then the completed response.
fn events() -> Vec<String> {
    vec![
        event(
            "response.created",
            &json!({"response": {"id": "resp_1", "status": "in_progress", "output": []}}),
        ),
        event(
            "response.output_item.added",
            &json!({"output_index": 0, "item": {"type": "reasoning", "id": "rs_1"}}),
        ),
        event(
            "response.reasoning_summary_text.delta",
            &json!({"output_index": 0, "delta": "Two files "}),
        ),
        event(
            "response.reasoning_summary_text.delta",
            &json!({"output_index": 0, "delta": "to read."}),
        ),
        event(
            "response.output_item.added",
            &json!({"output_index": 1, "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
        ),
        event(
            "response.output_text.delta",
            &json!({"output_index": 1, "content_index": 0, "delta": "Reading "}),
        ),
        event(
            "response.output_text.delta",
            &json!({"output_index": 1, "content_index": 0, "delta": "both."}),
        ),
        event(
            "response.output_item.added",
            &json!({"output_index": 2, "item": {"type": "function_call", "id": "fc_a", "call_id": "call_a", "name": "read", "arguments": ""}}),
        ),
        event(
            "response.output_item.added",
            &json!({"output_index": 3, "item": {"type": "function_call", "id": "fc_b", "call_id": "call_b", "name": "read", "arguments": ""}}),
        ),
        event(
            "response.function_call_arguments.delta",
            &json!({"output_index": 2, "item_id": "fc_a", "delta": "{\"path\":"}),
        ),
        event(
            "response.function_call_arguments.delta",
            &json!({"output_index": 3, "item_id": "fc_b", "delta": "{\"path\":\"b.rs\"}"}),
        ),
        event(
            "response.function_call_arguments.delta",
            &json!({"output_index": 2, "item_id": "fc_a", "delta": "\"a.rs\"}"}),
        ),
        event("response.completed", &json!({"response": response()})),
    ]
}

fn stream(client: &dyn ModelClient) -> (Vec<Delta>, Result<ModelReply, ClientError>) {
    let mut deltas = Vec::new();
    let result =
        client.stream(&ModelRequest::new(&[Message::user("Hi")]), &mut |d| deltas.push(d.clone()));
    (deltas, result)
}

#[test]
fn a_stream_reports_its_pieces_and_returns_the_whole_reply() {
    let server = ChatServer::start(|_, _| Reply::Events(events()));
    let (deltas, reply) = stream(&client(&server));
    let reply = reply.unwrap();
    assert_eq!(reply.message, expected_message());
    assert_eq!(reply.usage, Some(Usage::new(2000, 40).with_cache(1536, 0)));
    let call = |index, id: Option<&str>, arguments: &str| Delta::ToolCall {
        index,
        id: id.map(str::to_owned),
        name: id.map(|_| "read".to_owned()),
        arguments: arguments.to_owned(),
    };
    assert_eq!(
        deltas,
        [
            Delta::Thinking("Two files ".into()),
            Delta::Thinking("to read.".into()),
            Delta::Text("Reading ".into()),
            Delta::Text("both.".into()),
            call(0, Some("call_a"), ""),
            call(1, Some("call_b"), ""),
            call(0, None, "{\"path\":"),
            call(1, None, "{\"path\":\"b.rs\"}"),
            call(0, None, "\"a.rs\"}"),
        ]
    );
    assert_eq!(server.received()[0].body["stream"], json!(true));
}

#[test]
fn a_stream_cut_midway_or_failing_returns_no_part_of_the_reply_and_says_so() {
    let mut cut = events();
    cut.truncate(8);
    let server = ChatServer::start(move |_, _| Reply::EventsCut(cut.clone()));
    let err = stream(&client(&server)).1.unwrap_err();
    assert!(matches!(err, ClientError::StreamCut { provider: "OpenAI", .. }), "{err:?}");

    let mut early = events();
    early.truncate(8);
    let server = ChatServer::start(move |_, _| Reply::Events(early.clone()));
    let err = stream(&client(&server)).1.unwrap_err();
    let ClientError::StreamCut { detail, .. } = &err else { panic!("{err:?}") };
    assert!(detail.contains("response.completed"), "{detail}");

    let mut failing = events();
    failing.truncate(4);
    failing.push(event("error", &json!({"code": "rate_limit_exceeded", "message": "Slow down."})));
    let server = ChatServer::start(move |_, _| Reply::Events(failing.clone()));
    let err = stream(&client(&server)).1.unwrap_err();
    assert!(
        matches!(&err, ClientError::StreamError { message, .. } if message == "Slow down."),
        "{err:?}"
    );

    let mut missing = events();
    missing.truncate(5);
    missing.push(event("response.output_text.delta", &json!({"output_index": 1})));
    let server = ChatServer::start(move |_, _| Reply::Events(missing.clone()));
    let err = stream(&client(&server)).1.unwrap_err();
    assert!(matches!(err, ClientError::MalformedReply { .. }), "{err:?}");
}

#[test]
fn a_stream_that_never_ends_times_out() {
    let mut events = events();
    events.truncate(6);
    let server =
        ChatServer::start(move |_, _| Reply::EventsHang(events.clone(), Duration::from_secs(5)));
    let client = OpenAiClient::new(server.url(), "gpt-test")
        .with_retry(Retry::none())
        .with_timeout(Duration::from_millis(500))
        .responses();
    let started = Instant::now();
    let (deltas, result) = stream(&client);
    let err = result.unwrap_err();
    assert!(matches!(err, ClientError::Timeout { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    assert!(!deltas.is_empty());
}
