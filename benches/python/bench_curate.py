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
  pipeline (redaction and the relevance budget: it reads and redacts every message, so it
  costs what the history holds, not what is kept).

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
from curator_context import curate, trim_messages  # noqa: E402
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
                continue  # seconds per call: the default pipeline reads the whole history
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
            rows.append(row)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
