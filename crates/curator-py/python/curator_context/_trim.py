"""LangChain's ``trim_messages`` on curator's token budget: the arguments LangChain takes,
read into a pipeline and per-message counts."""

import inspect
import math
import operator
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ._native import ConfigError, head_positions

#: ``token_counter`` names curator counts with in Rust, and the tokenizer each stands for.
#: ``"approximate"`` is LangChain's ``count_tokens_approximately`` when LangChain is
#: installed (see ``counter``).
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

#: LangChain's message type names, by the roles of OpenAI dicts.
_TYPES = {"user": "human", "assistant": "ai", "system": "system", "developer": "system", "tool": "tool"}


def config_error(kind: str, message: str) -> ConfigError:
    error = ConfigError(message)
    error.kind = kind
    return error


def pipeline(max_tokens: Any, tokenizer: str, strategy: str, start_on: Any, allow_partial: bool, text_splitter: Any) -> Dict[str, Any]:
    """The token budget a ``trim_messages`` call stands for, or a ``ConfigError`` naming the
    argument curator does not take."""
    budget = _budget(max_tokens)
    if strategy != "last":
        raise config_error(
            "unsupported_argument",
            f"strategy={strategy!r}: only \"last\" is supported (curator keeps the newest messages, "
            "the system messages and the task)",
        )
    if start_on is not None and not _is_human(start_on):
        raise config_error(
            "unsupported_argument",
            f"start_on={start_on!r}: only \"human\" is supported (the view starts with the task)",
        )
    if text_splitter is not None:
        raise config_error(
            "unsupported_argument",
            "text_splitter is not supported: with allow_partial=True curator cuts a text to its "
            "beginning and end, with a note of what it cut",
        )
    return {"strategy": "token_budget", "max_tokens": budget, "tokenizer": tokenizer, "shorten": bool(allow_partial)}


def counter(token_counter: Any, allow_partial: bool, langchain: bool) -> Tuple[str, Optional[Callable[[Any], int]]]:
    """The tokenizer curator counts with, and the per-message counter to call instead
    (``None``: curator counts in Rust).

    A callable, a model with ``get_num_tokens_from_messages``, or ``"approximate"`` when
    LangChain is installed, counts each message alone; curator adds the counts up.
    """
    if isinstance(token_counter, str):
        if token_counter not in TOKENIZERS:
            raise config_error(
                "unsupported_argument",
                f"token_counter={token_counter!r}: give a callable, a chat model, or one of "
                f"{', '.join(repr(t) for t in TOKENIZERS)}",
            )
        if token_counter == "approximate" and langchain and not allow_partial:
            from langchain_core.messages.utils import count_tokens_approximately

            return "estimate", lambda message: count_tokens_approximately([message])
        return TOKENIZERS[token_counter], None
    if allow_partial:
        raise config_error(
            "unsupported_argument",
            "allow_partial=True cuts texts, which curator counts with its own tokenizer: give "
            "token_counter as a tokenizer name (\"approximate\", \"o200k\", \"cl100k\") with it",
        )
    model_counter: Any = getattr(token_counter, "get_num_tokens_from_messages", None)
    if model_counter is not None:
        return "estimate", lambda message: model_counter([message])
    if not callable(token_counter):
        raise config_error(
            "invalid_argument",
            f"token_counter should be a callable, a chat model or a tokenizer name, found a "
            f"`{type(token_counter).__name__}`",
        )
    count: Any = token_counter
    if _takes_one_message(count):
        return "estimate", lambda message: count(message)
    return "estimate", lambda message: count([message])


def counts(count: Callable[[Any], int], messages: Sequence[Any], max_tokens: int) -> List[int]:
    """One count per message, each a non-negative integer (a float is rounded up), or a
    ``ConfigError`` naming the message whose count is not.

    Only what the budget may keep is counted: the system messages, the task (the first human
    message before any AI message) and the newest messages until they pass ``max_tokens``
    together. The older ones could not be kept whatever they cost (the kept messages after
    the head are the newest, without gaps): they are given ``max_tokens + 1``.
    """

    def counted(index: int) -> int:
        tokens = count(messages[index])
        if isinstance(tokens, float) and math.isfinite(tokens) and tokens >= 0:
            tokens = math.ceil(tokens)
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
            raise config_error(
                "invalid_argument", f"token_counter gave {tokens!r} for message {index}: expected a non-negative int"
            )
        return tokens

    out = [max_tokens + 1] * len(messages)
    head = _head(messages)
    for index in head:
        out[index] = counted(index)
    heads = set(head)
    total = 0
    for index in range(len(messages) - 1, -1, -1):
        if index not in heads:
            out[index] = counted(index)
        total += out[index]
        if total > max_tokens:
            break
    return out


def _head(messages: Sequence[Any]) -> List[int]:
    """The positions of the system messages and of the task (the first human message, when
    no AI message comes before it): read in Rust for a list of dicts, where a loop in Python
    over every message would cost more than the trimming."""
    if isinstance(messages, list) and messages and type(messages[0]) is dict:
        found = head_positions(messages)
        if found is not None:
            system, task = found
            return system if task is None else sorted([*system, task])
    positions = []
    task_open = True
    for index, message in enumerate(messages):
        kind = _kind(message)
        if kind == "system" or (task_open and kind == "human"):
            positions.append(index)
            task_open = task_open and kind != "human"
        elif kind == "ai":
            task_open = False
    return positions


def of_dicts(count: Callable[[Any], int]) -> Callable[[Any], int]:
    """``count`` for OpenAI dicts: each made a LangChain message first, as LangChain's
    ``trim_messages`` reads them."""
    from langchain_core.messages import convert_to_messages

    return lambda message: count(convert_to_messages([message])[0])


def _kind(message: Any) -> Optional[str]:
    """A message's LangChain type (``system``, ``human``, ``ai``, ``tool``), from its class or
    its role."""
    kind = getattr(message, "type", None)
    if kind is None and isinstance(message, dict):
        kind = _TYPES.get(str(message.get("role")))
    if kind == "chat":
        kind = _TYPES.get(str(getattr(message, "role", "")))
    return kind if isinstance(kind, str) else None


def _takes_one_message(function: Any) -> bool:
    """Whether ``function`` counts one message (its first parameter is annotated as
    LangChain's ``BaseMessage``), as LangChain tells it."""
    try:
        first = next(iter(inspect.signature(function).parameters.values()))
    except (StopIteration, TypeError, ValueError):
        return False
    annotation = first.annotation
    # A class, or its name when annotations are strings (`from __future__ import annotations`).
    name = annotation.rsplit(".", 1)[-1] if isinstance(annotation, str) else getattr(annotation, "__name__", None)
    return name == "BaseMessage"


def drop_after_last(messages: List[Any], end_on: Any) -> List[Any]:
    """``messages`` without those after the last one of a type ``end_on`` names, as
    LangChain's ``end_on`` does before it trims: what the caller asks to leave out."""
    if not end_on:
        return messages
    types = end_on if isinstance(end_on, (list, tuple)) else [end_on]
    end = len(messages)
    while end > 0 and not _is_type(messages[end - 1], types):
        end -= 1
    return messages[:end]


def _is_type(message: Any, types: Sequence[Any]) -> bool:
    kind = getattr(message, "type", None)
    if kind is None and isinstance(message, dict):
        kind = _TYPES.get(str(message.get("role")), message.get("role"))
    for wanted in types:
        if isinstance(wanted, str):
            if kind == wanted or (wanted in _TYPES and kind == _TYPES[wanted]):
                return True
        elif isinstance(wanted, type) and isinstance(message, wanted):
            return True
    return False


def _budget(max_tokens: Any) -> int:
    """``max_tokens`` as an ``int`` (any integer type, such as NumPy's), or a ``ConfigError``
    naming it, as ``curate`` raises (a bool is an ``int`` in Python, but ``True`` is a
    mistake, not a budget of one)."""
    try:
        budget = None if isinstance(max_tokens, bool) else operator.index(max_tokens)
    except TypeError:
        budget = None
    if budget is None or not 0 <= budget < 2**64:
        raise config_error(
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


def runnable(trim: Callable[..., Any], **kwargs: Any) -> Any:
    """``trim_messages`` without messages, as LangChain's: a runnable that trims what it is
    given (a list of messages or a prompt value)."""
    try:
        from langchain_core.runnables import RunnableLambda
    except ImportError as missing:
        raise config_error(
            "invalid_argument", "trim_messages without messages returns a runnable, which needs langchain_core"
        ) from missing
    return RunnableLambda(lambda messages: trim(messages, **kwargs))
