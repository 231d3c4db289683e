"""Type stubs of the Rust extension module (crates/curator-py/src/lib.rs)."""

from typing import Any, Dict, List, Literal, Mapping, Optional, TypeVar, Union

Messages = TypeVar("Messages", List[Dict[str, Any]], Dict[str, Any])

class CuratorError(Exception):
    """Every error curator raises."""

    kind: str
    """The Rust error's variant in snake case (``missing_field``, ``budget_too_small``, ...)."""

class FormatError(CuratorError):
    """Messages that cannot be read or written in their format, or whose format cannot be told."""

class ConfigError(CuratorError):
    """A pipeline or an argument that cannot be read or built."""

class BudgetTooSmall(CuratorError):
    """A token budget smaller than what curation never drops."""

    max_tokens: int
    needed: int

class UnsendableWarning(UserWarning):
    """Messages of the input no provider takes (a tool result answering no call, a call whose
    result never comes): every view leaves them out, and this warning says which."""

def curate(
    messages: Messages,
    max_tokens: Optional[int] = None,
    *,
    pipeline: Union[Mapping[str, Any], str, None] = None,
    format: Optional[Literal["auto", "openai", "anthropic", "responses"]] = "auto",
) -> Messages:
    """Curates messages and returns them in the format and shape they came in.

    ``messages`` is a list of OpenAI Chat Completions messages, Anthropic messages or
    Responses API items, or a request dict holding them under ``messages`` (with ``system``
    for Anthropic; its ``tools`` are reserved from the budget, its other keys come back as
    they were). Give ``max_tokens`` for the default pipeline, or ``pipeline`` (a
    ``StrategyConfig`` as a dict, TOML text or JSON text), not both.

    Raises ``FormatError``, ``ConfigError``, ``BudgetTooSmall`` or ``CuratorError``.
    """

def curate_kept(
    messages: List[Any],
    max_tokens: Optional[int] = None,
    *,
    pipeline: Union[Mapping[str, Any], str, None] = None,
    convert: Optional[Any] = None,
    base: Optional[type] = None,
) -> List[Union[int, Dict[str, Any]]]:
    """Curates OpenAI messages, or objects of class ``base`` that ``convert`` turns into them;
    per message of the view, the input position it keeps unchanged, or the message as a dict
    when a strategy changed or made it. A lone token budget reads only what it may keep."""

def default_pipeline(max_tokens: int) -> Dict[str, Any]:
    """The default pipeline for a budget, as the dict ``curate`` takes as ``pipeline``."""
