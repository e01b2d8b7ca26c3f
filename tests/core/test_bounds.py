"""Bounds on what a model sends and what is echoed back: a 5 MB tool name gets a short refusal (fetch, a call,
``call_tool``), a 5 MB or 200,000-word ``tool_search`` query is cut before it is searched, with a note."""

from __future__ import annotations

import pytest

from prompt_composer import default_docs_dir, load_registry
from prompt_composer.core.access import not_in_mode
from prompt_composer.core.bounds import MAX_ECHOED_NAME, MAX_QUERY_CHARS, MAX_QUERY_WORDS, cap_query, quoted_name
from prompt_composer.core.fetch import handle_fetch
from prompt_composer.core.registry import Registry
from prompt_composer.discovery.search import ToolSearch
from prompt_composer.discovery.tools import check_call, handle_tool_search

BIG = 5_000_000


@pytest.fixture(scope="module")
def registry() -> Registry:
    return load_registry(default_docs_dir())


def test_a_valid_name_is_echoed_whole_and_a_huge_one_cut_with_a_note() -> None:
    assert quoted_name("read_file") == "'read_file'"
    assert quoted_name("a" * 64) == repr("a" * 64)
    cut = quoted_name("x" * BIG)
    assert cut == repr("x" * MAX_ECHOED_NAME) + f"… (cut: {BIG:,} characters in all)"


def test_a_5_mb_name_gets_a_short_refusal_everywhere(registry: Registry) -> None:
    mode = registry.mode("code")
    name = "x" * BIG
    fetched = handle_fetch(registry, mode, {"name": name})
    called = check_call(registry, mode, {"name": name, "arguments": {}})
    assert fetched.is_error and not isinstance(called, tuple) and called.is_error
    for text in (fetched.content, called.content, not_in_mode(name, mode)):
        assert f"(cut: {BIG:,} characters in all)" in text
        assert "Tools of this mode, closest first: read_file" in text
        assert len(text) < 1_000


def test_a_near_miss_still_gets_its_suggestion(registry: Registry) -> None:
    assert "closest first: read_file" in not_in_mode("read_fil", registry.mode("code"))


def test_a_query_is_cut_by_characters_then_words_with_a_note() -> None:
    assert cap_query("find where a function is called") == ("find where a function is called", None)
    text, note = cap_query("y" * BIG)
    assert text == "y" * MAX_QUERY_CHARS and note is not None and f"{BIG:,} characters" in note
    words = " ".join(["w"] * 200_000)
    text, note = cap_query(words)
    assert text.split() == ["w"] * MAX_QUERY_WORDS and note is not None


@pytest.mark.parametrize("query", ["config " * (BIG // 7), " ".join(["read", "file"] * 100_000)])
def test_a_huge_query_is_searched_cut_and_answered_short(registry: Registry, query: str) -> None:
    search = ToolSearch(registry, embedder=False)
    found = handle_tool_search(search, registry.mode("code"), {"query": query})
    assert not found.is_error
    assert f"Your query was {len(query.strip()):,} characters long" in found.content
    assert len(found.content) < 10_000
