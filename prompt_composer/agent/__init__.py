"""The agent loop: one provider-neutral tool loop, with an adapter per provider SDK (Anthropic Messages, OpenAI
Chat Completions and Responses), text-style tool calls for models without native ones, and ``bench``.

No provider SDK is imported until :func:`wrap` sees a client of it.
"""

from typing import TYPE_CHECKING

from ..shared.lazy import attach

if TYPE_CHECKING:
    from .bench import BenchReport, load_tasks, run_bench
    from .providers import tools_for
    from .results import (
        Iteration,
        LoopResult,
        MaxIterationsError,
        PendingCall,
        StopLoop,
        TokenUsage,
        ToolCallRecord,
        ToolLoopError,
        partial_result,
    )
    from .rewriting import model_rewriter
    from .state import WrapOptions
    from .wrapping import wrap

__all__ = [
    "BenchReport",
    "Iteration",
    "LoopResult",
    "MaxIterationsError",
    "PendingCall",
    "StopLoop",
    "TokenUsage",
    "ToolCallRecord",
    "ToolLoopError",
    "WrapOptions",
    "load_tasks",
    "model_rewriter",
    "partial_result",
    "run_bench",
    "tools_for",
    "wrap",
]

__getattr__, __dir__ = attach(__name__, __file__)
