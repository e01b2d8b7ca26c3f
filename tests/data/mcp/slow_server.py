"""A small MCP server whose one tool sleeps: the gateway's call timeout test, and (``--http PORT``) an upstream
reached over Streamable HTTP. Needs the ``mcp`` SDK (2.x)."""

from __future__ import annotations

import sys
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("slow-fixture", version="1.0")


@server.tool()
def nap(seconds: float) -> str:
    """Sleeps for the given number of seconds, then says so. Use it to test timeouts."""
    time.sleep(seconds)
    return f"slept {seconds} s"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
