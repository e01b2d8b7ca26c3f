"""Search reads server cards: a request in the words of what a server is for ("remember …") finds that server's tools
though none of their own texts says it; the card moves a server's tools together and never reorders them among
themselves; a card never brings in a tool outside the mode. Real tools: the MCP reference servers (memory, git,
time, fetch) as an import drafts them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prompt_composer import Registry
from prompt_composer.core.cards import CardExample, ServerCard
from prompt_composer.core.docs import ToolDoc
from prompt_composer.core.modes import PreselectConfig
from prompt_composer.discovery.preselect import preselect
from prompt_composer.discovery.search import ToolSearch
from prompt_composer.importers.drafting import tool_docs_from_upstream
from prompt_composer.importers.tool_list import parse_tool_list
from tests.helpers import CORPORA, make_mode

REFERENCE = CORPORA / "mcp_reference" / "tools.json"
CARDS = [
    ServerCard(
        name="memory",
        title="Knowledge Graph Memory",
        description="A basic implementation of persistent memory using a local knowledge graph. This lets the model "
        "remember information about the user across chats.",
    ),
    ServerCard(name="git", title="Git", description="Tools to read, search, and manipulate Git repositories."),
]
pytestmark = pytest.mark.skipif(not REFERENCE.is_file(), reason="needs ../shared/corpora/mcp_reference")


def reference_docs(servers: tuple[str, ...]) -> list[ToolDoc]:
    entries = json.loads(Path(REFERENCE).read_text(encoding="utf-8"))
    docs: list[ToolDoc] = []
    for server in servers:
        listed = [
            {k: e[k] for k in ("name", "description", "inputSchema") if k in e}
            for e in entries
            if e["server"] == server
        ]
        docs += tool_docs_from_upstream(parse_tool_list(listed)[1], server=server, group="mcp")
    return docs


def registry(*, cards: bool, exclude: tuple[str, ...] = ()) -> Registry:
    docs = reference_docs(("memory", "git", "time", "fetch"))
    modes = [make_mode("all", groups=["mcp"], permanent=[], exclude=list(exclude))]
    return Registry.from_docs(docs, modes, servers=CARDS if cards else ())


MEMORY = {"create_entities", "add_observations", "search_nodes", "open_nodes", "read_graph"}


def test_a_request_in_the_words_of_a_servers_card_finds_its_tools() -> None:
    request = "Remember that the staging database listens on port 5433."
    without = ToolSearch(registry(cards=False), embedder=False)
    with_cards = ToolSearch(registry(cards=True), embedder=False)
    ranked_without = without.rank(request, without.registry.mode("all"))[0]
    ranked_with = with_cards.rank(request, with_cards.registry.mode("all"))[0]
    assert not MEMORY & set(ranked_without[:3])  # nothing in the memory tools' own texts says "remember"
    assert MEMORY & set(ranked_with[:3])


def test_a_card_moves_its_servers_tools_together_and_keeps_their_order() -> None:
    request = "show the commit log and remember it"
    plain = ToolSearch(registry(cards=False), embedder=False)
    carded = ToolSearch(registry(cards=True), embedder=False)
    mode = plain.registry.mode("all")
    git = [n for n in plain.rank(request, mode)[0] if n.startswith("git_")]
    assert (
        git
        and [n for n in carded.rank(request, carded.registry.mode("all"))[0] if n.startswith("git_")][: len(git)] == git
    )
    assert carded.card_weight > 0 and ToolSearch(registry(cards=False), embedder=False).card_weight == 0.0


def test_a_card_never_brings_in_a_tool_outside_the_mode() -> None:
    search = ToolSearch(registry(cards=True, exclude=("search_nodes", "read_graph")), embedder=False)
    mode = search.registry.mode("all")
    ranking = search.rank("what do you remember about me", mode)[0]
    assert "search_nodes" not in ranking and "read_graph" not in ranking
    assert set(ranking) <= set(mode.allowed)


def test_hybrid_search_reads_the_card_too() -> None:
    carded = ToolSearch(registry(cards=True), cache_path=False)
    if not carded.semantic_available:
        pytest.skip("the embedding extra is not installed")
    plain = ToolSearch(registry(cards=False), cache_path=False)
    request = "What do you remember about the payments service?"

    def best_memory_rank(search: ToolSearch) -> int:
        ranking = search.rank(request, search.registry.mode("all"), "hybrid")[0]
        return min(ranking.index(n) for n in MEMORY if n in ranking) + 1

    assert best_memory_rank(carded) < best_memory_rank(plain)
    assert best_memory_rank(carded) <= 3


def test_a_drafted_card_is_not_read_it_only_repeats_the_tool_names() -> None:
    drafted = [card.model_copy(update={"source": "drafted"}) for card in CARDS]
    docs = reference_docs(("memory", "git", "time", "fetch"))
    registry = Registry.from_docs(docs, [make_mode("all", groups=["mcp"], permanent=[])], servers=drafted)
    search = ToolSearch(registry, embedder=False)
    plain = ToolSearch(
        registry_without := Registry.from_docs(docs, [make_mode("all", groups=["mcp"], permanent=[])]), embedder=False
    )
    request = "Remember that the staging database listens on port 5433."
    assert search.card_weight == 0.0 and search.cards == {}
    assert search.rank(request, registry.mode("all"))[0] == plain.rank(request, registry_without.mode("all"))[0]


def examples_registry(*, exclude: tuple[str, ...] = ()) -> Registry:
    examples = (
        CardExample(request="Whatever you have on file about where I live?", tools=("search_nodes", "open_nodes")),
        CardExample(request="Jot down that Sam is my manager.", tools=("create_entities", "create_relations")),
    )
    cards = [CARDS[0].model_copy(update={"examples": examples}), CARDS[1]]
    docs = reference_docs(("memory", "git", "time", "fetch"))
    modes = [make_mode("all", groups=["mcp"], permanent=[], exclude=list(exclude))]
    return Registry.from_docs(docs, modes, servers=cards)


def test_a_cards_examples_find_its_tools_for_requests_in_their_words() -> None:
    request = "What have you got on file about where my sister lives?"
    with_examples = ToolSearch(examples_registry(), embedder=False)
    without = ToolSearch(examples_registry(), embedder=False, card_examples=False)
    mode = with_examples.registry.mode("all")
    assert with_examples.rank(request, mode)[0][0] == "search_nodes"
    assert without.rank(request, mode)[0][0] != "search_nodes"
    # Examples are phrasings of their first tool, kept apart from what use taught (they weigh less).
    assert with_examples.examples.by_tool == {
        "search_nodes": ("Whatever you have on file about where I live?",),
        "create_entities": ("Jot down that Sam is my manager.",),
    }
    assert with_examples.phrasings.by_tool == {} and without.examples.by_tool == {}


def test_a_cards_examples_never_bring_in_a_tool_outside_the_mode() -> None:
    search = ToolSearch(examples_registry(exclude=("search_nodes", "open_nodes")), embedder=False)
    mode = search.registry.mode("all")
    ranking = search.rank("What have you got on file about where my sister lives?", mode)[0]
    assert "search_nodes" not in ranking and "open_nodes" not in ranking
    assert set(ranking) <= set(mode.allowed)


def test_semantic_search_reads_a_cards_examples_by_meaning() -> None:
    with_examples = ToolSearch(examples_registry(), cache_path=False)
    if not with_examples.semantic_available:
        pytest.skip("the embedding extra is not installed")
    without = ToolSearch(examples_registry(), cache_path=False, card_examples=False)
    request = "Remind me which town I told you I live in."  # ranked by the embeddings alone (semantic)

    def rank(search: ToolSearch) -> int:
        return search.rank(request, search.registry.mode("all"), "semantic")[0].index("search_nodes") + 1

    # The example's first tool rises by its closeness to the request, by meaning alone.
    assert rank(with_examples) < rank(without)
    assert "open_nodes" not in with_examples.examples.by_tool  # listed second: not credited


def test_a_drafted_cards_examples_are_read_though_its_description_is_not() -> None:
    drafted = [card.model_copy(update={"source": "drafted"}) for card in examples_registry().servers.values()]
    registry = Registry.from_docs(
        reference_docs(("memory", "git", "time", "fetch")),
        [make_mode("all", groups=["mcp"], permanent=[])],
        servers=drafted,
    )
    search = ToolSearch(registry, embedder=False)
    assert search.cards == {}
    assert set(search.examples.by_tool) == {"search_nodes", "create_entities"}
    assert search.rank("What have you got on file about where my sister lives?", registry.mode("all"))[0][0] == (
        "search_nodes"
    )


def test_a_request_close_to_an_example_matches_its_tool_enough_to_load_it() -> None:
    with_examples = ToolSearch(examples_registry(), cache_path=False)
    if not with_examples.semantic_available:
        pytest.skip("the embedding extra is not installed")
    without = ToolSearch(examples_registry(), cache_path=False, card_examples=False)
    mode = with_examples.registry.mode("all")
    request = "Whatever you've got on file about where my sister lives?"
    # The tool's own text is too far from the request to pass the floor; the example's closeness is its similarity.
    assert preselect(without, mode, request, PreselectConfig()).tools == ()
    found = preselect(with_examples, mode, request, PreselectConfig())
    assert found.tools == ("search_nodes",) and found.confidences[0] > 0.5
