"""trim_messages on dicts: the arguments it takes and those it refuses."""

import pytest

from curator_context import ConfigError, trim_messages


def test_trims_openai_dicts_to_the_newest_messages(openai_conversation):
    messages = openai_conversation(40, size=40)
    out = trim_messages(messages, max_tokens=2_000, token_counter="approximate")
    assert out[0] == messages[0] and out[1] == messages[1]
    assert out[-1] == messages[-1]
    assert len(out) < len(messages)
    exact = trim_messages(messages, max_tokens=2_000, token_counter="o200k")
    assert len(exact) < len(messages)


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"strategy": "first"}, "strategy='first'"),
        ({"token_counter": len}, "token_counter="),
        ({"token_counter": "gpt2"}, "'gpt2'"),
        ({"start_on": "ai"}, "start_on='ai'"),
        ({"allow_partial": True}, "allow_partial=True"),
        ({"end_on": "human"}, "end_on='human'"),
    ],
)
def test_arguments_curator_does_not_take_are_config_errors(openai_conversation, arguments, says):
    with pytest.raises(ConfigError) as caught:
        trim_messages(openai_conversation(2, size=5), max_tokens=2_000, **arguments)
    assert caught.value.kind == "unsupported_argument"
    assert says in str(caught.value)


@pytest.mark.parametrize("max_tokens", [-1, True, False, 2**70, 1.5, "10", None])
def test_a_max_tokens_that_is_no_budget_is_named(max_tokens):
    # As curate() says it: a ConfigError naming `max_tokens`, not the pipeline it becomes.
    with pytest.raises(ConfigError) as caught:
        trim_messages([{"role": "user", "content": "hi"}], max_tokens=max_tokens)
    assert caught.value.kind == "invalid_argument"
    assert str(caught.value) == f"`max_tokens` should be a non-negative integer, found {max_tokens!r}"


def test_any_integer_type_is_a_budget():
    class Tokens:
        def __index__(self):
            return 1_000

    messages = [{"role": "user", "content": "hi"}]
    assert trim_messages(messages, max_tokens=Tokens()) == messages
