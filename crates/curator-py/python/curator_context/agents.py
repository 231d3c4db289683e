"""A session for the OpenAI Agents SDK on curator's stores, with curation of what it hands the runner.

::

    from agents import Agent, Runner
    from curator_context.agents import CuratorSession

    session = CuratorSession("user-42", "sessions.db", max_tokens=8_000)
    result = await Runner.run(agent, "Where is my parcel?", session=session)

The session implements the SDK's ``Session`` protocol (``session_id``,
``session_settings``, async ``get_items``, ``add_items``, ``pop_item``, ``clear_session``)
without importing the SDK. Its items are Responses API items (dicts), recorded in a SQLite
file (a path) or PostgreSQL (a ``postgres://`` URL), keyed by the session id; the history
lives in Rust, so a call costs what it keeps. See ``docs/python-sessions.md``.
"""

import asyncio
import os
from typing import Any, Dict, List, Mapping, Optional, Union

from ._native import ItemSession

__all__ = ["CuratorSession"]

Item = Dict[str, Any]


class CuratorSession:
    """An Agents SDK session recorded by curator, keyed by ``session_id``.

    ``store`` is the path of a SQLite file (created when missing) or a PostgreSQL URL
    (``postgres://user@host/db``). Give ``max_tokens`` (the default pipeline's budget) or
    ``pipeline`` (a ``StrategyConfig`` as a dict, TOML or JSON text, as ``curate`` takes) for
    ``get_items()`` to hand the runner the curated view; without either it returns every
    item. ``session_settings`` is the SDK's ``SessionSettings`` (its ``limit`` makes the
    runner ask for the newest items, uncurated).

    Nothing is deleted from the record: ``pop_item`` records the removal, ``clear_session``
    starts a new evaluation of the key; curator's retention (``curator prune``) deletes.

    Raises ``StoreError`` when the store cannot be opened, ``ConfigError`` for a bad pipeline
    or argument.
    """

    session_settings: Any = None

    def __init__(
        self,
        session_id: str,
        store: Union[str, "os.PathLike[str]"],
        *,
        max_tokens: Optional[int] = None,
        pipeline: Union[Mapping[str, Any], str, None] = None,
        session_settings: Any = None,
    ) -> None:
        store = os.fspath(store) if isinstance(store, os.PathLike) else store
        self._native = ItemSession(
            session_id, store, format="responses", max_tokens=max_tokens, pipeline=pipeline
        )
        self.session_id: str = self._native.session_id
        self.session_settings = session_settings
        # Read once: `get_items` asks on every call.
        self._threaded: bool = self._native.is_postgres

    def __repr__(self) -> str:
        return f"CuratorSession(session_id={self.session_id!r}, items={len(self._native)})"

    async def get_items(self, limit: Optional[int] = None) -> List[Item]:
        """The session's items, oldest first: the newest ``limit`` of them when given (as the
        SDK's ``SQLiteSession`` returns them), else the curated view when the session has a
        pipeline, else all of them.

        Raises ``BudgetTooSmall`` when the budget cannot hold what curation never drops,
        ``StoreError`` when the store cannot be read.
        """
        if self._threaded:
            return await asyncio.to_thread(self._native.get_items, limit)
        # SQLite: a change stamp (reads only when something was committed), the curation of
        # what is held and copies of the kept items, microseconds; a thread hop would cost
        # more than the call.
        return self._native.get_items(limit)

    async def add_items(self, items: List[Item]) -> None:
        """Records items after the session's items, all of them or none.

        Raises ``FormatError`` naming the first item that is not a Responses API item curator
        can give back as it was, ``StoreError`` when the store cannot be written.
        """
        # A write waits for the disk (SQLite's sync) or the network: off the event loop.
        # Iterables become lists; a single item (a dict), a string or None is handed on as it
        # is, for the extension to refuse it for what it is, not for its keys or letters.
        if not isinstance(items, (list, tuple, Mapping, str, bytes)) and items is not None:
            items = list(items)
        await asyncio.to_thread(self._native.add_items, items)

    async def pop_item(self) -> Optional[Item]:
        """Removes the newest item and returns it, or ``None`` when the session is empty.

        The item stays in curator's record, marked removed in the session's head.
        """
        return await asyncio.to_thread(self._native.pop_item)

    async def clear_session(self) -> None:
        """Empties the session: later calls see no items. What was recorded stays in the
        record, under an earlier evaluation of the key."""
        await asyncio.to_thread(self._native.clear)


Session = CuratorSession
"""The name the issue gives it: ``curator_context.agents.Session``."""
