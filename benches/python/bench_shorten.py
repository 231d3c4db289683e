"""One long task shortened by ``curate`` to a 2,000-token budget, counted with o200k.

    python benches/python/bench_shorten.py [--rounds 5] [--json PATH]

Each round's text differs in its last characters, so nothing is remembered from the round
before: the median is what the first call on a new text costs. A line of ``=`` is one piece
for the encoder, its worst case; prose is its common case. ``--json`` writes the rows for
``cargo xtask bench`` with their targets (3 MB under 0.5 s, 50 MB under 10 s).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import curator_context

SECOND = 1e9
TARGETS = {3_000_000: 0.5 * SECOND, 50_000_000: 10 * SECOND}


def prose(length: int) -> str:
    words = "error src/parser.rs the value 42 0x1f fn { } = line ok".split()
    out, seed = [], 0x2545F4914F6CDD1D
    size = 0
    while size < length:
        seed ^= (seed << 13) & 0xFFFFFFFFFFFFFFFF
        seed ^= seed >> 7
        seed ^= (seed << 17) & 0xFFFFFFFFFFFFFFFF
        word = words[seed % len(words)] + ("\n" if seed % 9 == 0 else " ")
        out.append(word)
        size += len(word)
    return "".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    print(f"{'scenario':<28} {'median':>10}")
    for name, make in (("run", lambda n: "=" * n), ("words", prose)):
        for size in TARGETS:
            text = make(size)
            times = []
            for round_ in range(args.rounds):
                messages = [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": f"{text}{round_}"},
                ]
                start = time.perf_counter_ns()
                curator_context.curate(messages, max_tokens=2_000)
                times.append(time.perf_counter_ns() - start)
            median = statistics.median(times)
            scenario = f"python/shorten/{name}/{size // 1_000_000}mb"
            print(f"{scenario:<28} {median / 1e6:>7.1f} ms", flush=True)
            rows.append(
                {
                    "scenario": scenario,
                    "median_ns": median,
                    "target_ns": TARGETS[size],
                    "why": "one long text shortened in linear time",
                }
            )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
