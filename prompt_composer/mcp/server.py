"""The gateway's MCP server: its handlers over the SDK's low-level :class:`~mcp.server.lowlevel.server.Server`.

- ``tools/list``: :meth:`Gateway.tool_list`, with ``ttlMs`` and ``cacheScope: "public"`` (the list is the same
  for every connection; the SDK leaves both out for session-era clients, whose revisions do not have them).
- ``tools/call``: :meth:`Gateway.answer`.
- ``server/discover``: the SDK's own answer (2026-07-28, this server's capabilities and instructions), so a client
  in the SDK's ``auto`` mode speaks 2026-07-28 and a session-era client still does its ``initialize``.
- ``subscriptions/listen``, with a live registry only: the 2026-07-28 channel for ``list_changed``. Session-era
  connections are told with ``notifications/tools/list_changed`` instead, and both only on a reload that changed
  the list, so ``tools.listChanged`` is advertised only then.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from .listing import Version, instructions

if TYPE_CHECKING:
    from ..core.live import LiveRegistry
    from .answers import ClientTask


class Served(Protocol):
    """What the handlers ask of the gateway they answer for (:class:`~prompt_composer.mcp.gateway.Gateway` is
    one). Declared here, below the gateway, so that this module needs nothing of it: the gateway builds its server
    from this module, not the other way round."""

    live: LiveRegistry | None
    list_ttl_ms: int

    def version(self) -> Version: ...

    def tool_list(self, client: ClientTask) -> list[dict[str, Any]]: ...

    async def answer(self, client: ClientTask, name: str, arguments: Mapping[str, Any]) -> tuple[list[Any], bool]: ...

    def client_of(self, ctx: Any) -> ClientTask: ...

    def joined(self, ctx: Any) -> None: ...


def build_server(gateway: Served) -> tuple[Any, Any]:
    """The SDK server answering for ``gateway``, and the subscriptions/listen bus it announces list changes on
    (``None`` without a live registry)."""
    import mcp_types as types
    from mcp.server.lowlevel.server import NotificationOptions, Server
    from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler

    from ..shared.version import VERSION

    async def list_tools(ctx: Any, params: Any) -> Any:
        tools = gateway.tool_list(gateway.client_of(ctx))
        return types.ListToolsResult(
            tools=[
                types.Tool(name=d["name"], description=d["description"], input_schema=d["input_schema"]) for d in tools
            ],
            ttl_ms=gateway.list_ttl_ms,
            cache_scope="public",
        )

    async def call_tool(ctx: Any, params: Any) -> Any:
        content, is_error = await gateway.answer(gateway.client_of(ctx), params.name, params.arguments or {})
        return types.CallToolResult(content=content, is_error=is_error)

    async def initialized(ctx: Any, params: Any) -> None:
        gateway.joined(ctx)

    def input_schema(name: str) -> Any:
        # What the 2026-07-28 HTTP entry checks Mcp-Param-* headers against, without running tools/list.
        return gateway.version().listing.schema(name)

    live = gateway.live is not None

    class _Server(Server[Any]):
        # Read at each initialize and server/discover, from the version served then: a reload (``serve --watch``)
        # that changed a card's instructions reaches the next client. The SDK's constructor assigns it; ignored.
        @property
        def instructions(self) -> str:
            version = gateway.version()
            return instructions(version.mode, version.registry)

        @instructions.setter
        def instructions(self, _value: str | None) -> None:
            pass

        def create_initialization_options(self, notification_options: Any = None, *args: Any, **kw: Any) -> Any:
            # The HTTP session manager asks with no options: say whether list_changed can ever be sent.
            options = notification_options or NotificationOptions(tools_changed=live)
            return super().create_initialization_options(options, *args, **kw)

    bus = InMemorySubscriptionBus() if live else None
    listen = ListenHandler(bus) if bus is not None else None
    server = _Server(
        "prompt-composer",
        version=VERSION,
        get_tool_input_schema=input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_subscriptions_listen=listen,
    )
    server.add_notification_handler("notifications/initialized", types.NotificationParams, initialized)
    return server, bus
