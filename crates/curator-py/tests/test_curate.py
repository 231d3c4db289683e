"""Stateless curation: round trips, budgets, pairs, the kind returned, pipelines."""

import pytest

import curator_context
from curator_context import curate, default_pipeline

BIG = 1_000_000
SMALL = 2_000


def test_openai_round_trip_is_exact(openai_conversation, unchanged):
    messages = openai_conversation(3, size=5)
    assert unchanged(curate, messages, max_tokens=BIG) == messages


def test_anthropic_round_trip_is_exact(anthropic_conversation, unchanged):
    request = anthropic_conversation(3, size=5)
    assert unchanged(curate, request, max_tokens=BIG) == request
    # A bare list of Anthropic messages comes back a list.
    assert curate(request["messages"], max_tokens=BIG) == request["messages"]


def test_responses_round_trip_is_exact(responses_conversation, unchanged):
    items = responses_conversation(3, size=5)
    items.insert(
        3,
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Look at the biggest directory first."}],
        },
    )
    assert unchanged(curate, items, max_tokens=BIG) == items


def test_explicit_format_reads_the_same(openai_conversation, responses_conversation):
    messages = openai_conversation(2, size=5)
    assert curate(messages, max_tokens=BIG, format="openai") == messages
    items = responses_conversation(2, size=5)
    assert curate(items, max_tokens=BIG, format="responses") == items


def _tool_pairs_whole_openai(messages):
    called, answered = set(), set()
    for message in messages:
        for call in message.get("tool_calls") or []:
            called.add(call["id"])
        if message["role"] == "tool":
            assert message["tool_call_id"] in called, "a result without its call"
            answered.add(message["tool_call_id"])
    assert called == answered, "a call without its result"
    return called


def test_a_budget_shortens_openai_and_keeps_pairs_whole(openai_conversation):
    messages = openai_conversation(40)
    out = curate(messages, max_tokens=SMALL)
    assert len(out) < len(messages)
    assert out[0] == messages[0]
    assert out[-1] == messages[-1]
    assert _tool_pairs_whole_openai(out)


def test_a_budget_shortens_anthropic_and_keeps_pairs_whole(anthropic_conversation):
    request = anthropic_conversation(40)
    out = curate(request, max_tokens=SMALL)
    assert out["system"] == request["system"]
    assert len(out["messages"]) < len(request["messages"])
    used, results = set(), set()
    for message in out["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block["type"] == "tool_use":
                used.add(block["id"])
            if block["type"] == "tool_result":
                assert block["tool_use_id"] in used, "a result without its call"
                results.add(block["tool_use_id"])
    assert used and used == results


def test_a_budget_shortens_responses_and_keeps_pairs_whole(responses_conversation):
    items = responses_conversation(40)
    out = curate(items, max_tokens=SMALL)
    assert len(out) < len(items)
    assert out[0] == items[0]
    calls = [i["call_id"] for i in out if i.get("type") == "function_call"]
    outputs = [i["call_id"] for i in out if i.get("type") == "function_call_output"]
    assert calls and calls == outputs
    for item in out:
        if item.get("type") == "function_call_output":
            assert any(
                c.get("type") == "function_call" and c["call_id"] == item["call_id"]
                for c in out[: out.index(item)]
            )


def test_the_same_kind_comes_back(openai_conversation):
    messages = openai_conversation(2, size=5)
    request = {"model": "gpt-4o-mini", "temperature": 0.2, "messages": messages}
    out = curate(request, max_tokens=BIG)
    assert isinstance(out, dict)
    assert out == request
    assert isinstance(curate(tuple(messages), max_tokens=BIG), list)


def test_tools_in_a_request_are_reserved_from_the_budget(openai_conversation):
    messages = openai_conversation(40, size=50)
    schema = {"type": "object", "properties": {"path": {"type": "string", "description": "x " * 300}}}
    tools = [{"type": "function", "function": {"name": "du", "parameters": schema}}]
    plain = curate({"messages": messages}, max_tokens=SMALL)
    with_tools = curate({"messages": messages, "tools": tools}, max_tokens=SMALL)
    assert with_tools["tools"] == tools
    assert len(with_tools["messages"]) < len(plain["messages"])


def test_pipelines_as_dict_toml_and_json_agree(openai_conversation):
    messages = openai_conversation(10, size=5)
    as_dict = curate(messages, pipeline={"strategy": "sliding_window", "window_size": 5})
    as_toml = curate(messages, pipeline='strategy = "sliding_window"\nwindow_size = 5\n')
    as_json = curate(messages, pipeline='{"strategy": "sliding_window", "window_size": 5}')
    assert as_dict == as_toml == as_json
    assert len(as_dict) < len(messages)
    assert _tool_pairs_whole_openai(as_dict)


def test_the_default_pipeline_is_a_dict_curate_takes(openai_conversation):
    pipeline = default_pipeline(SMALL)
    assert pipeline["strategy"] == "compose"
    messages = openai_conversation(40)
    assert curate(messages, pipeline=pipeline) == curate(messages, max_tokens=SMALL)


def test_secrets_are_redacted_by_the_default_pipeline():
    key = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3i"
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": f"My key is {key}."}]
    out = curate(messages, max_tokens=BIG)
    assert key not in out[1]["content"]


def test_the_package_exports_what_it_documents():
    for name in curator_context.__all__:
        assert getattr(curator_context, name) is not None


def test_items_as_the_agents_sdk_stores_them_round_trip(unchanged):
    items = [
        {"content": "What's the weather in Lyon?", "role": "user"},
        {"id": "rs_1", "summary": [], "type": "reasoning", "encrypted_content": "gAAAAB"},
        {
            "arguments": '{"city":"Lyon"}',
            "call_id": "call_1",
            "name": "weather",
            "type": "function_call",
            "id": "fc_1",
            "status": "completed",
        },
        {"call_id": "call_1", "output": "light rain, 11 °C", "type": "function_call_output"},
        {
            "id": "msg_1",
            "content": [{"annotations": [], "text": "Light rain.", "type": "output_text", "logprobs": []}],
            "role": "assistant",
            "status": "completed",
            "type": "message",
        },
        {"role": "user", "content": [{"type": "input_text", "text": "thanks"}]},
    ]
    assert unchanged(curate, items, max_tokens=BIG) == items


@pytest.mark.parametrize("closed", [False, True])
def test_a_reasoning_item_whose_calls_are_left_out_is_left_out_too(closed):
    # The Responses API refuses a reasoning item not directly followed by the item it came
    # with: when a call without its output is left out, so is the reasoning that led to it.
    items = [
        {"role": "user", "content": "Remove /tmp/x."},
        {"id": "rs_1", "type": "reasoning", "summary": []},
        {"arguments": "{}", "call_id": "call_1", "name": "rm", "type": "function_call", "id": "fc_1"},
    ]
    if closed:
        items.append({"role": "user", "content": "Never mind."})
    for pipeline in ({"strategy": "passthrough"}, {"strategy": "token_budget", "max_tokens": 4_000}, None):
        if pipeline is None:
            view = curate(items, max_tokens=4_000)
        else:
            view = curate(items, pipeline=pipeline)
        assert view == [items[0]] + items[3:], pipeline
    # A reasoning item with its call and the call's output stays.
    answered = items[:3] + [{"type": "function_call_output", "call_id": "call_1", "output": "done"}]
    assert curate(answered, pipeline={"strategy": "passthrough"}) == answered


@pytest.mark.parametrize("pipeline", ["token_budget", "relevance_budget"])
def test_an_orphan_result_after_the_newest_results_curates_as_without_it(pipeline):
    # A tool result that answers no call (a duplicate, or one whose call an earlier trim left
    # out, as LangChain's trim_messages leaves them) used to make the budgets raise
    # CuratorError (kind lost) where the same history without it curates.
    def call(*ids):
        calls = [{"id": i, "type": "function", "function": {"name": "read", "arguments": "{}"}} for i in ids]
        return {"role": "assistant", "content": None, "tool_calls": calls}

    def result(call_id, size=300):
        return {"role": "tool", "tool_call_id": call_id, "content": "out " * size}

    head = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Read the files."}]
    newest = [call("a", "b"), result("a"), result("b")]
    question = {"role": "user", "content": "What do they hold?"}
    messages = head + [call("x"), result("x")] + newest + [result("nobody", 1), question]
    for max_tokens in (100, 400, 1_000, 5_000):
        config = {"strategy": pipeline, "max_tokens": max_tokens}
        with pytest.warns(curator_context.UnsendableWarning):
            view = curate(messages, pipeline=config)
        assert [m.get("tool_call_id") for m in view if m["role"] == "tool"][-2:] == ["a", "b"]
        assert view[-1] == question
