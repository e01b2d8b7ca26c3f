"""A small MCP server (stdio) whose one tool sleeps: the gateway's call timeout test. Needs the ``mcp`` SDK (2.x)."""

from __future__ import annotations

import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("slow-fixture", version="1.0")


@server.tool()
def nap(seconds: float) -> str:
    """Sleeps for the given number of seconds, then says so. Use it to test timeouts."""
    time.sleep(seconds)
    return f"slept {seconds} s"


if __name__ == "__main__":
    server.run("stdio")
