"""Discovery: finding the right tools among hundreds (``tool_search``), calling any tool of a mode through one
fixed definition (``call_tool``), embeddings for paraphrases and other languages, and retrieval evaluation.

Built on :mod:`prompt_composer.core` only.
"""

from typing import TYPE_CHECKING

from ..shared.lazy import attach

if TYPE_CHECKING:
    from .embeddings import Embedder, default_embedder
    from .evaluate import EvalQuery, EvalReport, evaluate, load_queries
    from .results import Hit, Miss, SearchResult, Selection
    from .search import LazySearch, ToolSearch
    from .tools import CallResult, SearchToolResult, acall_tool, call_tool, check_call, handle_tool_search

__all__ = [
    "CallResult",
    "Embedder",
    "EvalQuery",
    "EvalReport",
    "Hit",
    "LazySearch",
    "Miss",
    "SearchResult",
    "SearchToolResult",
    "Selection",
    "ToolSearch",
    "acall_tool",
    "call_tool",
    "check_call",
    "default_embedder",
    "evaluate",
    "handle_tool_search",
    "load_queries",
]

__getattr__, __dir__ = attach(__name__, __file__)
