"""MCP: the gateway that serves a mode to any MCP client (``serve``), and the upstream servers imported tools
are routed to.

The ``mcp`` SDK (the ``mcp`` extra) is imported by these modules only.
"""

from typing import TYPE_CHECKING

from ..shared.lazy import attach

if TYPE_CHECKING:
    from .auth import HttpSecurity, JwtVerifier, StaticTokens
    from .client import ServerSpec
    from .gateway import Gateway, serve_http, serve_stdio
    from .upstreams import Upstreams, load_servers, mcp_executors

__all__ = [
    "Gateway",
    "HttpSecurity",
    "JwtVerifier",
    "ServerSpec",
    "StaticTokens",
    "Upstreams",
    "load_servers",
    "mcp_executors",
    "serve_http",
    "serve_stdio",
]

__getattr__, __dir__ = attach(__name__, __file__)
