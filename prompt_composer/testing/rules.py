"""The rules of the Messages API's tool deferral that the scripted server enforces, so protocol tests fail the way
the real API would: a request may not defer every tool, and a ``tool_reference`` (inside a ``tool_result``) must
name a tool the request declares with ``defer_loading``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


def messages_problem(body: Mapping[str, Any]) -> str | None:
    """Why the real Messages API would answer this request with a 400, as far as deferral goes; ``None`` if fine."""
    tools = [t for t in body.get("tools") or [] if isinstance(t, Mapping)]
    deferred = {str(t.get("name")) for t in tools if t.get("defer_loading") is True}
    if tools and len(deferred) == len(tools):
        return "tools: at least one tool must not have defer_loading set"
    for where, name in _references(body.get("messages") or []):
        if not name:
            return f"{where}: a tool_reference block belongs inside a tool_result's content"
        if name not in deferred:
            declared = "declared without defer_loading" if any(t.get("name") == name for t in tools) else "not declared"
            return f"{where}: tool_reference names {name!r}, which is {declared} in tools"
    return None


def _references(messages: Any) -> Iterator[tuple[str, str]]:
    """(where, tool name) of every tool_reference block; one outside a tool_result is reported with an empty name."""
    for index, message in enumerate(messages if isinstance(messages, list) else []):
        content = message.get("content") if isinstance(message, Mapping) else None
        for number, block in enumerate(content if isinstance(content, list) else []):
            if not isinstance(block, Mapping):
                continue
            where = f"messages.{index}.content.{number}"
            if block.get("type") == "tool_reference":
                yield where, ""
            inner = block.get("content") if block.get("type") == "tool_result" else None
            for part in inner if isinstance(inner, list) else []:
                if isinstance(part, Mapping) and part.get("type") == "tool_reference":
                    yield where, str(part.get("tool_name"))
