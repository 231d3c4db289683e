"""Every Python example of the docs runs as written, each in a new interpreter, in an empty
folder, against a loopback server that speaks OpenAI's API."""

import importlib.util
import os
import subprocess
import sys

import pytest

from _examples import blocks
from _fake_openai import ANSWER, FakeOpenAI

EXAMPLES = blocks()


@pytest.fixture(scope="module")
def openai():
    with FakeOpenAI() as server:
        yield server


def missing(source):
    """The optional packages an example imports that are not installed."""
    wanted = {"agents": "openai-agents", "langchain_core": "langchain-core", "langchain": "langchain"}
    if "openai:" in source:
        wanted["langchain_openai"] = "langchain-openai"
    return [package for module, package in wanted.items() if module in source and importlib.util.find_spec(module) is None]


def test_the_docs_have_examples():
    assert len(EXAMPLES) >= 11, [name for name, _ in EXAMPLES]


@pytest.mark.parametrize(("name", "source"), EXAMPLES, ids=[name for name, _ in EXAMPLES])
def test_an_example_runs_as_written(name, source, openai, tmp_path):
    absent = missing(source)
    if absent and os.environ.get("CI") != "true":
        pytest.skip(f"needs {', '.join(absent)}")
    env = dict(
        os.environ,
        OPENAI_BASE_URL=openai.base_url,
        OPENAI_API_KEY="sk-test",
        OPENAI_AGENTS_DISABLE_TRACING="1",
    )
    done = subprocess.run([sys.executable, "-c", source], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{name}:\n{source}\n{done.stderr}"
    if "print(" in source and ("Runner.run" in source or "create_agent" in source):
        assert ANSWER in done.stdout, done.stdout
