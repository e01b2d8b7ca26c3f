"""A small MCP server (stdio, or Streamable HTTP with ``http PORT``) that says what it is for: ``initialize`` carries
a title, a description and instructions, so an import writes its card from them. Needs the ``mcp`` SDK (2.x).

    python tests/data/mcp/card_server.py [NAME] [http PORT]

Its two tools keep notes; their names and descriptions never say "remember" or "recall", its description does.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

NAME = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != "http" else "notes-fixture"
server = MCPServer(
    NAME,
    title="Team Notes",
    description=(
        "Persistent notes that let the assistant remember facts about the team across conversations. "
        "Recall them later by keyword."
    ),
    instructions="Store one fact per note. Before answering a question about the team, look for notes on it first.",
    version="1.0",
)
NOTES: dict[str, str] = {}


@server.tool()
def put_note(key: str, text: str) -> str:
    """Stores a note under a key, replacing any note of that key."""
    NOTES[key] = text
    return "stored"


@server.tool()
def find_notes(query: str) -> list[str]:
    """Lists the notes whose text holds a word of the query."""
    words = set(query.lower().split())
    return [text for text in NOTES.values() if words & set(text.lower().split())]


if __name__ == "__main__":
    if "http" in sys.argv:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[sys.argv.index("http") + 1]))
    else:
        server.run("stdio")
