"""curator for Python: curate the conversation history of LLM agent loops.

``curate(messages, max_tokens=8000)`` takes OpenAI Chat Completions messages, Anthropic
messages or Responses API items (as dicts), curates them in Rust, and returns them in the
format they came in. Errors are ``CuratorError`` subclasses with a ``kind``.
"""

from ._native import (
    BudgetTooSmall,
    ConfigError,
    CuratorError,
    FormatError,
    curate,
    default_pipeline,
)

__all__ = [
    "BudgetTooSmall",
    "ConfigError",
    "CuratorError",
    "FormatError",
    "curate",
    "default_pipeline",
]
