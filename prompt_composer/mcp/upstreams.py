"""Calls routed to the MCP servers that imported tools came from.

An imported tool doc records ``origin: {server, name}``. A *servers file* says how to reach each server, in the
format MCP clients already use::

    {"mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git"], "env": {}},
                    "docs": {"url": "http://127.0.0.1:8000/mcp"}}}

A call to an imported tool goes to the server whose name equals ``origin.server``, under ``origin.name``.

- :class:`Upstreams` holds the connections inside one event loop: each server starts on its first call, is reused,
  and is started again on the call after it died or hung (a call of a tool the server declares read-only is made
  again at once on the restarted server). A server that fails, hangs past the timeout, or is
  missing from the file raises :class:`UpstreamError` naming it; the gateway and the tool loop turn that into an
  error result, never a hung or crashed agent.
- :func:`mcp_executors` gives the tool loop (``wrap(..., executors=...)``, ``prompt-composer run --servers``) an
  executor per routed tool; it runs its own :class:`Upstreams` on a background thread, so the sync loop can
  use it too.

Needs the optional ``mcp`` SDK (``pip install 'prompt-composer-tooldocs[mcp]'``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Mapping
from contextlib import AsyncExitStack, ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import InputFileError, UpstreamError
from ..safety.executors import ToolExecutor
from ..shared.files import read_text
from .client import ServerSpec, all_tools, open_client, require_sdk

if TYPE_CHECKING:
    import anyio

    from ..core.registry import Registry

DEFAULT_CALL_TIMEOUT = 60.0
DEFAULT_START_TIMEOUT = 30.0


class _ServersFile(BaseModel):
    model_config = ConfigDict(extra="ignore")
    mcpServers: dict[str, ServerSpec]  # the key of Claude Code, Claude Desktop, Cursor …


class _VsCodeFile(BaseModel):
    model_config = ConfigDict(extra="ignore")
    servers: dict[str, ServerSpec]  # VS Code's .vscode/mcp.json (its settings.json nests it under "mcp")


def load_servers(path: str | Path) -> dict[str, ServerSpec]:
    """Read a servers file: an MCP client's own config, ``{"mcpServers": {...}}`` (Claude Code, Claude Desktop,
    Cursor) or VS Code's ``{"servers": {...}}`` (``.vscode/mcp.json``; its settings file's ``{"mcp": {"servers":
    …}}`` too). Disabled servers are left out. :class:`InputFileError` names the file and each bad key."""
    where = Path(path)
    try:  # regular files only, size-capped: a FIFO or a device is refused without blocking (InputFileError)
        data = json.loads(read_text(where, what="servers file"))
    except json.JSONDecodeError as exc:
        raise InputFileError(f"{where}:{exc.lineno}: not JSON: {exc.msg}") from None
    except RecursionError:
        raise InputFileError(f"{where}:1: not JSON a reader can take: nested too deeply") from None
    if isinstance(data, dict) and "mcpServers" not in data and isinstance(data.get("mcp"), dict):
        data = data["mcp"]
    model: type[_ServersFile] | type[_VsCodeFile] = (
        _VsCodeFile if isinstance(data, dict) and "servers" in data and "mcpServers" not in data else _ServersFile
    )
    try:
        parsed = model.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            at = ".".join(str(part) for part in error["loc"]) or "(top level)"
            problems.append(f"{where}: {at}: {error['msg']}")
        raise InputFileError("\n".join(problems)) from None
    specs = parsed.mcpServers if isinstance(parsed, _ServersFile) else parsed.servers
    return {name: spec for name, spec in specs.items() if not spec.disabled}


@dataclass(frozen=True)
class UpstreamResult:
    """An upstream's answer to ``tools/call``: its content blocks (the SDK's own objects, passed on as they are),
    whether it is an error result, and its structured content."""

    content: tuple[Any, ...]
    is_error: bool
    structured: Any = None

    def text(self) -> str:
        """The result as text for a model: text blocks as they are, other blocks named (an image is not text)."""
        parts: list[str] = []
        for block in self.content:
            kind = getattr(block, "type", "")
            if kind == "text":
                parts.append(block.text)
            elif kind == "resource":
                resource = block.resource
                parts.append(getattr(resource, "text", None) or f"[resource {resource.uri}]")
            elif kind == "resource_link":
                parts.append(f"[resource link {block.uri}]")
            else:
                parts.append(f"[{kind or 'block'} {getattr(block, 'mime_type', '') or ''}]".replace(" ]", "]"))
        if not parts and self.structured is not None:
            parts.append(json.dumps(self.structured, ensure_ascii=False))
        return "\n".join(parts)


@dataclass
class _Connection:
    client: Any
    stop: anyio.Event
    alive: bool = True
    read_only: frozenset[str] = frozenset()  # the tools the server declares read-only (readOnlyHint, not destructive)


@dataclass
class Upstreams:
    """Connections to the servers of ``servers``, inside one event loop (``async with Upstreams(...) as up``).

    ``call_timeout`` bounds one call, ``start_timeout`` a server's start and handshake. A server that died,
    hung or closed its connection is dropped; the next call starts it again. A call whose connection died under it
    is made once more, on the restarted server, only when that server declares the tool read-only
    (``readOnlyHint`` true, ``destructiveHint`` not): reading twice is harmless, and a small model told "it is
    restarted on the next call" often never calls again. Any other tool is never retried (a tool that writes must
    not run twice because the first answer was lost), nor is a call that timed out (it would wait as long again)."""

    servers: Mapping[str, ServerSpec]
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    start_timeout: float = DEFAULT_START_TIMEOUT
    source: str = "the servers file"
    _connections: dict[str, _Connection] = field(default_factory=dict, init=False, repr=False)
    _locks: dict[str, Any] = field(default_factory=dict, init=False, repr=False)
    _stack: AsyncExitStack | None = field(default=None, init=False, repr=False)
    _group: Any = field(default=None, init=False, repr=False)
    starts: dict[str, int] = field(default_factory=dict, init=False)  # how often each server was started
    retries: dict[str, int] = field(default_factory=dict, init=False)  # read-only calls made again, per server

    async def __aenter__(self) -> Upstreams:
        import anyio

        self._stack = AsyncExitStack()
        self._group = await self._stack.enter_async_context(anyio.create_task_group())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        for connection in self._connections.values():
            connection.stop.set()
        self._connections.clear()
        if self._stack is not None:
            stack, self._stack = self._stack, None
            await stack.aclose()

    async def call(
        self, server: str, tool: str, arguments: Mapping[str, Any], *, timeout: float | None = None
    ) -> UpstreamResult:
        """Call ``tool`` (its upstream name) on ``server``; raises :class:`UpstreamError` when the server cannot
        answer. A tool's own error comes back as a result with ``is_error``."""
        spec = self.servers.get(server)
        if spec is None:
            known = ", ".join(sorted(self.servers)) or "none"
            raise UpstreamError(
                f"MCP server {server!r} is not in {self.source} (servers there: {known}); {tool} was not run",
                server=server,
                tool=tool,
            )
        limit = self.call_timeout if timeout is None else timeout
        try:
            return await self._call_once(server, spec, tool, arguments, limit)
        except _ConnectionLost as lost:
            if not lost.read_only:
                raise lost.error from None
        self.retries[server] = self.retries.get(server, 0) + 1
        try:
            return await self._call_once(server, spec, tool, arguments, limit)
        except _ConnectionLost as again:
            raise again.error from None

    async def _call_once(
        self, server: str, spec: ServerSpec, tool: str, arguments: Mapping[str, Any], limit: float
    ) -> UpstreamResult:
        import anyio

        connection = await self._connection(server, spec, tool)
        try:
            with anyio.fail_after(limit):
                result = await connection.client.call_tool(tool, dict(arguments))
        except TimeoutError:
            self._drop(server, connection)
            raise UpstreamError(
                f"MCP server {server!r} did not answer {tool} within {limit:g} s; it is restarted on the next "
                "call (the tool may or may not have run)",
                server=server,
                tool=tool,
            ) from None
        except Exception as exc:
            if _is_tool_error(exc):  # the server answered with a JSON-RPC error: it is alive
                raise UpstreamError(f"MCP server {server!r} refused {tool}: {exc}", server=server, tool=tool) from None
            self._drop(server, connection)
            raise _ConnectionLost(
                UpstreamError(
                    f"MCP server {server!r} failed during {tool} ({_one_line(exc)}); it is restarted on the next "
                    "call (the tool may or may not have run)",
                    server=server,
                    tool=tool,
                ),
                read_only=tool in connection.read_only,
            ) from None
        return UpstreamResult(tuple(result.content), bool(result.is_error), getattr(result, "structured_content", None))

    def _drop(self, server: str, connection: _Connection) -> None:
        connection.alive = False
        connection.stop.set()
        if self._connections.get(server) is connection:
            del self._connections[server]

    async def _connection(self, server: str, spec: ServerSpec, tool: str) -> _Connection:
        import anyio

        if self._group is None:
            raise RuntimeError("use Upstreams inside `async with`")
        lock = self._locks.setdefault(server, anyio.Lock())
        async with lock:  # one start per server, however many calls arrive at once
            existing = self._connections.get(server)
            if existing is not None and existing.alive:
                return existing
            try:
                with anyio.fail_after(self.start_timeout):
                    connection: _Connection = await self._group.start(self._hold, server, spec)
            except TimeoutError:
                raise UpstreamError(
                    f"MCP server {server!r} ({spec.describe()}) did not start within {self.start_timeout:g} s; "
                    f"{tool} was not run",
                    server=server,
                    tool=tool,
                ) from None
            except Exception as exc:
                raise UpstreamError(
                    f"MCP server {server!r} ({spec.describe()}) could not be started: {_one_line(exc)}; "
                    f"{tool} was not run",
                    server=server,
                    tool=tool,
                ) from None
            connection.read_only = await _read_only_tools(connection.client, self.start_timeout)
            self._connections[server] = connection
            self.starts[server] = self.starts.get(server, 0) + 1
            return connection

    async def _hold(self, server: str, spec: ServerSpec, *, task_status: Any) -> None:
        """Keep one server's connection open (its context must be entered and left in one task) until dropped."""
        import anyio

        started = False
        connection: _Connection | None = None
        try:
            async with open_client(spec) as client:
                connection = _Connection(client, anyio.Event())
                task_status.started(connection)
                started = True
                await connection.stop.wait()
        except Exception:
            if not started:
                raise
            # A server that died while held: its error surfaced on the call that noticed; drop quietly here.
        finally:
            if connection is not None:
                connection.alive = False


class _ConnectionLost(Exception):
    """The connection died during a call (raised inside :class:`Upstreams`, which reports ``error``, or calls
    again when the server declared the tool ``read_only``)."""

    def __init__(self, error: UpstreamError, *, read_only: bool) -> None:
        super().__init__(str(error))
        self.error = error
        self.read_only = read_only


async def _read_only_tools(client: Any, timeout: float) -> frozenset[str]:
    """The tools a server declares read-only (``readOnlyHint`` true, ``destructiveHint`` not); none when its list
    cannot be read within ``timeout`` (then nothing is ever called twice)."""
    import anyio

    try:
        with anyio.fail_after(timeout):
            listed = await all_tools(client)
    except Exception:
        return frozenset()
    return frozenset(
        tool.name
        for tool in listed
        if tool.annotations is not None
        and tool.annotations.read_only_hint is True
        and tool.annotations.destructive_hint is not True
    )


def _is_tool_error(exc: BaseException) -> bool:
    """A JSON-RPC error the server sent (unknown tool, invalid params): the connection itself is fine."""
    try:
        from mcp.shared.exceptions import MCPError
    except ImportError:  # pragma: no cover - the mcp extra is what got us here
        return False
    code = getattr(getattr(exc, "error", None), "code", None)
    # -32000 is the SDK's "Connection closed"; the other codes are the server's own answers.
    return isinstance(exc, MCPError) and code is not None and code != -32000


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(dict.fromkeys(_one_line(inner) for inner in exc.exceptions))
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


# --------------------------------------------------------------------------------------------- the tool loop


class McpExecutors(Mapping[str, ToolExecutor]):
    """An executor for every routed tool of a registry, with its :class:`Upstreams` on a background thread.

    Use it as a context manager (or call :meth:`close`) so the upstream servers are stopped."""

    def __init__(self, executors: dict[str, ToolExecutor], stack: ExitStack, upstreams: Upstreams) -> None:
        self._executors = executors
        self._stack = stack
        self.upstreams = upstreams

    def __getitem__(self, name: str) -> ToolExecutor:
        return self._executors[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._executors)

    def __len__(self) -> int:
        return len(self._executors)

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> McpExecutors:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def mcp_executors(
    registry: Registry,
    servers: str | Path | Mapping[str, ServerSpec],
    *,
    call_timeout: float = DEFAULT_CALL_TIMEOUT,
    start_timeout: float = DEFAULT_START_TIMEOUT,
) -> McpExecutors:
    """Executors for the registry's imported tools (those with an ``origin``), routed to their servers.

    A tool whose server is missing from ``servers`` still gets an executor: it raises :class:`UpstreamError`
    naming the server, so the model reads why instead of "no executor". Results come back as text (see
    :meth:`UpstreamResult.text`); an upstream error result raises, so the loop reports it as an error.
    """
    require_sdk("routing calls to MCP servers (--servers)")
    from anyio.from_thread import start_blocking_portal

    specs = load_servers(servers) if isinstance(servers, str | Path) else dict(servers)
    source = str(servers) if isinstance(servers, str | Path) else "the servers given"
    upstreams = Upstreams(specs, call_timeout=call_timeout, start_timeout=start_timeout, source=source)
    stack = ExitStack()
    portal = stack.enter_context(start_blocking_portal())
    stack.enter_context(portal.wrap_async_context_manager(upstreams))

    def executor(server: str, tool: str) -> ToolExecutor:
        def execute(arguments: Mapping[str, Any]) -> Any:
            try:
                asyncio.get_running_loop()
            except RuntimeError:  # the sync loop: wait here
                return _text_or_raise(portal.call(upstreams.call, server, tool, dict(arguments)), server, tool)
            # The async loop awaits this; nothing is sent until it does (a coroutine dropped unawaited runs nothing).
            return _routed(portal, upstreams, server, tool, dict(arguments))

        return execute

    executors = {
        name: executor(doc.origin.server, doc.origin.name)
        for name, doc in registry.tools.items()
        if doc.origin is not None
    }
    return McpExecutors(executors, stack, upstreams)


async def _routed(portal: Any, upstreams: Upstreams, server: str, tool: str, arguments: dict[str, Any]) -> str:
    future = portal.start_task_soon(upstreams.call, server, tool, arguments)
    return _text_or_raise(await asyncio.wrap_future(future), server, tool)


def _text_or_raise(result: UpstreamResult, server: str, tool: str) -> str:
    if result.is_error:
        raise UpstreamError(result.text() or f"{tool} on {server!r} failed (no message)", server=server, tool=tool)
    return result.text()
