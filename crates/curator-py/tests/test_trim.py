"""trim_messages as LangChain's: what it takes, what it returns, how it counts, and the
arguments it refuses."""

import random

import pytest

from curator_context import BudgetTooSmall, ConfigError, FormatError, trim_messages

lc = pytest.importorskip("langchain_core.messages")
from langchain_core.messages import trim_messages as langchain_trim  # noqa: E402
from langchain_core.messages.utils import count_tokens_approximately  # noqa: E402

AIMessage, HumanMessage, SystemMessage, ToolMessage = lc.AIMessage, lc.HumanMessage, lc.SystemMessage, lc.ToolMessage


def agent_history(rng, rounds):
    """A history as agents make them: a system prompt, a task, rounds of (parallel) tool
    calls with their results, some answers and follow-ups."""
    messages = [SystemMessage("You are a coding agent. " * rng.randint(1, 20)), HumanMessage("Fix the test. " * rng.randint(1, 30))]
    for r in range(rounds):
        kind = rng.random()
        if kind < 0.6:
            calls = [
                {"name": "run", "args": {"cmd": "pytest -k " + "x" * rng.randint(1, 80), "cwd": "/repo"}, "id": f"call_{r}_{c}"}
                for c in range(rng.randint(1, 3))
            ]
            messages.append(AIMessage("", tool_calls=calls))
            for call in calls:
                messages.append(ToolMessage("output line\n" * rng.randint(1, 60), tool_call_id=call["id"]))
        elif kind < 0.8:
            messages.append(AIMessage("Here is what I found. " * rng.randint(1, 20)))
        else:
            messages.append(AIMessage("Done."))
            messages.append(HumanMessage("Now also " + "check this " * rng.randint(1, 10)))
    return messages


def paired(view):
    called = {call["id"] for m in view if isinstance(m, AIMessage) for call in m.tool_calls}
    answered = {m.tool_call_id for m in view if isinstance(m, ToolMessage)}
    return called == answered


def test_by_langchains_own_count_every_view_is_within_the_budget():
    """250 histories with parallel calls: counted by LangChain's `count_tokens_approximately`
    (as "approximate" and as the function), the view never passes `max_tokens`, keeps every
    system message, the task and the newest message, and never parts a call from its result."""
    rng = random.Random(7)
    refused = 0
    for _ in range(250):
        messages = agent_history(rng, rng.randint(1, 40))
        max_tokens = rng.randint(200, 4_000)
        for token_counter in ("approximate", count_tokens_approximately):
            try:
                view = trim_messages(messages, max_tokens=max_tokens, token_counter=token_counter)
            except BudgetTooSmall:
                refused += 1
                head = count_tokens_approximately(messages[:2])
                assert head + count_tokens_approximately(messages[-1:]) > max_tokens or len(messages) > 3
                continue
            assert count_tokens_approximately(view) <= max_tokens
            assert view[0] is messages[0] and view[1] is messages[1]
            assert view[-1] is messages[-1] or isinstance(messages[-1], ToolMessage)
            assert paired(view)
            # No text was changed: every message is one of those given, in their order.
            positions = [next(i for i, m in enumerate(messages) if m is v) for v in view]
            assert positions == sorted(positions)
    assert refused < 100, refused


def test_the_one_line_swap_with_langgraphs_arguments():
    messages = agent_history(random.Random(1), 40)
    arguments = dict(
        max_tokens=3_000,
        token_counter=count_tokens_approximately,
        strategy="last",
        start_on="human",
        end_on=("human", "tool"),
        include_system=True,
        allow_partial=False,
    )
    ours = trim_messages(messages, **arguments)
    theirs = langchain_trim(messages, **arguments)
    assert count_tokens_approximately(ours) <= 3_000
    assert all(isinstance(m, lc.BaseMessage) for m in ours)
    assert isinstance(ours[-1], (HumanMessage, ToolMessage))
    assert ours[-1] is theirs[-1]
    assert paired(ours)
    # LangChain's keeps the newest that fit and drops the task; curator keeps the task.
    assert messages[1] in ours


def test_end_on_leaves_out_what_follows_the_last_message_of_its_types():
    messages = [SystemMessage("s"), HumanMessage("task"), AIMessage("a"), HumanMessage("more"), AIMessage("b")]
    assert trim_messages(messages, max_tokens=1_000, end_on="human") == messages[:4]
    assert trim_messages(messages, max_tokens=1_000, end_on=[HumanMessage]) == messages[:4]
    assert trim_messages(messages, max_tokens=1_000, end_on=("human", "tool")) == langchain_trim(
        messages, max_tokens=1_000, token_counter="approximate", end_on=("human", "tool"), include_system=True
    )


def test_what_langchain_takes_is_taken_and_messages_come_back():
    from langchain_core.prompts import ChatPromptTemplate

    prompt = ChatPromptTemplate.from_messages([("system", "Be brief."), ("human", "{question}")])
    trimmer = trim_messages(max_tokens=500)
    out = (prompt | trimmer).invoke({"question": "Where is my parcel?"})
    assert [type(m) for m in out] == [SystemMessage, HumanMessage]
    assert out[1].content == "Where is my parcel?"
    # A prompt value directly, tuples, strings and OpenAI dicts.
    assert trim_messages(prompt.invoke({"question": "hi"}), max_tokens=500)[1].content == "hi"
    out = trim_messages([("system", "Be brief."), ("human", "hi"), ("ai", "hello"), "and you?"], max_tokens=500)
    assert [type(m) for m in out] == [SystemMessage, HumanMessage, AIMessage, HumanMessage]
    out = trim_messages([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}], max_tokens=500)
    assert [type(m) for m in out] == [HumanMessage, AIMessage]
    with pytest.raises(FormatError) as raised:
        trim_messages("hi", max_tokens=500)
    assert raised.value.kind == "wrong_type"


def test_counters_of_one_message_and_chat_models_are_taken():
    messages = [SystemMessage("s"), HumanMessage("task"), AIMessage("x" * 400), HumanMessage("y" * 400), AIMessage("last")]

    def per_message(message: lc.BaseMessage) -> int:
        return len(message.content)

    def per_list(listed):
        return sum(len(m.content) for m in listed)

    class Model:
        def get_num_tokens_from_messages(self, listed):
            return per_list(listed)

    expected = [messages[0], messages[1], messages[4]]
    for token_counter in (per_message, per_list, Model()):
        # 1 + 4 + 4 for the head and the newest; 400 for each of the others.
        assert trim_messages(messages, max_tokens=408, token_counter=token_counter) == expected
        assert len(trim_messages(messages, max_tokens=409, token_counter=token_counter)) == 4
        assert trim_messages(messages, max_tokens=809, token_counter=token_counter) == messages
    with pytest.raises(ConfigError) as raised:
        trim_messages(messages, max_tokens=500, token_counter=lambda listed: -1)
    assert raised.value.kind == "invalid_argument" and "message 0" in str(raised.value)


def test_no_text_is_cut_unless_allow_partial():
    task = HumanMessage("TASK " + "detail " * 2_000)
    messages = [SystemMessage("s"), task, AIMessage("ok")]
    with pytest.raises(BudgetTooSmall):
        trim_messages(messages, max_tokens=1_000)
    cut = trim_messages(messages, max_tokens=1_000, allow_partial=True)
    assert cut[1] is not task and cut[1].content.startswith("TASK") and len(cut[1].content) < len(task.content)


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"strategy": "first"}, "strategy='first'"),
        ({"token_counter": "gpt2"}, "'gpt2'"),
        ({"start_on": "ai"}, "start_on='ai'"),
        ({"text_splitter": str.split}, "text_splitter"),
        ({"allow_partial": True, "token_counter": len}, "allow_partial=True"),
    ],
)
def test_arguments_curator_does_not_take_are_config_errors(arguments, says):
    with pytest.raises(ConfigError) as caught:
        trim_messages([HumanMessage("hi")], max_tokens=2_000, **arguments)
    assert caught.value.kind == "unsupported_argument"
    assert says in str(caught.value)


@pytest.mark.parametrize("max_tokens", [-1, True, False, 2**70, 1.5, "10", None])
def test_a_max_tokens_that_is_no_budget_is_named(max_tokens):
    # As curate() says it: a ConfigError naming `max_tokens`, not the pipeline it becomes.
    with pytest.raises(ConfigError) as caught:
        trim_messages([{"role": "user", "content": "hi"}], max_tokens=max_tokens)
    assert caught.value.kind == "invalid_argument"
    assert str(caught.value) == f"`max_tokens` should be a non-negative integer, found {max_tokens!r}"


def test_any_integer_type_is_a_budget():
    class Tokens:
        def __index__(self):
            return 1_000

    messages = [HumanMessage("hi")]
    assert trim_messages(messages, max_tokens=Tokens()) == messages


def test_a_message_curation_changes_keeps_its_id_and_fields():
    # A last AI message whose calls have no results yet: sent without the calls (no provider
    # takes a call without its result), the message itself otherwise as given.
    history = [HumanMessage("task", id="h0"), AIMessage("let me check", id="a1", name="bot",
               tool_calls=[{"name": "du", "args": {}, "id": "c1"}], response_metadata={"model": "m"})]
    last = trim_messages(history, max_tokens=1_000)[-1]
    assert (last.id, last.name, last.content, last.tool_calls) == ("a1", "bot", "let me check", [])
    assert last.response_metadata == {"model": "m"} and history[1].tool_calls  # the input is untouched
    # A shortened tool result keeps its id, artifact and status.
    call = AIMessage("", id="a0", tool_calls=[{"name": "du", "args": {}, "id": "c0"}])
    result = ToolMessage("line\n" * 3_000, tool_call_id="c0", id="t0", artifact={"rows": 3}, status="error")
    cut = trim_messages([HumanMessage("task", id="h0"), call, result], max_tokens=400, allow_partial=True)[-1]
    assert len(cut.content) < len(result.content)
    assert (cut.id, cut.artifact, cut.status, cut.tool_call_id) == ("t0", {"rows": 3}, "error", "c0")


def test_counting_only_what_the_budget_reaches_gives_the_view_counting_everything_gives():
    from curator_context import _native
    from curator_context._langchain import view_of
    from langchain_core.messages import convert_to_openai_messages

    rng = random.Random(11)
    for _ in range(150):
        messages = agent_history(rng, rng.randint(1, 30))
        max_tokens = rng.randint(100, 3_000)
        counts = [count_tokens_approximately([m]) for m in messages]
        config = {"strategy": "token_budget", "max_tokens": max_tokens, "tokenizer": "estimate", "shorten": False}
        try:
            kept = _native.curate_kept(messages, None, pipeline=config, convert=convert_to_openai_messages,
                                       base=lc.BaseMessage, counts=counts)
            expected = view_of(messages, kept)
        except BudgetTooSmall:
            with pytest.raises(BudgetTooSmall):
                trim_messages(messages, max_tokens=max_tokens)
            continue
        assert trim_messages(messages, max_tokens=max_tokens) == expected
