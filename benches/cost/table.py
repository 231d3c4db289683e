#!/usr/bin/env python3
"""Billed cost with the prompt cache, and evidence kept, on ../shared/corpus.

Runs `curator replay --json` on every corpus file at each budget, for the default pipeline
(`--budget N`: views that keep the provider's cache) and for the per-call relevance budget
(`--redact --max-tokens N --relevance`), and prints the table `docs/cost.md` keeps: for each
file and for all files, the input billed under OpenAI's rule (cached input at 0.1x) and
Anthropic's (breakpoints as curator places them: a read at 0.1x, a write at 1.25x), as a
multiple of sending the whole history every call with the cache, then evidence kept and
evidence kept verbatim. Every call of every conversation is curated from its own prefix, in
order, and priced against the calls before it.

It ends with the acceptance checks of the default pipeline: never dearer than sending
everything (any file, any budget); over all files at 8,000 tokens at most 0.70x (OpenAI)
and 0.75x (Anthropic), at 32,000 at most 0.98x under both; verbatim evidence at 8,000 at
least 0.985 on average and 0.85 in the worst tenth of calls.

Usage: table.py [--curator PATH] [--budgets 4000,8000,16000,32000] [--corpus DIR]
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

PIPELINES = [
    ("default", lambda n: ["--budget", str(n)]),
    ("relevance per call", lambda n: ["--redact", "--max-tokens", str(n), "--relevance"]),
]


def replay(curator, path, args):
    out = subprocess.run(
        [curator, "replay", path, "--json", *args], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out)


def shares(doc, key):
    out = []
    for conversation in doc["conversations"]:
        for call in conversation["calls"]:
            score = call[key] if key == "verbatim" else call
            if score["evidence"] == "kept":
                out.append(score["kept"] / max(1, score["needed"]))
    return out


def summary(values):
    if not values:
        return None, None
    values = sorted(values)
    decile = values[: max(1, (len(values) + 9) // 10)]
    return sum(values) / len(values), sum(decile) / len(decile)


def price(bill, write=1.25):
    uncached = bill["input_tokens"] - bill["cache_read_tokens"] - bill["cache_write_tokens"]
    return uncached + 0.1 * bill["cache_read_tokens"] + write * bill["cache_write_tokens"]


def costs(docs):
    sums = {}
    for doc in docs:
        for conversation in doc["conversations"]:
            for call in conversation["calls"]:
                for side in ("billed", "everything"):
                    for rule in ("openai", "anthropic"):
                        sums[(side, rule)] = sums.get((side, rule), 0.0) + price(call[side][rule])
    ratio = lambda rule: (
        sums.get(("billed", rule), 0.0) / sums[("everything", rule)]
        if sums.get(("everything", rule))
        else 1.0
    )
    return ratio("openai"), ratio("anthropic")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--curator", default=os.path.join(ROOT, "target/release/curator"))
    p.add_argument("--budgets", default="4000,8000,16000,32000")
    p.add_argument("--corpus", default=os.path.join(ROOT, "..", "shared", "corpus"))
    a = p.parse_args()
    files = sorted(f for f in os.listdir(a.corpus) if f.endswith(".jsonl"))
    pc = lambda v: "n/a" if v is None else f"{v * 100:.1f}%"
    failures = []
    print(
        "| budget | file | pipeline | OpenAI rule | Anthropic rule | tokens sent | evidence | "
        "worst decile | verbatim | verbatim worst decile |"
    )
    print("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for budget in [int(b) for b in a.budgets.split(",")]:
        for name, args in PIPELINES:
            docs = {f: replay(a.curator, os.path.join(a.corpus, f), args(budget)) for f in files}
            rows = [(f"`{f}`", [docs[f]]) for f in files] + [("all files", list(docs.values()))]
            for label, group in rows:
                openai, anthropic = costs(group)
                ev = summary([s for d in group for s in shares(d, "evidence")])
                vb = summary([s for d in group for s in shares(d, "verbatim")])
                sent = sum(d["totals"]["sent_tokens"] for d in group)
                full = sum(d["totals"]["full_tokens"] for d in group)
                print(
                    f"| {budget:,} | {label} | {name} | {openai:.2f}x | {anthropic:.2f}x | "
                    f"{sent / full * 100 if full else 100:.1f}% | {pc(ev[0])} | {pc(ev[1])} | "
                    f"{pc(vb[0])} | {pc(vb[1])} |",
                    flush=True,
                )
                if name != "default":
                    continue
                if openai > 1.0 + 1e-9 or anthropic > 1.0 + 1e-9:
                    failures.append(f"{budget} {label}: dearer than sending everything")
                if label == "all files" and budget == 8000:
                    if openai > 0.70 or anthropic > 0.75:
                        failures.append(f"8000 all files: {openai:.3f}x / {anthropic:.3f}x")
                    if vb[0] is not None and (vb[0] < 0.985 or vb[1] < 0.85):
                        failures.append(f"8000 all files: verbatim {vb[0]:.4f} / {vb[1]:.3f}")
                if label == "all files" and budget == 32000 and max(openai, anthropic) > 0.98:
                    failures.append(f"32000 all files: {openai:.3f}x / {anthropic:.3f}x")
    print()
    if failures:
        print("not met:")
        for f in failures:
            print(f"- {f}")
        sys.exit(1)
    print("every acceptance check met")


if __name__ == "__main__":
    main()
