"""curator for Python: curate the conversation history of LLM agent loops.

``curate(messages, max_tokens=8000)`` takes OpenAI Chat Completions messages, Anthropic
messages or Responses API items (as dicts), or LangChain message objects, curates them in
Rust, and returns them in the format they came in. Errors are ``CuratorError`` subclasses
with a ``kind``.
"""

import sys as _sys
import typing as _typing

from . import _native
from ._native import (
    BudgetTooSmall,
    ConfigError,
    CuratorError,
    FormatError,
    StoreError,
    UnsendableWarning,
    __version__,
    bill,
    default_pipeline,
    forget_conversations,
)

__all__ = [
    "BudgetTooSmall",
    "ConfigError",
    "CuratorError",
    "FormatError",
    "StoreError",
    "UnsendableWarning",
    "__version__",
    "bill",
    "curate",
    "default_pipeline",
    "forget_conversations",
    "trim_messages",
]

_M = _typing.TypeVar("_M")


def curate(
    messages: _M,
    max_tokens: _typing.Optional[int] = None,
    *,
    pipeline: _typing.Union[_typing.Mapping[str, _typing.Any], str, None] = None,
    format: _typing.Optional[str] = "auto",
) -> _M:
    """Curates messages and returns them in the format and shape they came in.

    ``messages`` is a list of OpenAI Chat Completions messages, Anthropic messages,
    Responses API items or LangChain messages, or a request dict holding dicts under
    ``messages`` (with ``system`` for Anthropic; its ``tools`` are reserved from the budget,
    its other keys come back as they were). Give ``max_tokens`` for the default pipeline, or
    ``pipeline`` (a ``StrategyConfig`` as a dict, TOML text or JSON text), not both.
    ``format`` is ``"auto"`` (told from the messages), ``"openai"``, ``"anthropic"``,
    ``"responses"`` or ``"langchain"``.

    LangChain messages and OpenAI dicts that curation keeps unchanged come back as the very
    objects given; those it shortens or makes (a cut tool result, a note of what was left
    out) are new objects.

    ``curate`` remembers the last four conversations of OpenAI dicts it curated, so that a
    call whose list starts with an earlier call's messages reads and curates only what was
    appended (a few milliseconds at 10,000 messages, where a first call takes over a second). A
    message counts as unchanged only when it is made of the same string, number and
    ``None`` objects as before; one changed in place is read again. The remembered
    conversations hold their messages' strings until they are displaced or
    ``forget_conversations()`` is called.

    Raises ``FormatError``, ``ConfigError``, ``BudgetTooSmall`` or ``CuratorError``.
    """
    # LangChain messages can only be given when langchain_core is imported already: asking
    # sys.modules costs nothing for everyone else.
    if format == "langchain" or (
        format in (None, "auto") and "langchain_core.messages" in _sys.modules and _has_langchain(messages)
    ):
        from ._langchain import curate_langchain

        return _typing.cast(_M, curate_langchain(messages, max_tokens, pipeline))
    return _native.curate(messages, max_tokens, pipeline=pipeline, format=format)


def trim_messages(
    messages: _typing.Any = None,
    *,
    max_tokens: int,
    token_counter: _typing.Any = "approximate",
    strategy: str = "last",
    allow_partial: bool = False,
    end_on: _typing.Any = None,
    start_on: _typing.Any = None,
    include_system: bool = False,
    text_splitter: _typing.Any = None,
) -> _typing.Any:
    """LangChain's ``trim_messages``, as a one-line swap::

        from curator_context import trim_messages  # was: from langchain_core.messages import ...

    Keeps the newest messages that fit ``max_tokens`` with curator's token budget, and
    always every system message (whatever ``include_system`` says), the task (the first
    human message) and the newest message, never a tool call without its result.

    ``messages`` is what LangChain's takes: LangChain messages, a prompt value, ``(role,
    text)`` tuples, strings, OpenAI dicts; the result is a list of LangChain messages (the
    objects given, for those kept). Without LangChain installed, OpenAI dicts are trimmed
    and come back as dicts. Without ``messages``, a runnable is returned, as LangChain's.

    ``token_counter`` is LangChain's: ``"approximate"`` (LangChain's
    ``count_tokens_approximately``), a function of a message list or of one message, or a
    chat model (its ``get_num_tokens_from_messages``); each message is counted alone and the
    counts are added up. A tokenizer name (``"o200k"``, ``"cl100k"``, ``"estimate"``) counts
    in Rust instead.

    ``allow_partial=False`` (the default) changes no text: a message that does not fit is
    left out whole. ``allow_partial=True`` lets curator cut the newest message's texts to
    their beginning and end (with a note of what it cut), counting with its own tokenizer.
    ``end_on`` leaves out the messages after the last one of the types it names before
    trimming, as LangChain's does; ``start_on`` may be ``"human"`` (met by construction);
    ``strategy`` is ``"last"``. Other values raise ``ConfigError`` (kind
    ``unsupported_argument``).

    Raises ``BudgetTooSmall`` when the system messages, the task and the newest message do
    not fit whole (LangChain's would leave some of them out): the one exception LangChain
    code must expect from it.
    """
    from . import _trim

    del include_system  # System messages are always kept.
    if messages is None:
        return _trim.runnable(
            trim_messages,
            max_tokens=max_tokens,
            token_counter=token_counter,
            strategy=strategy,
            allow_partial=allow_partial,
            end_on=end_on,
            start_on=start_on,
            text_splitter=text_splitter,
        )
    given, langchain = _langchain_messages(messages)
    # OpenAI dicts are curated as dicts (their roles read cheaply, only those the budget may
    # keep read whole), and only what is kept or counted is made a LangChain message.
    dicts = bool(given) and _all_of(given, dict)
    tokenizer, count = _trim.counter(token_counter, allow_partial, langchain)
    config = _trim.pipeline(max_tokens, tokenizer, strategy, start_on, allow_partial, text_splitter)
    given = _trim.drop_after_last(given, end_on)
    if count is not None and dicts:
        count = _trim.of_dicts(count)
    counts = None if count is None else _trim.counts(count, given, config["max_tokens"])
    if langchain and not dicts:
        from ._langchain import curate_langchain

        return curate_langchain(given, None, config, counts)
    kept = _native.curate_kept(given, None, pipeline=config, counts=counts)
    # Positions kept, (position, dict) changed, dicts made.
    view = [given[item] if isinstance(item, int) else item[1] if isinstance(item, tuple) else item for item in kept]
    if langchain:
        from langchain_core.messages import convert_to_messages

        return list(convert_to_messages(view))
    return view


def _langchain_messages(messages: _typing.Any) -> _typing.Tuple[_typing.List[_typing.Any], bool]:
    """The messages as a list, as LangChain messages when LangChain is installed (prompt
    values, tuples, strings and dicts converted as LangChain converts them), and whether they
    are."""
    try:
        from langchain_core.messages import BaseMessage, convert_to_messages
        from langchain_core.prompt_values import PromptValue
    except ImportError:
        if not isinstance(messages, (list, tuple)):
            raise _format_error(
                "wrong_type",
                f"expected a list of messages, found a `{type(messages).__name__}` "
                "(prompt values, tuples and strings need langchain_core installed)",
            ) from None
        return list(messages), False
    if isinstance(messages, PromptValue):
        return list(messages.to_messages()), True
    if isinstance(messages, (str, dict)) or not isinstance(messages, _typing.Iterable):
        raise _format_error("wrong_type", f"expected a list of messages, found a `{type(messages).__name__}`")
    given = list(messages)
    if _all_of(given, BaseMessage) or _all_of(given, dict):
        return given, True
    try:
        return list(convert_to_messages(given)), True
    except (ValueError, TypeError, NotImplementedError) as error:
        raise _format_error("unsupported_message", f"messages LangChain cannot read: {error}") from error


def _all_of(items: _typing.List[_typing.Any], kind: type) -> bool:
    """Whether every item is an instance of ``kind``: their classes found at C speed, then
    each class checked once."""
    return all(issubclass(cls, kind) for cls in set(map(type, items)))


def _format_error(kind: str, message: str) -> FormatError:
    error = FormatError(message)
    error.kind = kind
    return error


def _has_langchain(messages: _typing.Any) -> bool:
    """Whether ``messages`` is a list of LangChain messages, told from its first message (a
    list that mixes them with dicts is refused, naming the first message of the other kind)."""
    from langchain_core.messages import BaseMessage

    return isinstance(messages, (list, tuple)) and len(messages) > 0 and isinstance(messages[0], BaseMessage)
