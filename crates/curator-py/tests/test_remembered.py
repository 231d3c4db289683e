"""curate remembers the conversations it curated: a list that continues one is read only
where it is new, and gives the view a fresh read gives, whatever was changed in place."""

import copy
import threading
import time

import pytest

from curator_context import FormatError, curate, forget_conversations


def conversation(rounds, size=150):
    messages = [{"role": "system", "content": "You are a shell agent."}, {"role": "user", "content": "Find the biggest log file."}]
    for i in range(rounds):
        messages.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": "du", "arguments": "{}"}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"{i} blocks " * size})
    return messages


def fresh(messages, budget):
    """The view of a fresh read: a request dict is never remembered."""
    return curate({"messages": copy.deepcopy(messages)}, budget)["messages"]


@pytest.fixture(autouse=True)
def nothing_remembered():
    forget_conversations()
    yield
    forget_conversations()


def test_a_growing_conversation_gets_the_fresh_views_and_its_own_objects():
    messages = conversation(60)
    for end in range(2, len(messages) + 1, 2):
        view = curate(messages[:end], 2_000)
        assert view == fresh(messages[:end], 2_000), end
    # What was kept unchanged is the caller's own dict.
    assert view[0] is messages[0] and view[-1] is messages[-1]


def test_a_message_changed_in_place_is_read_again():
    messages = conversation(30)
    curate(messages, 2_000)
    # A string replaced: the secret is redacted, as a fresh read redacts it.
    messages[-1]["content"] = "the key is AKIAIOSFODNN7EXAMPLE and the password is hunter2hunter2"
    view = curate(messages, 2_000)
    assert view == fresh(messages, 2_000)
    assert "AKIAIOSFODNN7EXAMPLE" not in str(view)
    # A call added to the newest call's list: now its result is missing, as a fresh read says.
    messages[-2]["tool_calls"].append({"id": "extra", "type": "function", "function": {"name": "du", "arguments": "{}"}})
    assert curate(messages, 2_000) == fresh(messages, 2_000)
    messages[-2]["tool_calls"].pop()
    # An argument's text changed deep inside a call.
    messages[2]["tool_calls"][0]["function"]["arguments"] = '{"path": "/srv"}'
    assert curate(messages, 2_000) == fresh(messages, 2_000)
    # A key added to an old message.
    messages[1]["name"] = "ann"
    assert curate(messages, 2_000) == fresh(messages, 2_000)


def test_a_number_that_changes_type_in_place_is_read_again():
    # Python says True == 1 == 1.0; JSON (and the view) tell them apart.
    messages = conversation(10)
    messages[1]["priority"] = True
    messages[1]["content"] += " The key is AKIAIOSFODNN7EXAMPLE."
    first = curate(messages, 2_000)
    assert first == fresh(messages, 2_000) and first[1]["priority"] is True
    for value in (1, 1.0, True):
        messages[1]["priority"] = value
        view = curate(messages, 2_000)
        assert view == fresh(messages, 2_000)
        assert type(view[1]["priority"]) is type(value), value


def test_equal_copies_and_other_conversations_curate_alike():
    a, b = conversation(40), conversation(25, size=90)
    for _ in range(2):
        for messages in (a, b, copy.deepcopy(a), a[:30], b + [{"role": "user", "content": "go on"}]):
            assert curate(messages, 2_000) == fresh(messages, 2_000)


def test_a_message_that_cannot_be_read_is_named_as_a_fresh_read_names_it():
    messages = conversation(10)
    curate(messages, 2_000)
    broken = messages + [{"role": "tool", "tool_call_id": "c9", "content": object()}]
    with pytest.raises(FormatError, match=r"\[22\]"):
        curate(broken, 2_000)
    # The conversation is still remembered, and goes on.
    assert curate(messages + [{"role": "user", "content": "go on"}], 2_000) == fresh(messages + [{"role": "user", "content": "go on"}], 2_000)


class _Slow(str):
    """A string whose comparison runs Python code that lets other threads in."""

    def __eq__(self, other):
        time.sleep(0.001)
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def test_threads_curate_alongside_while_comparisons_run_python_code():
    lists = []
    for i in range(4):
        messages = conversation(20)
        messages[1] = {"role": "user", "content": _Slow(f"Task {i}: find the biggest log file.")}
        lists.append(messages)
    failures = []

    def work(messages):
        try:
            for round in range(6):
                # An equal new string in place of the task: compared with `==`, which sleeps.
                messages[1]["content"] = _Slow(str(messages[1]["content"]))
                messages.append({"role": "user", "content": f"go on {round}"})
                if curate(messages, 2_000) != fresh(messages, 2_000):
                    failures.append(round)
        except Exception as error:  # noqa: BLE001 - reported below
            failures.append(error)

    threads = [threading.Thread(target=work, args=(messages,)) for messages in lists]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a thread hangs"
    assert failures == []
