//! Model clients as the providers of recorded conversations and agents, against a real
//! loopback server: the usage recorded with each reply, one prompt-cache key per session.

use std::time::Duration;

use curator_client::{ClientError, ModelClient, ModelRequest, OpenAiClient, Retry, Usage};
use curator_model::{Message, PromptRef, Role};
use curator_session::{Conversation, Error, MemoryStore, RunOutcome, run_blocking};
use curator_strategies::{CurationContext, Passthrough};
use curator_testkit::chat_server::{ChatServer, Reply};
use serde_json::{Value, json};

/// Retries at once (1 ms, 2 ms, ...), but honours a `retry-after` of up to 5 s.
fn fast() -> Retry {
    Retry::default().with_backoff(Duration::from_millis(1), Duration::from_secs(5)).without_jitter()
}

fn openai(server: &ChatServer) -> OpenAiClient {
    OpenAiClient::new(server.url(), "gpt-test").with_api_key("sk-test").with_retry(fast())
}

fn ok(body: &Value) -> Reply {
    Reply::Status(200, body.to_string())
}

/// A server that answers every request with `status` and `body`.
fn always(status: u16, body: impl Into<String>) -> ChatServer {
    let body = body.into();
    ChatServer::start(move |_, _| Reply::Status(status, body.clone()))
}

/// A chat completion whose first choice is `message`.
fn completion(message: &Value, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-test",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}
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

#[test]
fn a_client_is_the_provider_of_a_recorded_conversation() {
    // The model calls a tool, then answers with its result.
    let server = ChatServer::start(|n, body| match n {
        1 => ok(&completion(
            &json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]}),
            "tool_calls",
        )),
        _ => Reply::Text(format!(
            "Paris: {}.",
            body["messages"][3]["content"].as_str().unwrap_or("?")
        )),
    });
    let client = openai(&server);
    let tools = tools();
    let store = MemoryStore::new();
    let mut c =
        Conversation::open(&store, "user-1", PromptRef::new("t", "weather"), Message::system("s"))
            .unwrap();
    c.add_user("Weather in Paris?").unwrap();
    let outcome = run_blocking(
        &mut c,
        &Passthrough,
        &CurationContext::default(),
        |messages| Ok(client.complete(&ModelRequest::new(messages).with_tools(&tools))?.into()),
        |_| Ok("18 °C".into()),
        4,
    )
    .unwrap();
    assert_eq!(outcome, RunOutcome::Finished(Message::assistant("Paris: 18 °C.")));
    assert_eq!(
        server.requests()[1]["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_1", "name": "weather", "content": "18 °C"})
    );

    // A failing call is the conversation's provider error, its cause kept whole.
    let down = always(401, r#"{"error": {"message": "bad key"}}"#);
    let client = openai(&down);
    let mut c =
        Conversation::open(&store, "user-2", PromptRef::new("t", "weather"), Message::system("s"))
            .unwrap();
    c.add_user("Hi").unwrap();
    let err = run_blocking(
        &mut c,
        &Passthrough,
        &CurationContext::default(),
        |messages| Ok(client.complete(&ModelRequest::new(messages))?.into()),
        |_| Ok("".into()),
        4,
    )
    .unwrap_err();
    let Error::Provider(source) = &err else { panic!("{err:?}") };
    let cause = source.downcast_ref::<ClientError>().unwrap();
    assert!(matches!(cause, ClientError::Status { status: 401, .. }), "{cause:?}");
    assert!(matches!(
        Error::from(client.complete(&ModelRequest::new(&[Message::user("x")])).unwrap_err()),
        Error::Provider(_)
    ));
}

#[test]
fn an_agent_sends_one_prompt_cache_key_per_session_and_records_each_call_usage() {
    use curator_agent::{Agent, AgentEnd, Tools};
    use curator_session::{SessionStore, recorded_usage};
    // A tool call, then an answer; each reply reports part of its prompt read from the cache.
    let server = ChatServer::start(|n, _| {
        let mut body = if n == 1 {
            completion(
                &json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                        "function": {"name": "time", "arguments": "{\"city\": \"Paris\"}"}}]}),
                "tool_calls",
            )
        } else {
            completion(&json!({"role": "assistant", "content": "It is noon."}), "stop")
        };
        let cached = if n == 1 { 0 } else { 1_024 };
        body["usage"] = json!({"prompt_tokens": 1_500 + n * 20, "completion_tokens": 9,
                               "prompt_tokens_details": {"cached_tokens": cached}});
        ok(&body)
    });
    let tools = Tools::new()
        .add("time", "The time in a city.", json!({"type": "object"}), |_| Ok("12:00".to_owned()));
    let agent = Agent::new(openai(&server), tools).system("You tell the time.");
    let store = MemoryStore::new();
    let outcome = agent.ask(&store, "ann", "m1", "Time in Paris?").unwrap();
    assert_eq!(outcome.end, AgentEnd::Answered(Message::assistant("It is noon.")));
    assert_eq!(outcome.model_calls, 2);
    assert_eq!(outcome.usage, Usage::new(3_060, 18).with_cache(1_024, 0));

    // Both requests carry one key, derived from the session and not showing it.
    let bodies = server.requests();
    let keys: Vec<&str> = bodies.iter().map(|b| b["prompt_cache_key"].as_str().unwrap()).collect();
    assert_eq!(keys[0], keys[1]);
    assert!(keys[0].starts_with("curator-") && !keys[0].contains("ann"), "{}", keys[0]);
    agent.ask(&store, "bob", "m1", "Time in Paris?").unwrap();
    let other = server.requests()[2]["prompt_cache_key"].as_str().unwrap().to_owned();
    assert_ne!(other, keys[0], "another session, another cache key");

    // Each call's usage is recorded with the reply it produced.
    let evaluation = store.evaluations_of(&"ann".into()).unwrap()[0].evaluation_id;
    let calls = recorded_usage(&store, evaluation).unwrap();
    let sequences: Vec<u64> = calls.iter().map(|c| c.sequence).collect();
    let entries = store.entries(evaluation).unwrap();
    let replies: Vec<u64> = entries
        .iter()
        .filter(|e| e.message.role() == Role::Assistant)
        .map(|e| e.sequence)
        .collect();
    assert_eq!(sequences, replies);
    assert_eq!(calls[1].usage, Usage::new(1_540, 9).with_cache(1_024, 0));
    // Asked again (a redelivery): answered from the record, no call, no usage.
    let again = agent.ask(&store, "ann", "m1", "Time in Paris?").unwrap();
    assert_eq!((again.model_calls, again.usage), (0, Usage::default()));
}

#[test]
fn usage_is_recorded_only_after_a_reply_and_a_damaged_record_of_it_is_named() {
    let store = MemoryStore::new();
    let mut c =
        Conversation::open(&store, "job", PromptRef::new("t", "p"), Message::system("s")).unwrap();
    c.add_user("hi").unwrap();
    let err = c.record_usage(Usage::new(1, 1)).unwrap_err();
    assert!(matches!(err, Error::WrongRole { call: "record_usage", .. }), "{err}");
    c.record_assistant(Message::assistant("hello")).unwrap();
    c.record_usage(Usage::new(10, 2)).unwrap();
    // Recorded again for the same reply: replaced, not doubled.
    c.record_usage(Usage::new(12, 2)).unwrap();
    let calls = curator_session::recorded_usage(&store, c.evaluation_id()).unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].usage, Usage::new(12, 2));
    let name = format!("curator.usage/{}", c.evaluation_id());
    curator_session::SessionStore::put_checkpoint(
        &store,
        &name,
        &json!({"calls": [{"sequence": 2}]}),
    )
    .unwrap();
    let err = curator_session::recorded_usage(&store, c.evaluation_id()).unwrap_err();
    assert!(err.to_string().contains(&name) && err.to_string().contains("call 0"), "{err}");
}

/// An OpenAI stream of `text` in two pieces, cut before its end when `cut`.
fn streamed(text: &str, cut: bool) -> Reply {
    let (a, b) = text.split_at(text.len() / 2);
    let chunk = |delta: Value, finish: Option<&str>| {
        format!(
            "data: {}",
            json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    let mut events = vec![chunk(json!({"role": "assistant", "content": a}), None)];
    if cut {
        return Reply::EventsCut(events);
    }
    events.push(chunk(json!({"content": b}), None));
    events.push(chunk(json!({}), Some("stop")));
    events.push(format!(
        "data: {}",
        json!({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 4}})
    ));
    events.push("data: [DONE]".to_owned());
    Reply::Events(events)
}

#[test]
fn an_agent_streams_to_its_caller_and_a_cut_stream_records_nothing_until_the_next_ask() {
    use std::sync::{Arc, Mutex};

    use curator_agent::{Agent, AgentEnd, Tools};
    use curator_client::Delta;
    use curator_session::SessionStore;
    // The first stream breaks off after its first piece; the second is whole.
    let server = ChatServer::start(|n, _| streamed("Noon in Paris.", n == 1));
    let shown = Arc::new(Mutex::new(Vec::new()));
    let screen = Arc::clone(&shown);
    let agent = Agent::new(openai(&server).with_retry(Retry::none()), Tools::new())
        .system("You tell the time.")
        .stream_to(move |delta| {
            if let Delta::Text(text) = delta {
                screen.lock().unwrap().push(text.clone());
            }
        });
    let store = MemoryStore::new();
    let err = agent.ask(&store, "ann", "m1", "Time in Paris?").unwrap_err();
    let Error::Provider(source) = &err else { panic!("{err:?}") };
    assert!(
        matches!(source.downcast_ref::<ClientError>(), Some(ClientError::StreamCut { .. })),
        "{source:?}"
    );
    assert_eq!(*shown.lock().unwrap(), ["Noon in"], "the piece before the cut was shown");
    // Nothing partial is recorded: the system message and the user's, no assistant reply.
    let evaluation = store.evaluations_of(&"ann".into()).unwrap()[0].evaluation_id;
    let roles: Vec<Role> =
        store.entries(evaluation).unwrap().iter().map(|e| e.message.role()).collect();
    assert_eq!(roles, [Role::System, Role::User]);

    // The same ask again resumes: the model is called again, the whole reply recorded once.
    shown.lock().unwrap().clear();
    let outcome = agent.ask(&store, "ann", "m1", "Time in Paris?").unwrap();
    assert_eq!(outcome.end, AgentEnd::Answered(Message::assistant("Noon in Paris.")));
    assert_eq!(*shown.lock().unwrap(), ["Noon in", " Paris."]);
    assert_eq!(outcome.usage, Usage::new(50, 4));
    let entries = store.entries(evaluation).unwrap();
    assert_eq!(entries.len(), 3);
    assert_eq!(entries[2].message.text(), "Noon in Paris.");
    assert_eq!(server.requests().len(), 2);
    assert!(server.requests().iter().all(|b| b["stream"] == json!(true)));
}
