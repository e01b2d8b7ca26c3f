"""An MCP server (stdio) that lists many tools: the large-server import tests.

    python tests/data/mcp/many_tools_server.py COUNT [--page N]
    python tests/data/mcp/many_tools_server.py COUNT --json > tools.json

Lists COUNT tools (``records_get_0`` …), each with a two-sentence description and a two-parameter schema, in
pages of N (default: all in one page). With ``--json`` it prints the same tools as a ``tools/list`` result
instead of serving them (for ``prompt-composer import json``). Built on the SDK's low-level server, so it
starts in a fraction of a second whatever COUNT is. Needs the ``mcp`` SDK (2.x).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server

VERBS = ("get", "list", "search", "create", "update", "delete", "read", "fetch")
NOUNS = ("record", "issue", "branch", "file", "label", "project", "commit", "user")


def tool(index: int) -> types.Tool:
    verb, noun = VERBS[index % len(VERBS)], NOUNS[index // len(VERBS) % len(NOUNS)]
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": f"The {noun} id."},
            "limit": {"type": "integer", "description": "At most this many results."},
        },
        "required": ["id"],
    }
    description = (
        f"{verb.title()}s a {noun} of the tracker (number {index}). Use it when you need the {noun} details, "
        f"for example before changing the {noun}."
    )
    return types.Tool(name=f"{noun}s_{verb}_{index}", description=description, input_schema=schema)


def main(argv: list[str]) -> None:
    count = int(argv[0])
    page = int(argv[argv.index("--page") + 1]) if "--page" in argv else count
    tools = [tool(i) for i in range(count)]
    if "--json" in argv:
        listing = types.ListToolsResult(tools=tools)
        print(json.dumps(listing.model_dump(by_alias=True, exclude_none=True, mode="json")))
        return

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = min(start + page, count)
        return types.ListToolsResult(tools=tools[start:end], next_cursor=str(end) if end < count else None)

    server: Server[Any] = Server("many-tools-fixture", version="1.0", on_list_tools=list_tools)

    async def run() -> None:
        async with stdio_server() as (read, write), server.lifespan(server) as state:
            options = server.create_initialization_options()
            await serve_loop(server, read, write, lifespan_state=state, init_options=options)

    anyio.run(run)


if __name__ == "__main__":
    main(sys.argv[1:])
