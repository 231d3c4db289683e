"""Every model call of an Agents SDK run curated: ``CuratorSession.run_config()`` and
``curation_filter``, against a stand-in ``Model`` that calls a tool 30 times."""

import asyncio
import json
import os
import uuid

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool  # noqa: E402
from agents.items import ModelResponse  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.usage import Usage  # noqa: E402
from openai.types.responses import (  # noqa: E402
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from curator_context import BudgetTooSmall, ConfigError, StoreError, curate  # noqa: E402
from curator_context.agents import CuratorSession, curation_filter  # noqa: E402

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

BUDGET = 2_000
CALLS = 30


def fits(items, max_tokens=BUDGET):
    """Whether curator's token budget (the default pipeline's tokenizer) keeps ``items`` as
    they are: they are within ``max_tokens``."""
    budget = {"strategy": "token_budget", "max_tokens": max_tokens, "tokenizer": "o200k"}
    return curate(items, pipeline=budget, format="responses") == items


@function_tool
def grep(pattern: str) -> str:
    """Searches the repository."""
    return f"match for {pattern}: " + "src/lib.rs:10: fn main() { println!(\"hello\"); }\n" * 10


class Looper(Model):
    """Calls ``grep`` until the input holds ``CALLS`` outputs, then answers; records every
    input it is sent."""

    def __init__(self):
        self.inputs = []
        # Each run's ids its own, as a provider's are (the SDK drops an input call or output
        # whose call id an earlier one of its kind has).
        self.run = uuid.uuid4().hex[:8]

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, **kwargs):
        items = [input] if isinstance(input, str) else [dict(i) for i in input]
        self.inputs.append(items)
        calls = len(self.inputs) - 1
        if calls >= CALLS:
            text = ResponseOutputText(type="output_text", text="Found it.", annotations=[])
            out = [ResponseOutputMessage(id=f"msg_{self.run}_{calls}", type="message", role="assistant", status="completed", content=[text])]
        else:
            out = [
                ResponseFunctionToolCall(
                    id=f"fc_{self.run}_{calls}", type="function_call", call_id=f"call_{self.run}_{calls}", name="grep",
                    arguments=json.dumps({"pattern": f"needle {calls}"}), status="completed",
                )
            ]
        return ModelResponse(output=out, usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the stand-in model does not stream")


def reserved_pipeline():
    """The default pipeline for BUDGET with what `run`'s agent sends beside its input (its
    instructions and tool) reserved, as the filter reserves it."""
    from curator_context._native import pipeline_with_reserve
    from curator_context.agents import beside_tokens

    agent = Agent(name="searcher", instructions="You search code.", tools=[grep])
    return pipeline_with_reserve(BUDGET, extra=beside_tokens("You search code.", agent))


def run(session=None, run_config=None, prompt="Find where the needle is."):
    model = Looper()
    agent = Agent(name="searcher", instructions="You search code.", model=model, tools=[grep])
    result = asyncio.run(Runner.run(agent, prompt, session=session, run_config=run_config, max_turns=CALLS + 5))
    return result, model.inputs


def test_a_run_of_30_tool_calls_stays_within_the_budget_on_every_model_call(tmp_path):
    session = CuratorSession(f"s-{uuid.uuid4()}", tmp_path / "agent.db", max_tokens=BUDGET)
    result, inputs = run(session, session.run_config())
    assert result.final_output == "Found it."
    assert len(inputs) == CALLS + 1
    for n, items in enumerate(inputs):
        assert fits(items), f"model call {n} was sent more than {BUDGET} tokens"
        # The task is never left out, and no call is sent without its output.
        assert items[0] == {"content": "Find where the needle is.", "role": "user"}
        calls = {i["call_id"] for i in items if i.get("type") == "function_call"}
        outputs = {i["call_id"] for i in items if i.get("type") == "function_call_output"}
        assert calls == outputs, n
    # Without the filter the same run sends everything: the last call far over the budget.
    _, unfiltered = run(CuratorSession(f"s-{uuid.uuid4()}", tmp_path / "agent.db", max_tokens=BUDGET))
    assert not fits(unfiltered[-1])
    assert len(json.dumps(unfiltered[-1])) > 2 * len(json.dumps(inputs[-1]))
    # The record keeps every item of the run.
    recorded = asyncio.run(CuratorSession(session.session_id, tmp_path / "agent.db").get_items())
    assert len(recorded) == 1 + 2 * CALLS + 1


def test_the_views_of_a_run_keep_the_cache_and_are_the_curated_record(tmp_path):
    db = tmp_path / "agent.db"
    session = CuratorSession(f"s-{uuid.uuid4()}", db, max_tokens=BUDGET)
    _, inputs = run(session, session.run_config())
    # Between compactions a call is sent the previous call's input plus what was appended.
    rewrites = sum(1 for a, b in zip(inputs, inputs[1:]) if b[: len(a)] != a)
    assert 1 <= rewrites <= 8, rewrites
    # Each view is the pipeline's view of what was recorded before the call: a function of
    # the history alone, as a stateless `curate` of the same items gives it.
    recorded = asyncio.run(CuratorSession(session.session_id, db).get_items())
    pipeline = reserved_pipeline()
    for n in (0, 1, CALLS // 2, CALLS):
        before = recorded[: 1 + 2 * n]
        assert inputs[n] == curate(before, pipeline=pipeline, format="responses"), n


def test_a_second_run_on_the_session_is_curated_from_the_whole_record(tmp_path):
    db = tmp_path / "agent.db"
    session = CuratorSession(f"s-{uuid.uuid4()}", db, max_tokens=BUDGET)
    run(session, session.run_config())
    _, inputs = run(session, session.run_config(), prompt="And the second needle?")
    recorded = asyncio.run(CuratorSession(session.session_id, db).get_items())
    assert len(recorded) == 2 * (2 + 2 * CALLS)
    for n, items in enumerate(inputs):
        assert fits(items), n
        assert items == curate(recorded[: 2 + 2 * CALLS + 1 + 2 * n], pipeline=reserved_pipeline(), format="responses"), n


def test_input_the_session_did_not_record_is_curated_as_given(tmp_path):
    """A filter whose run uses another session (or none) curates the input it is sent."""
    session = CuratorSession(f"s-{uuid.uuid4()}", tmp_path / "agent.db", max_tokens=BUDGET)
    _, inputs = run(None, session.run_config())
    assert all(fits(items) for items in inputs)
    assert asyncio.run(session.get_items()) == []


def test_curation_filter_curates_a_run_on_the_sdks_own_session(tmp_path):
    sdk_session = SQLiteSession("s", str(tmp_path / "sdk.db"))
    _, inputs = run(sdk_session, RunConfig(call_model_input_filter=curation_filter(BUDGET)))
    assert len(inputs) == CALLS + 1
    assert all(fits(items) for items in inputs)
    with pytest.raises(ConfigError):
        curation_filter(BUDGET, pipeline={"strategy": "token_budget", "max_tokens": 10})
    with pytest.raises(ConfigError):
        curation_filter(pipeline={"strategy": "no_such_strategy"})


def test_a_budget_too_small_for_a_call_fails_the_run_naming_it(tmp_path):
    session = CuratorSession(f"s-{uuid.uuid4()}", tmp_path / "agent.db", max_tokens=5)
    with pytest.raises(BudgetTooSmall):
        run(session, session.run_config())


def test_run_config_takes_the_other_settings_and_refuses_a_second_filter(tmp_path):
    session = CuratorSession(f"s-{uuid.uuid4()}", tmp_path / "agent.db", max_tokens=BUDGET)
    config = session.run_config(workflow_name="search", tracing_disabled=True)
    assert config.workflow_name == "search" and config.tracing_disabled
    assert config.call_model_input_filter == session.model_input_filter
    with pytest.raises(ConfigError) as raised:
        session.run_config(call_model_input_filter=lambda data: data.model_data)
    assert raised.value.kind == "invalid_argument"


def test_a_session_without_a_pipeline_sends_every_item(tmp_path):
    session = CuratorSession(f"s-{uuid.uuid4()}", tmp_path / "agent.db")
    _, inputs = run(session, session.run_config())
    assert len(inputs[-1]) == 1 + 2 * CALLS


def test_a_closed_session_says_so(tmp_path):
    with CuratorSession(f"s-{uuid.uuid4()}", tmp_path / "agent.db") as session:
        asyncio.run(session.add_items([{"role": "user", "content": "hi"}]))
    with pytest.raises(StoreError) as raised:
        asyncio.run(session.get_items())
    assert raised.value.kind == "closed"
    session.close()

    async def scoped():
        async with CuratorSession(f"s-{uuid.uuid4()}", tmp_path / "agent.db") as inner:
            return inner, await inner.get_items()

    inner, items = asyncio.run(scoped())
    assert items == [] and "closed" in repr(inner)


def test_the_instructions_and_tools_are_reserved_from_the_budget(tmp_path):
    from curator_context._native import count_tokens

    instructions = "Rules: " + " ".join(f"rule {i} must be obeyed carefully." for i in range(120))
    beside = count_tokens(instructions)
    assert 600 < beside < BUDGET
    model = Looper()
    agent = Agent(name="searcher", instructions=instructions, model=model, tools=[grep])
    session = CuratorSession(f"s-{uuid.uuid4()}", tmp_path / "agent.db", max_tokens=BUDGET)
    asyncio.run(Runner.run(agent, "Find where the needle is.", session=session, run_config=session.run_config(), max_turns=CALLS + 5))
    # What each call sends beside its input (instructions, the tool) leaves the input the rest.
    assert all(fits(items, BUDGET - beside) for items in model.inputs)
    assert not all(fits(items, BUDGET - beside - 300) for items in model.inputs)
    # Instructions over the budget fail the call, naming the budget.
    agent = Agent(name="searcher", instructions=instructions * 4, model=Looper(), tools=[grep])
    with pytest.raises(BudgetTooSmall):
        asyncio.run(Runner.run(agent, "go", session=CuratorSession(f"s-{uuid.uuid4()}", tmp_path / "b.db", max_tokens=BUDGET),
                               run_config=CuratorSession(f"s-{uuid.uuid4()}", tmp_path / "c.db", max_tokens=BUDGET).run_config()))


def test_the_filter_says_which_items_it_leaves_out_because_no_provider_takes_them(tmp_path):
    from agents.run_config import CallModelData, ModelInputData

    from curator_context import UnsendableWarning

    session = CuratorSession(f"s-{uuid.uuid4()}", tmp_path / "agent.db", max_tokens=BUDGET)
    agent = Agent(name="searcher", instructions="You search code.", tools=[grep])

    async def call():
        handed = await session.get_items()
        new = [{"role": "user", "content": "go"}, {"type": "function_call_output", "call_id": "nobody", "output": "?"}]
        await session.add_items(new)
        data = CallModelData(model_data=ModelInputData(input=handed + new, instructions="You search code."), agent=agent, context=None)
        return await session.model_input_filter(data)

    with pytest.warns(UnsendableWarning, match="at 1"):
        sent = asyncio.run(call())
    assert sent.input == [{"role": "user", "content": "go"}]
