"""CuratorMiddleware in a LangChain v1 `create_agent` run: every model call curated, the
agent's state keeping every message."""

import asyncio
from typing import Any, List, Optional

import pytest

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models.chat_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage  # noqa: E402
from langchain_core.messages.utils import count_tokens_approximately  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

from curator_context import BudgetTooSmall, ConfigError, curate, default_pipeline  # noqa: E402
from curator_context.middleware import CuratorMiddleware  # noqa: E402

BUDGET = 2_000
CALLS = 30


@tool
def grep(pattern: str) -> str:
    """Searches the repository."""
    return f"match for {pattern}: " + "src/lib.rs:10: fn main() { println!(\"hello\"); }\n" * 10


class Looper(BaseChatModel):
    """Calls `grep` until it has seen `CALLS` results, then answers; records what each call
    was sent (the system message first)."""

    sent: List[List[BaseMessage]] = []

    @property
    def _llm_type(self) -> str:
        return "looper"

    def bind_tools(self, tools: Any, **kwargs: Any) -> "Looper":
        return self

    def _generate(self, messages: List[BaseMessage], stop: Optional[List[str]] = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.sent.append(list(messages))
        n = len(self.sent) - 1
        if n >= CALLS:
            reply = AIMessage("Found it.")
        else:
            reply = AIMessage("", tool_calls=[{"name": "grep", "args": {"pattern": f"needle {n}"}, "id": f"call_{n}"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])


def run(middleware, asynchronously=False):
    model = Looper(sent=[])
    agent = create_agent(model, [grep], system_prompt="You search code.", middleware=middleware)
    request = {"messages": [HumanMessage("Find where the needle is.")]}
    config = {"recursion_limit": 4 * CALLS}
    if asynchronously:
        state = asyncio.run(agent.ainvoke(request, config))
    else:
        state = agent.invoke(request, config)
    return state, model.sent


def within(messages, max_tokens):
    """Whether curator's token budget keeps `messages` as they are (they fit)."""
    budget = {"strategy": "token_budget", "max_tokens": max_tokens, "tokenizer": "o200k"}
    return len(curate(list(messages), pipeline=budget)) == len(messages)


@pytest.mark.parametrize("asynchronously", [False, True])
def test_every_model_call_of_a_run_is_curated_and_the_state_keeps_everything(asynchronously):
    state, sent = run([CuratorMiddleware(max_tokens=BUDGET)], asynchronously)
    assert state["messages"][-1].content == "Found it."
    # The state keeps the task, every call, every result and the answer.
    assert len(state["messages"]) == 1 + 2 * CALLS + 1
    assert len(sent) == CALLS + 1
    tools_reserve = 60  # the grep tool's schema, which the middleware reserves
    for n, messages in enumerate(sent):
        assert isinstance(messages[0], SystemMessage) and messages[0].content == "You search code."
        assert messages[1].content == "Find where the needle is."
        assert within(messages, BUDGET - tools_reserve + 10), n
        called = {c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
        assert called == {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}, n
    # Without the middleware the last call is sent everything, far over the budget.
    _, unfiltered = run([])
    assert not within(unfiltered[-1], BUDGET)
    assert count_tokens_approximately(unfiltered[-1]) > 2 * count_tokens_approximately(sent[-1])


def test_the_views_keep_the_cache_between_compactions():
    _, sent = run([CuratorMiddleware(max_tokens=BUDGET)])
    as_text = [[(type(m).__name__, m.content, getattr(m, "tool_call_id", None)) for m in call] for call in sent]
    rewrites = sum(1 for a, b in zip(as_text, as_text[1:]) if b[: len(a)] != a)
    assert 1 <= rewrites <= 8, rewrites


def test_a_secret_in_the_system_prompt_is_redacted_for_the_model_only():
    model = Looper(sent=[])
    secret = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3i"
    agent = create_agent(model, [grep], system_prompt=f"Key: {secret}", middleware=[CuratorMiddleware(max_tokens=BUDGET)])
    agent.invoke({"messages": [HumanMessage("go")]}, {"recursion_limit": 4 * CALLS})
    assert all(secret not in call[0].content and isinstance(call[0], SystemMessage) for call in model.sent)


def test_a_pipeline_of_ones_own_and_bad_ones():
    pipeline = default_pipeline(BUDGET)
    state, sent = run([CuratorMiddleware(pipeline=pipeline, reserve_tools=False)])
    assert all(within(call, BUDGET) for call in sent)
    with pytest.raises(ConfigError):
        CuratorMiddleware(pipeline={"strategy": "no_such_strategy"})
    with pytest.raises(ConfigError):
        CuratorMiddleware()
    with pytest.raises(ConfigError):
        CuratorMiddleware(max_tokens=10, pipeline=pipeline)
    with pytest.raises(BudgetTooSmall):
        run([CuratorMiddleware(max_tokens=5)])


def test_a_tool_changed_in_place_is_counted_again():
    from langchain.agents.middleware import ModelRequest
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    @tool
    def search(pattern: str) -> str:
        """Searches."""
        return pattern

    messages: List[BaseMessage] = [HumanMessage("Find the needle.")]
    for k in range(30):
        messages += [AIMessage("", tool_calls=[{"name": "search", "args": {"pattern": str(k)}, "id": f"c{k}"}]), ToolMessage("result " * 60, tool_call_id=f"c{k}")]

    def request() -> Any:
        return ModelRequest(model=FakeListChatModel(responses=["x"]), messages=messages, system_message=SystemMessage("sys"), tools=[search])

    held = CuratorMiddleware(max_tokens=3_000)
    first = held.curated(request())
    search.description = "Searches the repository carefully. " * 200
    again = held.curated(request())
    fresh = CuratorMiddleware(max_tokens=3_000).curated(request())
    assert len(again.messages) == len(fresh.messages) < len(first.messages)
    assert [m.content for m in again.messages] == [m.content for m in fresh.messages]
