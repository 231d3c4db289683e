"""LangChain message objects: read through the OpenAI format, handed back by position."""

from typing import Any, Callable, List, Mapping, Optional, Union

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
    return [given[item] if isinstance(item, int) else convert_to_messages([item])[0] for item in kept]
