"""LangChain message objects: read through the OpenAI format, handed back by position."""

from typing import Any, Callable, Dict, List, Mapping, Optional, Union

from . import _native
from ._native import FormatError


def _format_error(kind: str, message: str) -> FormatError:
    error = FormatError(message)
    error.kind = kind
    return error


def curate_langchain(
    messages: Any,
    max_tokens: Optional[int],
    pipeline: Union[Mapping[str, Any], str, None],
    counts: Optional[List[int]] = None,
    convert: Optional[Callable[[Any], Any]] = None,
) -> List[Any]:
    """Curates LangChain messages; kept messages are the objects given, in the view's order.
    With ``counts`` (one per message), a lone token budget counts message ``i`` as
    ``counts[i]``. ``convert`` turns a message into its OpenAI dict (LangChain's
    ``convert_to_openai_messages`` by default)."""
    try:
        from langchain_core.messages import BaseMessage, convert_to_messages, convert_to_openai_messages
    except ImportError as missing:
        raise _format_error("langchain_missing", "format=\"langchain\" needs langchain_core installed") from missing
    if not isinstance(messages, (list, tuple)):
        raise _format_error(
            "wrong_type", f"expected a list of LangChain messages, found a `{type(messages).__name__}`"
        )
    given = messages if isinstance(messages, list) else list(messages)
    # Rust reads each message's role from its class, and converts to a dict only the
    # messages curation reads (with a lone token budget, only those it may keep).
    kept = _native.curate_kept(
        given,
        max_tokens,
        pipeline=pipeline,
        convert=convert_to_openai_messages if convert is None else convert,
        base=BaseMessage,
        counts=counts,
    )
    return view_of(given, kept)


def view_of(given: List[Any], kept: List[Any]) -> List[Any]:
    """The view as LangChain messages, from what the extension says of each: a position of
    ``given`` kept unchanged (the object given), ``(position, dict)`` for a message curation
    changed (the object given, with its content and tool calls as changed and every other
    field its own: id, name, artifact, metadata), or a dict for a message it made (a note)."""
    from langchain_core.messages import convert_to_messages

    out: List[Any] = []
    for item in kept:
        if isinstance(item, int):
            out.append(given[item])
        elif isinstance(item, tuple):
            out.append(_changed(given[item[0]], item[1]))
        else:
            out.append(convert_to_messages([item])[0])
    return out


def _changed(original: Any, written: Any) -> Any:
    from langchain_core.messages import AIMessage, convert_to_messages

    new = convert_to_messages([written])[0]
    update: Dict[str, Any] = {"content": new.content}
    if isinstance(original, AIMessage) and isinstance(new, AIMessage):
        update["tool_calls"] = new.tool_calls
        mirrored = original.additional_kwargs.get("tool_calls")
        if isinstance(mirrored, list):
            # The provider's own form of the calls, as langchain-openai keeps it: the calls
            # the view kept.
            kept = {call["id"] for call in new.tool_calls}
            calls = [call for call in mirrored if isinstance(call, dict) and call.get("id") in kept]
            kwargs = {k: v for k, v in original.additional_kwargs.items() if k != "tool_calls"}
            update["additional_kwargs"] = {**kwargs, "tool_calls": calls} if calls else kwargs
    return original.model_copy(update=update)
