"""A stand-in for LangChain's ``trim_messages``: the same call, curator's token budget."""

import operator
from typing import Any, Dict, Optional

from ._native import ConfigError

#: ``token_counter`` values and the tokenizer each stands for.
TOKENIZERS = {
    "approximate": "estimate",
    "estimate": "estimate",
    "o200k": "o200k",
    "o200k_base": "o200k",
    "cl100k": "cl100k",
    "cl100k_base": "cl100k",
}

#: ``start_on`` values the budget meets by construction: it keeps the task (the first user
#: message) right after the system messages.
HUMAN = ("human", "user")


def _config_error(kind: str, message: str) -> ConfigError:
    error = ConfigError(message)
    error.kind = kind
    return error


def pipeline(
    max_tokens: Any,
    token_counter: Any,
    strategy: str,
    start_on: Any,
    allow_partial: bool,
    end_on: Any,
    text_splitter: Any,
) -> Dict[str, Any]:
    """The token budget a ``trim_messages`` call stands for, or a ``ConfigError`` naming the
    argument curator does not take."""
    max_tokens = _budget(max_tokens)
    if strategy != "last":
        raise _config_error(
            "unsupported_argument",
            f"strategy={strategy!r}: only \"last\" is supported (curator keeps the newest messages, "
            "the system messages and the task)",
        )
    if not isinstance(token_counter, str) or token_counter not in TOKENIZERS:
        raise _config_error(
            "unsupported_argument",
            f"token_counter={token_counter!r}: give one of {', '.join(repr(t) for t in TOKENIZERS)} "
            "(curator counts tokens in Rust)",
        )
    if start_on is not None and not _is_human(start_on):
        raise _config_error(
            "unsupported_argument",
            f"start_on={start_on!r}: only \"human\" is supported (the view starts with the task)",
        )
    for name, value in (("allow_partial", allow_partial), ("end_on", end_on), ("text_splitter", text_splitter)):
        if value not in (None, False):
            raise _config_error("unsupported_argument", f"{name}={value!r} is not supported")
    return {"strategy": "token_budget", "max_tokens": max_tokens, "tokenizer": TOKENIZERS[token_counter]}


def _budget(max_tokens: Any) -> int:
    """``max_tokens`` as an ``int`` (any integer type, such as NumPy's), or a ``ConfigError``
    naming it, as ``curate`` raises (a bool is an ``int`` in Python, but ``True`` is a
    mistake, not a budget of one)."""
    try:
        budget = None if isinstance(max_tokens, bool) else operator.index(max_tokens)
    except TypeError:
        budget = None
    if budget is None or not 0 <= budget < 2**64:
        raise _config_error(
            "invalid_argument", f"`max_tokens` should be a non-negative integer, found {max_tokens!r}"
        )
    return budget


def _is_human(start_on: Any) -> bool:
    values = start_on if isinstance(start_on, (list, tuple)) else [start_on]
    for value in values:
        if isinstance(value, str):
            if value not in HUMAN:
                return False
        elif getattr(value, "__name__", None) != "HumanMessage":
            return False
    return True


def runnable(trim: Any, **kwargs: Any) -> Optional[Any]:
    """``trim_messages`` without messages, as LangChain's: a runnable that trims what it is given."""
    try:
        from langchain_core.runnables import RunnableLambda
    except ImportError as missing:
        raise _config_error(
            "invalid_argument", "trim_messages without messages returns a runnable, which needs langchain_core"
        ) from missing
    return RunnableLambda(lambda messages: trim(messages, **kwargs))
