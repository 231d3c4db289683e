"""curator's stateless calls against LangChain's ``trim_messages``, in one process.

    python benches/python/bench_curate.py [--sizes 1000,10000,100000] [--json PATH]

Times, on the same synthetic agent history (``synthetic.py``) at each size, with a budget of
4,000 tokens counted approximately (LangChain's ``count_tokens_approximately``, curator's
``estimate``):

- ``langchain``: ``langchain_core.messages.trim_messages`` on LangChain messages
  (``strategy="last"``, ``include_system=True``, ``start_on="human"``), the call people use;
- ``trim_langchain``: ``curator_context.trim_messages`` on the same LangChain messages;
- ``trim_dicts``: ``curator_context.trim_messages`` on the OpenAI dicts;
- ``curate_budget``: ``curator_context.curate(dicts, pipeline=...)`` with a lone token
  budget, the job ``trim_messages`` does;
- ``curate_default``: ``curator_context.curate(dicts, max_tokens=4000)``, the default
  pipeline (redaction and views that keep the prompt cache), called again on the same list:
  ``curate`` remembers the conversation, so a call checks that the list is unchanged and
  curates nothing new;
- ``curate_default_growing``: the same, each call on the list one message longer (an agent
  loop); the first call, which reads and curates the whole list, is timed apart
  (``curate_default_first``, one call).

Every curator call includes the conversion from and to Python objects. Medians of repeated
calls; the ratio is LangChain's median over curator's. ``--json`` writes the rows for
``cargo xtask bench``.
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synthetic  # noqa: E402
from curator_context import curate, forget_conversations, trim_messages  # noqa: E402
from langchain_core.messages import convert_to_messages  # noqa: E402
from langchain_core.messages import trim_messages as lc_trim  # noqa: E402
from langchain_core.messages.utils import count_tokens_approximately  # noqa: E402

BUDGET = 4_000
#: The calls that do trim_messages' job, held to 50x its speed at 10,000 messages.
TARGETED = ("trim_langchain", "trim_dicts", "curate_budget")


def median_ns(call, budget_s: float = 1.5, at_most: int = 2_000) -> float:
    """The median of repeated calls, in nanoseconds: at least 5 calls, about ``budget_s``."""
    call()  # warm up (pipelines built, caches filled)
    times = []
    started = time.perf_counter()
    while len(times) < 5 or (time.perf_counter() - started < budget_s and len(times) < at_most):
        t0 = time.perf_counter_ns()
        call()
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times)


def growing(size: int, seconds: float) -> list:
    """``curate`` with the default pipeline on a list one message longer at each call."""
    longer = synthetic.history(size + 4_000, seed=7)
    forget_conversations()
    t0 = time.perf_counter_ns()
    curate(longer[:size], max_tokens=BUDGET)
    first = time.perf_counter_ns() - t0
    times = []
    started = time.perf_counter()
    end = size
    while end < len(longer) and (len(times) < 5 or time.perf_counter() - started < seconds):
        end += 1
        given = longer[:end]
        t0 = time.perf_counter_ns()
        curate(given, max_tokens=BUDGET)
        times.append(time.perf_counter_ns() - t0)
    ns = statistics.median(times)
    print(f"{size:>9} {'curate_default_first':<16} {first / 1e6:>8.3f} ms", flush=True)
    print(f"{size:>9} {'curate_default_growing':<16} {ns / 1e6:>8.3f} ms  ({len(times)} calls)", flush=True)
    return [
        {"scenario": f"python/curate_default_first/{size}", "messages": size, "median_ns": first},
        {
            "scenario": f"python/curate_default_growing/{size}",
            "messages": size,
            "median_ns": ns,
            "target_ns": 5e6,
            "why": "an agent loop's stateless curate with the default pipeline under 5 ms at 10,000 messages",
        },
    ]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--seconds", type=float, default=1.5, help="time per scenario")
    parser.add_argument("--skip", default="", help="scenarios to leave out, comma-separated")
    args = parser.parse_args()
    rows = []
    print(f"{'messages':>9} {'scenario':<16} {'median':>11} {'LangChain / this':>17} {'kept':>5}")
    for size in (int(s) for s in args.sizes.split(",")):
        dicts = synthetic.history(size)
        objects = convert_to_messages(dicts)
        calls = {
            "langchain": lambda: lc_trim(
                objects,
                max_tokens=BUDGET,
                token_counter=count_tokens_approximately,
                strategy="last",
                include_system=True,
                start_on="human",
            ),
            "trim_langchain": lambda: trim_messages(
                objects, max_tokens=BUDGET, token_counter="approximate", include_system=True, start_on="human"
            ),
            "trim_dicts": lambda: trim_messages(
                dicts, max_tokens=BUDGET, token_counter="approximate", include_system=True, start_on="human"
            ),
            "curate_budget": lambda: curate(
                dicts, pipeline={"strategy": "token_budget", "max_tokens": BUDGET, "tokenizer": "estimate"}
            ),
            "curate_default": lambda: curate(dicts, max_tokens=BUDGET),
        }
        baseline = None
        for name, call in calls.items():
            if name in args.skip.split(","):
                continue
            if name == "curate_default" and size > 10_000:
                continue  # the first call reads the whole history: seconds
            kept = len(call())
            ns = median_ns(call, args.seconds)
            if baseline is None:
                baseline = ns
            ratio = baseline / ns
            print(f"{len(dicts):>9} {name:<16} {ns / 1e6:>8.3f} ms {ratio:>16.1f}x {kept:>5}", flush=True)
            row = {"scenario": f"python/{name}/{size}", "messages": len(dicts), "median_ns": ns, "langchain_ns": baseline, "kept": kept}
            if size == 10_000 and name in TARGETED:
                # The target: 50x LangChain's trim_messages at 10,000 messages.
                row["target_ns"] = baseline / 50
                row["why"] = "50x LangChain's trim_messages, conversion included"
            if size == 10_000 and name == "curate_default":
                row["target_ns"] = 5e6
                row["why"] = "the stateless curate with the default pipeline under 5 ms at 10,000 messages"
            rows.append(row)
        if size == 10_000 and "curate_default" not in args.skip.split(","):
            rows.extend(growing(size, args.seconds))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
