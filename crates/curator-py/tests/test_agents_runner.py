"""An Agents SDK ``Runner`` run whose session is curator's on SQLite, killed (SIGKILL, from
inside the run) and resumed in a new process with the same session id.

What the SDK does, as this test observes it: the runner records the user's input when the
turn starts, and a model reply's items (reasoning, function calls) together with the tools'
outputs once the tools have run. So a run killed after a tool's output was recorded resumes
from the session without running the tool again; a run killed inside a tool has recorded
neither the call nor its output, and the resumed run asks the model again, which calls the
tool again (the SDK runs tools at least once, not exactly once). In both cases nothing the
session was given is lost.
"""

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid

import pytest

pytest.importorskip("agents")

from curator_context.agents import CuratorSession  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def run_agent(tmp_path, db, session_id, mode, user_input=None):
    runs = tmp_path / "runs.log"
    args = [sys.executable, os.path.join(HERE, "_agent_run.py"), db, session_id, mode, str(runs)]
    if user_input is not None:
        args.append(user_input)
    env = dict(os.environ, OPENAI_AGENTS_DISABLE_TRACING="1")
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    model_input = json.loads((tmp_path / "runs.log.input.json").read_text())
    return done, runs.read_text().splitlines(), model_input


def items(db, session_id):
    return asyncio.run(CuratorSession(session_id, db).get_items())


def kinds(items):
    return [i.get("type", i.get("role")) for i in items]


def test_a_run_killed_after_a_tool_result_resumes_without_running_the_tool_again(tmp_path):
    db, session_id = str(tmp_path / "agent.db"), f"run-{uuid.uuid4()}"
    killed, runs, _ = run_agent(tmp_path, db, session_id, "kill_after_result", "Find the biggest log file")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    recorded = items(db, session_id)
    assert kinds(recorded) == ["user", "reasoning", "function_call", "function_call_output"]
    assert recorded[3] == {"call_id": "call_0", "output": "/var/log: 4096 blocks", "type": "function_call_output"}

    resumed, runs, model_input = run_agent(tmp_path, db, session_id, "finish")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "Found: /var/log: 4096 blocks"
    # The new process handed the model everything the killed one recorded, unchanged.
    assert model_input == recorded
    assert runs.count("tool du /var/log") == 1, runs
    after = items(db, session_id)
    assert after[: len(recorded)] == recorded
    assert kinds(after) == kinds(recorded) + ["message"]


def test_a_run_killed_inside_a_tool_loses_nothing_recorded_and_the_sdk_runs_the_tool_again(tmp_path):
    db, session_id = str(tmp_path / "agent.db"), f"run-{uuid.uuid4()}"
    killed, runs, _ = run_agent(tmp_path, db, session_id, "kill_in_tool", "Find the biggest log file")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert runs == ["model 1", "tool du /var/log"]
    recorded = items(db, session_id)
    # The SDK records the model's reply with the tools' outputs, after the tools ran.
    assert recorded == [{"content": "Find the biggest log file", "role": "user"}]

    resumed, runs, _ = run_agent(tmp_path, db, session_id, "finish")
    assert resumed.returncode == 0, resumed.stderr
    assert runs.count("tool du /var/log") == 2, runs
    after = items(db, session_id)
    assert after[:1] == recorded
    assert kinds(after) == ["user", "reasoning", "function_call", "function_call_output", "message"]


def test_a_resumed_run_with_a_budget_sees_the_curated_history(tmp_path):
    """A session with a pipeline hands the runner the curated view; the record keeps all."""
    db, session_id = str(tmp_path / "agent.db"), f"run-{uuid.uuid4()}"
    history = [{"role": "user", "content": "Find the biggest log file"}]
    for i in range(200):
        history += [
            {"type": "function_call", "call_id": f"old_{i}", "name": "du", "arguments": "{}", "id": f"fc_old_{i}", "status": "completed"},
            {"type": "function_call_output", "call_id": f"old_{i}", "output": f"{i} blocks " * 100},
        ]
    asyncio.run(CuratorSession(session_id, db).add_items(history))
    env = dict(os.environ, OPENAI_AGENTS_DISABLE_TRACING="1", CURATOR_TEST_MAX_TOKENS="4000")
    runs = tmp_path / "runs.log"
    done = subprocess.run(
        [sys.executable, os.path.join(HERE, "_agent_run.py"), db, session_id, "finish", str(runs), "and now?"],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    model_input = json.loads((tmp_path / "runs.log.input.json").read_text())
    assert len(model_input) < 100, len(model_input)
    calls = {i["call_id"] for i in model_input if i.get("type") == "function_call"}
    outputs = {i["call_id"] for i in model_input if i.get("type") == "function_call_output"}
    assert calls == outputs
    assert model_input[0] == history[0]
    # The stand-in answers at once (the history holds outputs): the record gains the new
    # input and the answer, after every item it held.
    after = items(db, session_id)
    assert after[: len(history)] == history
    assert kinds(after[len(history) :]) == ["user", "message"]


def test_the_session_is_an_sdk_session(tmp_path):
    from agents.memory.session import Session

    session = CuratorSession(f"run-{uuid.uuid4()}", str(tmp_path / "agent.db"), max_tokens=1_000)
    assert isinstance(session, Session)
    assert session.session_settings is None
