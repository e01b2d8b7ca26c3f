"""Native tool definitions in each provider's format, so one registry serves Anthropic and OpenAI agents.

The composer produces Anthropic-format definitions (``name``, ``description``, ``input_schema``); this module
converts them to OpenAI's Chat Completions tools (``{"type": "function", "function": {name, description,
parameters}}``). The JSON Schema is passed through unchanged, as a copy the caller may edit (for example to
add OpenAI's strict-mode ``additionalProperties: false``) without touching the composer's cached prompts.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

Provider = Literal["anthropic", "openai"]
PROVIDERS: tuple[Provider, ...] = ("anthropic", "openai")


def to_openai_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """One Anthropic-format tool definition as an OpenAI Chat Completions function tool."""
    return {
        "type": "function",
        "function": {
            "name": tool["name"],
            "description": tool.get("description", ""),
            "parameters": copy.deepcopy(tool.get("input_schema", {"type": "object", "properties": {}})),
        },
    }


def tools_for(provider: Provider, tools: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The composed tool list (Anthropic format) in ``provider``'s format."""
    if provider == "anthropic":
        return [copy.deepcopy(dict(t)) for t in tools]
    if provider == "openai":
        return [to_openai_tool(t) for t in tools]
    raise ValueError(f"unknown provider {provider!r}; known: {', '.join(PROVIDERS)}")


@dataclass(frozen=True)
class Sdk:
    """A provider's SDK client, and the base class of its API errors (what the CLI needs to run and report)."""

    client: Any
    api_error: type[Exception]
