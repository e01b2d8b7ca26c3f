"""``prompt-composer serve``: one mode of the registry as an MCP server, for MCP clients that cannot change how
they build their prompt (Claude Code, Cursor, Codex CLI, Roo Code, Goose…).

What a client sees is what the composer would send:

- ``tools/list``: the permanent tools and the task's recent tools with their full text, every other tool of the
  mode with its brief (schema kept, without parameter descriptions, so it stays callable), and
  ``fetch_tool_description``. A discovery mode lists its permanent tools, ``tool_search``,
  ``fetch_tool_description`` and ``call_tool``; the tools a search finds join the list.
- One task session per MCP session. A call that changes what the list would hold (a tool enters or leaves the
  recent-use FIFO, a search finds tools) is followed by ``notifications/tools/list_changed``. The list keeps its
  order: an entry whose text changed moves to the end, so what comes before it stays byte-identical (a client
  that re-reads the list keeps its prompt cache up to there).
- ``tools/call``: the same access policy as everywhere (:func:`~prompt_composer.discovery.check_call`: the
  mode allows the tool, the arguments match its schema, file restrictions hold). An imported tool goes to its
  upstream server (:mod:`prompt_composer.upstreams`), any other tool to its executor; with neither, or when the
  upstream fails, the client gets an error result naming why.
- ``events`` (an :class:`~prompt_composer.events.EventLog`, ``serve --log FILE``): the loop's events, with
  ``provider: "mcp"``, task ``mcp-<12 hex>`` per MCP session, no ``iteration`` and ``call_id: null`` (MCP calls
  carry none), plus a ``list`` event per ``tools/list``.

The gateway speaks the session-based MCP protocol (the ``initialize`` handshake): a task's FIFO needs a session to
live in. Its ``server/discover`` answer names only handshake-era versions, which every SDK client reads as "use
``initialize``".
"""

from __future__ import annotations

import inspect
import json
import sys
import time
import uuid
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.builtins import (
    CALL_TOOL_NAME,
    FETCH_TOOL_NAME,
    TOOL_SEARCH_NAME,
    call_tool_definition,
    fetch_tool_definition,
    tool_search_definition,
)
from ..core.composer import Composer
from ..core.fetch import handle_fetch
from ..core.modes import Mode
from ..core.prompt import ComposedPrompt
from ..core.registry import Registry
from ..core.session import TaskSession
from ..discovery.search import LazySearch, ToolSearch
from ..discovery.tools import CallResult, SearchToolResult, check_call, handle_tool_search, search_fields
from ..errors import ExecutorError, UpstreamError
from ..learn.events import EventLog
from ..safety.executors import ToolExecutor
from .upstreams import Upstreams


@dataclass
class _Client:
    """One MCP session: its task session and the list as last sent (name → definition JSON, in list order)."""

    task: TaskSession
    listed: dict[str, str] = field(default_factory=dict)
    task_id: str = field(default_factory=lambda: f"mcp-{uuid.uuid4().hex[:12]}")  # names the task in events


class Gateway:
    """Serves ``mode`` of ``registry`` over MCP. ``upstreams`` routes imported tools (open it with ``async with``
    in the serving event loop); ``executors`` run the other tools (sync or async callables, as in the tool loop);
    ``events`` receives what was listed and called (see :mod:`prompt_composer.events`).
    """

    def __init__(
        self,
        registry: Registry,
        mode: str,
        *,
        upstreams: Upstreams | None = None,
        executors: Mapping[str, ToolExecutor] | None = None,
        composer: Composer | None = None,
        search: ToolSearch | None = None,
        events: EventLog | None = None,
    ) -> None:
        self.registry = registry
        self.mode: Mode = registry.mode(mode)
        self.composer = composer if composer is not None else Composer(registry)
        self.upstreams = upstreams
        self.executors = dict(executors or {})
        if events is not None and not isinstance(events, EventLog):
            raise TypeError(
                f"events takes an EventLog (EventLog(sink) in front of a sink), not {type(events).__name__}"
            )
        self.events = events
        self._search = LazySearch(registry, search)
        self._clients: weakref.WeakKeyDictionary[Any, _Client] = weakref.WeakKeyDictionary()
        self.server = self._build_server()

    # -- what a client sees ----------------------------------------------------------------------------

    def definitions(self, task: TaskSession) -> dict[str, dict[str, Any]]:
        """The tools the composer would send for ``task`` now, by name, in the composer's order."""
        mode = self.mode
        prompt = self.composer.compose(mode, task)
        full = set(prompt.full)
        out: dict[str, dict[str, Any]] = {}
        for name in (*prompt.full, *prompt.brief):
            out[name] = self.composer.definition(name, full=name in full)[0]
        if prompt.discovery:
            out[TOOL_SEARCH_NAME] = tool_search_definition(mode)
        out[FETCH_TOOL_NAME] = fetch_tool_definition(mode)
        if prompt.discovery:
            out[CALL_TOOL_NAME] = call_tool_definition(mode)
        # The composer lists tools in mode order; keep that order for the first list.
        order = [n for n in mode.allowed if n in out] + [n for n in out if n not in mode.allowed]
        return {name: out[name] for name in order}

    def tool_list(self, client: _Client) -> list[dict[str, Any]]:
        """The list for ``client``: entries unchanged since the last list keep their place, changed and new
        ones go to the end (see the module docstring)."""
        current = self.definitions(client.task)
        encoded = {name: json.dumps(d, sort_keys=True) for name, d in current.items()}
        kept = [name for name, text in client.listed.items() if encoded.get(name) == text]
        unchanged = set(kept)
        order = kept + [name for name in current if name not in unchanged]
        client.listed = {name: encoded[name] for name in order}
        if self.events is not None:
            full = self.composer.compose(self.mode, client.task).full
            self._emit(client, "list", tools=len(order), full=[name for name in order if name in full])
        return [current[name] for name in order]

    def _signature(self, client: _Client) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """What decides the list for ``client``: which tools are full and which brief (the mode is fixed). Read
        from the composer's cached prompt, so a call costs no re-encoding of every definition."""
        prompt = self.composer.compose(self.mode, client.task)
        return prompt.full, prompt.brief

    # -- answering a call ------------------------------------------------------------------------------

    async def answer(self, client: _Client, name: str, arguments: Mapping[str, Any]) -> tuple[list[Any], bool]:
        """A call's content blocks and error flag. Never raises for anything the model or an upstream did."""
        mode = self.mode
        # How the tools were listed when the call was made, for the event log only (a cached composition).
        shown = self.composer.compose(mode, client.task) if self.events is not None else None
        if name == FETCH_TOOL_NAME:
            fetched = handle_fetch(self.registry, mode, arguments, session=client.task)
            outcome = "refused" if fetched.is_error else "ok"
            self._emit(client, "fetch", call_id=None, tool=fetched.tool, outcome=outcome)
            if fetched.is_error:
                self._refusal(client, fetched.tool, "fetch", fetched.content)
            self._call_event(client, shown, name, None, outcome, 0.0, arguments, fetched.content)
            return [_text(fetched.content)], fetched.is_error
        if name == TOOL_SEARCH_NAME and mode.config.discovery:
            found = handle_tool_search(self._search.get(), mode, arguments, session=client.task)
            self._search_events(client, found)
            outcome = "error" if found.is_error else "ok"
            self._call_event(client, shown, name, None, outcome, 0.0, arguments, found.content)
            return [_text(found.content)], found.is_error
        if name == CALL_TOOL_NAME and mode.config.discovery:
            checked = check_call(self.registry, mode, arguments)
            inner = arguments.get("name")
            refused, via = (inner if isinstance(inner, str) and inner else name), CALL_TOOL_NAME
        else:
            checked = check_call(self.registry, mode, {"name": name, "arguments": arguments})
            refused, via = name, None
        if isinstance(checked, CallResult):
            self._refusal(client, refused, via, checked.content)
            self._call_event(client, shown, name, None, "refused", 0.0, arguments, checked.content)
            return [_text(checked.content)], True
        tool, tool_input = checked
        start = time.perf_counter()
        content, outcome = await self._execute(tool, tool_input)
        duration = time.perf_counter() - start
        if outcome == "ok":
            before = client.task.recent(mode) if self.events is not None else ()
            client.task.record_use(tool)
            if self.events is not None and tool not in before and tool in client.task.recent(mode):
                self._emit(client, "promotion", tool=tool, kind="fifo")
        elif outcome == "refused":
            self._refusal(client, tool, via, _texts(content))
        self._call_event(client, shown, tool, via, outcome, duration, tool_input, _texts(content))
        return content, outcome != "ok"

    async def _execute(self, tool: str, arguments: dict[str, Any]) -> tuple[list[Any], str]:
        """The call's content blocks and its outcome: ``ok``, ``error`` (it failed) or ``refused`` (nothing can
        run it here)."""
        doc = self.registry.tools[tool]
        if doc.origin is not None and self.upstreams is not None:
            try:
                result = await self.upstreams.call(doc.origin.server, doc.origin.name, arguments)
            except UpstreamError as exc:
                return [_text(f"Error: {tool} failed: {exc}")], "error"
            return list(result.content), "error" if result.is_error else "ok"
        executor = self.executors.get(tool)
        if executor is None:
            where = (
                f"it comes from MCP server {doc.origin.server!r}, and no servers file was given (--servers)"
                if doc.origin is not None
                else "it has no executor in this gateway"
            )
            return [_text(f"Error: {tool} cannot be run here: {where}. Nothing was run.")], "refused"
        try:
            import anyio

            value = await anyio.to_thread.run_sync(executor, arguments)
            if inspect.isawaitable(value):  # an async executor called from the thread returned a coroutine
                value = await value
        except ExecutorError as exc:
            return [_text(f"Error: {tool} failed: {exc}")], "error"
        except Exception as exc:  # an executor bug is the model's error result, not a dead gateway
            return [_text(f"Error: {tool} failed: {type(exc).__name__}: {exc}")], "error"
        return [_text(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str))], "ok"

    # -- the event log (see prompt_composer.events) ----------------------------------------------------

    def _emit(self, client: _Client, kind: str, /, **fields: Any) -> None:
        if self.events is not None:
            self.events.emit(
                kind,
                task=client.task_id,
                mode=self.mode.slug,
                fingerprint=self.registry.fingerprint,
                provider="mcp",
                **fields,
            )

    def _refusal(self, client: _Client, tool: str, via: str | None, text: str) -> None:
        self._emit(client, "refusal", call_id=None, tool=tool, via=via, reason=text.removeprefix("Error: "))

    def _call_event(
        self,
        client: _Client,
        shown: ComposedPrompt | None,
        tool: str,
        via: str | None,
        outcome: str,
        duration: float,
        arguments: Mapping[str, Any],
        output: str,
    ) -> None:
        if self.events is None or shown is None:
            return
        listed = "full" if tool in shown.full else "brief" if tool in shown.brief else None
        content = {"input": arguments, "output": output} if self.events.include_content else {}
        self._emit(
            client,
            "tool_call",
            call_id=None,
            tool=tool,
            via=via,
            outcome=outcome,
            duration_s=duration,
            listed=listed,
            expanded=False,
            **content,
        )

    def _search_events(self, client: _Client, found: SearchToolResult) -> None:
        if self.events is None or found.result is None:
            return
        self._emit(client, "search", call_id=None, **search_fields(found, include_content=self.events.include_content))
        for tool in found.activated:
            self._emit(client, "promotion", tool=tool, kind="discovered")

    # -- the MCP server --------------------------------------------------------------------------------

    def _client(self, ctx: Any) -> _Client:
        # ``ctx.session`` is built per request; the Connection under it lives as long as the MCP session (one per
        # stdio process, one per Mcp-Session-Id over HTTP). The SDK has no public accessor for it yet.
        key = getattr(ctx.session, "_connection", None) or ctx.session
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = _Client(TaskSession())
        return client

    def _build_server(self) -> Any:
        import mcp_types as types
        from mcp.server.lowlevel.server import NotificationOptions, Server
        from mcp.shared.exceptions import MCPError
        from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

        from ..shared.version import VERSION as __version__

        gateway = self

        async def list_tools(ctx: Any, params: Any) -> Any:
            client = gateway._client(ctx)
            return types.ListToolsResult(
                tools=[
                    types.Tool(name=d["name"], description=d["description"], input_schema=d["input_schema"])
                    for d in gateway.tool_list(client)
                ]
            )

        async def call_tool(ctx: Any, params: Any) -> Any:
            client = gateway._client(ctx)
            before = gateway._signature(client)
            content, is_error = await gateway.answer(client, params.name, params.arguments or {})
            if gateway._signature(client) != before:
                await ctx.session.send_tool_list_changed()
            return types.CallToolResult(content=content, is_error=is_error)

        async def discover(ctx: Any, params: Any) -> Any:
            # A task's FIFO lives in an MCP session, which the stateless 2026-07-28 era does not have. Refusing
            # the probe is how a server says so: every SDK client then falls back to the initialize handshake.
            raise MCPError(
                code=types.METHOD_NOT_FOUND,
                message="this server speaks the session-based protocol; use initialize",
                data={"supported": list(HANDSHAKE_PROTOCOL_VERSIONS)},
            )

        class _Server(Server[Any]):
            def create_initialization_options(self, notification_options: Any = None, *args: Any, **kw: Any) -> Any:
                # The HTTP session manager asks with no options: list_changed is sent, so say so.
                options = notification_options or NotificationOptions(tools_changed=True)
                return super().create_initialization_options(options, *args, **kw)

        mode = self.mode
        instructions = (
            f"Tools of prompt-composer's {mode.config.name!r} mode. Tools described briefly: call "
            f"{FETCH_TOOL_NAME} with a tool's name to read its parameters and rules before the first use."
        )
        if mode.config.discovery:
            instructions = (
                f"Tools of prompt-composer's {mode.config.name!r} mode: call {TOOL_SEARCH_NAME} to find the tool "
                f"for a need; found tools join this list (and can be called through {CALL_TOOL_NAME})."
            )
        server = _Server(
            "prompt-composer",
            version=__version__,
            instructions=instructions,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
        )
        server.add_request_handler("server/discover", types.RequestParams, discover)
        return server


def _text(text: str) -> Any:
    import mcp_types as types

    return types.TextContent(type="text", text=text)


def _texts(content: list[Any]) -> str:
    """The text of a result's content blocks (what the log keeps of an upstream's output)."""
    return "\n".join(str(getattr(block, "text", "")) for block in content)


async def serve_stdio(gateway: Gateway) -> None:
    """Serve one client over stdin/stdout until it closes them."""
    from mcp.server.runner import serve_loop
    from mcp.server.stdio import stdio_server

    server = gateway.server
    async with stdio_server() as (read, write), server.lifespan(server) as state:
        # The handshake-only loop (Server.run would let a 2026-era probe lock the connection stateless).
        await serve_loop(server, read, write, lifespan_state=state, init_options=server.create_initialization_options())


async def serve_http(gateway: Gateway, *, host: str = "127.0.0.1", port: int = 8000, ready: Any = None) -> None:
    """Serve Streamable HTTP at ``http://host:port/mcp``; prints ``READY <url>`` on stdout once listening (port
    0 picks a free one), or calls ``ready(url)``."""
    import anyio
    import uvicorn

    app = gateway.server.streamable_http_app(host=host)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on"))

    async def announce() -> None:
        while not server.started:
            await anyio.sleep(0.02)
        bound = server.servers[0].sockets[0].getsockname()[1]
        url = f"http://{host}:{bound}/mcp"
        if ready is not None:
            ready(url)
        else:
            print(f"READY {url}", flush=True)

    async with anyio.create_task_group() as group:
        group.start_soon(announce)
        await server.serve()
        group.cancel_scope.cancel()
    if not server.started:
        print(f"error: cannot listen on {host}:{port}", file=sys.stderr)
