"""Tool search: tokenization, BM25F ranking, the one access policy, explained misses, selection fallbacks,
embedding fusion, the persistent vector cache, task decomposition and learned phrasings."""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from prompt_composer import Registry, load_registry
from prompt_composer.discovery import embeddings as embeddings_module
from prompt_composer.discovery.cache_paths import vector_cache_path
from prompt_composer.discovery.lexical import LexicalIndex
from prompt_composer.discovery.needs import MAX_NEEDS, decompose
from prompt_composer.discovery.search import ToolSearch
from prompt_composer.discovery.semantic import doc_fingerprint, semantic_texts
from prompt_composer.discovery.tokenize import split_identifier, tokenize
from prompt_composer.errors import EmbeddingUnavailable
from prompt_composer.learn.phrasings import load_phrasings, phrasings_from_events
from tests.helpers import SEARCH_DOCS as DOCS
from tests.helpers import search_doc as doc
from tests.helpers import search_mode as mode


@pytest.fixture(autouse=True)
def user_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user cache of the test's own: the default vector file goes there, never to the real one."""
    path = tmp_path_factory.mktemp("user-cache")
    monkeypatch.setenv("PROMPT_COMPOSER_CACHE", str(path))
    return path


# --- a small registry with a tool no mode but "admin" may see -------------------------------------------


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
    with caplog.at_level(logging.WARNING, logger="prompt_composer.discovery.search"):
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
    with caplog.at_level(logging.WARNING, logger="prompt_composer.discovery.search"):
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


# --- persisted tool vectors ----------------------------------------------------------------------------------


def test_tool_vectors_persist_in_the_user_cache_by_default(registry: Registry, user_cache: Path) -> None:
    first = WordEmbedder()
    ToolSearch(registry, embedder=first).tool_vectors()
    assert first.documents_embedded
    assert vector_cache_path(first.name).is_file() and vector_cache_path(first.name).is_relative_to(user_cache)
    again = WordEmbedder()  # a new process: same file, nothing to embed, small talk included
    search = ToolSearch(registry, embedder=again)
    assert search.search("grep the codebase", registry.mode("code"), strategy="hybrid").names[0] == "search_files"
    assert again.documents_embedded == []
    assert [q for q in again.queries if q != "grep the codebase"] == []


def test_a_thousand_tool_registry_with_one_edited_doc_embeds_that_doc_only(tmp_path: Path) -> None:
    docs = [doc(f"tool_{i}", "read", f"Read thing number {i} from the store {i % 7}.") for i in range(1_000)]
    modes = [mode("code", ["read"])]
    first = WordEmbedder()
    ToolSearch(Registry.from_docs(docs, modes), embedder=first).tool_vectors()
    edited = [d if d.name != "tool_500" else d.model_copy(update={"brief": "Read a changed thing."}) for d in docs]
    counting = WordEmbedder()
    ToolSearch(Registry.from_docs(edited, modes), embedder=counting).tool_vectors()
    changed = set(semantic_texts(edited[500])) - set(semantic_texts(docs[500]))
    assert sorted(counting.documents_embedded) == sorted(changed)


def test_no_persistence_when_asked_and_a_broken_cache_never_breaks_search(
    registry: Registry, user_cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ToolSearch(registry, embedder=WordEmbedder(), cache_path=False).tool_vectors()
    assert not (user_cache / "vectors").exists()
    path = vector_cache_path(WordEmbedder.name)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a cache")
    with caplog.at_level(logging.WARNING):
        result = ToolSearch(registry, embedder=WordEmbedder()).search("grep", registry.mode("code"))
    assert result.names[0] == "search_files" and "rebuilt" in caplog.text
    blocked = user_cache / "blocked"
    blocked.write_text("a file where a folder should be")
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        search = ToolSearch(registry, embedder=WordEmbedder(), cache_path=blocked / "vectors.npz")
        assert search.search("grep", registry.mode("code")).names[0] == "search_files"
    assert "could not save tool vectors" in caplog.text


# --- decomposition -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_text", "needs"),
    [
        ("grep the codebase", ["grep the codebase"]),
        (
            "Find the latest paper on web agents, read the full text, and then save a summary to /root/notes.md.",
            ["Find the latest paper on web agents", "read the full text", "save a summary to /root/notes.md"],
        ),
        ("Run the tests. Also, tell me which ones failed", ["Run the tests", "tell me which ones failed"]),
        ("list the files; then open main.py", ["list the files", "open main.py"]),
        ("search files and replace the name", ["search files", "replace the name"]),
        ("bread and butter", ["bread and butter"]),  # "and" splits only before an action verb
        # "next" starts a step at a clause's start, and is a word like any other inside one
        ("Stage app.py for the next commit", ["Stage app.py for the next commit"]),
        ("Open the page. Next, click login", ["Open the page", "click login"]),
        ("read it and next write a summary", ["read it", "write a summary"]),
        ("uruchom testy. potem zapisz wynik", ["uruchom testy", "zapisz wynik"]),
        ("先搜索代码。然后运行测试", ["先搜索代码", "运行测试"]),
        ("What does this mean?\n" + "iVBORw0KGgo" * 20, ["What does this mean?\n" + "iVBORw0KGgo" * 20]),
        ("", []),
    ],
)
def test_decompose_splits_a_task_into_needs(request_text: str, needs: list[str]) -> None:
    assert decompose(request_text) == needs


def test_decompose_keeps_at_most_max_needs() -> None:
    assert len(decompose(". ".join(f"read file number {i}" for i in range(20)))) == MAX_NEEDS


def test_a_multi_step_request_finds_a_tool_for_each_step(registry: Registry) -> None:
    code = registry.mode("code")
    task = "grep the codebase for TODO comments, then run the tests in the terminal and fix what fails"
    assert decompose(task) == ["grep the codebase for TODO comments", "run the tests in the terminal", "fix what fails"]
    search = ToolSearch(registry, embedder=WordEmbedder())
    for strategy in ("keyword", "hybrid"):
        names = search.search(task, code, strategy=strategy).names  # type: ignore[arg-type]
        assert {"search_files", "execute_command"} <= set(names[:2]), (strategy, names)


# --- learned phrasings ---------------------------------------------------------------------------------------


def test_learned_phrasings_change_the_ranking(registry: Registry) -> None:
    code = registry.mode("code")
    query = "summon the oracle"
    plain = ToolSearch(registry, embedder=False)
    assert plain.search(query, code).miss is not None  # nothing in the docs says "summon" or "oracle"
    learned = ToolSearch(registry, embedder=False, phrasings={"apply_diff": ["summon the oracle please"]})
    assert learned.search(query, code).names[0] == "apply_diff"
    semantic = ToolSearch(
        registry, embedder=WordEmbedder(), phrasings={"list_files": ["look for it in files"]}, cache_path=False
    )
    before = ToolSearch(registry, embedder=WordEmbedder(), cache_path=False).rank("look for it in files", code)[0]
    after = semantic.rank("look for it in files", code)[0]
    assert after.index("list_files") < before.index("list_files")


def test_tools_used_for_the_same_request_are_found_together(registry: Registry) -> None:
    code = registry.mode("code")
    phrasings = {"read_file": ["deploy the blog"], "execute_command": ["deploy the blog"]}
    names = ToolSearch(registry, embedder=False, phrasings=phrasings).search("deploy the blog", code).names
    assert set(names[:2]) == {"read_file", "execute_command"}


def test_phrasings_never_reach_past_the_mode_or_the_registry(registry: Registry) -> None:
    phrasings = {"secret_tool": ["rotate the keys"], "no_such_tool": ["rotate the keys"]}
    search = ToolSearch(registry, embedder=False, phrasings=phrasings)
    assert "no_such_tool" not in search.phrasings.by_tool
    for strategy in ("keyword", "hybrid"):
        result = search.search("rotate the keys", registry.mode("code"), strategy=strategy)  # type: ignore[arg-type]
        assert "secret" not in json.dumps(result.as_dict())
    assert search.search("rotate the keys", registry.mode("admin")).names[0] == "secret_tool"


def _event(kind: str, task: str, **fields: Any) -> dict[str, Any]:
    return {"v": 1, "ts": 0.0, "event": kind, "task": task, "mode": "code", "provider": "anthropic", **fields}


def test_phrasings_come_from_searches_whose_hits_a_task_then_used(tmp_path: Path) -> None:
    events = [
        _event("search", "t1", query="find the config loader", hits=["search_files", "glob"], call_id="a"),
        _event("tool_call", "t1", tool="tool_search", outcome="ok"),
        _event("tool_call", "t1", tool="search_files", outcome="ok"),
        _event("tool_call", "t1", tool="search_files", outcome="ok"),  # used twice, learned once
        _event("tool_call", "t1", tool="glob", outcome="error"),  # failed: not learned
        _event("tool_call", "t2", tool="glob", outcome="ok"),  # another task: not learned
        _event("search", "t3", hits=["read_file"], call_id="b"),  # logged without content: teaches nothing
        _event("tool_call", "t3", tool="read_file", outcome="ok"),
        _event("tool_call", "t4", tool="read_file", outcome="ok"),  # used before the search: not learned
        _event("search", "t4", query="open the readme", hits=["read_file", "list_files"]),
        _event("tool_call", "t4", tool="list_files", outcome="ok"),
    ]
    assert phrasings_from_events(events) == {
        "search_files": ["find the config loader"],
        "list_files": ["open the readme"],
    }
    log = tmp_path / "events.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in events) + '{"torn line', encoding="utf-8")
    assert load_phrasings([log]) == phrasings_from_events(events)


# --- misses --------------------------------------------------------------------------------------------------


def test_confidence_is_calibrated_evidence_and_a_miss_below_the_line(registry: Registry) -> None:
    search = ToolSearch(registry, embedder=WordEmbedder())
    code = registry.mode("code")
    hit = search.search("grep the codebase", code, strategy="hybrid")
    miss = search.search("bake a chocolate cake", code, strategy="hybrid")
    assert hit.confidence > 0.5 and hit.miss is None
    assert miss.confidence < 0.5 and miss.hits == () and miss.miss is not None
    assert search.confidence({"cover": 1.0, "cover_all": 1.0, "cos_rel": 1.0}, "hybrid") > 0.99
    assert search.confidence({}, "hybrid") < 0.5


def test_search_command_learns_from_an_event_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from prompt_composer.cli import main

    log = tmp_path / "events.jsonl"
    events = [
        _event("search", "t1", query="summon the oracle", hits=["search_files"]),
        _event("tool_call", "t1", tool="search_files", outcome="ok"),
    ]
    log.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    argv = ["search", "summon the oracle", "--mode", "code", "--strategy", "keyword", "--format", "json"]
    assert main(argv) == 1  # the shipped docs know no oracle
    capsys.readouterr()
    assert main([*argv, "--learn-from", str(log)]) == 0
    assert json.loads(capsys.readouterr().out)["hits"][0]["name"] == "search_files"


def test_an_embedder_that_batches_queries_embeds_a_task_and_its_needs_at_once(registry: Registry) -> None:
    class Batching(WordEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.batches: list[list[str]] = []

        def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
            self.batches.append(list(texts))
            return np.stack([self._vector(t) for t in texts])

    task = "grep the codebase for TODO comments, then run the tests in the terminal"
    code = registry.mode("code")
    batching = Batching()
    batched = ToolSearch(registry, embedder=batching, cache_path=False).rank(task, code, "hybrid")[0]
    assert batching.batches == [[task, *decompose(task)]]
    assert batched == ToolSearch(registry, embedder=WordEmbedder(), cache_path=False).rank(task, code, "hybrid")[0]
