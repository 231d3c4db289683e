"""HeldHistory: a conversation held between calls gives the views a stateless curate gives,
reading only what is new."""

import copy
import warnings

import pytest

from curator_context import UnsendableWarning, curate
from curator_context._native import HeldHistory


def conversation(rounds):
    messages = [{"role": "system", "content": "You are a shell agent."}, {"role": "user", "content": "Find the biggest log file."}]
    for i in range(rounds):
        messages.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": "du", "arguments": "{}"}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"{i} blocks " * 150})
    return messages


def view(held, messages):
    return [messages[k] if isinstance(k, int) else k[1] if isinstance(k, tuple) else k for k in held.curate(messages)]


def test_each_call_gives_the_stateless_view_and_reads_only_what_is_new():
    messages = conversation(60)
    held = HeldHistory(2_000)
    for end in range(2, len(messages) + 1, 2):
        given = messages[:end]
        assert view(held, given) == curate(given, 2_000, format="openai"), end
        assert len(held) == end
    # Equal copies continue the history; a changed message starts it afresh.
    copies = copy.deepcopy(messages)
    assert view(held, copies) == curate(copies, 2_000, format="openai")
    assert len(held) == len(messages)
    copies[1] = {"role": "user", "content": "Another task."}
    assert view(held, copies[:10]) == curate(copies[:10], 2_000, format="openai")
    assert len(held) == 10


def test_messages_no_provider_takes_are_said_once():
    messages = conversation(2) + [{"role": "tool", "tool_call_id": "nobody", "content": "?"}]
    held = HeldHistory(2_000)
    with pytest.warns(UnsendableWarning, match="at 6"):
        held.curate(messages)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnsendableWarning)
        held.curate(messages + [{"role": "user", "content": "go on"}])


def test_a_dict_changed_in_place_between_calls_is_read_again():
    messages = conversation(20)
    held = HeldHistory(2_000)
    held.curate(messages)
    # The newest result's text replaced, a call's arguments edited deep inside, a key added.
    messages[-1]["content"] = "the key is AKIAIOSFODNN7EXAMPLE"
    assert view(held, messages) == curate(messages, 2_000, format="openai")
    assert "AKIAIOSFODNN7EXAMPLE" not in str(view(held, messages))
    messages[-2]["tool_calls"][0]["function"]["arguments"] = '{"path": "/AKIAIOSFODNN7EXAMPLF"}'
    assert view(held, messages) == curate(messages, 2_000, format="openai")
    assert "AKIAIOSFODNN7EXAMPLF" not in str(view(held, messages))
    messages[-2]["tool_calls"].append({"id": "late", "type": "function", "function": {"name": "ls", "arguments": "{}"}})
    messages.append({"role": "tool", "tool_call_id": "late", "content": "a.log"})
    assert view(held, messages) == curate(messages, 2_000, format="openai")
    assert len(held) == len(messages)


def langchain_conversation(rounds):
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    messages = [SystemMessage("You are a shell agent."), HumanMessage("Find the biggest log file.")]
    for i in range(rounds):
        messages.append(AIMessage("", tool_calls=[{"name": "du", "args": {"path": f"/d{i}"}, "id": f"c{i}"}]))
        messages.append(ToolMessage(f"{i} blocks " * 150, tool_call_id=f"c{i}"))
    return messages


def langchain_view(held, messages, convert=None):
    from langchain_core.messages import BaseMessage, convert_to_openai_messages

    kept = held.curate(messages, convert=convert or convert_to_openai_messages, base=BaseMessage)
    return [convert_to_openai_messages(messages[k]) if isinstance(k, int) else k[1] if isinstance(k, tuple) else k for k in kept]


def test_a_langchain_message_changed_in_place_between_calls_is_read_again():
    pytest.importorskip("langchain_core")
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, convert_to_openai_messages

    messages = langchain_conversation(20)
    held = HeldHistory(2_000)
    fresh = lambda given: curate(convert_to_openai_messages(given), 2_000, format="openai")  # noqa: E731
    assert langchain_view(held, messages) == fresh(messages)
    # An attribute set (to a secret, which is then redacted), a tool call's argument edited
    # inside its dict (to another secret), a call appended to a message's list of calls.
    messages[-1].content = "the key is AKIAIOSFODNN7EXAMPLE"
    assert langchain_view(held, messages) == fresh(messages)
    assert "AKIAIOSFODNN7EXAMPLE" not in str(langchain_view(held, messages))
    messages[-2].tool_calls[0]["args"]["path"] = "/var/log/AKIAIOSFODNN7EXAMPLF"
    assert langchain_view(held, messages) == fresh(messages)
    assert "AKIAIOSFODNN7EXAMPLF" not in str(langchain_view(held, messages))
    messages[-2].tool_calls.append({"name": "du", "args": {}, "id": "late"})
    messages.append(ToolMessage("a.log", tool_call_id="late"))
    assert langchain_view(held, messages) == fresh(messages)
    # A tool result with an artifact that is not JSON stands by its conversion.
    messages.append(AIMessage("", tool_calls=[{"name": "du", "args": {}, "id": "art"}]))
    messages.append(ToolMessage("first", tool_call_id="art", artifact=object()))
    assert langchain_view(held, messages) == fresh(messages)
    messages[-1].content = "second, AKIAIOSFODNN7EXAMPLG"
    assert langchain_view(held, messages) == fresh(messages)
    assert "AKIAIOSFODNN7EXAMPLG" not in str(langchain_view(held, messages))
    # Unchanged, the held history goes on: only the new message, and the one that stands by
    # its conversion, are converted.
    converted = []

    def counting(message):
        converted.append(message)
        return convert_to_openai_messages(message)

    messages.append(HumanMessage("go on"))
    assert langchain_view(held, messages, counting) == fresh(messages)
    assert len(held) == len(messages)
    assert messages[-1] in converted and len(converted) <= 3, len(converted)
