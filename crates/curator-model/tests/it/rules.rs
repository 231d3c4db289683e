//! The providers' rules, one row each: a request the provider accepts and one it refuses,
//! with the violation the validator must report (issue 29). Rows are wire JSON of the
//! provider's own format, read by the strict readers and checked as a request to send
//! (`validate::openai_request`, `validate::anthropic_request`).

use curator_model::formats::{anthropic, openai};
use curator_model::validate::{self, Violation, ViolationKind as K};
use curator_model::{Message, Role};
use serde_json::{Value, json};

#[derive(Clone, Copy, Debug)]
enum Api {
    OpenAi,
    Anthropic,
}

fn read(api: Api, wire: &Value) -> Vec<Message> {
    match api {
        Api::OpenAi => openai::to_messages(wire).unwrap(),
        Api::Anthropic => anthropic::to_messages(wire).unwrap(),
    }
}

fn check_request(api: Api, messages: &[Message]) -> Result<(), Violation> {
    match api {
        Api::OpenAi => validate::openai_request(messages),
        Api::Anthropic => validate::anthropic_request(messages),
    }
}

#[track_caller]
fn check(rule: &str, api: Api, accept: &Value, refuse: &Value, index: usize, kind: &K) {
    let accepted = check_request(api, &read(api, accept));
    assert_eq!(accepted, Ok(()), "{rule}: the accepted case was refused");
    let refused = check_request(api, &read(api, refuse));
    assert_eq!(
        refused,
        Err(Violation { index, kind: kind.clone() }),
        "{rule}: the refused case was not reported as expected"
    );
}

fn u(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn oa_calls(ids: &[&str]) -> Value {
    let calls: Vec<Value> = ids
        .iter()
        .map(|id| json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}}))
        .collect();
    json!({"role": "assistant", "content": null, "tool_calls": calls})
}

fn oa_tool(id: &str) -> Value {
    json!({"role": "tool", "tool_call_id": id, "content": "ok"})
}

fn an_use(ids: &[&str]) -> Value {
    let blocks: Vec<Value> = ids
        .iter()
        .map(|id| json!({"type": "tool_use", "id": id, "name": "f", "input": {}}))
        .collect();
    json!({"role": "assistant", "content": blocks})
}

fn an_results(ids: &[&str]) -> Value {
    let blocks: Vec<Value> = ids
        .iter()
        .map(|id| json!({"type": "tool_result", "tool_use_id": id, "content": "ok"}))
        .collect();
    json!({"role": "user", "content": blocks})
}

fn image_url(detail: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": "https://x/a.png", "detail": detail}})
}

fn an_image(media_type: &str) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": "iVBOR"}})
}

fn cached(text: &str) -> Value {
    json!({"type": "text", "text": text, "cache_control": {"type": "ephemeral"}})
}

fn unsupported(role: Role, part: &str) -> K {
    K::UnsupportedPart { role, part: part.into() }
}

#[test]
#[expect(clippy::too_many_lines, reason = "one row per rule")]
fn every_rule_accepts_and_refuses() {
    use Api::{Anthropic as A, OpenAi as O};
    let done = json!({"role": "assistant", "content": "done"});
    let rows: Vec<(&str, Api, Value, Value, usize, K)> = vec![
        // OpenAI Chat Completions.
        ("openai: some message", O, json!([u("hi")]), json!([]), 0, K::EmptyConversation),
        (
            "openai: a result answers an open call",
            O,
            json!([u("go"), oa_calls(&["a"]), oa_tool("a")]),
            json!([u("go"), oa_tool("a")]),
            1,
            K::ToolResultWithoutCall { call_id: "a".into() },
        ),
        (
            "openai: every call answered before the next message",
            O,
            json!([u("go"), oa_calls(&["a"]), oa_tool("a"), u("more")]),
            json!([u("go"), oa_calls(&["a"]), u("more")]),
            2,
            K::UnansweredToolCall { call_id: "a".into(), call_index: 1 },
        ),
        (
            "openai: open call ids are distinct",
            O,
            json!([u("go"), oa_calls(&["a", "b"]), oa_tool("a"), oa_tool("b")]),
            json!([u("go"), oa_calls(&["a", "a"]), oa_tool("a"), oa_tool("a")]),
            1,
            K::DuplicateOpenCallId { call_id: "a".into() },
        ),
        (
            "openai: a request does not end with unanswered calls",
            O,
            json!([u("go"), oa_calls(&["a"]), oa_tool("a")]),
            json!([u("go"), oa_calls(&["a"])]),
            1,
            K::PendingToolCall { call_id: "a".into() },
        ),
        (
            "openai: user content is not null",
            O,
            json!([u("x")]),
            json!([{"role": "user", "content": null}]),
            0,
            K::MissingContent { role: Role::User },
        ),
        (
            "openai: system content is not null",
            O,
            json!([{"role": "system", "content": "s"}, u("x")]),
            json!([{"role": "system", "content": null}, u("x")]),
            0,
            K::MissingContent { role: Role::System },
        ),
        (
            "openai: tool content is not null",
            O,
            json!([u("go"), oa_calls(&["a"]), oa_tool("a")]),
            json!([u("go"), oa_calls(&["a"]), {"role": "tool", "tool_call_id": "a", "content": null}]),
            2,
            K::MissingContent { role: Role::Tool },
        ),
        (
            "openai: an assistant message has content or calls",
            O,
            json!([u("go"), {"role": "assistant", "content": "ok"}]),
            json!([u("go"), {"role": "assistant", "content": null}]),
            1,
            K::MissingContent { role: Role::Assistant },
        ),
        (
            "openai: tool_calls is not an empty list",
            O,
            json!([u("go"), {"role": "assistant", "content": "ok"}]),
            json!([u("go"), {"role": "assistant", "content": "ok", "tool_calls": []}]),
            1,
            K::EmptyToolCalls,
        ),
        (
            "openai: a function has a name",
            O,
            json!([u("go"), oa_calls(&["a"]), oa_tool("a")]),
            json!([u("go"), {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "", "arguments": "{}"}}]}, oa_tool("a")]),
            1,
            K::EmptyToolName { call_id: "a".into() },
        ),
        (
            "openai: images go in user messages, not system ones",
            O,
            json!([{"role": "user", "content": [image_url("auto")]}]),
            json!([{"role": "system", "content": [image_url("auto")]}, u("x")]),
            0,
            unsupported(Role::System, "image"),
        ),
        (
            "openai: no image in a tool message",
            O,
            json!([u("go"), oa_calls(&["a"]), oa_tool("a")]),
            json!([u("go"), oa_calls(&["a"]), {"role": "tool", "tool_call_id": "a", "content": [image_url("auto")]}]),
            2,
            unsupported(Role::Tool, "image"),
        ),
        (
            "openai: no image in an assistant message",
            O,
            json!([u("go"), {"role": "assistant", "content": [{"type": "text", "text": "a"}]}]),
            json!([u("go"), {"role": "assistant", "content": [image_url("auto")]}]),
            1,
            unsupported(Role::Assistant, "image"),
        ),
        (
            "openai: image detail is auto, low or high",
            O,
            json!([{"role": "user", "content": [image_url("high")]}]),
            json!([{"role": "user", "content": [image_url("medium")]}]),
            0,
            K::InvalidValue { field: "content[0].image_url.detail".into(), value: "medium".into() },
        ),
        (
            "openai: a refusal part only in an assistant message",
            O,
            json!([u("go"), {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]}]),
            json!([{"role": "user", "content": [{"type": "refusal", "refusal": "no"}]}]),
            0,
            unsupported(Role::User, "refusal"),
        ),
        (
            "openai: audio input only in a user message",
            O,
            json!([{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}}]}]),
            json!([u("go"), {"role": "assistant", "content": [{"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}}]}]),
            1,
            unsupported(Role::Assistant, "input_audio"),
        ),
        // Anthropic Messages.
        (
            "anthropic: a message besides the system prompt",
            A,
            json!({"system": "s", "messages": [u("hi")]}),
            json!({"system": "s", "messages": []}),
            1,
            K::EmptyConversation,
        ),
        (
            "anthropic: the first message is the user's",
            A,
            json!([u("hi"), done]),
            json!([done, u("hi")]),
            0,
            K::FirstMessageNotUser { role: Role::Assistant },
        ),
        (
            "anthropic: a result answers a tool_use",
            A,
            json!([u("go"), an_use(&["a"]), an_results(&["a"])]),
            json!([u("go"), done, an_results(&["a"])]),
            2,
            K::ToolResultWithoutCall { call_id: "a".into() },
        ),
        (
            "anthropic: every tool_use answered in the next user turn",
            A,
            json!([u("go"), an_use(&["a"]), an_results(&["a"]), done]),
            json!([u("go"), an_use(&["a"]), u("skip"), done]),
            2,
            K::UnansweredToolCall { call_id: "a".into(), call_index: 1 },
        ),
        (
            "anthropic: a request does not end with a tool_use",
            A,
            json!([u("go"), an_use(&["a"]), an_results(&["a"])]),
            json!([u("go"), an_use(&["a"])]),
            1,
            K::PendingToolCall { call_id: "a".into() },
        ),
        (
            "anthropic: tool_use ids are distinct in a turn",
            A,
            json!([u("go"), an_use(&["a", "b"]), an_results(&["a", "b"])]),
            json!([u("go"), an_use(&["a", "a"]), an_results(&["a", "a"])]),
            1,
            K::DuplicateOpenCallId { call_id: "a".into() },
        ),
        (
            "anthropic: tool_use ids are distinct in a request",
            A,
            json!([
                u("go"),
                an_use(&["a"]),
                an_results(&["a"]),
                an_use(&["b"]),
                an_results(&["b"])
            ]),
            json!([
                u("go"),
                an_use(&["a"]),
                an_results(&["a"]),
                an_use(&["a"]),
                an_results(&["a"])
            ]),
            3,
            K::DuplicateToolUseId { call_id: "a".into(), first_index: 1 },
        ),
        (
            "anthropic: a user turn has content",
            A,
            json!([u("x"), done]),
            json!([{"role": "user", "content": []}, done]),
            0,
            K::MissingContent { role: Role::User },
        ),
        (
            "anthropic: an assistant turn before the end has content",
            A,
            json!([u("x"), done, u("y")]),
            json!([u("x"), {"role": "assistant", "content": []}, u("y")]),
            1,
            K::MissingContent { role: Role::Assistant },
        ),
        (
            "anthropic: text is not blank",
            A,
            json!([u("x")]),
            json!([{"role": "user", "content": [{"type": "text", "text": " "}]}]),
            0,
            K::BlankText { role: Role::User },
        ),
        (
            "anthropic: a tool has a name",
            A,
            json!([u("go"), an_use(&["a"]), an_results(&["a"])]),
            json!([u("go"), {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "", "input": {}}]}, an_results(&["a"])]),
            1,
            K::EmptyToolName { call_id: "a".into() },
        ),
        (
            "anthropic: no thinking block in a user message",
            A,
            json!([u("go"), {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}, {"type": "text", "text": "a"}]}]),
            json!([{"role": "user", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}, {"type": "text", "text": "a"}]}]),
            0,
            unsupported(Role::User, "thinking"),
        ),
        (
            "anthropic: no image in an assistant message",
            A,
            json!([{"role": "user", "content": [an_image("image/png")]}]),
            json!([u("go"), {"role": "assistant", "content": [an_image("image/png")]}]),
            1,
            unsupported(Role::Assistant, "image"),
        ),
        (
            "anthropic: no image in the system prompt",
            A,
            json!({"system": [{"type": "text", "text": "s"}], "messages": [u("x")]}),
            json!({"system": [an_image("image/png")], "messages": [u("x")]}),
            0,
            unsupported(Role::System, "image"),
        ),
        (
            "anthropic: no document in an assistant message",
            A,
            json!([{"role": "user", "content": [{"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "d"}}]}]),
            json!([u("go"), {"role": "assistant", "content": [{"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "d"}}]}]),
            1,
            unsupported(Role::Assistant, "document"),
        ),
        (
            "anthropic: no thinking block in a tool result",
            A,
            json!([u("go"), an_use(&["a"]), an_results(&["a"])]),
            json!([u("go"), an_use(&["a"]), {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a",
                "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}]}]}]),
            2,
            unsupported(Role::Tool, "thinking"),
        ),
        (
            "anthropic: an image is jpeg, png, gif or webp",
            A,
            json!([{"role": "user", "content": [an_image("image/webp")]}]),
            json!([{"role": "user", "content": [an_image("image/bmp")]}]),
            0,
            K::InvalidValue {
                field: "content[0].source.media_type".into(),
                value: "image/bmp".into(),
            },
        ),
        (
            "anthropic: at most 4 cache_control blocks",
            A,
            json!([{"role": "user", "content": [cached("a"), cached("b"), cached("c"), cached("d")]}]),
            json!([{"role": "user", "content": [cached("a"), cached("b"), cached("c")]}, done,
                {"role": "user", "content": [cached("d"), cached("e")]}]),
            2,
            K::TooManyCacheControl { count: 5 },
        ),
        (
            "anthropic: cache_control is ephemeral",
            A,
            json!([{"role": "user", "content": [cached("a")]}]),
            json!([{"role": "user", "content": [{"type": "text", "text": "a", "cache_control": {"type": "forever"}}]}]),
            0,
            K::InvalidValue {
                field: "content[0].cache_control.type".into(),
                value: "forever".into(),
            },
        ),
        (
            "anthropic: an error result has content",
            A,
            json!([u("go"), an_use(&["a"]), {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "is_error": true, "content": "boom"}]}]),
            json!([u("go"), an_use(&["a"]), {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "is_error": true}]}]),
            2,
            K::EmptyErrorResult,
        ),
        (
            "anthropic: an empty result is fine when not an error",
            A,
            json!([u("go"), an_use(&["a"]), {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"}]}]),
            json!([u("go"), an_use(&["a"]), {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "is_error": true, "content": []}]}]),
            2,
            K::EmptyErrorResult,
        ),
    ];
    let mut openai_rows = 0;
    for (rule, api, accept, refuse, index, kind) in &rows {
        check(rule, *api, accept, refuse, *index, kind);
        openai_rows += usize::from(matches!(api, Api::OpenAi));
    }
    // Rules on messages the readers cannot produce from wire JSON, built directly.
    let custom = curator_model::ToolCall::new("a", "f", "{}");
    let not_object = vec![
        Message::user("go"),
        Message::assistant_with_calls(None, vec![curator_model::ToolCall::new("a", "f", "[1]")]),
        Message::tool_result("a", "ok"),
    ];
    assert_eq!(
        validate::anthropic_request(&not_object),
        Err(Violation { index: 1, kind: K::ArgumentsNotObject { call_id: "a".into() } })
    );
    let object = vec![
        Message::user("go"),
        Message::assistant_with_calls(None, vec![custom]),
        Message::tool_result("a", "ok"),
    ];
    assert_eq!(validate::anthropic_request(&object), Ok(()));
    let system_inside = [Message::system("a"), Message::user("b"), Message::system("c")];
    assert_eq!(validate::openai_request(&system_inside), Ok(()));
    assert_eq!(
        validate::anthropic_request(&system_inside),
        Err(Violation { index: 2, kind: K::SystemInsideConversation })
    );
    let total = rows.len() + 2;
    assert!(total >= 40, "{total} rules");
    assert!(openai_rows >= 15, "{openai_rows} OpenAI rules");
}

#[test]
fn records_may_end_with_pending_calls_but_requests_may_not() {
    let pending = read(Api::OpenAi, &json!([u("go"), oa_calls(&["a"])]));
    assert_eq!(validate::openai(&pending), Ok(()));
    assert!(validate::openai_request(&pending).is_err());
    let pending = read(Api::Anthropic, &json!([u("go"), an_use(&["a"])]));
    assert_eq!(validate::anthropic(&pending), Ok(()));
    assert!(validate::anthropic_request(&pending).is_err());
}

#[test]
fn tools_are_checked_in_each_provider_shape() {
    use curator_model::Error;
    let openai_tools =
        json!([{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}]);
    let anthropic_tools = json!([{"name": "ls", "input_schema": {"type": "object"}},
        {"type": "web_search_20250305", "name": "web_search"}]);
    assert!(validate::openai_tools(&openai_tools).is_ok());
    assert!(validate::anthropic_tools(&anthropic_tools).is_ok());
    match validate::anthropic_tools(&openai_tools) {
        Err(Error::ToolSchema { index: 0, field, .. }) => assert_eq!(field, "type"),
        other => panic!("{other:?}"),
    }
    match validate::openai_tools(&anthropic_tools) {
        Err(Error::ToolSchema { index: 0, field, .. }) => assert_eq!(field, "type"),
        other => panic!("{other:?}"),
    }
    let nameless = json!([{"input_schema": {"type": "object"}}]);
    assert!(matches!(
        validate::anthropic_tools(&nameless),
        Err(Error::ToolSchema { index: 0, .. })
    ));
    let schemaless = json!([{"name": "ls"}]);
    assert!(matches!(
        validate::anthropic_tools(&schemaless),
        Err(Error::ToolSchema { index: 0, .. })
    ));
}
