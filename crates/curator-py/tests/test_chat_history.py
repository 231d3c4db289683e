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
