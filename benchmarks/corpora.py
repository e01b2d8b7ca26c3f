"""Registries built from the real tool catalogs in ../shared/corpora, for benchmarks.

Each catalog tool becomes a ToolDoc named ``<server>__<tool>`` in group ``<server>``, built the way the search
benchmark builds its corpora (:mod:`benchmarks.search_corpora`): the brief is the description's first
sentences, the full form is the whole description plus the schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.search_corpora import CORPORA, api_name, group_name, make_doc
from prompt_composer import ModeConfig, Registry, ToolDoc

MCP_SERVER_FILES = ("playwright-mcp.json", "chrome-devtools-mcp.json", "notion-mcp-server.json")
# Every catalog file _raw_tools reads, relative to CORPORA.
CATALOG_FILES = (
    Path("github_mcp", "tools.json"),
    Path("mcp_reference", "tools.json"),
    *(Path("mcp_servers", file) for file in MCP_SERVER_FILES),
    Path("livemcpbench", "tools.jsonl"),
)


def missing_files(root: Path = CORPORA) -> list[Path]:
    """The catalog files (:data:`CATALOG_FILES`) that are not under ``root``, as full paths."""
    return [root / f for f in CATALOG_FILES if not (root / f).is_file()]


def _raw_tools() -> Iterator[tuple[str, str, str, dict[str, Any]]]:
    """(server, tool name, description, input schema) for every catalog tool, catalogs in a fixed order."""
    for tool in json.loads((CORPORA / "github_mcp" / "tools.json").read_text()):
        yield "github", tool["name"], tool["description"], tool["inputSchema"]
    for tool in json.loads((CORPORA / "mcp_reference" / "tools.json").read_text()):
        yield tool["server"], tool["name"], tool["description"], tool["inputSchema"]
    for file in MCP_SERVER_FILES:
        for tool in json.loads((CORPORA / "mcp_servers" / file).read_text()):
            yield file.removesuffix(".json"), tool["name"], tool["description"], tool["input_schema"]
    for line in (CORPORA / "livemcpbench" / "tools.jsonl").read_text().splitlines():
        tool = json.loads(line)
        yield tool["server"], tool["tool"], tool["description"] or "", tool["input_schema"]


def corpus_docs(limit: int | None = None) -> list[ToolDoc]:
    missing = missing_files()
    if missing:
        raise FileNotFoundError(
            f"the tool catalogs are not in {CORPORA} (missing: {', '.join(map(str, missing))}); "
            "put the shared folder beside the repository or set PROMPT_COMPOSER_SHARED"
        )
    docs: dict[str, ToolDoc] = {}
    for server, tool, description, schema in _raw_tools():
        name = api_name(f"{group_name(server)}__{tool}")
        if name in docs:
            continue
        extra = f"Input schema:\n{json.dumps(schema, indent=2)}"
        docs[name] = make_doc(name, group_name(server), description, extra, schema)
        if limit is not None and len(docs) >= limit:
            break
    return list(docs.values())


def corpus_registry(limit: int | None = None, *, permanent: int = 8, recent_size: int = 6) -> Registry:
    """A registry of ``limit`` catalog tools with one mode, ``all``, allowing every group."""
    docs = corpus_docs(limit)
    mode = ModeConfig(
        slug="all",
        name="All tools",
        role="You are a coding agent with many MCP servers.",
        groups=tuple(sorted({d.group for d in docs})),
        permanent=tuple(d.name for d in docs[:permanent]),
        recent_size=recent_size,
        budget_tokens=10_000_000,
    )
    return Registry.from_docs(docs, [mode])
