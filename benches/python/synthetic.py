"""A synthetic agent history for the Python benchmarks, as OpenAI Chat Completions dicts.

The shape agents produce: a system prompt, the task, then rounds of an assistant message
with one or two tool calls, their results (a few hundred characters, sometimes a few
thousand), an occasional assistant reply and a user follow-up. Deterministic for a seed.
"""

import json
import random
from typing import List

WORDS = (
    "error warning file path line build test passed failed module function return value config "
    "request response user session token budget record result output input cache index query "
    "thread worker timeout retry status commit branch merge deploy server client table column"
).split()


def _text(rng: random.Random, chars: int) -> str:
    words = []
    size = 0
    while size < chars:
        word = rng.choice(WORDS)
        words.append(word)
        size += len(word) + 1
    lines = [" ".join(words[i : i + 12]) for i in range(0, len(words), 12)]
    return "\n".join(lines)


def history(length: int, seed: int = 42) -> List[dict]:
    """``length`` messages (at least 2): system, task, then tool rounds."""
    rng = random.Random(seed)
    messages: List[dict] = [
        {"role": "system", "content": "You are a coding agent. Use the tools to inspect and fix the repository."},
        {"role": "user", "content": "The test suite fails on the parser module; find out why and fix it."},
    ]
    call = 0
    while len(messages) < length:
        roll = rng.random()
        if roll < 0.08:
            messages.append({"role": "assistant", "content": _text(rng, rng.randint(80, 400))})
            messages.append({"role": "user", "content": _text(rng, rng.randint(20, 120))})
            continue
        calls = []
        for _ in range(2 if roll > 0.8 else 1):
            call += 1
            calls.append(
                {
                    "id": f"call_{call}",
                    "type": "function",
                    "function": {
                        "name": rng.choice(["read_file", "run_tests", "grep", "list_dir"]),
                        "arguments": json.dumps({"path": f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py"}),
                    },
                }
            )
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        for c in calls:
            size = rng.randint(200, 900) if rng.random() < 0.85 else rng.randint(2000, 6000)
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": _text(rng, size)})
    # End on a complete round: no call without its result, and the list exactly `length` long
    # or a message or two longer.
    return messages
