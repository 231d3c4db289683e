"""Type stubs of the Rust extension module (crates/curator-py/src/lib.rs)."""

from typing import Any, Dict, List, Literal, Mapping, Optional, Tuple, TypeVar, Union

Messages = TypeVar("Messages")

__version__: str
"""The package's version."""

class CuratorError(Exception):
    """Every error curator raises."""

    kind: str
    """The Rust error's variant in snake case (``missing_field``, ``budget_too_small``, ...)."""

class FormatError(CuratorError):
    """Messages that cannot be read or written in their format, or whose format cannot be told."""

class ConfigError(CuratorError):
    """A pipeline or an argument that cannot be read or built."""

class StoreError(CuratorError):
    """A session store that cannot be opened, read or written (``kind``: ``unavailable``,
    ``busy``, ``corrupt``, ``bad_key``, ...)."""

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
    format: Optional[str] = "auto",
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
    counts: Optional[List[int]] = None,
) -> List[Union[int, Tuple[int, Dict[str, Any]], Dict[str, Any]]]:
    """Curates OpenAI messages, or objects of class ``base`` that ``convert`` turns into them;
    per message of the view, the input position it keeps unchanged, ``(position, dict)`` for
    a message a strategy changed, or a dict for one it made. A lone token budget reads only
    what it may keep."""

def bill(
    requests: List[Any],
    *,
    rule: Literal["openai", "anthropic"] = "openai",
    format: Optional[str] = None,
    model: Optional[str] = None,
) -> List[Dict[str, Any]]:
    """Bills a conversation's requests, in order, as the provider's prompt cache bills them:
    per request ``input_tokens``, ``cache_read_tokens``, ``cache_write_tokens``,
    ``uncached_tokens``, and with ``model`` its input ``price`` in dollars."""

def count_tokens(text: str, tokenizer: Literal["o200k", "cl100k", "estimate"] = "o200k") -> int:
    """Tokens of ``text``: for what is sent beside the messages, to reserve from a budget."""

def pipeline_with_reserve(
    max_tokens: Optional[int] = None,
    *,
    pipeline: Union[Mapping[str, Any], str, None] = None,
    extra: int = 0,
) -> Dict[str, Any]:
    """The pipeline (as ``curate`` takes it) with every budget reserving ``extra`` more tokens."""

def head_positions(messages: List[Dict[str, Any]]) -> Optional[Tuple[List[int], Optional[int]]]:
    """The system messages' positions and the task's in OpenAI dicts, from their roles."""

def forget_conversations() -> None:
    """Forgets the conversations ``curate`` remembers, releasing the strings they hold."""

def default_pipeline(max_tokens: int) -> Dict[str, Any]:
    """The default pipeline for a budget, as the dict ``curate`` takes as ``pipeline``."""

class ItemSession:
    """A session of items in a store (``curator_context.agents`` and ``.langchain`` wrap it)."""

    def __init__(
        self,
        session_id: str,
        store: str,
        *,
        format: Literal["responses", "openai"] = "responses",
        max_tokens: Optional[int] = None,
        pipeline: Union[Mapping[str, Any], str, None] = None,
    ) -> None: ...
    @property
    def session_id(self) -> str: ...
    @property
    def is_postgres(self) -> bool: ...
    def __len__(self) -> int: ...
    def get_items(self, limit: Optional[int] = None) -> List[Any]:
        """The items, the newest ``limit`` of them, or (with a pipeline, no limit) the curated view."""
    def get_items_noting(self, limit: Optional[int] = None, *, reserve: int = 0) -> Tuple[List[Any], Optional[str]]:
        """As ``get_items``, with the ``UnsendableWarning``'s text returned instead of given."""
    def get_items_unchanged(self, *, reserve: int = 0) -> Optional[Tuple[List[Any], Optional[str]]]:
        """The curated view again when nothing was recorded since the last one and that is
        known without waiting (one read of SQLite's change stamp); ``None`` otherwise."""
    def add_items(self, items: Any) -> None:
        """Records items after the session's items, all or none."""
    def pop_item(self) -> Optional[Any]:
        """Removes the newest item and returns it."""
    def clear(self) -> None:
        """Starts the session afresh; the record keeps what was there."""

class HeldHistory:
    """A conversation held in Rust between calls: each call hands the whole list, and when it
    starts with the last call's messages, unchanged since (compared with copies kept of
    them), only the new messages are converted and counted (``curator_context.middleware``).
    A message changed in place is noticed, and the list is then read afresh."""

    def __init__(self, max_tokens: Optional[int] = None, *, pipeline: Union[Mapping[str, Any], str, None] = None) -> None: ...
    def curate(self, messages: List[Any], *, convert: Optional[Any] = None, base: Optional[type] = None) -> List[Union[int, Tuple[int, Dict[str, Any]], Dict[str, Any]]]:
        """Per message of the view: the position of a message kept unchanged, ``(position,
        dict)`` for one a strategy changed, or a dict for one it made."""
    def __len__(self) -> int: ...
