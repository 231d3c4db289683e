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
