"""A session for the OpenAI Agents SDK on curator's stores, curating every model call of a run.

::

    from agents import Agent, Runner
    from curator_context.agents import CuratorSession

    session = CuratorSession("user-42", "sessions.db", max_tokens=8_000)
    result = await Runner.run(agent, "Where is my parcel?", session=session, run_config=session.run_config())

The session implements the SDK's ``Session`` protocol (``session_id``,
``session_settings``, async ``get_items``, ``add_items``, ``pop_item``, ``clear_session``).
Its items are Responses API items, recorded in a SQLite file (a path) or PostgreSQL (a
``postgres://`` URL), keyed by the session id; the history lives in Rust.

The SDK reads a session once, when a run starts; the items a run makes (tool calls, their
outputs) reach the model without passing through ``get_items``. ``run_config()`` (or
``model_input_filter`` in a ``RunConfig`` of your own) curates what every model call of the
run is sent, with the session's pipeline, so that a run of many tool calls stays within the
budget. See ``docs/python-sessions.md``.
"""

from __future__ import annotations

import asyncio
import json
import os
import warnings
from types import TracebackType
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple, Union

from . import _native
from ._native import ItemSession, UnsendableWarning

if TYPE_CHECKING:
    from agents import RunConfig
    from agents.items import TResponseInputItem
    from agents.memory import SessionSettings
    from agents.run_config import CallModelData, ModelInputData

    Item = TResponseInputItem
else:
    Item = Dict[str, Any]

__all__ = ["CuratorSession", "Session", "curation_filter"]

# A limit no session reaches: every item, uncurated.
_EVERY_ITEM = 2**62


class CuratorSession:
    """An Agents SDK session recorded by curator, keyed by ``session_id``.

    ``store`` is the path of a SQLite file (created when missing) or a PostgreSQL URL
    (``postgres://user@host/db``). Give ``max_tokens`` (the default pipeline's budget) or
    ``pipeline`` (a ``StrategyConfig`` as a dict, TOML or JSON text, as ``curate`` takes) for
    ``get_items()`` to hand the runner the curated view and ``run_config()`` to curate every
    model call; without either, both hand over every item. ``session_settings`` is the SDK's
    ``SessionSettings`` (its ``limit`` makes the runner ask for the newest items, uncurated).

    Opening reads nothing: the record is loaded, off the event loop, by the first call that
    needs it. Nothing is deleted from the record: ``pop_item`` records the removal,
    ``clear_session`` starts a new evaluation of the key; curator's retention (``curator
    prune``) deletes.

    Raises ``StoreError`` when the store cannot be opened, ``ConfigError`` for a bad pipeline
    or argument.
    """

    session_id: str
    session_settings: Optional[SessionSettings]

    def __init__(
        self,
        session_id: str,
        store: Union[str, os.PathLike[str]],
        *,
        max_tokens: Optional[int] = None,
        pipeline: Union[Mapping[str, Any], str, None] = None,
        session_settings: Optional[SessionSettings] = None,
    ) -> None:
        store = os.fspath(store) if isinstance(store, os.PathLike) else store
        self._native: Optional[ItemSession] = ItemSession(
            session_id, store, format="responses", max_tokens=max_tokens, pipeline=pipeline
        )
        self._store = store
        self._max_tokens = max_tokens
        self._pipeline = pipeline
        self.session_id = self._native.session_id
        self.session_settings = session_settings
        # What the last curated `get_items()` handed out and how many items the record held
        # then, and the items added since: a model call whose input is exactly that is sent
        # the curated view of the record, which costs what is new.
        self._handed: Optional[List[Item]] = None
        # Whether this object recorded, popped or cleared since its last curated view: its
        # next view then changed, and is not looked for as it was.
        self._changed = True
        self._held_then = 0
        self._added: List[Item] = []

    def __repr__(self) -> str:
        closed = ", closed" if self._native is None else ""
        return f"CuratorSession(session_id={self.session_id!r}, store={self._store!r}{closed})"

    def _session(self) -> ItemSession:
        if self._native is None:
            raise _closed(self.session_id)
        return self._native

    @property
    def curates(self) -> bool:
        """Whether the session has a pipeline (``max_tokens`` or ``pipeline``)."""
        return self._max_tokens is not None or self._pipeline is not None

    async def get_items(self, limit: Optional[int] = None) -> List[Item]:
        """The session's items, oldest first: the newest ``limit`` of them when given (as the
        SDK's ``SQLiteSession`` returns them; a negative ``limit`` means all of them), else
        the curated view when the session has a pipeline, else all of them.

        Raises ``BudgetTooSmall`` when the budget cannot hold what curation never drops,
        ``StoreError`` when the store cannot be read.
        """
        native = self._session()
        if limit is not None and limit < 0:
            # Every item as recorded, as the SDK's sessions give them for a negative limit.
            limit = _EVERY_ITEM
        items: List[Item]
        # The view handed out last, again, when nothing was recorded since and that is known
        # without waiting; else the reads and the curation run on a worker thread.
        again = native.get_items_unchanged() if limit is None and not self._changed else None
        if again is not None:
            items, note = again
        else:
            items, note = await asyncio.to_thread(native.get_items_noting, limit)
        if note is not None:
            warnings.warn(note, UnsendableWarning, stacklevel=2)
        if limit is None and self.curates:
            self._handed, self._held_then, self._added = list(items), len(native), []
            self._changed = False
        return items

    async def add_items(self, items: List[Item]) -> None:
        """Records items after the session's items, all of them or none.

        Raises ``FormatError`` naming the first item that is not a Responses API item curator
        can give back as it was, ``StoreError`` when the store cannot be written (its SQLite
        file deleted under it, say).
        """
        native = self._session()
        # Iterables become lists; a single item (a dict), a string or None is handed on as it
        # is, for the extension to refuse it for what it is, not for its keys or letters.
        given: Any = items
        if not isinstance(given, (list, tuple, Mapping, str, bytes)) and given is not None:
            given = list(given)
        # A write waits for the disk (SQLite's sync) or the network: off the event loop.
        self._changed = True
        await asyncio.to_thread(native.add_items, given)
        if self._handed is not None and isinstance(given, (list, tuple)):
            self._added.extend(given)

    async def pop_item(self) -> Optional[Item]:
        """Removes the newest item and returns it, or ``None`` when the session is empty.

        The item stays in curator's record, marked removed in the session's head.
        """
        native = self._session()
        self._handed, self._changed = None, True
        popped: Optional[Item] = await asyncio.to_thread(native.pop_item)
        return popped

    async def clear_session(self) -> None:
        """Empties the session: later calls see no items. What was recorded stays in the
        record, under an earlier evaluation of the key."""
        native = self._session()
        self._handed, self._changed = None, True
        await asyncio.to_thread(native.clear)

    async def model_input_filter(self, data: CallModelData[Any]) -> ModelInputData:
        """The SDK's ``call_model_input_filter``: what one model call of a run is sent,
        curated with the session's pipeline (unchanged without one).

        When the call's input is what ``get_items()`` handed the runner followed by the items
        the runner recorded since (the SDK records each turn's items before the next model
        call), the call is sent the curated view of the session's record, which costs what
        was appended since the last call; any other input is curated as it is. Either way
        the view keeps the provider's prompt cache as the pipeline does. The instructions and
        the agent's tools are sent beside the input: their tokens are reserved from the
        budget, so that the whole call stays within it.

        Raises ``BudgetTooSmall`` when the budget cannot hold what curation never drops.
        """
        from agents.run_config import ModelInputData

        model_data = data.model_data
        if not self.curates:
            return model_data
        given = list(model_data.input)
        reserve = beside_tokens(model_data.instructions, data.agent)
        curated, note = await asyncio.to_thread(self._curate_input, given, reserve)
        if note is not None:
            warnings.warn(note, UnsendableWarning, stacklevel=2)
        return ModelInputData(input=curated, instructions=model_data.instructions)

    def _curate_input(self, given: List[Item], reserve: int) -> Tuple[List[Item], Optional[str]]:
        """The view to send, and the warning naming items it left out because no provider
        takes them (``None`` when there are none; the stateless path warns itself)."""
        native = self._session()
        handed, added = self._handed, self._added
        if handed is not None and len(given) == len(handed) + len(added):
            start = len(handed)
            if given[:start] == handed and given[start:] == added:
                view: List[Item]
                view, note = native.get_items_noting(None, reserve=reserve)
                # The record holds exactly what the input holds when no other process added
                # to it since; else the input is curated as it is.
                if len(native) == self._held_then + len(added):
                    return view, note
        pipeline = _native.pipeline_with_reserve(self._max_tokens, pipeline=self._pipeline, extra=reserve)
        curated: List[Item] = _native.curate(given, pipeline=pipeline, format="responses")
        return curated, None

    def run_config(self, **settings: Any) -> RunConfig:
        """An SDK ``RunConfig`` whose ``call_model_input_filter`` is
        :meth:`model_input_filter`, with ``settings`` as its other fields::

            await Runner.run(agent, "hi", session=session, run_config=session.run_config(workflow_name="support"))

        Raises ``ConfigError`` when ``settings`` names ``call_model_input_filter``.
        """
        from agents import RunConfig

        if "call_model_input_filter" in settings:
            error = _native.ConfigError(
                "run_config(): the session's filter is the `call_model_input_filter`; give the "
                "other settings only, or call `model_input_filter` from your own filter"
            )
            error.kind = "invalid_argument"
            raise error
        return RunConfig(call_model_input_filter=self.model_input_filter, **settings)

    def close(self) -> None:
        """Lets go of the store (when no other session of the process uses it). Later calls
        raise ``StoreError`` (kind ``closed``); closing twice does nothing."""
        self._native = None
        self._handed = None

    def __enter__(self) -> CuratorSession:
        return self

    def __exit__(
        self,
        kind: Optional[type[BaseException]],
        value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.close()

    async def __aenter__(self) -> CuratorSession:
        return self

    async def __aexit__(
        self,
        kind: Optional[type[BaseException]],
        value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.close()


def curation_filter(
    max_tokens: Optional[int] = None,
    *,
    pipeline: Union[Mapping[str, Any], str, None] = None,
) -> Any:
    """A ``call_model_input_filter`` for runs without a ``CuratorSession`` (the SDK's own
    sessions, or none): each model call's input is curated with the default pipeline for
    ``max_tokens``, or with ``pipeline``::

        run_config = RunConfig(call_model_input_filter=curation_filter(8_000))

    The pipeline remembers its last history, so a call costs little more than converting
    its input. Raises ``ConfigError`` at once for a bad pipeline; the filter raises
    ``BudgetTooSmall`` when the budget cannot hold what curation never drops.
    """
    # Checked now, not at the first model call.
    _native.curate([], max_tokens, pipeline=pipeline, format="responses")

    async def curate_call(data: CallModelData[Any]) -> ModelInputData:
        from agents.run_config import ModelInputData

        given = list(data.model_data.input)
        reserve = beside_tokens(data.model_data.instructions, data.agent)
        config = _native.pipeline_with_reserve(max_tokens, pipeline=pipeline, extra=reserve)
        curated = await asyncio.to_thread(_native.curate, given, pipeline=config, format="responses")
        return ModelInputData(input=curated, instructions=data.model_data.instructions)

    return curate_call


def beside_tokens(instructions: Optional[str], agent: Any) -> int:
    """The tokens a model call sends beside its input items: the instructions and the
    agent's tools (their names, descriptions and parameter schemas), counted with o200k, to
    be reserved from the budget."""
    tokens = _native.count_tokens(instructions) if instructions else 0
    tools = [
        {
            "name": getattr(tool, "name", ""),
            "description": getattr(tool, "description", "") or "",
            "parameters": getattr(tool, "params_json_schema", None) or {},
        }
        for tool in getattr(agent, "tools", None) or []
    ]
    if tools:
        tokens += _native.count_tokens(json.dumps(tools, separators=(",", ":")))
    return tokens


def _closed(session_id: str) -> _native.StoreError:
    error = _native.StoreError(f"session `{session_id}` was closed")
    error.kind = "closed"
    return error


Session = CuratorSession
"""Another name for :class:`CuratorSession`."""
