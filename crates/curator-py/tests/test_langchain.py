"""LangChain message objects (skipped when langchain_core is not installed)."""

import pytest

messages_module = pytest.importorskip("langchain_core.messages")

from curator_context import FormatError, curate  # noqa: E402

AIMessage = messages_module.AIMessage
HumanMessage = messages_module.HumanMessage
SystemMessage = messages_module.SystemMessage
ToolMessage = messages_module.ToolMessage


def _conversation(rounds, size=400):
    messages = [SystemMessage("You are a shell agent."), HumanMessage("Find the biggest log file.", id="task")]
    for i in range(rounds):
        messages.append(AIMessage("", tool_calls=[{"name": "du", "args": {"path": f"/var/log/{i}"}, "id": f"c{i}"}]))
        messages.append(ToolMessage(f"{i} blocks " * size, tool_call_id=f"c{i}"))
    messages.append(AIMessage("The biggest is /var/log/3."))
    return messages


def test_kept_messages_are_the_objects_given():
    messages = _conversation(3, size=5)
    out = curate(messages, max_tokens=1_000_000)
    assert len(out) == len(messages)
    assert all(a is b for a, b in zip(out, messages))


def test_a_budget_shortens_and_keeps_pairs_whole():
    messages = _conversation(40)
    out = curate(messages, max_tokens=2_000)
    assert len(out) < len(messages)
    assert out[0] is messages[0] and out[-1] is messages[-1]
    called, answered = set(), set()
    for message in out:
        if isinstance(message, AIMessage):
            called.update(call["id"] for call in message.tool_calls)
        if isinstance(message, ToolMessage):
            assert message.tool_call_id in called
            answered.add(message.tool_call_id)
    assert called and called == answered


def test_the_same_as_the_openai_dicts():
    from langchain_core.messages import convert_to_openai_messages

    messages = _conversation(40)
    out = curate(messages, max_tokens=2_000)
    expected = curate(convert_to_openai_messages(messages), max_tokens=2_000)
    assert convert_to_openai_messages(out) == expected


def test_a_list_mixing_objects_and_dicts_is_refused():
    with pytest.raises(FormatError) as caught:
        curate([SystemMessage("Be brief."), {"role": "user", "content": "hi"}], max_tokens=1_000)
    assert caught.value.kind == "wrong_type"
    assert "message 1" in str(caught.value)


@pytest.mark.parametrize("pipeline", [None, {"strategy": "token_budget", "max_tokens": 1_000}])
def test_a_list_of_dicts_holding_an_object_is_refused(pipeline):
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}, SystemMessage("x")]
    with pytest.raises(FormatError) as caught:
        if pipeline is None:
            curate(messages, max_tokens=1_000)
        else:
            curate(messages, pipeline=pipeline)
    assert caught.value.kind == "wrong_type"
    assert "[2]" in str(caught.value) or "message 2" in str(caught.value)


def _tokens(messages):
    from langchain_core.messages.utils import count_tokens_approximately

    return count_tokens_approximately(messages)


def test_trim_messages_is_a_one_line_swap_and_pair_safe():
    from langchain_core.messages import trim_messages as langchain_trim
    from langchain_core.messages.utils import count_tokens_approximately

    from curator_context import trim_messages

    messages = _conversation(40, size=40)
    ours = trim_messages(messages, max_tokens=3_000, token_counter="approximate", strategy="last", include_system=True, start_on="human")
    theirs = langchain_trim(
        messages,
        max_tokens=3_000,
        token_counter=count_tokens_approximately,
        strategy="last",
        include_system=True,
        start_on="human",
    )
    assert ours[0] is messages[0]
    assert len(ours) < len(messages)
    assert _tokens(ours) <= 3_000 * 1.1
    # Every tool result in ours has its call; the task is kept, where LangChain drops it.
    called = {call["id"] for m in ours if isinstance(m, AIMessage) for call in m.tool_calls}
    assert all(m.tool_call_id in called for m in ours if isinstance(m, ToolMessage))
    assert messages[1] in ours
    assert messages[1] not in theirs


def test_trim_messages_without_messages_is_a_runnable():
    from curator_context import trim_messages

    trimmer = trim_messages(max_tokens=3_000)
    messages = _conversation(40, size=40)
    assert trimmer.invoke(messages) == trim_messages(messages, max_tokens=3_000)


def test_the_unsendable_warning_points_at_the_callers_line():
    from curator_context import UnsendableWarning, trim_messages

    messages = [HumanMessage("hi"), ToolMessage("?", tool_call_id="nobody")]
    for call in (lambda: curate(messages, max_tokens=1_000), lambda: trim_messages(messages, max_tokens=1_000)):
        with pytest.warns(UnsendableWarning) as caught:
            call()
        assert [w.filename for w in caught] == [__file__]
