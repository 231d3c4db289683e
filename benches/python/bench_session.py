"""The Agents SDK session path: curator's session ``get_items()`` with curation (the
``token_budget`` pipeline and the default pipeline, at 4,000 tokens) against the SDK's own
``SQLiteSession.get_items()``, both on a SQLite file, at 1,000, 10,000 and 100,000 items of
synthetic agent data, in one process.

    python benches/python/bench_session.py [--sizes 1000,10000] [--quick] [--json PATH]

Run it with a Python that has ``curator_context`` (built in release: ``maturin develop -r``
or ``pip install ./crates/curator-py``) and ``openai-agents`` installed. Each call is timed
with ``time.perf_counter``; the table prints medians and the ratio. Columns:

- ``sdk get_items``: ``SQLiteSession.get_items()``, every item (the SDK has no curation).
- ``curator get_items``: the session's ``get_items()`` with the default pipeline
  (``max_tokens=4000``) and nothing new: a check of the store for what other processes
  wrote (SQLite's change stamp), and, nothing having changed, fresh copies of the items the
  last call handed out, made on the caller's thread (a call that must read or curate runs
  on a worker thread: ``after add``).
- ``after add``: the same right after the session recorded one more round (4 items), as in
  an agent loop; the add itself is not timed.
- ``first call``: the first ``get_items()`` of a session just opened on the file (loading the
  record and counting tokens once), one sample.
- ``token_budget``: the same with the pipeline ``{"strategy": "token_budget", "max_tokens":
  4000}`` (the newest items that fit, no relevance ranking, no redaction), its ratio to the
  SDK and the items it keeps.
- ``native``: the extension's ``get_items()`` called directly (no coroutine), and
  ``to dicts``: building the same kept items as dicts in Python (``copy.deepcopy`` of the
  view), which is about what writing them as Python objects costs.

``--json`` writes the rows for ``cargo xtask bench`` (``benches/python/run.sh``): scenarios
``python/session_sdk/N``, ``python/session_token_budget/N`` (the session's curated call held
to 1,000x the SDK's ``get_items`` at 10,000 items), ``python/session_default/N`` (held to
50 µs at 10,000 items: the default pipeline's views keep the prompt cache, and a call
costs what was recorded since, not the history) and ``python/session_after_add/N``, medians
in nanoseconds.
"""

import argparse
import asyncio
import copy
import json
import os
import statistics
import sys
import tempfile
import time
import uuid


def round_items(i):
    """One round of an agent loop: a user message, a call, its output, an answer."""
    call = f"call_{i}"
    return [
        {"role": "user", "content": f"Step {i}: check the disk usage of /srv/data/{i % 97} and report."},
        {
            "type": "function_call",
            "id": f"fc_{i}",
            "call_id": call,
            "name": "disk_usage",
            "arguments": f'{{"path": "/srv/data/{i % 97}", "depth": 2}}',
            "status": "completed",
        },
        {
            "type": "function_call_output",
            "call_id": call,
            "output": (f"/srv/data/{i % 97}/logs {1000 + i} blocks; /srv/data/{i % 97}/cache {i * 7 % 5000} blocks; " * 4)[:360],
        },
        {
            "type": "message",
            "id": f"msg_{i}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": f"Round {i}: /srv/data/{i % 97} uses {1000 + i} blocks in logs.", "annotations": []}],
        },
    ]


def items(n):
    out = []
    i = 0
    while len(out) < n:
        out.extend(round_items(i))
        i += 1
    return out[:n], i


def median_us(samples):
    return statistics.median(samples) * 1e6


async def timed(call, repeats):
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - start)
    return samples


def timed_sync(call, repeats):
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return samples


async def bench(n, folder, quick):
    from agents import SQLiteSession

    from curator_context.agents import CuratorSession

    data, rounds = items(n)
    sdk = SQLiteSession(f"sdk-{uuid.uuid4()}", os.path.join(folder, f"sdk-{n}.db"))
    for start in range(0, n, 5_000):
        await sdk.add_items(data[start : start + 5_000])
    db = os.path.join(folder, f"curator-{n}.db")
    session_id = f"curator-{uuid.uuid4()}"
    writer = CuratorSession(session_id, db)
    for start in range(0, n, 5_000):
        await writer.add_items(data[start : start + 5_000])

    session = CuratorSession(session_id, db, max_tokens=4_000)
    start = time.perf_counter()
    view = await session.get_items()
    first = time.perf_counter() - start
    assert len(view) < n or n < 50

    sdk_repeats = {1_000: 30, 10_000: 10, 100_000: 3}.get(n, 5)
    cur_repeats = 2_000
    if quick:
        sdk_repeats, cur_repeats = max(2, sdk_repeats // 3), 200
    sdk_samples = await timed(sdk.get_items, sdk_repeats)
    got = await sdk.get_items()
    assert len(got) == n
    cur_samples = await timed(session.get_items, cur_repeats)
    native_samples = timed_sync(session._native.get_items, cur_repeats)
    view = await session.get_items()
    dicts_samples = timed_sync(lambda: copy.deepcopy(view), cur_repeats)
    budget = CuratorSession(session_id, db, pipeline={"strategy": "token_budget", "max_tokens": 4_000})
    budget_kept = len(await budget.get_items())
    budget_samples = await timed(budget.get_items, cur_repeats)

    after = []
    for k in range(50 if not quick else 10):
        await session.add_items(round_items(rounds + k))
        start = time.perf_counter()
        await session.get_items()
        after.append(time.perf_counter() - start)
    if hasattr(sdk, "close"):
        sdk.close()
    return {
        "n": n,
        "sdk": median_us(sdk_samples),
        "curator": median_us(cur_samples),
        "after": median_us(after),
        "first": first * 1e6,
        "native": median_us(native_samples),
        "budget": median_us(budget_samples),
        "dicts": median_us(dicts_samples),
        "kept": len(view),
        "budget_kept": budget_kept,
    }


def fmt(us):
    if us >= 1_000:
        return f"{us / 1_000:,.1f} ms"
    return f"{us:,.1f} us"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--json", help="write the rows for cargo xtask bench here")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for n in sizes:
            rows.append(asyncio.run(bench(n, folder, args.quick)))
            print(f"measured {n:,} items", file=sys.stderr)
    header = ["items", "sdk get_items", "curator get_items", "ratio", "after add", "first call", "token_budget", "ratio", "kept (budget)", "native", "to dicts", "kept (default)"]
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---:" for _ in header) + "|")
    for r in rows:
        print(
            f"| {r['n']:,} | {fmt(r['sdk'])} | {fmt(r['curator'])} | {r['sdk'] / r['curator']:,.0f}x | "
            f"{fmt(r['after'])} | {fmt(r['first'])} | {fmt(r['budget'])} | {r['sdk'] / r['budget']:,.0f}x | {r['budget_kept']} | "
            f"{fmt(r['native'])} | {fmt(r['dicts'])} | {r['kept']} |"
        )
    if args.json:
        out = []
        for r in rows:
            n = r["n"]
            out.append({"scenario": f"python/session_sdk/{n}", "items": n, "median_ns": r["sdk"] * 1e3})
            budget = {"scenario": f"python/session_token_budget/{n}", "items": n, "median_ns": r["budget"] * 1e3, "sdk_ns": r["sdk"] * 1e3, "kept": r["budget_kept"]}
            if n == 10_000:
                budget["target_ns"] = r["sdk"] * 1e3 / 1_000
                budget["why"] = "1,000x the Agents SDK's SQLiteSession.get_items (the token_budget pipeline: see docs/python-sessions.md)"
            out.append(budget)
            default = {"scenario": f"python/session_default/{n}", "items": n, "median_ns": r["curator"] * 1e3, "sdk_ns": r["sdk"] * 1e3, "kept": r["kept"]}
            if n == 10_000:
                default["target_ns"] = 50_000.0
                default["why"] = "the session's get_items with the default pipeline, nothing new (issue 46)"
            out.append(default)
            out.append({"scenario": f"python/session_after_add/{n}", "items": n, "median_ns": r["after"] * 1e3})
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
