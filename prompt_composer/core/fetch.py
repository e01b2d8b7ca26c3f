"""``fetch_tool_description``: the tool a model calls to read the full doc of a briefly described tool.

The handler never raises for a bad request from the model: malformed input, an unknown tool, or one the
current mode does not allow, gets an error *result* (its content starts with ``Error: ``) that says why and
suggests the closest allowed names, and never contains the refused tool's text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .access import not_in_mode
from .builtins import FETCH_TOOL_NAME
from .docs import ToolDoc
from .modes import Mode

if TYPE_CHECKING:
    from .registry import Registry
    from .session import TaskSession


def fetch_tool_doc(doc: ToolDoc) -> str:
    """A fetch result: the full description, then the input schema as JSON."""
    schema = json.dumps(doc.input_schema, ensure_ascii=False, indent=2)
    return f"{doc.full}\n\nInput schema (JSON):\n{schema}"


@dataclass(frozen=True)
class FetchResult:
    """What goes back to the model as the tool_result: ``content`` text, flagged as an error or not."""

    tool: str
    content: str
    is_error: bool
    repeat: bool = False  # a second fetch of a tool already documented in full in the task (answered in one line)


def handle_fetch(
    registry: Registry,
    mode: Mode,
    tool_input: Mapping[str, Any] | Any,
    *,
    session: TaskSession | None = None,
    promote: bool = False,
) -> FetchResult:
    """Answer a fetch_tool_description call in ``mode``.

    With ``promote=True`` a successful fetch also records the tool in the session's FIFO. It is off by
    default: the full text is already in the conversation, and promoting it would change the prompt.
    """
    raw = tool_input.get("name") if isinstance(tool_input, Mapping) else None
    if not isinstance(raw, str) or not raw.strip():
        return FetchResult(
            tool="",
            content=f'Error: {FETCH_TOOL_NAME} needs {{"name": "<tool name>"}}, the tool name as a string. '
            f"Tools of mode {mode.slug!r}: {', '.join(mode.allowed)}.",
            is_error=True,
        )
    name = raw.strip()
    if not mode.allows(name):
        return FetchResult(tool=name, content=not_in_mode(name, mode), is_error=True)
    if promote and session is not None:
        session.record_use(name)
    return FetchResult(tool=name, content=fetch_tool_doc(registry.tools[name]), is_error=False)
