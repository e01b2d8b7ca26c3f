"""A server's reply the SDK cannot read becomes an error answer to the request it was for.

The SDK's stdio client parses each line the server writes; a line it cannot parse (JSON nested deeper than its
parser's recursion limit, ~200 levels, as a tool whose input schema nests 300 levels makes a ``tools/list`` reply)
reaches the session as an exception that is only logged, and the request waits out its whole timeout. So an
import blamed a server that had answered at once ("did not list its tools within 90 s").

:class:`ReadableReplies` wraps a client transport's read stream: such a line that is a reply with an id becomes a
JSON-RPC error for that id, saying why, and naming the tool when it is a tool's input schema over
:data:`~prompt_composer.core.bounds.MAX_SCHEMA_DEPTH` levels. The request fails at once with that message.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..core.bounds import MAX_SCHEMA_DEPTH, json_depth, quoted_name

INTERNAL_ERROR = -32603
# The reply's id when the line is too deep even for Python's parser: the top-level "id" member, after "jsonrpc".
_LEADING_ID = re.compile(r'\A\s*\{\s*(?:"jsonrpc"\s*:\s*"[^"\\]{0,20}"\s*,\s*)?"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,200}")')


def unreadable_reply(line: str) -> dict[str, Any] | None:
    """The error answer that stands for the reply ``line`` (which the SDK could not parse), or ``None`` when it is
    not a reply to a request (nothing waits for it then)."""
    try:
        value = json.loads(line)
    except RecursionError:
        match = _LEADING_ID.match(line[:1024])
        if match is None:
            return None
        token = match.group(1)
        ident: Any = token[1:-1] if token.startswith('"') else int(token)
        return _error(ident, "its reply is nested too deeply to read (several hundred levels)")
    except ValueError:
        return None  # not JSON: no id to answer
    if not isinstance(value, dict) or "method" in value:
        return None
    ident = value.get("id")
    if isinstance(ident, bool) or not isinstance(ident, str | int):
        return None
    return _error(ident, _why(value))


def _why(reply: dict[str, Any]) -> str:
    result = reply.get("result")
    tools = result.get("tools") if isinstance(result, dict) else None
    if isinstance(tools, list):
        for number, tool in enumerate(tools, 1):
            if not isinstance(tool, dict):
                continue
            schema = tool.get("inputSchema")
            if json_depth(schema, MAX_SCHEMA_DEPTH) > MAX_SCHEMA_DEPTH:
                name = tool.get("name")
                shown = quoted_name(name) if isinstance(name, str) else "(no name)"
                return f"tool #{number} ({shown}): the input schema is nested more than {MAX_SCHEMA_DEPTH} levels deep"
    deep = json_depth(reply, MAX_SCHEMA_DEPTH) > MAX_SCHEMA_DEPTH
    return f"its reply is nested more than {MAX_SCHEMA_DEPTH} levels deep" if deep else "its reply could not be read"


def _error(ident: str | int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": INTERNAL_ERROR, "message": message}}


class ReadableReplies:
    """A client transport (an async context manager giving ``(read, write)``) whose read stream turns a reply the
    SDK could not parse into the error answer for its request (see :func:`unreadable_reply`)."""

    def __init__(self, transport: Any) -> None:
        self._transport = transport

    async def __aenter__(self) -> tuple[Any, Any]:
        read, write = await self._transport.__aenter__()
        return _Read(read), write

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._transport.__aexit__(*exc)


class _Read:
    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    async def receive(self) -> Any:
        item = await self._stream.receive()
        if not isinstance(item, Exception):
            return item
        from mcp.shared.message import SessionMessage
        from mcp_types import jsonrpc_message_adapter
        from pydantic import ValidationError

        errors = item.errors() if isinstance(item, ValidationError) else []
        line = errors[0].get("input") if len(errors) == 1 and errors[0]["type"] == "json_invalid" else None
        answer = unreadable_reply(line) if isinstance(line, str) else None
        if answer is None:
            return item
        return SessionMessage(jsonrpc_message_adapter.validate_python(answer, by_name=False))

    def __aiter__(self) -> _Read:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _Read:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()
