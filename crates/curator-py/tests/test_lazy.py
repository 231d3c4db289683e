"""A lone token budget reads only what it may keep, and gives what reading everything gives."""

import pytest

from curator_context import FormatError, curate

BUDGET = {"strategy": "token_budget", "max_tokens": 600, "tokenizer": "estimate"}


def _history(rounds):
    messages = [
        {"role": "system", "content": "You are a shell agent."},
        {"role": "user", "content": "Find the biggest log file."},
    ]
    for i in range(rounds):
        calls = [{"id": f"c{i}", "type": "function", "function": {"name": "du", "arguments": f'{{"dir": "/var/log/{i}"}}'}}]
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"{i} " * 60})
        if i == rounds // 2:
            messages.append({"role": "system", "content": "From now on, answer in French."})
    return messages


def test_the_same_view_as_reading_everything():
    messages = _history(300)
    lazy = curate(messages, pipeline=BUDGET)
    # A request dict is read whole.
    whole = curate({"messages": messages}, pipeline=BUDGET)["messages"]
    assert lazy == whole
    # The system message in the middle of the conversation is kept, as every system message.
    assert any(m["content"] == "From now on, answer in French." for m in lazy)
    assert len(lazy) < len(messages)


def test_kept_messages_are_the_dicts_given():
    messages = _history(50)
    out = curate(messages, pipeline=BUDGET)
    given = {id(m) for m in messages}
    assert all(id(m) in given for m in out)
    assert out[0] is messages[0] and out[1] is messages[1] and out[-1] is messages[-1]


def test_what_the_budget_leaves_out_is_read_only_for_its_role():
    messages = _history(300)
    messages[5] = {"role": "tool", "tool_call_id": "c1", "content": {"not": "text"}}
    # Far older than the budget reaches: not read beyond its role.
    assert curate(messages, pipeline=BUDGET)[-1] is messages[-1]
    # Read whole, it is refused, naming where.
    with pytest.raises(FormatError) as caught:
        curate({"messages": messages}, pipeline=BUDGET)
    assert "5" in str(caught.value)
    # Every role is read: an unknown one anywhere is refused.
    messages[5] = {"role": "robot", "content": "beep"}
    with pytest.raises(FormatError) as caught:
        curate(messages, pipeline=BUDGET, format="openai")
    assert caught.value.kind == "unknown_role"


def test_a_list_without_tool_results_is_read_whole_unless_told_openai():
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}] * 200
    assert curate(messages, pipeline=BUDGET) == curate(messages, pipeline=BUDGET, format="openai")
