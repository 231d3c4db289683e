"""The pure-Python reference for curator's token budget in an agent loop.

Issue 34 holds curator's budget per loop iteration at 10,000 messages to at least 10x the
pure-Python pair-safe suffix on the same data. This script is that reference: the code an
agent builder writes without a library, done well.

- Each message's tokens are counted once, when it is appended, with curator's estimate
  (``ceil(chars / 4)`` per text, 3 per message, calls and ids counted), and kept in a list.
- Per iteration: append the message, then keep the system prompt and the task, and the newest
  messages while they fit the budget (walking back from the tail), moving the cut forward
  past tool results so that no result is sent without its call, and leaving out calls still
  waiting for their results at the end ("pair-safe").
- ``bisect``: the same cut found by bisection over prefix sums instead of walking back, which
  is faster in CPython; reported beside it.

The data is what the criterion scenario ``strategy/truncate_tokens_growing/10k`` runs on
(written by the strategies bench to ``curator-bench/pair_safe_data.json`` in the target
directory): the synthetic 10,000-message agent history and the messages appended to it.
Curator's per-iteration median is read from criterion's report of that scenario, so both sides
come from the same sitting.

    python pair_safe.py DATA_JSON CRITERION_DIR [--json OUT] [--iterations N]
"""

import argparse
import bisect
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import List


def text_tokens(text: str, chars_per_token: int) -> int:
    return math.ceil(len(text) / chars_per_token)


def count(message: dict, chars_per_token: int, per_message: int) -> int:
    """Curator's estimate of a message (text content; the synthetic data has no parts): the
    strategies bench writes curator's counts of the history, and the reference checks them."""
    n = per_message + text_tokens(message["role"], chars_per_token)
    content = message.get("content")
    if isinstance(content, str):
        n += text_tokens(content, chars_per_token)
    elif isinstance(content, list):
        n += sum(text_tokens(p.get("text", ""), chars_per_token) for p in content)
    if message.get("name"):
        n += text_tokens(message["name"], chars_per_token) + 1
    for call in message.get("tool_calls") or ():
        function = call["function"]
        n += 3 + text_tokens(function["name"], chars_per_token) + text_tokens(function["arguments"], chars_per_token)
    if "tool_call_id" in message:
        n += text_tokens(message["tool_call_id"], chars_per_token)
    return n


class PairSafe:
    """A growing history with its counts, and the newest pair-safe suffix within a budget."""

    def __init__(self, messages: List[dict], budget: int, chars_per_token: int, per_message: int):
        self.cpt, self.pm = chars_per_token, per_message
        self.messages: List[dict] = []
        self.counts: List[int] = []
        self.prefix: List[int] = [0]
        for m in messages:
            self.append(m)
        # The pinned head: the system prompt and the task.
        self.head = 2
        self.room = budget - sum(self.counts[: self.head])

    def append(self, message: dict) -> None:
        n = count(message, self.cpt, self.pm)
        self.messages.append(message)
        self.counts.append(n)
        self.prefix.append(self.prefix[-1] + n)

    def _pair_safe(self, cut: int) -> List[dict]:
        messages = self.messages
        while cut < len(messages) and messages[cut]["role"] == "tool":
            cut += 1
        kept = messages[: self.head] + messages[cut:]
        # Calls still waiting at the end are not sent (a provider refuses unanswered calls):
        # the assistant message that made them goes, or stays without them when it has text.
        last = kept[-1]
        if last["role"] == "assistant" and last.get("tool_calls"):
            kept.pop()
            if last.get("content"):
                kept.append({"role": "assistant", "content": last["content"]})
        return kept

    def view_walk(self) -> List[dict]:
        counts, room, total = self.counts, self.room, 0
        cut = len(counts)
        while cut > self.head and total + counts[cut - 1] <= room:
            cut -= 1
            total += counts[cut]
        return self._pair_safe(cut)

    def view_bisect(self) -> List[dict]:
        # The first cut whose suffix fits: prefix[-1] - prefix[cut] <= room.
        cut = bisect.bisect_left(self.prefix, self.prefix[-1] - self.room, lo=self.head)
        return self._pair_safe(min(cut, len(self.messages)))


def per_iteration_ns(data: dict, view: str, iterations: int) -> float:
    """The median time of one loop iteration (append, curate, read the view), in ns."""
    state = PairSafe(data["history"], data["budget"], data["chars_per_token"], data["per_message"])
    appended = data["appended"]
    curate = getattr(state, view)
    times = []
    checksum = 0
    for i in range(iterations):
        message = appended[i % len(appended)]
        t0 = time.perf_counter_ns()
        state.append(message)
        kept = curate()
        checksum += sum(len(m.get("content") or "") for m in kept)
        times.append(time.perf_counter_ns() - t0)
    if checksum < 0:
        print(checksum)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("data", type=Path)
    parser.add_argument("criterion", type=Path)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--iterations", type=int, default=20_000)
    args = parser.parse_args()
    if not args.data.exists():
        print(f"no {args.data}: run the strategies bench first; the pair-safe reference is left out")
        return 0
    data = json.loads(args.data.read_text())
    # The reference counts as curator's estimate does (the bench wrote curator's counts).
    counts = [count(m, data["chars_per_token"], data["per_message"]) for m in data["history"]]
    if counts != data["counts"]:
        first = next(i for i, (a, b) in enumerate(zip(counts, data["counts"])) if a != b)
        raise SystemExit(f"message {first}: counted {counts[first]}, curator counts {data['counts'][first]}")
    # Both views keep the same messages.
    check = PairSafe(data["history"], data["budget"], data["chars_per_token"], data["per_message"])
    assert check.view_walk() == check.view_bisect()
    walk = per_iteration_ns(data, "view_walk", args.iterations)
    bisected = per_iteration_ns(data, "view_bisect", args.iterations)
    kept = len(check.view_walk())
    print(f"pure-Python pair-safe suffix at 10,000 messages: walking back {walk / 1e3:.2f} µs, "
          f"bisecting {bisected / 1e3:.2f} µs per iteration ({kept} messages kept)")
    rows = [
        {"scenario": "python/pair_safe_walk/10000", "median_ns": walk, "kept": kept},
        {"scenario": "python/pair_safe_bisect/10000", "median_ns": bisected, "kept": kept},
    ]
    estimates = args.criterion / "strategy_truncate_tokens_growing_10k" / "new" / "estimates.json"
    if estimates.exists():
        curator = json.loads(estimates.read_text())["median"]["point_estimate"]
        print(f"curator's budget: {curator / 1e3:.2f} µs per iteration: {walk / curator:.1f}x walking back, "
              f"{bisected / curator:.1f}x bisecting")
        rows.append({
            "scenario": "budget_vs_pure_python/10000",
            "median_ns": curator,
            "target_ns": walk / 10,
            "why": "10x the pure-Python pair-safe suffix, same data and sitting",
            "python_walk_ns": walk,
            "python_bisect_ns": bisected,
        })
    else:
        print(f"no {estimates}: curator's side of the comparison is left out")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
