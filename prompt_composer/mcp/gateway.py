"""``prompt-composer serve``: one mode of the registry as an MCP server, for MCP clients that cannot change how
they build their prompt (Claude Code, Cursor, Codex CLI, Roo Code, Goose…).

It serves both protocol eras: clients of the session-based revisions (``initialize``, up to 2025-11-25) and of the
stateless 2026-07-28 revision (``server/discover`` and a per-request envelope), over stdio and Streamable HTTP.

- ``tools/list`` is one list for every connection (:mod:`prompt_composer.mcp.listing`): the permanent tools in
  full, the rest brief or catalog lines, ``fetch_tool_description``, and in discovery and tiered modes
  ``tool_search`` and ``call_tool``; in the mode's order, the same on every start; with ``ttlMs``/``cacheScope``
  for 2026-07-28 clients.
- ``tools/call`` (:mod:`prompt_composer.mcp.answers`): the same access policy as everywhere; imported tools go to
  their upstream servers (:mod:`prompt_composer.mcp.upstreams`). What a task fetches, finds or uses reaches the
  model in results, never by changing the list. A connection's task (its FIFO, what it was shown) lives as long as
  the connection: a stdio process, an HTTP session (``Mcp-Session-Id``); a 2026-07-28 HTTP request stands alone.
  An HTTP client that names its task (``Prompt-Composer-Task``, :mod:`prompt_composer.mcp.tasks`) keeps it in the
  gateway's session store, shared between replicas with Redis.
- With a :class:`~prompt_composer.core.live.LiveRegistry` (``serve --watch``), a reload that changes the list is
  announced: ``notifications/tools/list_changed`` to session-era connections, a ``ToolsListChanged`` event on
  ``subscriptions/listen`` streams for 2026-07-28 clients. Nothing else announces anything.
- ``events`` (an :class:`~prompt_composer.learn.events.EventLog`, ``serve --log FILE``): the loop's events, with
  ``provider: "mcp"``, task ``mcp-<12 hex>`` per connection, no ``iteration`` and ``call_id: null`` (MCP calls
  carry none), plus a ``list`` event per ``tools/list``.
"""

from __future__ import annotations

import logging
import socket
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from ..core.composer import Composer
from ..core.live import LiveRegistry
from ..core.modes import Mode
from ..core.registry import Registry
from ..core.session import InMemorySessionStore, SessionStore, TaskSession
from ..discovery.search import LazySearch, ToolSearch
from ..errors import SessionStoreError, UnknownModeError
from ..learn.events import EventLog
from ..safety.executors import ToolExecutor
from ..shared.net import bare_host, netloc
from .answers import Answers, ClientTask, text_block
from .auth import HttpSecurity, check_exposure
from .framing import MAX_MESSAGE_BYTES, FramedHTTP, framed_stdio
from .listing import DEFAULT_LIST_TTL_MS, Version, build_listing
from .server import build_server
from .tasks import event_task_id, task_key
from .upstreams import Upstreams

log = logging.getLogger(__name__)

_KEPT_VERSIONS = 4  # registry versions whose list and search stay built (a reload usually needs two)

SearchSource = ToolSearch | Callable[[Registry], ToolSearch | None] | None


class Gateway:
    """Serves ``mode`` of ``registry`` (a :class:`Registry`, or a :class:`LiveRegistry` to follow its folder) over
    MCP. ``upstreams`` routes imported tools (open it with ``async with`` in the serving event loop); ``executors``
    run the other tools (sync or async callables, as in the tool loop); ``search`` is the ``tool_search`` index (or
    a function that builds one per registry version; default: a plain one, built on the first search);
    ``events`` receives what was listed and called (see :mod:`prompt_composer.learn.events`); ``list_ttl_ms`` is
    the list's ``ttlMs``; ``sessions`` keeps the tasks HTTP clients name with a ``Prompt-Composer-Task`` header
    (see :mod:`prompt_composer.mcp.tasks`; a ``RedisSessionStore`` shares them between replicas).
    """

    def __init__(
        self,
        registry: Registry | LiveRegistry,
        mode: str,
        *,
        upstreams: Upstreams | None = None,
        executors: Mapping[str, ToolExecutor] | None = None,
        composer: Composer | None = None,
        search: SearchSource = None,
        events: EventLog | None = None,
        list_ttl_ms: int = DEFAULT_LIST_TTL_MS,
        sessions: SessionStore | None = None,
    ) -> None:
        if events is not None and not isinstance(events, EventLog):
            raise TypeError(
                f"events takes an EventLog (EventLog(sink) in front of a sink), not {type(events).__name__}"
            )
        if list_ttl_ms < 0:
            raise ValueError("list_ttl_ms must be 0 or more")
        self.live = registry if isinstance(registry, LiveRegistry) else None
        first = registry.current if isinstance(registry, LiveRegistry) else registry
        self.slug = first.mode(mode).slug  # an unknown mode raises here, before anything is served
        self.list_ttl_ms = list_ttl_ms
        self._answers = Answers(upstreams, executors or {}, events)
        self._search = search
        self._versions: dict[str, Version] = {}
        self._current = self._build(first, composer)
        self._announced = self._current.listing.encoded
        self._refused: set[str] = set()  # registry versions without the mode, reported once
        # Each connection's task: keyed by what lives as long as the connection (see client_of).
        self._clients: weakref.WeakKeyDictionary[Any, ClientTask] = weakref.WeakKeyDictionary()
        # Tasks HTTP clients name (see prompt_composer.mcp.tasks); Redis to share them between replicas.
        self.sessions: SessionStore = sessions if sessions is not None else InMemorySessionStore()
        self._legacy: weakref.WeakSet[Any] = weakref.WeakSet()  # session-era connections, for list_changed
        # The server, and with a live registry the subscriptions/listen fan-out (else None).
        self.server, self._bus = build_server(self)

    # -- what every connection sees --------------------------------------------------------------------

    @property
    def registry(self) -> Registry:
        return self.version().registry

    @property
    def mode(self) -> Mode:
        return self.version().mode

    @property
    def upstreams(self) -> Upstreams | None:
        return self._answers.upstreams

    @property
    def executors(self) -> dict[str, ToolExecutor]:
        return self._answers.executors

    @property
    def events(self) -> EventLog | None:
        return self._answers.events

    def version(self) -> Version:
        """What is served now: the live registry's current version (when it still has the mode), else the one
        this gateway was built with."""
        if self.live is None:
            return self._current
        registry = self.live.current
        if registry is self._current.registry:
            return self._current
        known = self._versions.get(registry.fingerprint)
        if known is None:
            try:
                known = self._build(registry, None)
            except UnknownModeError as exc:
                if registry.fingerprint not in self._refused:
                    self._refused.add(registry.fingerprint)
                    kept = self._current.registry.fingerprint
                    log.warning(
                        "# serve: the reloaded docs have no mode %r (%s); version %s keeps serving",
                        self.slug,
                        exc,
                        kept,
                    )
                return self._current
        self._current = known
        return known

    def _build(self, registry: Registry, composer: Composer | None) -> Version:
        mode = registry.mode(self.slug)
        if composer is None:
            kept = self.live.version(registry.fingerprint) if self.live is not None else None
            composer = kept if kept is not None else Composer(registry)
        source = self._search
        if callable(source) and not isinstance(source, ToolSearch):
            search = LazySearch(registry, source(registry))
        else:
            given = source if source is not None and source.registry.fingerprint == registry.fingerprint else None
            search = LazySearch(registry, given)
        version = Version(registry, mode, composer, build_listing(composer, mode), search)
        self._versions[registry.fingerprint] = version
        while len(self._versions) > _KEPT_VERSIONS:
            self._versions.pop(next(iter(self._versions)))
        return version

    def tool_list(self, client: ClientTask) -> list[dict[str, Any]]:
        """The tool list (the same for every client; ``client`` names the task in the ``list`` event)."""
        version = self.version()
        listing = version.listing
        if self.events is not None:
            self._answers.emit(
                version, client, "list", tools=len(listing.tools), full=[n for n in listing.names if n in listing.full]
            )
        return list(listing.tools)

    async def answer(self, client: ClientTask, name: str, arguments: Mapping[str, Any]) -> tuple[list[Any], bool]:
        """A call's content blocks and error flag (see :mod:`prompt_composer.mcp.answers`). A shared task store
        that fails is the call's error result: the model reads it, the client may retry, the gateway stays up."""
        try:
            return await self._answers.answer(self.version(), client, name, arguments)
        except SessionStoreError as exc:
            # The store is touched before and after the tool runs: say it may have run, so a retry is a choice.
            return [text_block(f"Error: {name} failed: the task store is unavailable ({exc}). It may have run.")], True

    # -- hot reload ------------------------------------------------------------------------------------

    async def refresh(self) -> bool:
        """Announce the list when the registry's current version changed it; whether it did."""
        listing = self.version().listing
        if listing.encoded == self._announced:
            return False
        self._announced = listing.encoded
        for connection in list(self._legacy):
            await connection.send_tool_list_changed()  # best effort: a closed connection drops it
        if self._bus is not None:
            from mcp.server.subscriptions import ToolsListChanged

            await self._bus.publish(ToolsListChanged())
        return True

    async def follow(self, interval: float) -> None:
        """Poll the live registry's folder every ``interval`` seconds, and announce a list a reload changed."""
        import anyio

        if self.live is None:
            raise RuntimeError("follow needs a LiveRegistry")
        live = self.live
        seen = live.current.fingerprint
        while True:
            await anyio.sleep(interval)
            await anyio.to_thread.run_sync(live.poll)
            changed = await self.refresh()
            if live.current.fingerprint == seen or self.version().registry is not live.current:
                continue  # nothing reloaded, or a version without the mode (version() said so)
            seen = live.current.fingerprint
            what = "its tool list changed (announced)" if changed else "its tool list is unchanged (nothing announced)"
            log.info("# serve: docs reloaded (registry %s); mode %r: %s", seen, self.slug, what)

    # -- connections -----------------------------------------------------------------------------------

    def client_of(self, ctx: Any) -> ClientTask:
        """The task of the connection ``ctx`` came on. A session-era connection (a stdio process, an HTTP
        ``Mcp-Session-Id``) keeps its ``Connection``; a 2026-07-28 stdio connection builds one per request over one
        outbound channel, which is its key; a 2026-07-28 HTTP request has no connection beyond itself. A request
        that names its task (the ``Prompt-Composer-Task`` header, see :mod:`prompt_composer.mcp.tasks`) gets that
        task from :attr:`sessions` instead, in either era."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        named = task_key(ctx)
        # The SDK has no public accessor for the connection under the per-request session yet.
        connection = getattr(ctx.session, "_connection", None)
        if named is not None:  # a task the client named: in the store, whichever connection or replica asks
            if connection is not None and connection.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                self._legacy.add(connection)  # still told of list changes
            return ClientTask(self.sessions.get(named), task_id=event_task_id(named))
        if connection is None:
            return ClientTask(TaskSession(), alone=True)
        if connection.protocol_version in MODERN_PROTOCOL_VERSIONS:
            if not connection.has_standalone_channel:
                return ClientTask(TaskSession(), alone=True)
            key = connection.outbound
        else:
            key = connection
            self._legacy.add(connection)
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = ClientTask(TaskSession())
        return client

    def joined(self, ctx: Any) -> None:
        """A session-era client finished its handshake: note its connection, for list_changed."""
        self.client_of(ctx)


async def serve_stdio(gateway: Gateway, *, watch: float | None = None) -> None:
    """Serve one client over stdin/stdout until it closes them, in the era its first request opens (the
    ``initialize`` handshake or a 2026-07-28 request). ``watch``: follow the live registry (see
    :meth:`Gateway.follow`)."""
    import anyio

    server = gateway.server
    async with framed_stdio() as (read, write), anyio.create_task_group() as group:
        if watch is not None:
            group.start_soon(gateway.follow, watch)
        await server.run(read, write, server.create_initialization_options())
        group.cancel_scope.cancel()


async def serve_http(
    gateway: Gateway,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    ready: Any = None,
    watch: float | None = None,
    security: HttpSecurity | None = None,
) -> None:
    """Serve Streamable HTTP at ``http://host:port/mcp``; calls ``ready(url)`` once listening (port 0 picks a free
    one). ``host``: a name or an address, an IPv6 one with or without brackets (``::1``, ``[::1]``); the URL puts it
    in brackets. ``watch``: follow the live registry (see :meth:`Gateway.follow`). An ``OSError`` says it could not
    listen (``ValueError``: ``host`` is no host). ``security``: tokens and allowed origins (see
    :mod:`prompt_composer.mcp.auth`); a non-loopback ``host`` without a verifier raises
    :class:`~prompt_composer.errors.AuthConfigError` unless it allows that."""
    import anyio
    import uvicorn

    host = bare_host(host)
    check_exposure(host, security)
    security = security or HttpSecurity()
    try:  # bound first, so that with port 0 the protected-resource metadata names the real port
        sock = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    except OSError as exc:
        raise OSError(f"cannot listen on {netloc(host, port)}: {exc.strerror or exc}") from exc
    port = sock.getsockname()[1]
    options = security.app_options(gateway.slug, host, port)
    app = gateway.server.streamable_http_app(host=host, max_request_body_size=MAX_MESSAGE_BYTES, **options)
    # every POSTed message is checked first (see framing); Origin and the other transport checks wrap that
    app = security.wrap(FramedHTTP(app), host, port)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))

    async def announce() -> None:
        while not server.started:
            await anyio.sleep(0.02)
        bound = server.servers[0].sockets[0].getsockname()[1]
        url = f"http://{netloc(host, bound)}/mcp"
        if ready is not None:
            ready(url)

    async with anyio.create_task_group() as group:
        group.start_soon(announce)
        if watch is not None:
            group.start_soon(gateway.follow, watch)
        await server.serve(sockets=[sock])
        group.cancel_scope.cancel()
    if not server.started:
        raise OSError(f"cannot listen on {netloc(host, port)}")
