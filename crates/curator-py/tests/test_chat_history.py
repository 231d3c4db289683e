"""The LangChain chat message history on curator's stores (SQLite and PostgreSQL)."""

import asyncio
import uuid

import pytest

pytest.importorskip("langchain_core")

from curator_context import FormatError  # noqa: E402


def run(coroutine):
    return asyncio.run(coroutine)


def new_id():
    return f"history-{uuid.uuid4()}"


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    """Where histories are recorded: a SQLite file, or a PostgreSQL server started for the run."""
    if request.param == "sqlite":
        return str(tmp_path / "sessions.db")
    return request.getfixturevalue("postgres_url")

def lc_messages():
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    return [
        SystemMessage("You are a shell agent.", id="s1"),
        HumanMessage("Find the biggest log file.", id="h1", name="ana"),
        AIMessage(
            "",
            id="a1",
            tool_calls=[{"name": "du", "args": {"dir": "/var/log"}, "id": "call_1", "type": "tool_call"}],
        ),
        ToolMessage("12 blocks", tool_call_id="call_1", id="t1", name="du"),
        AIMessage([{"type": "text", "text": "The biggest is syslog."}], id="a2", name="agent"),
        HumanMessage([{"type": "text", "text": "and this?"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}], id="h2"),
    ]


def test_langchain_messages_round_trip(store):
    from curator_context.langchain import CuratorChatMessageHistory

    messages = lc_messages()
    history = CuratorChatMessageHistory(new_id(), store)
    history.add_messages(messages[:3])
    history.add_message(messages[3])
    run(history.aadd_messages(messages[4:]))
    assert history.messages == messages
    again = CuratorChatMessageHistory(history.session_id, store)
    assert again.messages == messages
    assert [type(m).__name__ for m in again.messages] == [type(m).__name__ for m in messages]
    assert again.messages[2].tool_calls == messages[2].tool_calls
    assert again.get_messages(2) == messages[-2:]
    assert run(again.aget_messages()) == messages
    again.clear()
    assert history.messages == [] and run(history.aget_messages()) == []


def test_langchain_history_curates_and_refuses_what_it_cannot_record(tmp_path):
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from curator_context.langchain import CuratorChatMessageHistory

    store = str(tmp_path / "lc.db")
    history = CuratorChatMessageHistory(new_id(), store, max_tokens=1_000)
    messages = [HumanMessage("Find the biggest log file.")]
    for i in range(50):
        messages.append(AIMessage("", tool_calls=[{"name": "du", "args": {"i": i}, "id": f"c{i}", "type": "tool_call"}]))
        messages.append(ToolMessage(f"{i} blocks " * 100, tool_call_id=f"c{i}"))
    history.add_messages(messages)
    view = history.messages
    assert len(view) < len(messages) and view[0] == messages[0]
    called = {c["id"] for m in view if isinstance(m, AIMessage) for c in m.tool_calls}
    answered = {m.tool_call_id for m in view if isinstance(m, ToolMessage)}
    assert called == answered
    with pytest.raises(FormatError) as bad:
        history.add_messages([HumanMessage("ok"), "not a message"])
    assert bad.value.kind == "wrong_type" and "message 1" in str(bad.value)
    assert len(history.get_messages(1000)) == len(messages)


def test_the_unsendable_warning_points_at_the_callers_line(tmp_path):
    from langchain_core.messages import HumanMessage, ToolMessage

    from curator_context import UnsendableWarning
    from curator_context.langchain import CuratorChatMessageHistory

    history = CuratorChatMessageHistory("h", str(tmp_path / "s.db"), max_tokens=1_000)
    history.add_messages([HumanMessage("hi"), ToolMessage("?", tool_call_id="nobody")])
    with pytest.warns(UnsendableWarning) as caught:
        history.messages
    assert [w.filename for w in caught] == [__file__]


def lc_reply(id="r1", reasoning="The user wants the biggest file; du answered 12 blocks."):
    """A reply as a provider integration makes it: provider data in both dicts."""
    from langchain_core.messages import AIMessage

    return AIMessage(
        "syslog is the biggest.",
        id=id,
        additional_kwargs={
            "reasoning_content": reasoning,
            "function_call": {"name": "du", "arguments": '{"dir": "/var/log"}'},
            "refusal": None,
        },
        response_metadata={
            "token_usage": {"prompt_tokens": 812, "completion_tokens": 9, "total_tokens": 821},
            "model_name": "gpt-4o-2024-08-06",
            "finish_reason": "stop",
            "logprobs": None,
        },
    )


def test_additional_kwargs_and_response_metadata_round_trip(store):
    from langchain_core.messages import HumanMessage

    from curator_context.langchain import CuratorChatMessageHistory

    messages = [HumanMessage("Find the biggest log file.", id="h1"), lc_reply()]
    history = CuratorChatMessageHistory(new_id(), store)
    history.add_messages(messages)
    for back in (
        history.messages,
        history.get_messages(),
        CuratorChatMessageHistory(history.session_id, store).messages,
        CuratorChatMessageHistory(history.session_id, store, max_tokens=1_000).messages,
    ):
        assert back == messages
        assert back[1].additional_kwargs == messages[1].additional_kwargs
        assert back[1].response_metadata == messages[1].response_metadata
        # A message that had neither comes back without them, as before.
        assert back[0].additional_kwargs == {} and back[0].response_metadata == {}
    (item,) = [i for i in history._native.get_items() if i["role"] == "assistant"]
    assert item["langchain"] == {
        "additional_kwargs": messages[1].additional_kwargs,
        "response_metadata": messages[1].response_metadata,
    }


def test_recorded_langchain_fields_do_not_change_the_curated_selection(tmp_path):
    from langchain_core.messages import HumanMessage

    from curator_context.langchain import CuratorChatMessageHistory

    store = str(tmp_path / "lc.db")
    plain, rich = [], []
    for i in range(40):
        question = HumanMessage(f"Question {i}: " + "which log grew? " * 20, id=f"h{i}")
        reply = lc_reply(id=f"r{i}", reasoning="thinking " * 2_000)
        plain += [question, reply.model_copy(update={"additional_kwargs": {}, "response_metadata": {}})]
        rich += [question, reply]
    with_fields = CuratorChatMessageHistory("rich", store, max_tokens=2_000)
    without = CuratorChatMessageHistory("plain", store, max_tokens=2_000)
    with_fields.add_messages(rich)
    without.add_messages(plain)
    view = with_fields.messages
    # The view is the same messages in the same places (curator's note of what it left out
    # has no id), each as it was given.
    assert [m.id for m in view] == [m.id for m in without.messages]
    by_id = {m.id: m for m in rich}
    kept = [m for m in view if m.id is not None]
    assert 0 < len(kept) < len(rich) and kept == [by_id[m.id] for m in kept]
    assert kept[-1].additional_kwargs == rich[-1].additional_kwargs


def test_a_value_json_cannot_hold_is_refused_by_name_and_nothing_is_recorded(tmp_path):
    from langchain_core.messages import AIMessage, HumanMessage

    from curator_context.langchain import CuratorChatMessageHistory

    history = CuratorChatMessageHistory(new_id(), str(tmp_path / "lc.db"))
    history.add_messages([HumanMessage("before")])
    parsed = AIMessage("{}", additional_kwargs={"parsed": object()})
    with pytest.raises(FormatError) as bad:
        history.add_messages([HumanMessage("ok"), parsed])
    assert bad.value.kind == "wrong_type"
    assert "message 1" in str(bad.value) and "additional_kwargs.parsed" in str(bad.value)
    deep = AIMessage("x", response_metadata={"token_usage": {"details": {1, 2}}})
    with pytest.raises(FormatError) as bad:
        history.add_messages([deep])
    assert "message 0" in str(bad.value) and "response_metadata.token_usage.details" in str(bad.value)
    with pytest.raises(FormatError) as bad:
        history.add_messages([AIMessage("x", response_metadata={"score": float("nan")})])
    assert "response_metadata.score" in str(bad.value)
    assert [m.content for m in history.get_messages(100)] == ["before"]


def test_tool_calls_mirrored_in_additional_kwargs_are_recorded_once(store):
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from curator_context.langchain import CuratorChatMessageHistory

    # As langchain-openai builds a reply: the provider's calls, with their own argument text,
    # in `additional_kwargs`, and parsed in `tool_calls`.
    raw = [
        {"id": "call_1", "type": "function", "function": {"name": "du", "arguments": '{"dir":"/var/log"}'}},
        {"id": "call_2", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
    ]
    call = AIMessage(
        "",
        id="a1",
        additional_kwargs={"tool_calls": raw, "refusal": None},
        response_metadata={"finish_reason": "tool_calls", "model_name": "gpt-4o"},
        tool_calls=[
            {"name": "du", "args": {"dir": "/var/log"}, "id": "call_1", "type": "tool_call"},
            {"name": "ls", "args": {}, "id": "call_2", "type": "tool_call"},
        ],
    )
    messages = [
        HumanMessage("Find the biggest log file.", id="h1"),
        call,
        ToolMessage("12 blocks", tool_call_id="call_1", id="t1"),
        ToolMessage("syslog", tool_call_id="call_2", id="t2"),
    ]
    history = CuratorChatMessageHistory(new_id(), store)
    history.add_messages(messages)
    curated = CuratorChatMessageHistory(history.session_id, store, max_tokens=1_000)
    for back in (history.messages, curated.messages):
        assert back == messages
        assert back[1].tool_calls == call.tool_calls and back[1].additional_kwargs["tool_calls"] == raw
    (item,) = [i for i in history._native.get_items() if i["role"] == "assistant"]
    # Recorded once, as the provider wrote them; the mirror is rebuilt from them on reading.
    assert item["tool_calls"] == raw
    assert item["langchain"] == {
        "additional_kwargs": {"refusal": None},
        "response_metadata": call.response_metadata,
        "tool_calls_mirrored": True,
    }


def test_usage_invalid_calls_and_a_tools_artifact_and_status_round_trip(store):
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from curator_context.langchain import CuratorChatMessageHistory

    messages = [
        HumanMessage("Count the lines.", id="h1"),
        AIMessage(
            "",
            id="a1",
            tool_calls=[{"name": "wc", "args": {"path": "a.log"}, "id": "call_1", "type": "tool_call"}],
            invalid_tool_calls=[
                {"name": "wc", "args": "{not json", "id": "call_2", "error": "bad JSON", "type": "invalid_tool_call"}
            ],
            usage_metadata={"input_tokens": 12, "output_tokens": 7, "total_tokens": 19},
        ),
        ToolMessage("42", tool_call_id="call_1", id="t1", artifact={"lines": [1, 2, 3]}, status="error"),
        AIMessage("It has 42 lines.", id="a2", usage_metadata={"input_tokens": 30, "output_tokens": 5, "total_tokens": 35}),
    ]
    history = CuratorChatMessageHistory(new_id(), store)
    history.add_messages(messages)
    for back in (
        history.messages,
        CuratorChatMessageHistory(history.session_id, store).messages,
        CuratorChatMessageHistory(history.session_id, store, max_tokens=1_000).messages,
    ):
        assert back == messages
        assert back[1].usage_metadata == messages[1].usage_metadata
        assert back[1].invalid_tool_calls == messages[1].invalid_tool_calls
        assert back[2].artifact == {"lines": [1, 2, 3]} and back[2].status == "error"
        assert back[3].usage_metadata == messages[3].usage_metadata
    # Defaults are not recorded.
    (item,) = [i for i in history._native.get_items() if i.get("content") == "It has 42 lines."]
    assert item["langchain"] == {"usage_metadata": messages[3].usage_metadata}


def test_an_artifact_json_cannot_hold_is_refused_by_name(tmp_path):
    from langchain_core.messages import ToolMessage

    from curator_context.langchain import CuratorChatMessageHistory

    history = CuratorChatMessageHistory(new_id(), str(tmp_path / "lc.db"))
    with pytest.raises(FormatError) as bad:
        history.add_messages([ToolMessage("rows", tool_call_id="c1", artifact=object())])
    assert bad.value.kind == "wrong_type"
    assert "message 0" in str(bad.value) and "`artifact`" in str(bad.value)
    assert history.get_messages(10) == []


def test_a_closed_history_says_so(tmp_path):
    import uuid

    from curator_context import StoreError
    from curator_context.langchain import CuratorChatMessageHistory
    from langchain_core.messages import HumanMessage

    with CuratorChatMessageHistory(f"h-{uuid.uuid4()}", str(tmp_path / "h.db")) as history:
        history.add_messages([HumanMessage("hi")])
        assert [m.content for m in history.messages] == ["hi"]
    with pytest.raises(StoreError) as raised:
        history.messages
    assert raised.value.kind == "closed"
    history.close()
