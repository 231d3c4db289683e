//! Streaming against a real loopback server speaking each provider's server-sent events:
//! text, parallel tool calls with arguments split across deltas, thinking, usage, a stream
//! cut midway, an error event, a stream that never ends.
#![allow(clippy::unwrap_used, clippy::panic, reason = "test helpers fail loudly")]

use std::time::{Duration, Instant};

use curator_client::{
    AnthropicClient, ClientError, Delta, ModelClient, ModelReply, ModelRequest, OpenAiClient,
    Retry, Usage,
};
use curator_model::Message;
use curator_testkit::chat_server::{ChatServer, Reply};
use serde_json::{Value, json};

fn fast() -> Retry {
    Retry::default()
        .with_backoff(Duration::from_millis(1), Duration::from_millis(5))
        .without_jitter()
}

fn openai(server: &ChatServer) -> OpenAiClient {
    OpenAiClient::new(server.url(), "gpt-test").with_api_key("sk").with_retry(fast())
}

fn anthropic(server: &ChatServer) -> AnthropicClient {
    AnthropicClient::new(server.url(), "claude-test").with_api_key("sk").with_retry(fast())
}

/// Streams one user message; the deltas seen and the result.
fn stream(client: &dyn ModelClient) -> (Vec<Delta>, Result<ModelReply, ClientError>) {
    let mut deltas = Vec::new();
    let result =
        client.stream(&ModelRequest::new(&[Message::user("Hi")]), &mut |d| deltas.push(d.clone()));
    (deltas, result)
}

fn data(value: &Value) -> String {
    format!("data: {value}")
}

fn chunk(delta: &Value, finish: Option<&str>) -> String {
    data(&json!({"id": "c1", "object": "chat.completion.chunk", "model": "gpt-test",
                 "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}))
}

/// An OpenAI stream: reasoning, text, two tool calls whose arguments arrive in pieces,
/// interleaved, then the usage and `[DONE]`.
fn openai_events() -> Vec<String> {
    vec![
        chunk(&json!({"role": "assistant", "content": ""}), None),
        chunk(&json!({"reasoning_content": "Two files "}), None),
        chunk(&json!({"reasoning_content": "to read."}), None),
        chunk(&json!({"content": "Reading "}), None),
        chunk(&json!({"content": "both."}), None),
        chunk(
            &json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "read", "arguments": ""}}]}),
            None,
        ),
        chunk(
            &json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"path\": "}}]}),
            None,
        ),
        chunk(
            &json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "read", "arguments": "{\"pa"}}]}),
            None,
        ),
        chunk(
            &json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"a.txt\", \"n\": 12345678901234567890}"}}]}),
            None,
        ),
        chunk(
            &json!({"tool_calls": [{"index": 1, "function": {"arguments": "th\": \"b.txt\"}"}}]}),
            None,
        ),
        chunk(&json!({}), Some("tool_calls")),
        data(&json!({"id": "c1", "object": "chat.completion.chunk", "choices": [],
                     "usage": {"prompt_tokens": 2000, "completion_tokens": 30,
                               "prompt_tokens_details": {"cached_tokens": 1536}}})),
        "data: [DONE]".to_owned(),
    ]
}

#[test]
fn openai_streams_text_thinking_and_parallel_calls_into_one_whole_reply() {
    let server = ChatServer::start(|_, _| Reply::Events(openai_events()));
    let (deltas, reply) = stream(&openai(&server));
    let reply = reply.unwrap();
    let text: String = deltas
        .iter()
        .filter_map(|d| match d {
            Delta::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    let thinking: String = deltas
        .iter()
        .filter_map(|d| match d {
            Delta::Thinking(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!((text.as_str(), thinking.as_str()), ("Reading both.", "Two files to read."));
    let args = |i: usize| -> String {
        deltas
            .iter()
            .filter_map(|d| match d {
                Delta::ToolCall { index, arguments, .. } if *index == i => Some(arguments.as_str()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(args(0), "{\"path\": \"a.txt\", \"n\": 12345678901234567890}");
    assert_eq!(args(1), "{\"path\": \"b.txt\"}");
    assert_eq!(reply.message.text(), "Reading both.");
    let calls = reply.message.tool_calls();
    assert_eq!(calls.len(), 2);
    assert_eq!((calls[0].id(), calls[0].name()), ("call_a", "read"));
    // The arguments are kept as streamed, byte for byte (a 20-digit integer included).
    assert_eq!(calls[0].arguments(), args(0));
    assert_eq!((calls[1].id(), calls[1].arguments()), ("call_b", "{\"path\": \"b.txt\"}"));
    assert_eq!(reply.usage, Some(Usage::new(2000, 30).with_cache(1536, 0)));
    assert_eq!(reply.stop_reason.as_deref(), Some("tool_calls"));
    let sent = &server.requests()[0];
    assert_eq!(
        (sent["stream"].clone(), sent["stream_options"]["include_usage"].clone()),
        (json!(true), json!(true))
    );
    // The streamed reply is the one `complete` reads from the same completion.
    let whole = json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": "Reading both.", "reasoning_content": "Two files to read.",
        "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "read", "arguments": args(0)}},
            {"id": "call_b", "type": "function", "function": {"name": "read", "arguments": args(1)}}]}}]});
    let server = ChatServer::start(move |_, _| Reply::Status(200, whole.to_string()));
    let completed = openai(&server).complete(&ModelRequest::new(&[Message::user("Hi")])).unwrap();
    assert_eq!(completed.message, reply.message);
}

fn event(name: &str, value: &Value) -> String {
    format!("event: {name}\ndata: {value}")
}

/// An Anthropic stream: thinking with its signature, text, two tool uses whose inputs arrive
/// in pieces, the usage split between `message_start` and `message_delta`.
fn anthropic_events() -> Vec<String> {
    let delta = |index: usize, delta: Value| {
        event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": delta}),
        )
    };
    let start = |index: usize, block: Value| {
        event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": block}),
        )
    };
    let stop = |index: usize| {
        event("content_block_stop", &json!({"type": "content_block_stop", "index": index}))
    };
    vec![
        event(
            "message_start",
            &json!({"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 40, "cache_read_input_tokens": 1800, "cache_creation_input_tokens": 100, "output_tokens": 1}}}),
        ),
        event("ping", &json!({"type": "ping"})),
        start(0, json!({"type": "thinking", "thinking": "", "signature": ""})),
        delta(0, json!({"type": "thinking_delta", "thinking": "Two files "})),
        delta(0, json!({"type": "thinking_delta", "thinking": "to read."})),
        delta(0, json!({"type": "signature_delta", "signature": "EqQBCgIYAhIM"})),
        stop(0),
        start(1, json!({"type": "text", "text": ""})),
        delta(1, json!({"type": "text_delta", "text": "Reading "})),
        delta(1, json!({"type": "text_delta", "text": "both."})),
        stop(1),
        start(2, json!({"type": "tool_use", "id": "toolu_a", "name": "read", "input": {}})),
        delta(2, json!({"type": "input_json_delta", "partial_json": ""})),
        delta(2, json!({"type": "input_json_delta", "partial_json": "{\"path\": \"a"})),
        delta(2, json!({"type": "input_json_delta", "partial_json": ".txt\"}"})),
        stop(2),
        start(3, json!({"type": "tool_use", "id": "toolu_b", "name": "read", "input": {}})),
        delta(3, json!({"type": "input_json_delta", "partial_json": "{\"path\": \"b.txt\"}"})),
        stop(3),
        event(
            "message_delta",
            &json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 87}}),
        ),
        event("message_stop", &json!({"type": "message_stop"})),
    ]
}

#[test]
fn anthropic_streams_thinking_text_and_parallel_tool_uses_into_one_whole_reply() {
    let server = ChatServer::start(|_, _| Reply::Events(anthropic_events()));
    let (deltas, reply) = stream(&anthropic(&server));
    let reply = reply.unwrap();
    let thinking: String = deltas
        .iter()
        .filter_map(|d| match d {
            Delta::Thinking(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thinking, "Two files to read.");
    let starts: Vec<_> = deltas
        .iter()
        .filter_map(|d| match d {
            Delta::ToolCall { index, id: Some(id), .. } => Some((*index, id.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(starts, [(0, "toolu_a"), (1, "toolu_b")]);
    assert_eq!(reply.message.text(), "Reading both.");
    let calls = reply.message.tool_calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].id(), calls[0].name(), calls[0].arguments()),
        ("toolu_a", "read", "{\"path\":\"a.txt\"}")
    );
    assert_eq!(calls[1].arguments(), "{\"path\":\"b.txt\"}");
    assert_eq!(reply.usage, Some(Usage::new(1940, 87).with_cache(1800, 100)));
    assert_eq!(reply.stop_reason.as_deref(), Some("tool_use"));
    assert_eq!(server.requests()[0]["stream"], json!(true));
    // The thinking block, its signature included, is part of the reply: written back for the
    // next request, it is what Anthropic requires.
    let wire =
        curator_model::formats::anthropic::from_messages(std::slice::from_ref(&reply.message))
            .unwrap();
    let blocks = &wire.messages[0]["content"];
    assert_eq!(
        blocks[0],
        json!({"type": "thinking", "thinking": "Two files to read.", "signature": "EqQBCgIYAhIM"})
    );
}

#[test]
fn a_stream_cut_midway_returns_no_part_of_the_reply_and_says_so() {
    let mut cut = openai_events();
    cut.truncate(7);
    let server = ChatServer::start(move |_, _| Reply::EventsCut(cut.clone()));
    let (deltas, result) = stream(&openai(&server));
    let err = result.unwrap_err();
    assert!(matches!(err, ClientError::StreamCut { provider: "OpenAI", .. }), "{err:?}");
    assert!(err.is_retryable());
    assert!(!deltas.is_empty(), "the pieces before the cut were shown");

    // A stream that ends cleanly but early (no finish reason, no [DONE]) is cut too.
    let mut early = openai_events();
    early.truncate(5);
    let server = ChatServer::start(move |_, _| Reply::Events(early.clone()));
    let err = stream(&openai(&server)).1.unwrap_err();
    let ClientError::StreamCut { detail, .. } = &err else { panic!("{err:?}") };
    assert!(detail.contains("[DONE]"), "{detail}");

    let mut cut = anthropic_events();
    cut.truncate(14);
    let server = ChatServer::start(move |_, _| Reply::EventsCut(cut.clone()));
    let err = stream(&anthropic(&server)).1.unwrap_err();
    assert!(matches!(err, ClientError::StreamCut { provider: "Anthropic", .. }), "{err:?}");
    let mut early = anthropic_events();
    early.pop();
    let server = ChatServer::start(move |_, _| Reply::Events(early.clone()));
    let err = stream(&anthropic(&server)).1.unwrap_err();
    let ClientError::StreamCut { detail, .. } = &err else { panic!("{err:?}") };
    assert!(detail.contains("message_stop"), "{detail}");
}

#[test]
fn an_error_event_ends_the_stream_with_the_providers_words() {
    let mut events = anthropic_events();
    events.truncate(4);
    events.push(event(
        "error",
        &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ));
    let server = ChatServer::start(move |_, _| Reply::Events(events.clone()));
    let err = stream(&anthropic(&server)).1.unwrap_err();
    let ClientError::StreamError { message, error_type, .. } = &err else { panic!("{err:?}") };
    assert_eq!((message.as_str(), error_type.as_deref()), ("Overloaded", Some("overloaded_error")));
    assert!(err.is_retryable());

    let events = vec![
        chunk(&json!({"content": "Hel"}), None),
        data(&json!({"error": {"message": "context too long", "type": "invalid_request_error"}})),
    ];
    let server = ChatServer::start(move |_, _| Reply::Events(events.clone()));
    let err = stream(&openai(&server)).1.unwrap_err();
    assert!(
        matches!(&err, ClientError::StreamError { message, .. } if message == "context too long"),
        "{err:?}"
    );
    assert!(!err.is_retryable());
}

#[test]
fn a_stream_that_never_ends_times_out() {
    let mut events = openai_events();
    events.truncate(4);
    let server =
        ChatServer::start(move |_, _| Reply::EventsHang(events.clone(), Duration::from_secs(5)));
    let client = openai(&server).with_timeout(Duration::from_millis(500));
    let started = Instant::now();
    let (deltas, result) = stream(&client);
    let err = result.unwrap_err();
    assert!(matches!(err, ClientError::Timeout { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    assert!(!deltas.is_empty());
}

#[test]
fn a_failure_before_the_stream_flows_is_retried() {
    let server = ChatServer::start(|n, _| {
        if n == 1 {
            Reply::Status(429, r#"{"error": {"message": "slow down"}}"#.into())
        } else {
            Reply::Events(anthropic_events())
        }
    });
    let reply = stream(&anthropic(&server)).1.unwrap();
    assert_eq!(reply.message.tool_calls().len(), 2);
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_delta_missing_its_text_is_a_malformed_reply_not_an_empty_piece() {
    let mut events = anthropic_events();
    events.truncate(8);
    events.push(event(
        "content_block_delta",
        &json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta"}}),
    ));
    events.extend(anthropic_events().into_iter().skip(8));
    let server = ChatServer::start(move |_, _| Reply::Events(events.clone()));
    let err = stream(&anthropic(&server)).1.unwrap_err();
    assert!(matches!(err, ClientError::MalformedReply { provider: "Anthropic", .. }), "{err:?}");
}
