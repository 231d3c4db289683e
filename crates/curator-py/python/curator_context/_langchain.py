"""LangChain message objects: read through the OpenAI format, handed back by position."""

from typing import Any, List, Mapping, Optional, Union

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
) -> List[Any]:
    """Curates LangChain messages; kept messages are the objects given, in the view's order."""
    try:
        from langchain_core.messages import BaseMessage, convert_to_messages, convert_to_openai_messages
    except ImportError as missing:
        raise _format_error("langchain_missing", "format=\"langchain\" needs langchain_core installed") from missing
    if not isinstance(messages, (list, tuple)):
        raise _format_error(
            "wrong_type", f"expected a list of LangChain messages, found a `{type(messages).__name__}`"
        )
    given = list(messages)
    dicts = []
    for index, message in enumerate(given):
        if not isinstance(message, BaseMessage):
            raise _format_error(
                "wrong_type",
                f"message {index}: a list of LangChain messages holds only messages, found a "
                f"`{type(message).__name__}`",
            )
        converted = convert_to_openai_messages(message)
        if not isinstance(converted, dict):
            # A message LangChain writes as several OpenAI messages (tool results inside a
            # human message) could not be handed back as the object it was.
            raise _format_error(
                "unsupported_message",
                f"message {index}: a `{type(message).__name__}` that is not one OpenAI message",
            )
        dicts.append(converted)
    kept = _native.curate_kept(dicts, max_tokens, pipeline=pipeline)
    return [given[item] if isinstance(item, int) else convert_to_messages([item])[0] for item in kept]
