"""The tools prompt-composer answers itself: ``fetch_tool_description``, ``tool_search`` and ``call_tool``.

Their names and native definitions live here, in the core, so the composer can list them without importing the
code that answers them (:mod:`prompt_composer.core.fetch`, :mod:`prompt_composer.discovery.tools`).
"""

from __future__ import annotations

from typing import Any

from .modes import Mode

FETCH_TOOL_NAME = "fetch_tool_description"
TOOL_SEARCH_NAME = "tool_search"
CALL_TOOL_NAME = "call_tool"
DISCOVERY_TOOL_NAMES = (TOOL_SEARCH_NAME, FETCH_TOOL_NAME)
# Tools the loop answers itself: using them says nothing about which tools a task needs.
LOOP_TOOLS = frozenset({FETCH_TOOL_NAME, TOOL_SEARCH_NAME, CALL_TOOL_NAME})
DEFAULT_LIMIT = 5
MAX_LIMIT = 20


_FETCH_DESCRIPTION = (
    "Get the full documentation of a tool of this mode: every parameter, rules and examples. "
    "Call it before the first use of a tool that is described only briefly."
)


def fetch_tool_definition(mode: Mode) -> dict[str, Any]:
    """The native tool definition; ``name`` is limited to the mode's tools so models cannot guess others. A mode
    without tools gets no ``enum``: an empty one is a schema servers refuse (llama.cpp answers 400)."""
    name: dict[str, Any] = {"type": "string", "description": "The tool's exact name."}
    if mode.allowed:
        name["enum"] = list(mode.allowed)
    return {
        "name": FETCH_TOOL_NAME,
        "description": _FETCH_DESCRIPTION,
        "input_schema": {"type": "object", "properties": {"name": name}, "required": ["name"]},
    }


def tool_search_definition(mode: Mode | None = None) -> dict[str, Any]:
    """The native definition of ``tool_search``. It names no tools, so it never changes within a mode."""
    return {
        "name": TOOL_SEARCH_NAME,
        "description": (
            "Find the tools for a step of your task among the many this mode has: describe what you want to do "
            "in a few words, in any language. The tools it returns become available to call for the rest of "
            "the task, with their workflow guidance. Search again with other words when nothing fits."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "What you want to do, e.g. 'find where a function is used'.",
                },
                "limit": {
                    "type": "integer",
                    "description": f"How many tools to return (default {DEFAULT_LIMIT}).",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                },
            },
            "required": ["query"],
        },
    }


def call_tool_definition(mode: Mode) -> dict[str, Any]:
    """The native definition of ``call_tool``: one fixed entry through which any tool of the mode is called."""
    return {
        "name": CALL_TOOL_NAME,
        "description": (
            "Call a tool of this mode by name, with its arguments as an object that matches the tool's input "
            f"schema. Read the tool's parameters first with {FETCH_TOOL_NAME} if you have not seen them."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool's exact name.", "enum": list(mode.allowed)},
                "arguments": {"type": "object", "description": "The tool's input, as its schema describes."},
            },
            "required": ["name", "arguments"],
        },
    }
