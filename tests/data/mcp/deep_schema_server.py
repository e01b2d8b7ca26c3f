"""A hand-written MCP server (stdio, raw JSON-RPC lines) that lists one ordinary tool and one whose input schema
nests DEPTH levels deep: the import's schema bounds tests.

    python tests/data/mcp/deep_schema_server.py DEPTH

``nest_deep`` has ``{"type": "object", "properties": {"a": {...}}}`` nested DEPTH times. Written by hand rather
than with the SDK's server, whose own serializer refuses such a schema: a hostile server is not so polite.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def deep_schema(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "description": "the innermost value"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def main(argv: list[str]) -> None:
    depth = int(argv[0])
    tools = [
        {
            "name": "plain_echo",
            "description": "Echo a text back. Use it to check that the server answers.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string", "description": "The text."}}},
        },
        {
            "name": "nest_deep",
            "description": "Store a deeply nested record. Use it to keep a nested record for later.",
            "inputSchema": deep_schema(depth),
        },
    ]
    sys.setrecursionlimit(max(1000, 4 * depth + 100))  # json.dumps recurses once per level
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue  # notifications and responses need no answer
        method, result = message["method"], None
        if method == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "deep-schema-fixture", "version": "1.0"},
            }
        elif method == "tools/list":
            result = {"tools": tools}
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if result is None:
            reply["error"] = {"code": -32601, "message": "Method not found"}
        else:
            reply["result"] = result
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
