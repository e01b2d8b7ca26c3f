"""Executors: what the tool loop calls to run a tool, and the built-in read-only ones.

An executor is a plain callable ``(tool_input) -> output``, ready for the tool loop's ``executors`` mapping.
``workspace_executors(root)`` gives ``read_file``, ``list_files``, ``glob`` and ``search_files`` confined to a
workspace folder (see :class:`~prompt_composer.safety.workspace.Workspace`). Nothing here imports anthropic.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Unpack

from .workspace import Limits, Workspace

# An executor gets the tool_use input and returns the tool's output: a string (or anything JSON-serialisable),
# or an awaitable of one (async executors, for the async tool loop).
ToolExecutor = Callable[[Mapping[str, Any]], Any | Awaitable[Any]]

READ_ONLY_TOOLS = ("read_file", "list_files", "glob", "search_files")


def workspace_executors(root: str | Path, **limits: Unpack[Limits]) -> dict[str, ToolExecutor]:
    """``read_file``, ``list_files``, ``glob`` and ``search_files`` confined to ``root``; ``limits`` as for
    :class:`~prompt_composer.safety.workspace.Workspace` (``timeout_s`` bounds each call, 10 s by default)."""
    workspace = Workspace(root, **limits)
    return {
        "read_file": workspace.read_file,
        "list_files": workspace.list_files,
        "glob": workspace.glob,
        "search_files": workspace.search_files,
    }
