"""Starting an MCP client for a server, and listing the server's tools.

A :class:`ServerSpec` says how to reach a server: a command started over stdio (with its arguments, extra
environment and working folder), or the URL of a Streamable HTTP server (with extra headers).
:func:`open_client` starts a client session for a spec; the upstream connections
(:class:`prompt_composer.mcp.upstreams.Upstreams`) hold one per server, and :func:`list_server_tools` (what the
MCP importer calls) starts one, lists every tool and stops it.

Needs the optional ``mcp`` SDK (the ``mcp`` extra); it is imported on first use, so this
module loads without it.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any, TextIO

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..errors import MissingExtraError
from ..shared.extras import needs_extra
from .replies import ReadableReplies

_MAX_PAGES = 1000  # tools/list pages followed, so a server that never stops paging cannot hold the import


class ServerSpec(BaseModel):
    """One entry of ``mcpServers``: a command to start over stdio, or the URL of a Streamable HTTP server.

    Keys other clients keep beside these (``type``, ``disabled``, ``alwaysAllow``, ``timeout``…) are ignored,
    as those clients ignore each other's; a known key with a wrong type is an error."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    command: str | None = Field(default=None, min_length=1)
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = Field(default=None, pattern=r"^https?://")
    headers: dict[str, str] = Field(default_factory=dict)
    disabled: bool = False
    # Claude Code's and VS Code's transport: "stdio", "http" (Streamable HTTP) or "sse", which no client here
    # speaks (the HTTP+SSE transport was deprecated in 2025-03-26).
    type: str | None = None

    @model_validator(mode="after")
    def _one_transport(self) -> ServerSpec:
        if self.type == "sse":
            raise ValueError(
                'type "sse" is the deprecated HTTP+SSE transport, which is not supported: give the server\'s '
                'Streamable HTTP URL with "type": "http"'
            )
        if (self.command is None) == (self.url is None):
            raise ValueError('give either "command" (a server started over stdio) or "url" (Streamable HTTP)')
        return self

    def describe(self) -> str:
        return self.url if self.url is not None else " ".join((self.command or "", *self.args))


def require_sdk(feature: str) -> None:
    """Raise :class:`MissingExtraError` naming the ``mcp`` extra when the SDK (``mcp`` and its ``mcp_types``) is not
    installed: a command checks this first, so a missing extra is one line, not a traceback from deep inside a
    server that had started. The packages are found, not imported: importing the SDK takes over a second, and the
    command's own options are checked before it loads."""
    try:
        found = all(importlib.util.find_spec(name) is not None for name in ("anyio", "mcp", "mcp_types"))
    except (ImportError, ValueError) as exc:  # a finder that refuses the name; a module without a spec
        raise MissingExtraError(needs_extra(feature, "mcp"), extra="mcp") from exc
    if not found:
        raise MissingExtraError(needs_extra(feature, "mcp"), extra="mcp")


def sdk_installed() -> bool:
    """Whether the ``mcp`` SDK this module starts clients with can be imported."""
    try:
        import anyio  # noqa: F401
        from mcp import Client, StdioServerParameters, stdio_client  # noqa: F401
    except ImportError:
        return False
    return True


@asynccontextmanager
async def open_client(spec: ServerSpec, *, errlog: TextIO | None = None) -> AsyncIterator[Any]:
    """A started, initialized MCP client session for ``spec`` (the SDK's ``Client``), stopped on exit.

    A stdio server inherits this process's environment (plus ``spec.env``); its stderr goes to ``errlog`` when
    given, else where the SDK sends it.
    """
    from mcp import Client, StdioServerParameters, stdio_client

    target: Any
    async with AsyncExitStack() as stack:
        if spec.url is not None:
            if spec.headers:
                import httpx2
                from mcp.client.streamable_http import streamable_http_client

                http = await stack.enter_async_context(httpx2.AsyncClient(headers=spec.headers))
                target = _Transport(streamable_http_client(spec.url, http_client=http))
            else:
                target = spec.url
        else:
            assert spec.command is not None
            params = StdioServerParameters(
                command=spec.command, args=list(spec.args), env={**os.environ, **spec.env}, cwd=spec.cwd
            )
            # A reply the SDK cannot parse fails its request at once, rather than leaving it to time out.
            transport = stdio_client(params, errlog=errlog) if errlog is not None else stdio_client(params)
            target = ReadableReplies(transport)
        client = await stack.enter_async_context(Client(target, cache=None))
        yield client


class _Transport:
    """Adapts an SDK transport context manager to ``Client``'s Transport protocol."""

    def __init__(self, context: Any) -> None:
        self._context = context

    async def __aenter__(self) -> Any:
        return await self._context.__aenter__()

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._context.__aexit__(*exc)


@dataclass(frozen=True)
class ServerTools:
    """What a server says about itself (``initialize`` → ``serverInfo`` and ``instructions``) and its tools, as
    ``tools/list`` JSON."""

    name: str | None
    version: str | None
    tools: tuple[dict[str, Any], ...]
    title: str | None = None
    description: str | None = None  # serverInfo.description (protocol versions that carry one)
    instructions: str | None = None


async def all_tools(client: Any) -> list[Any]:
    """Every tool the server lists, following ``nextCursor`` until it ends or repeats."""
    tools: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(_MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor or cursor in seen:
            break
        seen.add(cursor)
    return tools


def list_server_tools(spec: ServerSpec, *, timeout: float, errlog: TextIO | None = None) -> ServerTools:
    """Start the server of ``spec``, list every tool, and stop it; ``timeout`` bounds all of it together.

    Raises what the SDK raises: ``TimeoutError`` past the timeout, ``OSError`` when the command cannot be
    started, and others (often in exception groups) when the server fails or answers badly.
    """
    import anyio

    async def run() -> ServerTools:
        with anyio.fail_after(timeout):
            async with open_client(spec, errlog=errlog) as client:
                info = client.server_info
                instructions = client.instructions
                tools = await all_tools(client)
        raw = tuple(t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools)
        return ServerTools(
            info.name if info is not None else None,
            info.version if info is not None else None,
            raw,
            _text(getattr(info, "title", None)),
            _text(getattr(info, "description", None)),
            _text(instructions),
        )

    return anyio.run(run)


def _text(value: Any) -> str | None:
    """A string the server sent, or ``None`` (a server may send anything where a string belongs)."""
    return value if isinstance(value, str) and value.strip() else None
