"""Errors are Python exceptions carrying the Rust error's kind and message; no panic crosses."""

import math

import pytest

from curator_context import BudgetTooSmall, ConfigError, CuratorError, FormatError, curate


def test_a_bad_message_names_its_index_and_field():
    items = [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "c1", "arguments": "{}"},
    ]
    with pytest.raises(FormatError) as caught:
        curate(items, max_tokens=1000, format="responses")
    assert caught.value.kind == "missing_field"
    assert str(caught.value) == "message 1: missing field `name`"


def test_an_unknown_role_is_a_format_error():
    with pytest.raises(FormatError) as caught:
        curate([{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}], max_tokens=1000)
    assert caught.value.kind == "unknown_role"
    assert "message 1" in str(caught.value)


def test_contradicting_formats_are_refused():
    messages = [
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]},
    ]
    with pytest.raises(FormatError) as caught:
        curate(messages, max_tokens=1000)
    assert caught.value.kind == "ambiguous_format"
    assert "role `tool` at message 0" in str(caught.value)


def test_an_anthropic_system_read_as_openai_is_refused():
    request = {"system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(FormatError) as caught:
        curate(request, max_tokens=1000, format="openai")
    assert caught.value.kind == "foreign_field"


@pytest.mark.parametrize(
    ("messages", "where"),
    [
        ([{"role": "user", "content": {1, 2}}], "`[0].content`"),
        ([{"role": "user", "content": "hi", 3: "x"}], "`[0]`"),
        ([{"role": "user", "content": math.nan}], "`[0].content`"),
        ([{"role": "user", "content": 2**80}], "`[0].content`"),
        ("hello", "a list of messages"),
        ({"model": "gpt-4o"}, "no `messages`"),
    ],
)
def test_values_json_cannot_hold_are_format_errors(messages, where):
    with pytest.raises(FormatError) as caught:
        curate(messages, max_tokens=1000)
    assert where in str(caught.value)
    assert caught.value.kind in {"wrong_type", "missing_field"}


def test_a_budget_too_small_says_by_how_much():
    messages = [{"role": "system", "content": "Answer in French. " * 200}, {"role": "user", "content": "hi"}]
    with pytest.raises(BudgetTooSmall) as caught:
        curate(messages, max_tokens=50)
    error = caught.value
    assert isinstance(error, CuratorError)
    assert error.kind == "budget_too_small"
    assert error.max_tokens == 50
    assert error.needed > 50
    assert str(error).startswith("token budget of 50 tokens cannot hold")


@pytest.mark.parametrize(
    ("arguments", "kind", "says"),
    [
        ({"pipeline": {"strategy": "no_such_strategy"}}, "config", "no_such_strategy"),
        ({"pipeline": "strategy = "}, "config", "TOML"),
        ({"pipeline": '{"strategy": "sliding_window"'}, "config", "cannot read it"),
        ({"pipeline": {"strategy": "tool_result_truncator", "max_length": 0}}, "invalid_option", "max_length"),
        ({"pipeline": 42}, "invalid_argument", "`pipeline`"),
        ({"max_tokens": 1000, "pipeline": {"strategy": "passthrough"}}, "invalid_argument", "not both"),
        ({}, "invalid_argument", "max_tokens"),
        ({"max_tokens": -1}, "invalid_argument", "-1"),
        ({"max_tokens": True}, "invalid_argument", "True"),
        ({"max_tokens": 1000, "format": "gemini"}, "unknown_format", "gemini"),
    ],
)
def test_bad_pipelines_and_arguments_are_config_errors(arguments, kind, says):
    with pytest.raises(ConfigError) as caught:
        curate([{"role": "user", "content": "hi"}], **arguments)
    assert caught.value.kind == kind
    assert says in str(caught.value)


@pytest.mark.parametrize(
    "messages",
    [
        [],
        [{}],
        [None],
        [[]],
        [{"role": None}],
        [{"type": "function_call_output"}],
        [{"role": "assistant", "tool_calls": "x"}],
        [{"role": "assistant", "tool_calls": [{"id": 1}]}],
        [{"role": "user", "content": [{"type": "tool_result"}]}],
        [{"role": "tool", "tool_call_id": "nobody", "content": "orphan"}],
        [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": 3}]}],
        {"system": 5, "messages": [{"role": "user", "content": "hi"}]},
    ],
)
def test_garbage_raises_curator_errors_or_curates_never_panics(messages):
    # A panic would surface as pyo3's PanicException, a BaseException outside CuratorError.
    try:
        out = curate(messages, max_tokens=1000)
    except CuratorError as error:
        assert error.kind and str(error)
    else:
        assert isinstance(out, type(messages))


@pytest.mark.parametrize(
    "pipeline",
    [None, {"strategy": "token_budget", "max_tokens": 1_000}, {"strategy": "sliding_window", "window_size": 10}],
)
def test_a_result_answering_no_call_is_left_out_with_a_warning(pipeline):
    from curator_context import UnsendableWarning

    messages = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "x", "content": "a result whose call is not there"},
        {"role": "assistant", "content": "hello"},
    ]
    arguments = {"max_tokens": 1_000} if pipeline is None else {"pipeline": pipeline}
    with pytest.warns(UnsendableWarning, match=r"1 message\(s\) of the input \(at 1\)"):
        out = curate(messages, **arguments)
    assert [m["role"] for m in out] == ["user", "assistant"]
    # Turned into an error, it stops the call.
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", UnsendableWarning)
        with pytest.raises(UnsendableWarning):
            curate(messages, **arguments)


def test_calls_still_waiting_at_the_end_raise_no_warning():
    import warnings

    messages = [
        {"role": "user", "content": "list the files"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = curate(messages, max_tokens=1_000)
    assert [m["role"] for m in out] == ["user"]


# Run in a child process: before values were checked for depth, reading one overflowed the
# stack and killed the interpreter (SIGSEGV), which would take pytest down with it.
_DEEP = """
import asyncio, sys
from curator_context import CuratorError, curate
from curator_context.agents import CuratorSession

where, db = sys.argv[1:3]
deep = {"v": 1}
for _ in range(100_000):
    deep = {"a": deep}
try:
    if where == "content":
        curate([{"role": "user", "content": "hi", "extra": [deep]}], max_tokens=1_000)
    elif where == "arguments":
        curate([{"role": "user", "content": "hi"}, {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t", "name": "f", "input": deep}]}], max_tokens=1_000)
    elif where == "pipeline":
        curate([{"role": "user", "content": "hi"}], pipeline={"strategy": "passthrough", "x": deep})
    elif where == "session":
        asyncio.run(CuratorSession("s", db).add_items([{"role": "user", "content": "hi", "x": deep}]))
except CuratorError as error:
    print(type(error).__name__, error.kind, str(error))
"""


@pytest.mark.parametrize(
    ("where", "raised"),
    [
        ("content", "FormatError wrong_type `[0].extra[0].a.a.a.a.a.a.a.a.a…`: nested deeper than 256 levels"),
        ("arguments", "FormatError wrong_type `[1].content[0].input.a.a.a.a.a.a.a.a…`: nested deeper than 256 levels"),
        ("pipeline", "ConfigError invalid_argument `pipeline.x.a.a.a.a.a.a.a.a.a.a.a…`: nested deeper than 256 levels"),
        ("session", "FormatError wrong_type `items[0].x.a.a.a.a.a.a.a.a.a.a…`: nested deeper than 256 levels"),
    ],
)
def test_a_value_nested_too_deep_is_an_error_not_a_crash(tmp_path, where, raised):
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _DEEP, where, str(tmp_path / "s.db")], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"the interpreter died ({done.returncode}): {done.stderr[-2000:]}"
    assert done.stdout.strip() == raised


def test_a_pipeline_value_json_cannot_hold_is_a_config_error():
    with pytest.raises(ConfigError) as caught:
        curate([{"role": "user", "content": "hi"}], pipeline={"strategy": "token_budget", "max_tokens": 2**70})
    assert caught.value.kind == "invalid_argument"
    assert "`pipeline.max_tokens`" in str(caught.value)


def _warned_here(call):
    """The UnsendableWarning a call raises, checked to point at this file: the caller's line,
    not a line of the package the call went through."""
    from curator_context import UnsendableWarning

    with pytest.warns(UnsendableWarning) as caught:
        call()
    assert [w.filename for w in caught] == [__file__]


@pytest.mark.parametrize("pipeline", [None, {"strategy": "token_budget", "max_tokens": 1_000}])
def test_the_unsendable_warning_points_at_the_callers_line(pipeline):
    from curator_context import trim_messages

    messages = [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "nobody", "content": "?"}]
    if pipeline is None:
        _warned_here(lambda: curate(messages, max_tokens=1_000))
    else:
        _warned_here(lambda: curate(messages, pipeline=pipeline))
    _warned_here(lambda: trim_messages(messages, max_tokens=1_000))
    _warned_here(lambda: curate(messages[:1] + [{"type": "function_call_output", "call_id": "x", "output": "?"}], max_tokens=1_000))
