"""A LangChain chat message history on curator's stores, with optional curation.

::

    from curator_context.langchain import CuratorChatMessageHistory

    history = CuratorChatMessageHistory("user-42", "sessions.db", max_tokens=8_000)
    history.add_messages([HumanMessage("hi")])
    history.messages  # the curated view

Messages are recorded as OpenAI Chat Completions messages (with the LangChain message's
``id``), keyed by the session id, in a SQLite file or PostgreSQL, as the Agents SDK session
records its items; the history lives in Rust.
"""

import asyncio
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage, convert_to_messages, convert_to_openai_messages

from ._native import FormatError, ItemSession

__all__ = ["CuratorChatMessageHistory"]

# Content parts the OpenAI format carries as they are; other LangChain blocks go through
# LangChain's own conversion.
_OPENAI_PARTS = ("text", "image_url")


def _format_error(kind: str, message: str) -> FormatError:
    error = FormatError(message)
    error.kind = kind
    return error


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
        converted["content"] = [dict(p) for p in content]
    if message.id is not None:
        converted["id"] = message.id
    return converted


class CuratorChatMessageHistory(BaseChatMessageHistory):
    """LangChain's ``BaseChatMessageHistory`` recorded by curator, keyed by ``session_id``.

    ``store`` is a SQLite file's path or a PostgreSQL URL. With ``max_tokens`` or
    ``pipeline``, ``messages`` is the curated view (never a tool call without its result);
    without, every message. Messages round-trip their type (system, human, AI, tool),
    content (text or text and image parts), tool calls, ``tool_call_id``, ``id`` and ``name``;
    ``additional_kwargs`` and ``response_metadata`` are not recorded.

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
        self._native = ItemSession(session_id, store, format="openai", max_tokens=max_tokens, pipeline=pipeline)
        self.session_id: str = self._native.session_id

    @property
    def messages(self) -> List[BaseMessage]:  # type: ignore[override]
        """The messages, or the curated view when the history has a pipeline."""
        return convert_to_messages(self._native.get_items())

    def get_messages(self, limit: Optional[int] = None) -> List[BaseMessage]:
        """The newest ``limit`` messages as recorded (uncurated), or ``messages`` without it."""
        return convert_to_messages(self._native.get_items(limit))

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Records messages, all of them or none.

        Raises ``FormatError`` naming the first message that cannot be recorded.
        """
        self._native.add_items([_to_record(i, m) for i, m in enumerate(messages)])

    def clear(self) -> None:
        """Empties the history for later calls; the record keeps what was there."""
        self._native.clear()

    async def aget_messages(self) -> List[BaseMessage]:
        if self._native.is_postgres:
            return await asyncio.to_thread(lambda: self.messages)
        return self.messages

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        await asyncio.to_thread(self.add_messages, list(messages))

    async def aclear(self) -> None:
        await asyncio.to_thread(self.clear)
