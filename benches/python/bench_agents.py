"""curator inside agent frameworks: an Agents SDK run and a LangChain ``create_agent`` run of
100 model calls, each with curator curating every call (the session's ``run_config()``, the
``CuratorMiddleware``) and without curator, against stand-in models that call a tool until
the 100th call (no network).

    python benches/python/bench_agents.py [--calls 100] [--runs 5] [--budget 8000] [--json PATH]

Run it with a Python that has ``curator_context`` (release build), ``openai-agents`` and
``langchain`` installed. For each framework it prints:

- ``per call``: the wall time of a run divided by its model calls, median of ``--runs`` runs,
  with curator and without, and the difference (what curator adds to each call: the curation,
  its conversion from and to the framework's objects, and for the SDK the session's SQLite
  writes against the SDK's own ``SQLiteSession``);
- ``curation``: the time spent inside curator's filter or middleware per call, median;
- ``billed input``: the input tokens of the run's requests, and their price with the prompt
  cache counted as the providers bill it (``curator_context.bill``: OpenAI's rule priced for
  ``gpt-4o``, Anthropic's rule with curator's breakpoints priced for ``claude-sonnet-4-5``),
  with curator and without.

Each tool result is about 2,000 characters, so the history passes the budget early: the run
without curator sends the model ever more, the run with curator compacts in steps.
``--json PATH`` writes the timings as rows for ``cargo xtask bench`` and the bills beside
them (``PATH`` with ``_billed`` before ``.json``).
"""

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

from curator_context import bill  # noqa: E402

OUTPUT = "src/main.rs:{i}: let value = compute({i}); // a line of the file the tool read\n" * 28


def _agents_run(calls, budget, curated, db):
    from agents import Agent, Runner, SQLiteSession, function_tool
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    from curator_context.agents import CuratorSession

    @function_tool
    def read(path: str) -> str:
        """Reads a file."""
        return OUTPUT.format(i=len(path))

    sent = []

    class StandIn(Model):
        async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, **kwargs):
            items = [input] if isinstance(input, str) else list(input)
            sent.append(items)
            n = len(sent)
            if n >= calls:
                text = ResponseOutputText(type="output_text", text="Done.", annotations=[])
                out = [ResponseOutputMessage(id=f"msg_{n}", type="message", role="assistant", status="completed", content=[text])]
            else:
                out = [ResponseFunctionToolCall(id=f"fc_{n}", type="function_call", call_id=f"call_{n}", name="read", arguments=json.dumps({"path": "x" * n}), status="completed")]
            return ModelResponse(output=out, usage=Usage(), response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError

    agent = Agent(name="coder", instructions="You read code to answer questions.", model=StandIn(), tools=[read])
    spent = []
    if curated:
        session = CuratorSession(f"bench-{uuid.uuid4()}", db, max_tokens=budget)
        inner = session.model_input_filter

        async def timed(data):
            start = time.perf_counter()
            out = await inner(data)
            spent.append(time.perf_counter() - start)
            return out

        config = session.run_config()
        config.call_model_input_filter = timed
    else:
        session, config = SQLiteSession(f"bench-{uuid.uuid4()}", db), None
    start = time.perf_counter()
    asyncio.run(Runner.run(agent, "Where is the value computed?", session=session, run_config=config, max_turns=calls + 5))
    elapsed = time.perf_counter() - start
    return elapsed, spent, [{"messages": items} for items in sent]


def _langchain_run(calls, budget, curated):
    from typing import Any, List

    from langchain.agents import create_agent
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, convert_to_openai_messages
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool

    from curator_context.middleware import CuratorMiddleware

    @tool
    def read(path: str) -> str:
        """Reads a file."""
        return OUTPUT.format(i=len(path))

    sent: List[List[BaseMessage]] = []

    class StandIn(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "stand-in"

        def bind_tools(self, tools: Any, **kwargs: Any) -> "StandIn":
            return self

        def _generate(self, messages, stop=None, run_manager=None, **kwargs):
            sent.append(list(messages))
            n = len(sent)
            if n >= calls:
                reply = AIMessage("Done.")
            else:
                reply = AIMessage("", tool_calls=[{"name": "read", "args": {"path": "x" * n}, "id": f"call_{n}"}])
            return ChatResult(generations=[ChatGeneration(message=reply)])

    spent = []
    middleware = []
    if curated:
        curator = CuratorMiddleware(max_tokens=budget)
        inner = curator.curated

        def timed(request):
            start = time.perf_counter()
            out = inner(request)
            spent.append(time.perf_counter() - start)
            return out

        curator.curated = timed
        middleware = [curator]
    agent = create_agent(StandIn(), [read], system_prompt="You read code to answer questions.", middleware=middleware)
    start = time.perf_counter()
    agent.invoke({"messages": [HumanMessage("Where is the value computed?")]}, {"recursion_limit": 3 * calls + 10})
    elapsed = time.perf_counter() - start
    requests = [{"messages": [convert_to_openai_messages(m) for m in call]} for call in sent]
    return elapsed, spent, requests


def _billed(requests):
    fmt = "responses" if any("type" in item for r in requests for item in r["messages"]) else "openai"
    openai = bill(requests, rule="openai", format=fmt, model="gpt-4o")
    anthropic = bill(requests, rule="anthropic", format=fmt, model="claude-sonnet-4-5")
    return {
        "input_tokens": sum(r["input_tokens"] for r in openai),
        "openai_usd": sum(r["price"] for r in openai),
        "anthropic_usd": sum(r["price"] for r in anthropic),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--budget", type=int, default=8_000)
    parser.add_argument("--json")
    args = parser.parse_args()
    rows, billed = [], []
    with tempfile.TemporaryDirectory() as folder:
        frameworks = [
            ("agents", lambda curated: _agents_run(args.calls, args.budget, curated, os.path.join(folder, f"{uuid.uuid4()}.db"))),
            ("langchain", lambda curated: _langchain_run(args.calls, args.budget, curated)),
        ]
        for name, run in frameworks:
            try:
                run(False)
            except ImportError as missing:
                print(f"{name}: skipped ({missing})", file=sys.stderr)
                continue
            results = {}
            for curated in (False, True):
                times, spent, requests = [], [], None
                for _ in range(args.runs):
                    elapsed, inside, requests = run(curated)
                    times.append(elapsed / args.calls)
                    spent.extend(inside)
                results[curated] = (statistics.median(times), statistics.median(spent) if spent else 0.0, _billed(requests))
            (plain, _, plain_bill), (cur, inside, cur_bill) = results[False], results[True]
            print(f"{name}: {args.calls} model calls, budget {args.budget}")
            print(f"  per call: {plain * 1e3:.2f} ms without curator, {cur * 1e3:.2f} ms with (+{(cur - plain) * 1e3:.2f} ms); curation {inside * 1e3:.3f} ms")
            print(f"  billed input: {plain_bill['input_tokens']:,} tokens without, {cur_bill['input_tokens']:,} with")
            for rule in ("openai_usd", "anthropic_usd"):
                print(f"  {rule[:-4]} with the cache: ${plain_bill[rule]:.4f} without, ${cur_bill[rule]:.4f} with ({cur_bill[rule] / plain_bill[rule]:.2f}x)")
            rows += [
                {"scenario": f"python/{name}_per_call/plain", "median_ns": plain * 1e9},
                {"scenario": f"python/{name}_per_call/curated", "median_ns": cur * 1e9},
                {"scenario": f"python/{name}_curation_per_call", "median_ns": inside * 1e9},
            ]
            billed += [
                {"scenario": f"python/{name}_billed/plain", **plain_bill},
                {"scenario": f"python/{name}_billed/curated", **cur_bill},
            ]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
        # The bills beside it (not timings, so not rows of `cargo xtask bench`).
        with open(args.json.replace(".json", "_billed.json"), "w") as f:
            json.dump(billed, f, indent=1)


if __name__ == "__main__":
    main()
