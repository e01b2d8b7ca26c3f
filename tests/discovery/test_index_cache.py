"""A mode's keyword index kept between processes (prompt_composer.discovery.index_cache): a new search reads it
instead of building it and answers exactly as a built one; another registry, mode, weighting or code builds its
own; a damaged or foreign file is refused and rebuilt; ``index_cache=False`` and ``cache_path=False`` keep it in
memory."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from prompt_composer import Registry, load_registry
from prompt_composer.core.registry import default_docs_dir
from prompt_composer.discovery import index_cache
from prompt_composer.discovery.lexical import LexicalIndex
from prompt_composer.discovery.search import ToolSearch

DOCS = default_docs_dir()
QUERIES = [
    "read a file",
    "run the tests in a shell",
    "find where a function is defined",
    "open the web page and take a screenshot",
    "what changed in git",
    "écrire un fichier",
    "",
]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "user-cache"
    monkeypatch.setenv("PROMPT_COMPOSER_CACHE", str(folder))
    return folder


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many keyword indexes were built from docs."""
    calls: list[int] = []
    real = LexicalIndex.__init__

    def counting(self: LexicalIndex, *args: Any, **kwargs: Any) -> None:
        calls.append(1)
        real(self, *args, **kwargs)

    monkeypatch.setattr(LexicalIndex, "__init__", counting)
    return calls


TOKEN = "5eed" * 8  # what the user's parsed-docs cache gives a registry it vouched for (see below)


@pytest.fixture(scope="module")
def shipped() -> Registry:
    return dataclasses.replace(load_registry(cache=False), cache_token=TOKEN)


def answers(search: ToolSearch, registry: Registry) -> list[Any]:
    out: list[Any] = []
    for slug, mode in registry.modes.items():
        index = search.lexical_for(mode)
        for query in QUERIES:
            ranked = index.rank(query, mode.allows)
            out.append((slug, query, ranked, index.confidence(query, ranked), index.coverage(query, mode.allowed[0])))
            out.append(search.search(query, mode, strategy="keyword").as_dict())
    return out


def test_a_new_search_reads_the_kept_index_and_answers_the_same(
    shipped: Registry, cache: Path, built: list[int]
) -> None:
    fresh = answers(ToolSearch(shipped, index_cache=False), shipped)
    modes = len({frozenset(m.allowed) for m in shipped.modes.values()})
    assert len(built) == modes and not cache.exists()
    built.clear()
    first = answers(ToolSearch(shipped), shipped)
    assert len(built) == modes and len(list((cache / "lexical").iterdir())) == modes
    built.clear()
    kept = answers(ToolSearch(shipped), shipped)
    assert built == []  # every mode's index read back
    assert kept == first == fresh


def test_what_the_index_depends_on_makes_its_own(
    shipped: Registry, cache: Path, built: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    mode = shipped.mode("code")
    ToolSearch(shipped).lexical_for(mode)
    key = index_cache.index_key(shipped, mode.allowed, ToolSearch(shipped)._weights)
    assert key is not None
    others = [
        index_cache.index_key(shipped, mode.allowed[1:], ToolSearch(shipped)._weights),  # another mode's tools
        index_cache.index_key(shipped, mode.allowed, ToolSearch(shipped, expanded_weight=0)._weights),
        index_cache.index_key(
            dataclasses.replace(Registry.from_docs(list(shipped.tools.values())[1:]), cache_token=TOKEN),
            mode.allowed,
            ToolSearch(shipped)._weights,
        ),  # other docs
        index_cache.index_key(dataclasses.replace(shipped, cache_token="b" * 32), mode.allowed, {}),  # another token
    ]
    assert None not in others and len({key, *others}) == 5
    monkeypatch.setattr(index_cache, "CODE", (*index_cache.CODE, "prompt_composer.core.composer"))
    assert index_cache.index_key(shipped, mode.allowed, ToolSearch(shipped)._weights) != key  # other code


def test_without_the_index_cache_nothing_is_kept(shipped: Registry, cache: Path) -> None:
    ToolSearch(shipped, index_cache=False).lexical_for(shipped.mode("code"))
    ToolSearch(shipped, cache_path=False).lexical_for(shipped.mode("code"))
    assert not (cache / "lexical").exists()


def test_a_registry_no_cache_vouched_for_reads_and_keeps_no_index(
    tmp_path: Path, cache: Path, built: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every part of the key but the token is known to whoever has the checkout: a cache folder inside it (an
    environment a checkout sets) could hold an index under that key. Without the token of the user's own parsed-docs
    cache, nothing is read or kept; with it, a planted file of the tokenless key is never read."""
    plain = load_registry(cache=False)
    mode = plain.mode("code")
    assert plain.cache_token is None and index_cache.index_key(plain, mode.allowed, {}) is None
    ToolSearch(plain).lexical_for(mode)
    assert built == [1] and not (cache / "lexical").exists()
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    first = load_registry(docs)  # cold: the cache keeps a new token for the folder
    second = load_registry(docs)
    assert first.cache_token is not None and second.cache_token == first.cache_token
    assert load_registry(docs, cache=False).cache_token is None
    built.clear()
    ToolSearch(first).lexical_for(first.mode("code"))
    ToolSearch(second).lexical_for(second.mode("code"))
    assert built == [1]  # the second read the first's index back


def kept_file(cache: Path) -> Path:
    [path] = (cache / "lexical").iterdir()
    return path


def postings(document: dict[str, Any]) -> dict[str, Any]:
    return document["index"]["postings"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda d: d["index"].pop("idf"), "a malformed index"),
        (lambda d: d["index"]["names"].append(d["index"]["names"][0]), "a malformed index"),
        (lambda d: next(iter(postings(d).values()))[0].append(10**6), "a malformed index"),
        (lambda d: next(iter(postings(d).values()))[1].__setitem__(0, "x"), "a malformed index"),
        (lambda d: d["index"]["strong"].pop(), "a malformed index"),
        (lambda d: d["index"].update(unseen_idf=None), "a malformed index"),
        (lambda d: d["index"].update(unseen_idf=10**400), "a malformed index"),
        (lambda d: postings(d).update({next(iter(postings(d))): [1, 2]}), "a malformed index"),
        (lambda d: d.update(schema=99), "another format or version"),
    ],
    ids=[
        "no-idf",
        "duplicate-name",
        "doc-out-of-range",
        "weight-not-a-number",
        "strong-missing",
        "idf-null",
        "idf-past-a-float",
        "postings-not-lists",
        "schema",
    ],
)
def test_a_damaged_kept_index_is_refused_and_rebuilt(
    shipped: Registry,
    cache: Path,
    built: list[int],
    caplog: pytest.LogCaptureFixture,
    damage: Callable[[dict[str, Any]], None],
    why: str,
) -> None:
    mode = shipped.mode("code")
    expected = answers(ToolSearch(shipped, index_cache=False), shipped)
    ToolSearch(shipped).lexical_for(mode)
    path = kept_file(cache)
    document = json.loads(path.read_text())
    damage(document)
    path.write_text(json.dumps(document))
    built.clear()
    with caplog.at_level(logging.INFO, logger="prompt_composer"):
        search = ToolSearch(shipped)
        search.lexical_for(mode)
    assert built == [1]
    assert any(why in r.getMessage() and r.getMessage().endswith("it will be rebuilt") for r in caplog.records)
    assert answers(search, shipped) == expected


def test_a_kept_index_others_could_have_written_is_not_read(
    shipped: Registry, cache: Path, built: list[int], caplog: pytest.LogCaptureFixture
) -> None:
    mode = shipped.mode("code")
    ToolSearch(shipped).lexical_for(mode)
    kept_file(cache).chmod(0o666)
    built.clear()
    with caplog.at_level(logging.WARNING, logger="prompt_composer"):
        ToolSearch(shipped).lexical_for(mode)
    assert built == [1] and any("writable by others" in r.getMessage() for r in caplog.records)
    os.chmod(kept_file(cache), 0o600)


def test_the_search_command_keeps_the_index_unless_told_not_to(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from prompt_composer.cli import main

    assert main(["--no-cache", "search", "--mode", "code", "--strategy", "keyword", "read a file"]) == 0
    assert not (cache / "lexical").exists() and not (cache / "registry").exists()
    without = capsys.readouterr().out
    assert main(["search", "--mode", "code", "--strategy", "keyword", "read a file"]) == 0
    assert len(list((cache / "lexical").iterdir())) == 1
    assert main(["search", "--mode", "code", "--strategy", "keyword", "read a file"]) == 0
    assert capsys.readouterr().out == without * 2
