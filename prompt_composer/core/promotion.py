"""Promotion policies: when a recent-use FIFO change reaches the prompt. Pure: no SDK import.

Used by the Anthropic middleware (``prompt_composer.anthropic``) and by the cost replay (``prompt_composer.replay``).
"""

from __future__ import annotations

from typing import get_args

from .fetch import fetch_tool_doc
from .modes import PromotionPolicy
from .registry import Registry

Policy = PromotionPolicy
POLICIES: tuple[Policy, ...] = get_args(PromotionPolicy)
# Chosen with the cost replay (README, "Promotion policies"): it keeps the prompt fixed for the task like
# task_start, costs the same whenever the model fetches a brief tool's doc before using it, and still puts the
# full text in front of the model (once, at the end of the conversation) when it does not.
DEFAULT_POLICY: Policy = "inline"


def inline_text(registry: Registry, tool: str) -> str:
    """The text block the ``inline`` policy appends after a tool's first executed result."""
    return (
        f"[prompt-composer] Full documentation of `{tool}`, shown once because this is its first use in the task:"
        f"\n\n{fetch_tool_doc(registry.tool(tool))}"
    )
