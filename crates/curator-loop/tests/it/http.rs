//! The model step over the OpenAI client against a real loopback server.

use std::time::Duration;

use curator_client::{ClientError, OpenAiClient, Retry};
use curator_loop::{Error, Hitl, LoopBuilder, LoopConfig, LoopOutcome, ModelStep};
use curator_model::Message;
use curator_testkit::chat_server::{ChatServer, Reply};

fn chat(server: &ChatServer) -> curator_loop::ConversationLoop {
    LoopBuilder::new("chat", LoopConfig::conversational())
        .step("user", Hitl::default())
        .step(
            "assistant",
            ModelStep::new(
                OpenAiClient::new(server.url(), "test-model")
                    .with_api_key("k")
                    .with_timeout(Duration::from_millis(1_500))
                    .with_retry(Retry::none()),
            )
            .with_system("Be brief."),
        )
        .build()
        .unwrap()
}

#[test]
fn a_conversation_over_http_sends_the_history_each_turn() {
    let server = ChatServer::counting("reply");
    let mut l = chat(&server);
    assert!(l.run("").unwrap().is_paused());
    assert!(l.resume("Hello").unwrap().is_paused());
    assert!(l.resume("And again").unwrap().is_paused());
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["model"], "test-model");
    assert_eq!(
        requests[1]["messages"],
        serde_json::json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "reply 1 (2 messages)"},
            {"role": "user", "content": "And again"},
        ])
    );
    assert_eq!(l.turns().last().unwrap().content, "reply 2 (4 messages)");
}

#[track_caller]
fn fails_with(reply: Reply, words: &str) {
    let server = ChatServer::start(move |_, _| reply.clone());
    let mut l = chat(&server);
    l.run("").unwrap();
    let err = l.resume("Hello").unwrap_err();
    let Error::Step { step, source, .. } = &err else { panic!("{err:?}") };
    assert_eq!(step, "assistant");
    let http = source.downcast_ref::<Error>().unwrap();
    assert!(matches!(http, Error::Model(_)), "{http:?}");
    assert!(http.to_string().contains(words), "{http}");
    // The iteration is rolled back and the loop waits for the same answer again.
    assert!(l.turns().is_empty());
    assert!(l.paused().is_some());
}

#[test]
fn failures_are_typed_and_leave_the_history_as_it_was() {
    fails_with(Reply::Status(500, "model crashed".into()), "HTTP 500: model crashed");
    fails_with(Reply::Status(200, "not json".into()), "not JSON");
    fails_with(Reply::Status(200, r#"{"choices": []}"#.into()), "not a chat completion");
    fails_with(Reply::Slow(Duration::from_secs(5), "late".into()), "no answer within");
    fails_with(Reply::BrokenOff, "broke off");
}

#[test]
fn an_unreachable_server_is_a_typed_error() {
    let client = OpenAiClient::new("http://127.0.0.1:9/v1/", "m").with_retry(Retry::none());
    let err = ModelStep::new(client).complete(&[Message::user("hi")]).unwrap_err();
    let Error::Model(ClientError::Connection { url, .. }) = &err else { panic!("{err:?}") };
    assert_eq!(url, "http://127.0.0.1:9/v1/chat/completions");
}

#[test]
fn the_async_face_runs_the_same_loop() {
    let server = ChatServer::counting("async");
    let l = curator_loop::AsyncLoop::new(chat(&server));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        assert!(l.run("").await.unwrap().is_paused());
        let outcome = l.resume("Hi").await.unwrap();
        assert_eq!(outcome, LoopOutcome::Paused { step: "user".into(), prompt: None });
        assert_eq!(l.turns().await.len(), 2);
    });
}

#[test]
fn a_streamed_reply_reaches_the_caller_and_a_cut_one_leaves_no_turn() {
    use std::sync::{Arc, Mutex};

    use curator_client::Delta;
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        format!(
            "data: {}",
            serde_json::json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    let first = chunk(serde_json::json!({"content": "Hel"}), None);
    let events = vec![
        first.clone(),
        chunk(serde_json::json!({"content": "lo!"}), Some("stop")),
        "data: [DONE]".to_owned(),
    ];
    let server = ChatServer::start(move |n, _| {
        if n == 1 { Reply::EventsCut(vec![first.clone()]) } else { Reply::Events(events.clone()) }
    });
    let shown = Arc::new(Mutex::new(String::new()));
    let screen = Arc::clone(&shown);
    let step = ModelStep::new(OpenAiClient::new(server.url(), "m").with_retry(Retry::none()))
        .stream_to(move |delta| {
            if let Delta::Text(text) = delta {
                screen.lock().unwrap().push_str(text);
            }
        });
    let mut l = LoopBuilder::new("chat", LoopConfig::conversational())
        .step("user", Hitl::default())
        .step("assistant", step)
        .build()
        .unwrap();
    l.run("").unwrap();
    let err = l.resume("Hi").unwrap_err();
    let Error::Step { source, .. } = &err else { panic!("{err:?}") };
    let model = source.downcast_ref::<Error>().unwrap();
    assert!(matches!(model, Error::Model(ClientError::StreamCut { .. })), "{model:?}");
    assert!(l.turns().is_empty(), "no turn holds part of a reply");
    assert!(l.resume("Hi").unwrap().is_paused());
    assert_eq!(l.turns().last().unwrap().content, "Hello!");
    assert_eq!(*shown.lock().unwrap(), "HelHello!");
}

/// The model step reports the usage the server sent with each reply, and a loop with a
/// quota is charged it (cache reads included in the input tokens).
#[test]
fn the_usage_a_server_reports_is_what_the_quota_is_charged() {
    let server = ChatServer::start(|n, _| {
        Reply::Status(
        200,
        serde_json::json!({
            "choices": [{"message": {"role": "assistant", "content": format!("reply {n}")}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1_200, "completion_tokens": 30, "prompt_tokens_details": {"cached_tokens": 1_024}},
        })
        .to_string(),
    )
    });
    let mut config = LoopConfig::conversational();
    config.max_iterations = 3;
    let mut l = LoopBuilder::new("chat", config)
        .step(
            "assistant",
            ModelStep::new(OpenAiClient::new(server.url(), "test-model").with_api_key("k")),
        )
        .quota(curator_loop::Quota::new(100_000, 5_000))
        .build()
        .unwrap();
    assert!(matches!(l.run("Hello").unwrap(), LoopOutcome::Finished { iterations: 3, .. }));
    assert_eq!(l.state().quota_used, 3 * 1_230);
}
