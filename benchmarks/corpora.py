"""Registries built from the real tool catalogs in ../shared/corpora, for benchmarks.

Each catalog tool becomes a ToolDoc named ``<server>__<tool>`` in group ``<server>``: the brief is the
description's first sentences (within the brief limits), the full form is the whole description plus the schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prompt_composer import ModeConfig, Registry, ToolDoc
from prompt_composer.docs import BRIEF_MAX_WORDS

CORPORA = Path(__file__).resolve().parent.parent.parent / "shared" / "corpora"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", text.lower()).strip("-") or "x"


def _brief(description: str, name: str) -> str:
    sentences = re.split(r"(?<=[.!?])\s+", " ".join(description.split()))
    brief = ""
    for sentence in sentences[:3]:
        candidate = f"{brief} {sentence}".strip()
        if len(candidate.split()) > BRIEF_MAX_WORDS:
            break
        brief = candidate
    if not brief:
        brief = " ".join(description.split()[: BRIEF_MAX_WORDS - 1]) or f"The {name} tool"
    brief = re.sub(r"[.!?]+(?=\s)", ",", brief)  # keep it one sentence: corpus text has odd punctuation
    return brief.rstrip(".!? ") + "."


def _raw_tools() -> Iterator[tuple[str, str, str, dict[str, Any]]]:
    """(server, tool name, description, input schema) for every catalog tool, catalogs in a fixed order."""
    for tool in json.loads((CORPORA / "github_mcp" / "tools.json").read_text()):
        yield "github", tool["name"], tool["description"], tool["inputSchema"]
    for tool in json.loads((CORPORA / "mcp_reference" / "tools.json").read_text()):
        yield tool["server"], tool["name"], tool["description"], tool["inputSchema"]
    for file in ("playwright-mcp.json", "chrome-devtools-mcp.json", "notion-mcp-server.json"):
        for tool in json.loads((CORPORA / "mcp_servers" / file).read_text()):
            yield file.removesuffix(".json"), tool["name"], tool["description"], tool["input_schema"]
    for line in (CORPORA / "livemcpbench" / "tools.jsonl").read_text().splitlines():
        tool = json.loads(line)
        yield tool["server"], tool["tool"], tool["description"] or "", tool["input_schema"]


def corpus_docs(limit: int | None = None) -> list[ToolDoc]:
    docs: dict[str, ToolDoc] = {}
    for server, tool, description, schema in _raw_tools():
        name = f"{_slug(server)}__{tool}"[:64]
        name = re.sub(r"[^a-zA-Z0-9_-]", "_", name)
        if name in docs:
            continue
        schema = dict(schema or {})
        schema.setdefault("type", "object")
        if schema.get("type") != "object":
            continue
        schema.setdefault("properties", {})
        full = f"## {name}\n{description or '(no description)'}\n\nInput schema:\n{json.dumps(schema, indent=2)}"
        docs[name] = ToolDoc(
            name=name, group=_slug(server), brief=_brief(description, tool), full=full, input_schema=schema
        )
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
