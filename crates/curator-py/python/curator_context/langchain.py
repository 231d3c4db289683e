"""A LangChain chat message history on curator's stores, with optional curation.

::

    from curator_context.langchain import CuratorChatMessageHistory

    history = CuratorChatMessageHistory("user-42", "sessions.db", max_tokens=8_000)
    history.add_messages([HumanMessage("hi")])
    history.messages  # the curated view

Messages are recorded as OpenAI Chat Completions messages (with the LangChain message's
``id``, and its ``additional_kwargs``, ``response_metadata`` and the other LangChain fields
that are set under the key ``"langchain"``),
keyed by the session id, in a SQLite file or PostgreSQL, as the Agents SDK session records its
items; the history lives in Rust.
"""

import asyncio
import json
import math
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage, convert_to_messages, convert_to_openai_messages

from ._langchain import _format_error
from ._native import ItemSession, StoreError

__all__ = ["CuratorChatMessageHistory"]

# Content parts the OpenAI format carries as they are; other LangChain blocks go through
# LangChain's own conversion.
_OPENAI_PARTS = ("text", "image_url")

# The key a recorded message keeps the LangChain fields the OpenAI format has no place for
# under. Curator's OpenAI reader keeps a key it does not model as a provider field and writes
# it back as it was, so the record gives it back; no strategy reads it and no token counter
# counts it.
_LANGCHAIN_KEY = "langchain"

#: Fields of LangChain's AI and tool messages recorded when they differ from their default:
#: token usage, calls the model made that did not parse, and a tool's artifact and status.
_MESSAGE_FIELDS: Tuple[Tuple[str, Any], ...] = (
    ("usage_metadata", None),
    ("invalid_tool_calls", []),
    ("artifact", None),
    ("status", "success"),
)

# The integers curator's JSON holds (64 bits, signed or not).
_INT_RANGE = (-(2**63), 2**64 - 1)


def _json_problem(value: Any, path: str) -> Optional[str]:
    """Where and why ``value`` is not JSON that curator records as it is, or ``None``."""
    if value is None or isinstance(value, (bool, str)):
        return None
    if isinstance(value, int):
        if _INT_RANGE[0] <= value <= _INT_RANGE[1]:
            return None
        return f"`{path}` holds an integer that does not fit in 64 bits"
    if isinstance(value, float):
        if math.isfinite(value):
            return None
        return f"`{path}` holds the float {value}, which JSON cannot hold"
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"`{path}` has a key that is not a string ({type(key).__name__} {key!r})"
            problem = _json_problem(item, f"{path}.{key}")
            if problem is not None:
                return problem
        return None
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            problem = _json_problem(item, f"{path}[{i}]")
            if problem is not None:
                return problem
        return None
    return f"`{path}` holds a `{type(value).__name__}`, which JSON cannot hold"


def _check_json(index: int, name: str, value: Any) -> None:
    # Checked here, and not left to the native reader, so that the error names the
    # message's own field rather than a path in the record.
    problem = _json_problem(value, name)
    if problem is not None:
        raise _format_error(
            "wrong_type", f"message {index}: {problem}; curator records only what it can give back"
        )


def _mirrored_calls(message: BaseMessage, raw: Any) -> Optional[List[Dict[str, Any]]]:
    """``raw`` when it is the message's ``tool_calls`` in the OpenAI form (as provider
    integrations keep them in ``additional_kwargs["tool_calls"]``), else ``None``."""
    calls = getattr(message, "tool_calls", None)
    if not calls or not isinstance(raw, list) or len(raw) != len(calls):
        return None
    for entry, call in zip(raw, calls):
        if not isinstance(entry, dict) or set(entry) != {"id", "type", "function"}:
            return None
        function = entry["function"]
        if entry["type"] != "function" or not isinstance(function, dict):
            return None
        if set(function) != {"name", "arguments"} or not isinstance(function["arguments"], str):
            return None
        if entry["id"] != call["id"] or function["name"] != call["name"]:
            return None
        try:
            if json.loads(function["arguments"]) != call["args"]:
                return None
        except ValueError:
            return None
    return raw


def _langchain_fields(index: int, message: BaseMessage, converted: Dict[str, Any]) -> Dict[str, Any]:
    """What of ``additional_kwargs`` and ``response_metadata`` ``converted`` does not carry.

    The mirror of the tool calls in ``additional_kwargs`` is not recorded a second time:
    ``converted`` takes the provider's own argument text from it, and reading rebuilds it
    from the recorded (possibly curated) calls, so that it never names a call the view left
    out.
    """
    fields: Dict[str, Any] = {}
    if message.additional_kwargs:
        _check_json(index, "additional_kwargs", message.additional_kwargs)
        kwargs = dict(message.additional_kwargs)
        mirrored = _mirrored_calls(message, kwargs.get("tool_calls"))
        if mirrored is not None:
            converted["tool_calls"] = [{**c, "function": dict(c["function"])} for c in mirrored]
            del kwargs["tool_calls"]
            fields["tool_calls_mirrored"] = True
        if kwargs:
            # What the OpenAI message itself carries (a `refusal`, the `developer` role)
            # comes back in `additional_kwargs` without help.
            carried = convert_to_messages([converted])[0].additional_kwargs
            kwargs = {k: v for k, v in kwargs.items() if k not in carried or carried[k] != v}
        if kwargs:
            fields["additional_kwargs"] = kwargs
    if message.response_metadata:
        _check_json(index, "response_metadata", message.response_metadata)
        fields["response_metadata"] = dict(message.response_metadata)
    # The fields of AI and tool messages that the OpenAI message does not carry, when set.
    for name, unset in _MESSAGE_FIELDS:
        value = getattr(message, name, unset)
        # `is` for None: an artifact may be any object, whose `==` need not give a bool.
        if value is None if unset is None else (type(value) is type(unset) and value == unset):
            continue
        _check_json(index, name, value)
        fields[name] = value
    return fields


def _to_messages(items: List[Dict[str, Any]]) -> List[BaseMessage]:
    """Rebuilds LangChain messages from recorded items, with their LangChain fields."""
    # LangChain's converter would put the key into `additional_kwargs` itself.
    fields = [item.pop(_LANGCHAIN_KEY, None) for item in items]
    messages = convert_to_messages(items)
    for item, message, field in zip(items, messages, fields):
        if not field:
            continue
        kwargs = dict(field.get("additional_kwargs") or {})
        if field.get("tool_calls_mirrored") and item.get("tool_calls"):
            kwargs["tool_calls"] = item["tool_calls"]
        if kwargs:
            message.additional_kwargs = {**message.additional_kwargs, **kwargs}
        if field.get("response_metadata"):
            message.response_metadata = field["response_metadata"]
        for name, _unset in _MESSAGE_FIELDS:
            if name in field:
                setattr(message, name, field[name])
    return messages


def _to_record(index: int, message: Any) -> Dict[str, Any]:
    if not isinstance(message, BaseMessage):
        raise _format_error(
            "wrong_type", f"message {index}: expected a LangChain message, found a `{type(message).__name__}`"
        )
    converted = convert_to_openai_messages(message)
    if not isinstance(converted, dict):
        raise _format_error(
            "unsupported_message", f"message {index}: a `{type(message).__name__}` that is not one OpenAI message"
        )
    content = message.content
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") in _OPENAI_PARTS for p in content):
        # LangChain would flatten a single text part to a string: keep the parts as given.
        converted["content"] = [dict(p) for p in content if isinstance(p, dict)]
    if message.id is not None:
        converted["id"] = message.id
    fields = _langchain_fields(index, message, converted)
    if fields:
        converted[_LANGCHAIN_KEY] = fields
    return converted


class CuratorChatMessageHistory(BaseChatMessageHistory):
    """LangChain's ``BaseChatMessageHistory`` recorded by curator, keyed by ``session_id``.

    ``store`` is a SQLite file's path or a PostgreSQL URL. With ``max_tokens`` or
    ``pipeline``, ``messages`` is the curated view (never a tool call without its result);
    without, every message. Messages round-trip their type (system, human, AI, tool),
    content (text or text and image parts), tool calls, ``tool_call_id``, ``id``, ``name``,
    ``additional_kwargs`` and ``response_metadata``. The last two are recorded under the
    message's key ``"langchain"`` (what the OpenAI message does not already carry: a
    ``refusal`` is its own key, and ``additional_kwargs["tool_calls"]`` when it mirrors the
    tool calls is recorded once, as the calls); they are not curated (no strategy reads them,
    redaction included) and cost no tokens in the budget. A value JSON cannot hold in either
    raises ``FormatError`` naming the message and the key, and nothing is recorded. An AI
    message's ``usage_metadata`` and ``invalid_tool_calls``, and a tool message's
    ``artifact`` and ``status``, are recorded there too when they are set (not their
    defaults), under their own names, and refused by name in the same way: a tool's artifact
    must be JSON to be recorded.

    ``clear()`` starts a new evaluation of the key: what was recorded stays in the record.
    """

    def __init__(
        self,
        session_id: str,
        store: Union[str, "os.PathLike[str]"],
        *,
        max_tokens: Optional[int] = None,
        pipeline: Union[Mapping[str, Any], str, None] = None,
    ) -> None:
        store = os.fspath(store) if isinstance(store, os.PathLike) else store
        self._native: Union[ItemSession, _Closed] = ItemSession(
            session_id, store, format="openai", max_tokens=max_tokens, pipeline=pipeline
        )
        self.session_id: str = self._native.session_id

    @property
    def messages(self) -> List[BaseMessage]:  # type: ignore[override]
        """The messages, or the curated view when the history has a pipeline."""
        return _to_messages(self._native.get_items())

    def get_messages(self, limit: Optional[int] = None) -> List[BaseMessage]:
        """The newest ``limit`` messages as recorded (uncurated), or ``messages`` without it."""
        return _to_messages(self._native.get_items(limit))

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Records messages, all of them or none.

        Raises ``FormatError`` naming the first message that cannot be recorded.
        """
        self._native.add_items([_to_record(i, m) for i, m in enumerate(messages)])

    def clear(self) -> None:
        """Empties the history for later calls; the record keeps what was there."""
        self._native.clear()

    async def aget_messages(self) -> List[BaseMessage]:
        """``messages``, read and curated on a worker thread, off the event loop."""
        return await asyncio.to_thread(lambda: self.messages)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        await asyncio.to_thread(self.add_messages, list(messages))

    async def aclear(self) -> None:
        await asyncio.to_thread(self.clear)

    def close(self) -> None:
        """Lets go of the store (when no other session of the process uses it). Later calls
        raise ``StoreError`` (kind ``closed``); closing twice does nothing."""
        self._native = _Closed(self.session_id)

    def __enter__(self) -> "CuratorChatMessageHistory":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _Closed:
    """What a closed history holds instead of its session: every call says it is closed."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.is_postgres = False

    def __getattr__(self, name: str) -> Any:
        error = StoreError(f"session `{self.session_id}` was closed")
        error.kind = "closed"
        raise error
