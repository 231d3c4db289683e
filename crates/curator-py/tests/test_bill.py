"""bill: a conversation's requests billed as the providers' prompt caches bill them."""

import pytest

from curator_context import ConfigError, FormatError, bill


def conversation(rounds):
    messages = [{"role": "system", "content": "You are a shell agent. " * 200}, {"role": "user", "content": "Find the biggest log file."}]
    for i in range(rounds):
        messages.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": "du", "arguments": "{}"}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"{i} blocks " * 100})
    return messages


def test_a_request_that_extends_the_last_reads_its_prefix_from_the_cache():
    history = conversation(6)
    requests = [history[: 2 + 2 * n] for n in range(1, 4)]
    rows = bill(requests, model="gpt-4o")
    assert rows[0]["cache_read_tokens"] == 0
    for before, row in zip(rows, rows[1:]):
        # OpenAI: the shared prefix, from 1,024 tokens, in 128-token steps.
        assert row["cache_read_tokens"] == before["input_tokens"] // 128 * 128
        assert row["uncached_tokens"] == row["input_tokens"] - row["cache_read_tokens"]
        assert row["price"] < rows[0]["price"] * row["input_tokens"] / rows[0]["input_tokens"]
    # A request whose head changed reads nothing.
    changed = [dict(m) for m in requests[2]]
    changed[0] = {"role": "system", "content": "Another prompt. " * 200}
    assert bill([requests[1], changed])[1]["cache_read_tokens"] == 0


def test_anthropics_rule_writes_at_breakpoints_and_reads_them_back():
    history = conversation(6)
    rows = bill([history[:4], history[:6], history[:8]], rule="anthropic")
    assert rows[0]["cache_write_tokens"] > 0 and rows[0]["cache_read_tokens"] == 0
    assert rows[1]["cache_read_tokens"] == rows[0]["input_tokens"]
    assert rows[2]["cache_read_tokens"] == rows[1]["input_tokens"]


def test_bad_requests_and_arguments_are_named():
    with pytest.raises(FormatError) as raised:
        bill([[{"role": "user", "content": "hi"}], {"model": "x"}])
    assert "request 1" in str(raised.value) and raised.value.kind == "missing_field"
    with pytest.raises(ConfigError):
        bill([], rule="google")
    with pytest.raises(ConfigError):
        bill([[{"role": "user", "content": "hi"}]], model="no-such-model-anywhere")
