"""Tool search: tokenization, BM25F ranking, the one access policy, explained misses, selection fallbacks,
embedding fusion and the embedding cache."""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pytest

from prompt_composer import ModeConfig, Registry, ToolDoc, load_registry
from prompt_composer import embeddings as embeddings_module
from prompt_composer.embeddings import EmbeddingUnavailable
from prompt_composer.search import (
    LexicalIndex,
    ToolSearch,
    doc_fingerprint,
    semantic_texts,
    split_identifier,
    tokenize,
)

# --- a small registry with a tool no mode but "admin" may see -------------------------------------------


def doc(name: str, group: str, brief: str, *, queries: tuple[str, ...] = (), full: str = "") -> ToolDoc:
    return ToolDoc(
        name=name,
        group=group,
        brief=brief,
        full=full or f"## {name}\n{brief}",
        input_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        queries=queries,
    )


DOCS = [
    doc("read_file", "read", "Read the contents of a file.", queries=("open a file", "show file contents")),
    doc("search_files", "read", "Search file contents with a regular expression.", queries=("grep the codebase",)),
    doc("list_files", "read", "List the files and folders in a directory."),
    doc("write_to_file", "edit", "Create a new file or overwrite a whole file."),
    doc("apply_diff", "edit", "Change part of a file by replacing exact text."),
    doc("execute_command", "command", "Run a shell command and read its output.", queries=("run the tests",)),
    doc("secret_tool", "admin", "Rotate the production database credentials.", full="TOP SECRET INTERNALS"),
    doc("secret_grep", "admin", "Search file contents in the vault with a regular expression."),
]


def mode(slug: str, groups: Sequence[str], **kw: Any) -> ModeConfig:
    values: dict[str, Any] = {
        "slug": slug,
        "name": slug.title(),
        "role": f"You are the {slug} agent.",
        "groups": list(groups),
        "recent_size": 2,
        "budget_tokens": 100_000,
    }
    values.update(kw)
    return ModeConfig(**values)


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry.from_docs(
        DOCS,
        [
            mode("code", ["read", "edit", "command"], permanent=["read_file"]),
            mode("ask", ["read"]),
            mode("admin", ["admin"]),
        ],
    )


class WordEmbedder:
    """A deterministic stand-in model: bag of concept words (synonyms and translations share a concept)."""

    name = "test-words-v1"
    CONCEPTS: ClassVar[dict[str, str]] = {
        "grep": "search",
        "find": "search",
        "look": "search",
        "suche": "search",
        "buscar": "search",
        "search": "search",
        "datei": "file",
        "archivo": "file",
        "file": "file",
        "files": "file",
        "shell": "command",
        "terminal": "command",
        "command": "command",
        "run": "command",
        "credentials": "secret",
        "vault": "secret",
        "database": "secret",
    }

    def __init__(self) -> None:
        self.documents_embedded: list[str] = []
        self.queries: list[str] = []
        self.vocab = [*sorted(set(self.CONCEPTS.values())), "other"]

    def _vector(self, text: str) -> np.ndarray:
        v = np.zeros(len(self.vocab), dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            v[self.vocab.index(self.CONCEPTS.get(word, "other"))] += 1.0 if word in self.CONCEPTS else 0.05
        return v / (np.linalg.norm(v) or 1.0)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.documents_embedded.extend(texts)
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, len(self.vocab)), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        self.queries.append(text)
        return self._vector(text)


class BrokenEmbedder(WordEmbedder):
    name = "broken-v1"

    def embed_query(self, text: str) -> np.ndarray:
        raise RuntimeError("model crashed")


class NaNEmbedder(WordEmbedder):
    name = "nan-v1"

    def embed_query(self, text: str) -> np.ndarray:
        return np.full(len(self.vocab), np.nan, dtype=np.float32)


@pytest.fixture
def no_default_model(monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable() -> Any:
        raise EmbeddingUnavailable("no model package installed")

    monkeypatch.setattr(embeddings_module, "default_embedder", unavailable)


# --- tokenization -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("read_file", ["read", "file"]),
        ("mcp__github__createIssue", ["mcp", "github", "create", "issue"]),
        ("github::list_pull_requests", ["github", "list", "pull", "requests"]),
        ("kospi-kosdaq::get_stock_ohlcv", ["kospi", "kosdaq", "get", "stock", "ohlcv"]),
        ("HTMLParserTool", ["html", "parser", "tool"]),
    ],
)
def test_split_identifier(name: str, parts: list[str]) -> None:
    assert split_identifier(name) == parts


def test_tokenize_keeps_identifiers_whole_and_split_drops_stopwords_and_blobs() -> None:
    terms = tokenize("Where is read_file used? The files " + "A1b2C3d4" * 20)
    assert "readfile" in terms and "read" in terms and "file" in terms
    assert "the" not in terms and "is" not in terms
    assert terms.count("file") == 2  # "files" is stemmed to "file"
    assert not any(len(t) > 64 for t in terms) and "a1" not in terms


def test_tokenize_cjk_gives_unigrams_and_bigrams() -> None:
    assert tokenize("读取文件") == ["读", "取", "文", "件", "读取", "取文", "文件"]


def test_bm25f_prefers_name_and_queries_over_full_text() -> None:
    index = LexicalIndex(
        [
            ("deploy", {"name": "deploy", "full": "ship the build"}),
            ("notes", {"name": "notes", "full": "how to deploy: deploy carefully, deploy often"}),
        ]
    )
    ranked = index.rank("deploy", lambda _n: True)
    assert [n for n, _ in ranked] == ["deploy", "notes"]
    assert index.coverage("deploy", "deploy") == 1.0
    assert index.coverage("deploy frobnicate", "deploy") < 0.5  # an unseen word weighs the most


# --- keyword search and the access policy ---------------------------------------------------------------


def test_keyword_search_finds_by_curated_query(registry: Registry) -> None:
    search = ToolSearch(registry, embedder=False)
    result = search.search("grep the codebase", registry.mode("code"))
    assert result.strategy == "keyword"
    assert result.names[0] == "search_files"
    assert 0.0 < result.confidence <= 1.0


def test_search_never_returns_or_names_tools_outside_the_mode(registry: Registry) -> None:
    search = ToolSearch(registry, embedder=WordEmbedder())
    code = registry.mode("code")
    for strategy in ("keyword", "semantic", "hybrid"):
        for query in ("secret_tool", "rotate production database credentials", "search the vault", "secret grep"):
            result = search.search(query, code, limit=20, strategy=strategy)  # type: ignore[arg-type]
            text = json.dumps(result.as_dict())
            assert "secret" not in text.replace(query, ""), (strategy, query)
            names, _ = search.rank(query, code, strategy)  # type: ignore[arg-type]
            assert set(names) <= set(code.allowed)
    admin = search.search("rotate production database credentials", registry.mode("admin"), strategy="keyword")
    assert admin.names[0] == "secret_tool"  # the same query finds it where it is allowed


def test_a_weak_match_is_an_explained_miss_with_allowed_names_and_groups_only(registry: Registry) -> None:
    search = ToolSearch(registry, embedder=False)
    result = search.search("xyzzy plugh secret_toll", registry.mode("code"))
    assert result.hits == () and result.total == 0 and not result.truncated
    assert result.miss is not None
    assert "matches" in result.miss.message
    assert dict(result.miss.groups) == {"read": 3, "edit": 2, "command": 1}
    assert all(registry.mode("code").allows(n) for n in result.miss.nearest)
    assert "secret" not in json.dumps(result.as_dict()).replace("secret_toll", "")


def test_results_say_when_they_are_truncated(registry: Registry) -> None:
    search = ToolSearch(registry, embedder=False)
    result = search.search("file", registry.mode("code"), limit=2)
    assert len(result.hits) == 2
    assert result.total > 2 and result.truncated
    assert result.as_dict()["truncated"] is True
    full = search.search("file", registry.mode("code"), limit=20)
    assert not full.truncated and len(full.hits) == full.total


def test_limit_must_be_positive(registry: Registry) -> None:
    with pytest.raises(ValueError, match="limit"):
        ToolSearch(registry, embedder=False).search("file", registry.mode("code"), limit=0)


# --- semantic, hybrid and their fallbacks ------------------------------------------------------------------


def test_semantic_search_finds_paraphrases_and_other_languages(registry: Registry) -> None:
    search = ToolSearch(registry, embedder=WordEmbedder())
    code = registry.mode("code")
    assert search.default_strategy() == "hybrid"
    for query in ("suche datei", "buscar archivo", "look for it in files"):
        names = search.search(query, code, strategy="semantic").names
        assert "search_files" in names[:3], query
    hybrid = search.search("terminal", code, strategy="hybrid")
    assert hybrid.names[0] == "execute_command" and hybrid.strategy == "hybrid"


def test_no_model_falls_back_to_keyword_with_one_warning(
    registry: Registry, no_default_model: None, caplog: pytest.LogCaptureFixture
) -> None:
    search = ToolSearch(registry)  # the default model, which is "not installed"
    code = registry.mode("code")
    assert search.default_strategy() == "keyword"
    with caplog.at_level(logging.WARNING, logger="prompt_composer.search"):
        first = search.search("grep the codebase", code, strategy="hybrid")
        second = search.search("run the tests", code, strategy="semantic")
    assert first.strategy == second.strategy == "keyword"
    assert first.names[0] == "search_files"
    assert any("no model package installed" in w for w in first.warnings)
    assert len([r for r in caplog.records if "unavailable" in r.getMessage()]) == 1
    selection = search.select("grep the codebase", code, strategy="semantic")
    assert selection.strategy == "keyword" and "search_files" in selection.tools and selection.warnings


def test_embedding_error_at_query_time_falls_back(registry: Registry, caplog: pytest.LogCaptureFixture) -> None:
    search = ToolSearch(registry, embedder=BrokenEmbedder())
    code = registry.mode("code")
    with caplog.at_level(logging.WARNING, logger="prompt_composer.search"):
        selection = search.select("grep the codebase", code, strategy="hybrid")
        result = search.search("grep the codebase", code, strategy="hybrid")
    # selection: every tool of the mode, with a warning; search: keyword results, with a warning
    assert selection.tools == code.allowed and selection.strategy == "all"
    assert any("model crashed" in w for w in selection.warnings)
    assert result.strategy == "keyword" and result.names[0] == "search_files"
    assert any("model crashed" in w for w in result.warnings)
    nan = ToolSearch(registry, embedder=NaNEmbedder()).select("grep", code, strategy="semantic")
    assert nan.tools == code.allowed and nan.warnings


def test_selection_strategies_threshold_and_max_results(registry: Registry) -> None:
    search = ToolSearch(registry, embedder=WordEmbedder())
    code = registry.mode("code")
    everything = search.select("anything", code, strategy="all")
    assert everything.tools == code.allowed and everything.strategy == "all"

    keyword = search.select("run the tests", code, strategy="keyword", threshold=0.5)
    assert "execute_command" in keyword.tools
    assert "read_file" in keyword.tools  # permanent tools always go
    assert set(keyword.tools) < set(code.allowed)
    assert list(keyword.tools) == [n for n in code.allowed if n in keyword.tools]  # the mode's order

    capped = search.select("file", code, strategy="keyword", max_results=1)
    assert capped.truncated and "dropped" in capped.reason

    nothing = search.select("xyzzy plugh", code, strategy="keyword", threshold=0.5)
    assert nothing.tools == code.allowed and nothing.strategy == "all" and "threshold" in nothing.reason
    too_strict = search.select("grep the codebase", code, strategy="semantic", threshold=1.01)
    assert too_strict.tools == code.allowed

    with pytest.raises(ValueError, match="strategy"):
        search.select("x", code, strategy="fuzzy")  # type: ignore[arg-type]


def test_empty_registry_selects_nothing() -> None:
    empty = Registry.from_docs([], [mode("code", ["read"])])
    search = ToolSearch(empty, embedder=WordEmbedder())
    for strategy in ("all", "keyword", "semantic", "hybrid"):
        assert search.select("read a file", empty.mode("code"), strategy=strategy).tools == ()  # type: ignore[arg-type]
    result = search.search("read a file", empty.mode("code"))
    assert result.hits == () and result.miss is not None


def test_tool_vectors_are_cached_per_doc_fingerprint(registry: Registry, tmp_path: Any) -> None:
    cache = tmp_path / "vectors.npz"
    first = WordEmbedder()
    vectors = ToolSearch(registry, embedder=first, cache_path=cache).tool_vectors()
    texts = {t for d in registry.tools.values() for t in semantic_texts(d)}
    assert sorted(first.documents_embedded) == sorted(texts) and cache.exists()
    # a tool's vector is the mean of its texts' vectors
    apply_diff = list(registry.tools).index("apply_diff")
    own = first.embed_documents(semantic_texts(registry.tools["apply_diff"]))
    assert np.allclose(vectors[apply_diff], own.mean(axis=0))

    edited = [d if d.name != "apply_diff" else d.model_copy(update={"brief": "Patch a file in place."}) for d in DOCS]
    changed = Registry.from_docs(edited, [mode("code", ["read", "edit", "command"])])
    assert doc_fingerprint(changed.tools["apply_diff"]) != doc_fingerprint(registry.tools["apply_diff"])
    assert doc_fingerprint(changed.tools["read_file"]) == doc_fingerprint(registry.tools["read_file"])
    second = WordEmbedder()
    ToolSearch(changed, embedder=second, cache_path=cache).tool_vectors()
    # only the edited doc's changed texts are embedded again
    assert second.documents_embedded
    assert all("Patch a file in place." in text for text in second.documents_embedded)


def test_shipped_docs_keyword_search() -> None:
    shipped = load_registry()
    search = ToolSearch(shipped, embedder=False)
    code = shipped.mode("code")
    expectations = {
        "grep the codebase for a function": "search_files",
        "run the test suite": "execute_command",
        "find files by name pattern": "glob",
        "set a breakpoint": None,  # a debug tool: not in code mode
    }
    for query, expected in expectations.items():
        names = search.search(query, code).names
        if expected is None:
            assert not any(n.startswith("debug_") for n in names)
        else:
            assert expected in names[:3], (query, names)


def test_hybrid_fusion_copes_with_one_tool_and_no_spread() -> None:
    one = Registry.from_docs([DOCS[0]], [mode("code", ["read"])])
    search = ToolSearch(one, embedder=WordEmbedder())
    code = one.mode("code")
    for query in ("read a file", "xyzzy"):  # a keyword match, and none (a single cosine has no spread)
        names, _result = search.rank(query, code, "hybrid")
        assert names == ["read_file"]
    hit = search.search("read a file", code, strategy="hybrid").hits[0]
    assert hit.name == "read_file" and math.isfinite(hit.score)
