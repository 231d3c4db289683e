"""Conversations the tests share, in the three formats."""

import copy

import pytest

# The PostgreSQL fixture of the session tests: one server for the run.
pytest_plugins = ["_postgres"]


def _openai_tool_conversation(rounds, size=400):
    messages = [
        {"role": "system", "content": "You are a shell agent."},
        {"role": "user", "content": "Find the biggest log file under /var/log."},
    ]
    for i in range(rounds):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {"name": "du", "arguments": f'{{"path": "/var/log/{i}"}}'},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": f"{i} blocks " * size})
    messages.append({"role": "assistant", "content": "The biggest is /var/log/3."})
    return messages


def _anthropic_tool_conversation(rounds, size=400):
    messages = [{"role": "user", "content": "Find the biggest log file under /var/log."}]
    for i in range(rounds):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Checking directory {i}."},
                    {"type": "tool_use", "id": f"toolu_{i}", "name": "du", "input": {"path": f"/var/log/{i}"}},
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": f"{i} blocks " * size}],
            }
        )
    messages.append({"role": "assistant", "content": [{"type": "text", "text": "The biggest is /var/log/3."}]})
    return {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": "You are a shell agent.", "messages": messages}


def _responses_tool_conversation(rounds, size=400):
    items = [
        {"role": "system", "content": "You are a shell agent."},
        {"role": "user", "content": "Find the biggest log file under /var/log."},
    ]
    for i in range(rounds):
        items.append(
            {
                "type": "function_call",
                "call_id": f"call_{i}",
                "name": "du",
                "arguments": f'{{"path": "/var/log/{i}"}}',
            }
        )
        items.append({"type": "function_call_output", "call_id": f"call_{i}", "output": f"{i} blocks " * size})
    items.append(
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "The biggest is /var/log/3."}],
        }
    )
    return items


@pytest.fixture
def openai_conversation():
    return _openai_tool_conversation


@pytest.fixture
def anthropic_conversation():
    return _anthropic_tool_conversation


@pytest.fixture
def responses_conversation():
    return _responses_tool_conversation


@pytest.fixture
def unchanged():
    """Calls ``curate`` and checks that it left its input untouched."""

    def check(curate, messages, **kwargs):
        before = copy.deepcopy(messages)
        out = curate(messages, **kwargs)
        assert messages == before
        return out

    return check
