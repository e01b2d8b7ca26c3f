"""Load-time expansion and server-aware ranking (issue 32), on real tool names and real servers' catalogs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.search_corpora import derive_brief
from benchmarks.search_corpora import shared_dir as shared
from prompt_composer import ModeConfig, Registry
from prompt_composer.core.docs import Origin, ToolDoc
from prompt_composer.discovery.expand import expansion, name_phrase, request_verbs
from prompt_composer.discovery.search import ToolSearch
from prompt_composer.discovery.tokenize import split_identifier

CORPORA = shared() / "corpora"
SERVER_FILES = {
    "playwright": Path("mcp_servers", "playwright-mcp.json"),
    "chrome-devtools": Path("mcp_servers", "chrome-devtools-mcp.json"),
    "notion": Path("mcp_servers", "notion-mcp-server.json"),
}
needs_corpora = pytest.mark.skipif(
    not all((CORPORA / p).is_file() for p in [*SERVER_FILES.values(), Path("mcp_reference", "tools.json")]),
    reason="../shared/corpora is not beside the checkout",
)


def test_real_names_split_into_words() -> None:
    assert split_identifier("list_dependabot_alerts") == ["list", "dependabot", "alerts"]
    assert split_identifier("API-post-search") == ["api", "post", "search"]
    assert split_identifier("browser_start_recording") == ["browser", "start", "recording"]
    assert split_identifier("getCurrentTime") == ["get", "current", "time"]
    assert name_phrase("list_dependabot_alerts") == "list dependabot alerts"
    assert name_phrase("API-retrieve-page-markdown") == "retrieve page markdown"  # the API prefix says nothing


def test_request_verbs_of_real_names() -> None:
    assert {"show", "read", "view", "fetch"} <= set(request_verbs("get_file_contents"))
    assert {"remember", "store", "save", "add"} <= set(request_verbs("create_entities"))
    assert {"remove"} <= set(request_verbs("delete_entities"))
    # After a server prefix, the second word is the verb.
    assert {"record", "capture"} <= set(request_verbs("browser_start_recording"))
    assert {"show"} <= set(request_verbs("fs_list_directory"))
    assert request_verbs("sequentialthinking") == ()
    assert expansion("list_dependabot_alerts") == "list dependabot alerts show enumerate"


def _entry_doc(server: str, entry: dict[str, Any]) -> ToolDoc:
    schema = entry.get("inputSchema") or entry.get("input_schema") or {"type": "object"}
    description = entry.get("description") or ""
    return ToolDoc(
        name=entry["name"],
        group="mcp",
        brief=derive_brief(description, entry["name"]),
        full=f"## {entry['name']}\n\n{description}",
        input_schema={"type": "object", "properties": schema.get("properties", {})},
        origin=Origin(server=server, name=entry["name"]),
    )


def real_servers() -> Registry:
    docs: dict[str, ToolDoc] = {}
    for server, path in SERVER_FILES.items():
        for entry in json.loads((CORPORA / path).read_text(encoding="utf-8")):
            docs.setdefault(entry["name"], _entry_doc(server, entry))
    for entry in json.loads((CORPORA / "mcp_reference" / "tools.json").read_text(encoding="utf-8")):
        if entry["server"] in ("memory", "time", "git", "fetch"):
            docs.setdefault(entry["name"], _entry_doc(entry["server"], entry))
    mode = ModeConfig(
        slug="all", name="All", role="An assistant.", groups=("mcp",), recent_size=0, budget_tokens=10_000_000
    )
    return Registry.from_docs(docs.values(), [mode])


@needs_corpora
def test_the_server_score_changes_a_ranking_on_real_servers() -> None:
    registry = real_servers()
    mode = registry.mode("all")
    assert len(mode.allowed) > 100
    plain = ToolSearch(registry, embedder=False, server_weight=0.0)
    aware = ToolSearch(registry, embedder=False, server_weight=1.0)
    # "Chrome" names the chrome-devtools server: its tool rises above Playwright's namesake.
    for query, chrome, playwright in (
        ("resize the Chrome window to 800x600", "resize_page", "browser_resize"),
        ("press the Enter key in Chrome", "press_key", "browser_press_key"),
        ("In Chrome, type hello into the search box", "type_text", "browser_type"),
    ):
        before, _ = plain.rank(query, mode, "keyword")
        after, _ = aware.rank(query, mode, "keyword")
        assert before.index(playwright) < before.index(chrome), query
        assert after.index(chrome) < after.index(playwright), query
        assert after[0] == chrome, query
    # A request that names no server keeps its order among the leaders.
    neutral = "take a screenshot of the page"
    assert plain.rank(neutral, mode, "keyword")[0][:1] == aware.rank(neutral, mode, "keyword")[0][:1]
