"""A LangChain v1 agent middleware: every model call of a ``create_agent`` run is sent the
curated view of the agent's messages, and the agent's state keeps every message.

::

    from langchain.agents import create_agent
    from curator_context.middleware import CuratorMiddleware

    agent = create_agent(model, tools, middleware=[CuratorMiddleware(max_tokens=8_000)])

Needs the ``langchain`` package (v1). See ``docs/python.md``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Awaitable, Callable, Dict, List, Mapping, Optional, Tuple, Union

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import BaseMessage, SystemMessage, convert_to_openai_messages
from langchain_core.utils.function_calling import convert_to_openai_tool

from ._langchain import curate_langchain, view_of
from ._native import CuratorError, HeldHistory, count_tokens, default_pipeline, pipeline_with_reserve
from ._trim import config_error

__all__ = ["CuratorMiddleware"]

# What a wrapped model call may return, as LangChain types it.
_Result = Any


class CuratorMiddleware(AgentMiddleware):
    """Curates what each model call of an agent is sent, before the call; the agent's state
    (and its checkpoints) keep every message.

    ``max_tokens`` is the default pipeline's budget: redaction of secrets, then views that
    keep the provider's prompt cache (between compactions a call is sent the previous call's
    messages plus what was appended, byte for byte). Or give ``pipeline`` (a
    ``StrategyConfig`` as a dict, TOML or JSON text). The system message is curated with the
    messages (it is always kept), and the tools sent with each call are reserved from the
    budget when ``reserve_tools`` (their JSON schemas, counted with o200k).

    The views are a function of the messages alone, so a resumed run is sent what the first
    one was. The conversation is held in Rust between calls: a call whose messages start
    with the last call's, unchanged (compared with copies of their fields kept from the last
    call), converts and counts only the new ones, so it costs what was appended, not the
    history. A message edited in place is noticed, and the conversation read again.

    Raises ``ConfigError`` for a bad pipeline; a model call raises ``BudgetTooSmall`` when
    the budget cannot hold what curation never leaves out.
    """

    def __init__(
        self,
        max_tokens: Optional[int] = None,
        *,
        pipeline: Union[Mapping[str, Any], str, None] = None,
        reserve_tools: bool = True,
    ) -> None:
        super().__init__()
        if pipeline is not None and max_tokens is None:
            self._pipeline: Union[Mapping[str, Any], str] = pipeline
        elif max_tokens is not None and pipeline is None:
            self._pipeline = default_pipeline(max_tokens)
        else:
            raise config_error("invalid_argument", "give `max_tokens` (the default pipeline's budget) or `pipeline`, not both")
        # Checked now, not at the first model call.
        curate_langchain([], None, self._pipeline)
        self._reserve_tools = reserve_tools
        # The conversation held in Rust between calls (with the pipeline it was made for):
        # each call converts and counts only the messages it has not seen.
        self._held: Optional[Tuple[Tuple[Tuple[int, str], ...], HeldHistory, List[Any]]] = None

    @property
    def name(self) -> str:
        return "CuratorMiddleware"

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> _Result:
        """Sends the model the curated view of ``request``'s messages."""
        return handler(self.curated(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> _Result:
        """As ``wrap_model_call``, curating on a worker thread, off the event loop."""
        curated = await asyncio.to_thread(self.curated, request)
        return await handler(curated)

    def curated(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """``request`` with its system message and messages curated."""
        system = request.system_message
        given: List[Any] = ([system] if system is not None else []) + list(request.messages)
        if not given:
            return request
        # The same tools, unchanged, keep the same reserve, pipeline and held history: a call
        # counts no schema and builds no pipeline again. A tool changed in place (its
        # description, say) is counted again.
        tools = list(request.tools) if self._reserve_tools else []
        key = tuple((id(tool), _fingerprint(tool)) for tool in tools)
        if self._held is None or self._held[0] != key:
            pipeline: Union[Mapping[str, Any], str] = self._pipeline
            if tools:
                pipeline = pipeline_with_reserve(pipeline=pipeline, extra=_tool_tokens(tools))
            # The tools are kept with the key, so that their ids name them while it stands.
            self._held = (key, HeldHistory(pipeline=pipeline), tools)
        kept = self._held[1].curate(given, convert=convert_to_openai_messages, base=BaseMessage)
        view = view_of(given, kept)
        if system is None:
            return request.override(messages=view)
        # Every system message is kept: the first of the view is this one, or its redaction.
        first = view[0] if view else None
        if not isinstance(first, SystemMessage):
            raise CuratorError("the curated view does not start with the agent's system message")
        return request.override(system_message=first, messages=view[1:])


def _fingerprint(tool: Any) -> str:
    """What a tool's schema is made from, as text: a dict tool's JSON, or the fields of a
    tool object (its name, description, arguments' schema and the rest), so that a tool
    changed in place between calls is told apart (converting every tool to its schema on
    every call would cost more than the curation)."""
    fields = tool if isinstance(tool, dict) else getattr(tool, "__dict__", None)
    if fields is None:
        return repr(tool)
    try:
        return json.dumps(fields, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        return repr(fields)


def _tool_tokens(tools: List[Any]) -> int:
    """The tokens of the tools' JSON schemas, counted with o200k."""
    schemas = [tool if isinstance(tool, dict) else convert_to_openai_tool(tool) for tool in tools]
    return count_tokens(json.dumps(schemas, separators=(",", ":")))
