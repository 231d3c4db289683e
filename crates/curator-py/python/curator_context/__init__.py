"""curator for Python: curate the conversation history of LLM agent loops.

``curate(messages, max_tokens=8000)`` takes OpenAI Chat Completions messages, Anthropic
messages or Responses API items (as dicts), or LangChain message objects, curates them in
Rust, and returns them in the format they came in. Errors are ``CuratorError`` subclasses
with a ``kind``.
"""

import sys
from typing import Any, Mapping, Optional, TypeVar, Union

from . import _native
from ._native import (
    BudgetTooSmall,
    ConfigError,
    CuratorError,
    FormatError,
    StoreError,
    UnsendableWarning,
    default_pipeline,
)

__all__ = [
    "BudgetTooSmall",
    "ConfigError",
    "CuratorError",
    "FormatError",
    "StoreError",
    "UnsendableWarning",
    "curate",
    "default_pipeline",
    "trim_messages",
]

M = TypeVar("M")


def curate(
    messages: M,
    max_tokens: Optional[int] = None,
    *,
    pipeline: Union[Mapping[str, Any], str, None] = None,
    format: Optional[str] = "auto",
) -> M:
    """Curates messages and returns them in the format and shape they came in.

    ``messages`` is a list of OpenAI Chat Completions messages, Anthropic messages,
    Responses API items or LangChain messages, or a request dict holding dicts under
    ``messages`` (with ``system`` for Anthropic; its ``tools`` are reserved from the budget,
    its other keys come back as they were). Give ``max_tokens`` for the default pipeline, or
    ``pipeline`` (a ``StrategyConfig`` as a dict, TOML text or JSON text), not both.
    ``format`` is ``"auto"`` (told from the messages), ``"openai"``, ``"anthropic"``,
    ``"responses"`` or ``"langchain"``.

    LangChain messages that curation keeps unchanged come back as the very objects given;
    those it shortens or makes (a cut tool result, a note of what was left out) are new
    objects.

    Raises ``FormatError``, ``ConfigError``, ``BudgetTooSmall`` or ``CuratorError``.
    """
    # LangChain messages can only be given when langchain_core is imported already: asking
    # sys.modules costs nothing for everyone else.
    if format == "langchain" or (
        format in (None, "auto") and "langchain_core.messages" in sys.modules and _has_langchain(messages)
    ):
        from ._langchain import curate_langchain

        return curate_langchain(messages, max_tokens, pipeline)
    return _native.curate(messages, max_tokens, pipeline=pipeline, format=format)


def trim_messages(
    messages: Any = None,
    *,
    max_tokens: int,
    token_counter: Any = "approximate",
    strategy: str = "last",
    include_system: bool = False,
    start_on: Any = None,
    allow_partial: bool = False,
    end_on: Any = None,
    text_splitter: Any = None,
) -> Any:
    """LangChain's ``trim_messages`` for its common arguments, as a one-line swap::

        from curator_context import trim_messages  # was: from langchain_core.messages import ...

    Keeps the newest messages that fit ``max_tokens`` with curator's token budget: every
    system message (whatever ``include_system`` says: curator never drops one), the task,
    and never a tool call without its result. ``token_counter`` is ``"approximate"`` or a
    tokenizer name (``"o200k"``, ``"cl100k"``); ``strategy`` is ``"last"``; ``start_on`` may
    be ``"human"`` (met by construction). Other values raise ``ConfigError`` (kind
    ``unsupported_argument``). Works on LangChain messages and on the dicts ``curate``
    takes; without ``messages``, returns a runnable, as LangChain's does.
    """
    from . import _trim

    del include_system  # System messages are always kept.
    config = _trim.pipeline(max_tokens, token_counter, strategy, start_on, allow_partial, end_on, text_splitter)
    if messages is None:
        return _trim.runnable(
            trim_messages,
            max_tokens=max_tokens,
            token_counter=token_counter,
            strategy=strategy,
            start_on=start_on,
        )
    return curate(messages, pipeline=config)


def _has_langchain(messages: Any) -> bool:
    """Whether ``messages`` is a list of LangChain messages, told from its first message (a
    list that mixes them with dicts is refused, naming the first message of the other kind)."""
    from langchain_core.messages import BaseMessage

    return isinstance(messages, (list, tuple)) and len(messages) > 0 and isinstance(messages[0], BaseMessage)
