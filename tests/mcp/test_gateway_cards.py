"""The gateway passes its upstreams' instructions on: a real MCP server whose ``initialize`` carries instructions is
imported (its card keeps them), and a client of ``serve`` reads them in the gateway's own ``initialize``."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import anyio
import pytest

from prompt_composer.importers.from_mcp import import_mcp
from tests.helpers import DATA, REPO
from tests.mcp.support import LEGACY, stdio_gateway

CARD_SERVER = [sys.executable, str(DATA / "mcp" / "card_server.py")]
MODE = (
    "slug: notes\nname: notes\nrole: You answer questions with the team's notes.\ninclude: [put_note, find_notes]\n"
    "permanent: []\nrecent_size: 2\nbudget_tokens: 100000\n"
)


@pytest.mark.slow
def test_a_client_of_the_gateway_reads_the_upstream_instructions(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(REPO / "tool_docs", docs)
    import_mcp(CARD_SERVER, docs, server="notes")
    (docs / "modes" / "notes.yaml").write_text(MODE, encoding="utf-8")
    seen: list[str | None] = []

    async def scenario() -> None:
        async with stdio_gateway(docs, "notes", None, era=LEGACY) as (client, _notes):
            seen.append(client.instructions)

    anyio.run(scenario)
    (instructions,) = seen
    assert instructions is not None
    assert instructions.startswith("Tools of prompt-composer's 'notes' mode.")
    assert "Instructions of the MCP servers these tools come from:\n\n## Team Notes (notes)\n" in instructions
    assert instructions.endswith("Before answering a question about the team, look for notes on it first.")
