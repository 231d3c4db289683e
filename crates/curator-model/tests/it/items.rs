//! The OpenAI Responses API items format: round trips, errors, conversions, validation.

use curator_model::formats::{anthropic, openai, responses};
use curator_model::validate::{self, ViolationKind};
use curator_model::{Content, Error, Message, Part, Role, ToolCall};
use proptest::prelude::*;
use serde_json::{Value, json};

#[track_caller]
fn round_trip(items: &[Value]) -> Vec<Message> {
    let messages = responses::to_messages(items).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(responses::from_messages(&messages).unwrap(), items);
    // Through the neutral serde form (what stores keep) too.
    let stored: Vec<Message> =
        serde_json::from_str(&serde_json::to_string(&messages).unwrap()).unwrap();
    assert_eq!(responses::from_messages(&stored).unwrap(), items);
    messages
}

/// A session as the OpenAI Agents SDK stores it: the user's input, then each response's
/// output items, then the function outputs the runner added.
fn agents_session() -> Vec<Value> {
    vec![
        json!({"role": "developer", "content": "You answer weather questions."}),
        json!({"role": "user", "content": "Weather in Paris and Lyon?"}),
        json!({"type": "reasoning", "id": "rs_01", "summary": [
            {"type": "summary_text", "text": "**Two cities** I need both."}],
            "encrypted_content": "gAAAAABo-opaque=="}),
        json!({"type": "function_call", "id": "fc_01", "call_id": "call_a", "name": "weather",
            "arguments": "{\"city\":\"Paris\"}", "status": "completed"}),
        json!({"type": "function_call", "id": "fc_02", "call_id": "call_b", "name": "weather",
            "arguments": "{\"city\":\"Lyon\"}", "status": "completed"}),
        json!({"type": "function_call_output", "call_id": "call_a", "output": "Paris: 18°C"}),
        json!({"type": "function_call_output", "call_id": "call_b", "output": "Lyon: 21°C"}),
        json!({"type": "message", "id": "msg_01", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": "Paris 18°C, Lyon 21°C.",
                "annotations": [], "logprobs": []}]}),
    ]
}

#[test]
fn an_agents_sdk_session_round_trips_and_reads_as_turns() {
    let messages = round_trip(&agents_session());
    assert_eq!(messages.len(), 6);
    assert_eq!(messages[0].role(), Role::System);
    // The reasoning item and both calls are one assistant turn.
    assert_eq!(messages[2].role(), Role::Assistant);
    let ids: Vec<&str> = messages[2].tool_calls().iter().map(ToolCall::id).collect();
    assert_eq!(ids, ["call_a", "call_b"]);
    assert!(
        matches!(messages[2].content(), Some(Content::Parts(p)) if matches!(&p[0], Part::Raw { .. }))
    );
    assert_eq!(messages[3].tool_call_id(), Some("call_a"));
    assert_eq!(messages[5].text(), "Paris 18°C, Lyon 21°C.");
    assert_eq!(validate::responses_request(&messages), Ok(()));
}

#[test]
fn every_part_and_item_shape_round_trips() {
    let items = vec![
        json!({"type": "message", "role": "system", "content": [{"type": "input_text", "text": "Be brief."}]}),
        json!({"type": "message", "role": "user", "id": "msg_u", "status": "completed", "content": [
            {"type": "input_text", "text": "What is on these?"},
            {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "high"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"},
            {"type": "input_image", "file_id": "file-123", "detail": "low"},
            {"type": "input_file", "file_id": "file-456", "filename": "report.pdf"},
            {"type": "input_file", "file_data": "data:application/pdf;base64,JVBERi0=", "filename": "b.pdf"}
        ]}),
        json!({"type": "message", "role": "assistant", "id": "msg_a", "status": "completed", "content": [
            {"type": "output_text", "text": "A cat.", "annotations": [
                {"type": "url_citation", "start_index": 0, "end_index": 5, "url": "https://x", "title": "X"}],
                "logprobs": [{"token": "A", "logprob": -0.01, "bytes": [65], "top_logprobs": []}]},
            {"type": "refusal", "refusal": "I will not say more."}
        ]}),
        json!({"role": "assistant", "content": "Let me check."}),
        json!({"type": "function_call", "call_id": "c1", "name": "look", "arguments": "not json {"}),
        json!({"type": "web_search_call", "id": "ws_1", "status": "completed",
            "action": {"type": "search", "query": "cats"}}),
        json!({"type": "function_call_output", "call_id": "c1", "id": "fco_1", "status": "completed", "output": [
            {"type": "input_text", "text": "seen"},
            {"type": "input_image", "image_url": "https://example.com/b.png"},
            {"type": "input_file", "file_id": "file-9"}
        ]}),
        json!({"type": "computer_call", "id": "cu_1", "call_id": "cc1", "status": "completed",
            "action": {"type": "click", "x": 1, "y": 2, "button": "left"}, "pending_safety_checks": []}),
        json!({"type": "computer_call_output", "call_id": "cc1",
            "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,AA=="}}),
        json!({"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": null,
            "content": [{"type": "reasoning_text", "text": "thinking"}], "status": "completed"}),
        json!({"type": "message", "role": "assistant", "content": [{"type": "input_text", "text": "odd but kept"}]}),
        json!({"type": "item_reference", "id": "msg_old"}),
        json!({"type": "function_call", "call_id": "c2", "name": "late", "arguments": ""}),
    ];
    let messages = round_trip(&items);
    // Items of other types are messages of their own: the assistant's, or the user's for the
    // inputs that answer a call; the last call follows a user-side item, so it opens a turn.
    let roles: Vec<Role> = messages.iter().map(Message::role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Assistant,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::User,
            Role::Assistant,
            Role::Assistant,
            Role::User,
            Role::Assistant,
        ]
    );
    assert!(messages[11].content().is_none());
    assert_eq!(messages[11].tool_calls()[0].id(), "c2");
}

#[test]
fn read_errors_name_the_item_and_field() {
    #[track_caller]
    fn check(items: &[Value], expected: &str) {
        let error = responses::to_messages(items).unwrap_err();
        assert_eq!(error.to_string(), expected);
    }
    let user = json!({"role": "user", "content": "hi"});
    check(&[json!("text")], "message 0: field `message` should be an object, found a string");
    check(
        &[user.clone(), json!({"role": "tool", "content": "x"})],
        "message 1: unknown role `tool` in field `role`",
    );
    check(&[json!({"type": "message", "role": "user"})], "message 0: missing field `content`");
    check(
        &[json!({"role": "user", "content": 3})],
        "message 0: field `content` should be a string or an array, found a number",
    );
    check(
        &[user.clone(), json!({"type": "function_call", "name": "f", "arguments": "{}"})],
        "message 1: missing field `call_id`",
    );
    check(
        &[json!({"type": "function_call", "call_id": "c", "name": "f", "arguments": {}})],
        "message 0: field `arguments` should be a string, found an object",
    );
    check(
        &[json!({"type": "function_call_output", "call_id": "c"})],
        "message 0: missing field `output`",
    );
    check(
        &[json!({"type": "function_call_output", "call_id": "c", "output": [{"text": "x"}]})],
        "message 0: missing field `output[0].type`",
    );
    check(&[json!({"type": "reasoning", "id": "rs"})], "message 0: missing field `summary`");
    check(
        &[json!({"type": "reasoning", "summary": [{"type": "summary_text"}]})],
        "message 0: missing field `summary[0].text`",
    );
    check(
        &[json!({"role": "user", "content": [{"type": "input_text"}]})],
        "message 0: missing field `content[0].text`",
    );
    check(
        &[json!({"role": "user", "content": [{"type": "input_image", "image_url": 7}]})],
        "message 0: field `content[0].image_url` should be a string, found a number",
    );
    // Parts of the other formats are never kept as unknown parts.
    assert!(matches!(
        responses::to_messages(&[json!({"role": "user", "content": [{"type": "text", "text": "x"}]})]),
        Err(Error::ForeignField { index: 0, field, format: "OpenAI Chat Completions", .. }) if field == "content[0].type"
    ));
    assert!(matches!(
        responses::to_messages(&[
            json!({"role": "assistant", "content": [{"type": "thinking", "thinking": "x"}]})
        ]),
        Err(Error::ForeignField { format: "Anthropic", .. })
    ));
    assert!(matches!(
        responses::to_messages(&[json!({"role": "assistant", "content": null, "tool_calls": []})]),
        Err(Error::ForeignField { index: 0, field, format: "OpenAI Chat Completions", .. }) if field == "tool_calls"
    ));
    assert!(matches!(responses::parse("[{"), Err(Error::NotJson { .. })));
    // And the other readers refuse the Responses API's parts.
    let items_part = json!([{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]);
    for error in [
        openai::to_messages(&items_part).unwrap_err(),
        anthropic::to_messages(&items_part).unwrap_err(),
    ] {
        assert!(
            matches!(&error, Error::ForeignField { index: 0, field, format: "OpenAI Responses", .. } if field == "content[0].type"),
            "{error}"
        );
    }
}

#[test]
fn responses_items_convert_to_chat_completions_and_anthropic() {
    let items = vec![
        json!({"role": "system", "content": "Be brief."}),
        json!({"role": "user", "content": "Weather in Paris?"}),
        json!({"type": "function_call", "call_id": "call_a", "name": "weather", "arguments": "{\"city\":\"Paris\"}", "id": "fc_1"}),
        json!({"type": "function_call_output", "call_id": "call_a", "output": "18°C"}),
        json!({"type": "message", "role": "assistant", "id": "msg_1", "content": [{"type": "output_text", "text": "18°C.", "annotations": []}]}),
    ];
    let messages = responses::to_messages(&items).unwrap();
    assert_eq!(validate::openai_request(&messages), Ok(()));
    assert_eq!(validate::anthropic_request(&messages), Ok(()));
    assert_eq!(
        openai::convert(&messages).unwrap(),
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_a", "type": "function",
                "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "call_a", "content": "18°C"},
            {"role": "assistant", "content": [{"type": "text", "text": "18°C."}]}
        ])
    );
    let request = anthropic::convert(&messages).unwrap().to_value();
    assert_eq!(
        request,
        json!({"system": "Be brief.", "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "call_a", "name": "weather", "input": {"city": "Paris"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_a", "content": "18°C"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "18°C."}]}
        ]})
    );
    // And back from each into Responses items: the same conversation, without the fields
    // only the Responses API has.
    let from_chat = responses::from_messages(
        &openai::to_messages(&openai::convert(&messages).unwrap()).unwrap(),
    )
    .unwrap();
    assert_eq!(
        from_chat[2],
        json!({"type": "function_call", "call_id": "call_a", "name": "weather", "arguments": "{\"city\":\"Paris\"}"})
    );
    assert_eq!(
        from_chat[4],
        json!({"role": "assistant", "content": [{"type": "output_text", "text": "18°C."}]})
    );
}

#[test]
fn what_another_format_cannot_express_is_a_typed_error() {
    let messages = responses::to_messages(&agents_session()).unwrap();
    // The reasoning item is the Responses API's own: neither format can carry it.
    assert!(matches!(
        openai::from_messages(&messages),
        Err(Error::UnsupportedValue { index: 2, field, value }) if field == "content[0].type" && value == "reasoning"
    ));
    assert!(matches!(
        anthropic::from_messages(&messages),
        Err(Error::UnsupportedValue { field, value, .. }) if field == "content[0].type" && value == "reasoning"
    ));
    assert!(matches!(
        validate::openai(&messages).unwrap_err().kind,
        ViolationKind::UnsupportedPart { role: Role::Assistant, ref part } if part == "reasoning"
    ));
    assert!(matches!(
        validate::anthropic(&messages).unwrap_err().kind,
        ViolationKind::UnsupportedPart { role: Role::Assistant, ref part } if part == "reasoning"
    ));
    // The other way: an Anthropic thinking block and an OpenAI custom call have no item.
    let thinking = anthropic::to_messages(&json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}, {"type": "text", "text": "Hello."}]}
    ]))
    .unwrap();
    assert!(matches!(
        responses::from_messages(&thinking),
        Err(Error::UnsupportedValue { index: 1, field, value }) if field == "content[0].type" && value == "thinking"
    ));
    let custom =
        openai::to_messages(&json!([{"role": "assistant", "content": null, "tool_calls": [
        {"id": "c", "type": "custom", "custom": {"name": "sh", "input": "ls"}}]}]))
        .unwrap();
    assert!(matches!(
        responses::from_messages(&custom),
        Err(Error::UnsupportedValue { index: 0, field, .. }) if field == "tool_calls[0].type"
    ));
    let no_content = openai::to_messages(&json!([{"role": "user", "content": null}])).unwrap();
    assert!(matches!(
        responses::from_messages(&no_content),
        Err(Error::MissingField { index: 0, field }) if field == "content"
    ));
}

#[test]
fn an_image_detail_crosses_between_chat_completions_and_items() {
    let items = vec![json!({"role": "user", "content": [
        {"type": "input_image", "image_url": "https://x/a.png", "detail": "high"}]})];
    let chat = openai::from_messages(&responses::to_messages(&items).unwrap()).unwrap();
    assert_eq!(
        chat,
        json!([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/a.png", "detail": "high"}}]}])
    );
    assert_eq!(responses::from_messages(&openai::to_messages(&chat).unwrap()).unwrap(), items);
}

#[test]
fn chat_completions_messages_write_as_items() {
    let chat = json!([
        {"role": "developer", "content": "Rules."},
        {"role": "user", "content": [{"type": "text", "text": "see"},
            {"type": "image_url", "image_url": {"url": "https://x/a.png", "detail": "low"}}]},
        {"role": "assistant", "content": "Looking.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "zoom", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "zoom", "content": "a cat"}
    ]);
    let items = responses::from_messages(&openai::to_messages(&chat).unwrap()).unwrap();
    assert_eq!(
        items,
        vec![
            json!({"role": "system", "content": "Rules."}),
            json!({"role": "user", "content": [{"type": "input_text", "text": "see"},
                {"type": "input_image", "image_url": "https://x/a.png", "detail": "low"}]}),
            json!({"role": "assistant", "content": "Looking."}),
            json!({"type": "function_call", "call_id": "c1", "name": "zoom", "arguments": "{}"}),
            json!({"type": "function_call_output", "call_id": "c1", "output": "a cat"}),
        ]
    );
    // Read back, the items are a fixed point.
    assert_eq!(responses::from_messages(&responses::to_messages(&items).unwrap()).unwrap(), items);
}

#[test]
fn the_validator_knows_what_the_responses_api_refuses() {
    #[track_caller]
    fn check(items: &[Value], index: usize, kind: ViolationKind) {
        let messages = responses::to_messages(items).unwrap();
        let violation = validate::responses_request(&messages).unwrap_err();
        assert_eq!((violation.index, violation.kind), (index, kind));
    }
    let user = json!({"role": "user", "content": "go"});
    let call =
        |id: &str| json!({"type": "function_call", "call_id": id, "name": "f", "arguments": "{}"});
    let output = |id: &str| json!({"type": "function_call_output", "call_id": id, "output": "ok"});
    let reasoning = json!({"type": "reasoning", "id": "rs_9", "summary": []});
    check(
        &[user.clone(), output("c1")],
        1,
        ViolationKind::ToolResultWithoutCall { call_id: "c1".into() },
    );
    // An output before its call answers nothing.
    check(
        &[user.clone(), output("c1"), call("c1")],
        1,
        ViolationKind::ToolResultWithoutCall { call_id: "c1".into() },
    );
    check(
        &[user.clone(), call("c1"), output("c1"), output("c1")],
        3,
        ViolationKind::ToolResultWithoutCall { call_id: "c1".into() },
    );
    check(
        &[user.clone(), call("c1"), output("c1"), user.clone(), call("c1"), output("c1")],
        4,
        ViolationKind::DuplicateCallId { call_id: "c1".into(), first_index: 1 },
    );
    check(&[user.clone(), call("c1")], 1, ViolationKind::PendingToolCall { call_id: "c1".into() });
    check(
        &[user.clone(), reasoning.clone(), user.clone()],
        1,
        ViolationKind::ReasoningWithoutFollowingItem { item_id: "rs_9".into() },
    );
    check(
        &[user.clone(), reasoning.clone()],
        1,
        ViolationKind::ReasoningWithoutFollowingItem { item_id: "rs_9".into() },
    );
    check(
        &[json!({"role": "assistant", "content": [{"type": "input_text", "text": "x"}]})],
        0,
        ViolationKind::InvalidValue { field: "content[0].type".into(), value: "input_text".into() },
    );
    check(
        &[
            json!({"role": "user", "content": [{"type": "input_image", "image_url": "https://x", "detail": "max"}]}),
        ],
        0,
        ViolationKind::InvalidValue { field: "content[0].detail".into(), value: "max".into() },
    );
    check(
        &[
            user.clone(),
            json!({"type": "function_call", "call_id": "c", "name": "", "arguments": "{}"}),
        ],
        1,
        ViolationKind::EmptyToolName { call_id: "c".into() },
    );
    check(&[], 0, ViolationKind::EmptyConversation);
    // What the API allows: an output after other items, a reasoning item with its call, a
    // record that stops before the outputs or after a reasoning item.
    let ok = responses::to_messages(&[
        user.clone(),
        reasoning.clone(),
        call("c1"),
        user.clone(),
        output("c1"),
    ])
    .unwrap();
    assert_eq!(validate::responses_request(&ok), Ok(()));
    let record = responses::to_messages(&[user.clone(), call("c1"), reasoning]).unwrap();
    assert_eq!(validate::responses(&record), Ok(()));
    // Parts of another format are refused for a Responses request.
    let chat = openai::to_messages(&json!([{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "AA", "format": "wav"}}]}])).unwrap();
    assert!(matches!(
        validate::responses(&chat).unwrap_err().kind,
        ViolationKind::UnsupportedPart { role: Role::User, ref part } if part == "input_audio"
    ));
}

#[test]
fn messages_built_in_rust_write_as_valid_items() {
    let messages = vec![
        Message::system("Be brief."),
        Message::user("list"),
        Message::assistant_with_calls(
            Some("Looking.".into()),
            vec![ToolCall::new("c1", "ls", "{}")],
        ),
        Message::tool_error("c1", "denied"),
        Message::assistant(Content::Parts(vec![Part::text("Denied.")])),
    ];
    assert_eq!(validate::responses_request(&messages), Ok(()));
    let items = responses::from_messages(&messages).unwrap();
    assert_eq!(
        items[5],
        json!({"role": "assistant", "content": [{"type": "output_text", "text": "Denied."}]})
    );
    // The error mark has no place in an item: it is left out, as the Chat Completions
    // format leaves it out.
    assert_eq!(
        items[4],
        json!({"type": "function_call_output", "call_id": "c1", "output": "denied"})
    );
}

// Generated item lists in every shape above, in any order: reading then writing gives them
// back equal.

fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 .,é{}\"]{0,12}"
}

fn maybe(
    key: &'static str,
    value: impl Strategy<Value = Value>,
) -> impl Strategy<Value = Option<(&'static str, Value)>> {
    proptest::option::of(value.prop_map(move |v| (key, v)))
}

fn object(fields: Vec<(&str, Value)>, optional: Vec<Option<(&'static str, Value)>>) -> Value {
    let mut map = serde_json::Map::new();
    for (k, v) in fields.into_iter().chain(optional.into_iter().flatten()) {
        map.insert(k.to_owned(), v);
    }
    Value::Object(map)
}

fn part() -> impl Strategy<Value = Value> {
    prop_oneof![
        (text(), maybe("annotations", Just(json!([]))), maybe("logprobs", Just(json!([]))))
            .prop_map(|(t, a, l)| object(
                vec![("type", json!("output_text")), ("text", json!(t))],
                vec![a, l]
            )),
        text().prop_map(|t| json!({"type": "input_text", "text": t})),
        (
            prop_oneof![Just("https://x/a.png"), Just("data:image/jpeg;base64,/9j/")],
            maybe("detail", Just(json!("auto")))
        )
            .prop_map(|(u, d)| object(
                vec![("type", json!("input_image")), ("image_url", json!(u))],
                vec![d]
            )),
        Just(json!({"type": "input_image", "file_id": "file-1", "detail": "low"})),
        Just(json!({"type": "input_file", "file_id": "file-2"})),
        text().prop_map(|t| json!({"type": "refusal", "refusal": t})),
    ]
}

fn content() -> impl Strategy<Value = Value> {
    prop_oneof![
        text().prop_map(Value::String),
        proptest::collection::vec(part(), 0..3).prop_map(Value::Array)
    ]
}

fn item() -> impl Strategy<Value = Value> {
    let id = || "[a-c]{1,2}";
    prop_oneof![
        3 => (prop_oneof![Just("user"), Just("assistant"), Just("system"), Just("developer")], content(),
            maybe("type", Just(json!("message"))), maybe("id", Just(json!("msg_1"))), maybe("status", Just(json!("completed"))))
            .prop_map(|(r, c, t, i, s)| object(vec![("role", json!(r)), ("content", c)], vec![t, i, s])),
        3 => (id(), "[a-z_]{1,6}", curator_testkit::arb::arguments(), maybe("id", Just(json!("fc_1"))), maybe("status", Just(json!("completed"))))
            .prop_map(|(c, n, a, i, s)| object(vec![("type", json!("function_call")), ("call_id", json!(c)), ("name", json!(n)), ("arguments", json!(a))], vec![i, s])),
        2 => (id(), content(), maybe("id", Just(json!("fco_1"))))
            .prop_map(|(c, o, i)| object(vec![("type", json!("function_call_output")), ("call_id", json!(c)), ("output", o)], vec![i])),
        2 => (proptest::collection::vec(text(), 0..2), maybe("encrypted_content", prop_oneof![Just(Value::Null), Just(json!("enc=="))]))
            .prop_map(|(s, e)| {
                let summary: Vec<Value> = s.into_iter().map(|t| json!({"type": "summary_text", "text": t})).collect();
                object(vec![("type", json!("reasoning")), ("id", json!("rs_1")), ("summary", Value::Array(summary))], vec![e])
            }),
        1 => Just(json!({"type": "web_search_call", "id": "ws", "status": "completed", "action": {"type": "search", "query": "q"}})),
        1 => Just(json!({"type": "computer_call_output", "call_id": "cc", "output": {"type": "computer_screenshot", "file_id": "f"}})),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn items_round_trip(items in proptest::collection::vec(item(), 0..12)) {
        let messages = responses::to_messages(&items).unwrap();
        prop_assert_eq!(responses::from_messages(&messages).unwrap(), items.clone());
        let stored: Vec<Message> = serde_json::from_str(&serde_json::to_string(&messages).unwrap()).unwrap();
        prop_assert_eq!(responses::from_messages(&stored).unwrap(), items);
    }

    #[test]
    fn generated_histories_write_as_valid_items(messages in curator_testkit::arb::history()) {
        let items = responses::from_messages(&messages).unwrap();
        let back = responses::to_messages(&items).unwrap();
        // Generated histories reuse call ids across steps, which the Responses API refuses
        // (its outputs find their call by id alone): that is the only violation.
        let mut ids: Vec<&str> = messages.iter().flat_map(Message::tool_calls).map(ToolCall::id).collect();
        let count = ids.len();
        ids.sort_unstable();
        ids.dedup();
        match validate::responses(&back) {
            Ok(()) => prop_assert_eq!(ids.len(), count),
            Err(v) => prop_assert!(
                ids.len() < count && matches!(v.kind, ViolationKind::DuplicateCallId { .. }),
                "{v}"
            ),
        }
        // A fixed point once in items.
        prop_assert_eq!(responses::from_messages(&back).unwrap(), items);
    }
}
