"""Retrieval quality on real data: the default strategy against a plain BM25 baseline on the evaluation
corpora, and queries in other languages against the shipped docs."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from prompt_composer import load_registry
from prompt_composer.evaluate import EvalQuery, evaluate, load_queries
from prompt_composer.search import ToolSearch

ROOT = Path(__file__).resolve().parents[1]


def corpora() -> ModuleType:
    spec = importlib.util.spec_from_file_location("search_corpora", ROOT / "benchmarks" / "search_corpora.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not (module.CORPORA / "metatool").is_dir():
        pytest.skip("../shared/corpora is not beside this checkout")
    return module


def baseline_ranker(texts_by_name: dict[str, str]) -> Any:
    """rank-bm25's BM25Okapi with defaults over name + description, whitespace-tokenised."""
    rank_bm25 = pytest.importorskip("rank_bm25")
    names = list(texts_by_name)
    texts = [texts_by_name[n] for n in names]
    bm25 = rank_bm25.BM25Okapi([t.lower().split() for t in texts])

    def rank(query: str) -> list[str]:
        scores = bm25.get_scores(query.lower().split())
        return [names[i] for i in np.argsort(-scores, kind="stable")[:10]]

    return rank


def as_queries(rows: Sequence[dict[str, Any]]) -> list[EvalQuery]:
    return [EvalQuery(r["query"], tuple(r["tools"])) for r in rows]


@pytest.mark.parametrize("corpus", ["metatool", "livemcp"])
def test_keyword_search_is_at_least_as_good_as_plain_bm25(corpus: str) -> None:
    module = corpora()
    docs = module.metatool_docs() if corpus == "metatool" else module.livemcp_docs()
    rows = module.metatool_queries()[:1500] if corpus == "metatool" else module.livemcp_queries()
    registry = module.registry_of(docs)
    mode = registry.mode("all")
    search = ToolSearch(registry, embedder=False)
    ours = evaluate(as_queries(rows), lambda q: search.rank(q, mode, "keyword")[0][:10], allows=mode.allows)
    base = evaluate(as_queries(rows), baseline_ranker(module.baseline_texts(corpus)), allows=mode.allows)
    assert ours.recall[5] >= base.recall[5]
    if corpus == "metatool":
        assert ours.recall[5] > base.recall[5] + 0.1


def test_multilingual_queries_find_a_right_tool_in_the_top_5() -> None:
    search = ToolSearch(load_registry())
    if not search.semantic_available:
        pytest.skip("the embedding extra is not installed")
    mode = search.registry.mode("debug")
    queries = load_queries(ROOT / "tests" / "data" / "multilingual_queries.jsonl")
    assert len(queries) >= 40
    assert {"pl", "de", "es", "zh", "fr"} <= set(_languages())
    report = evaluate(queries, lambda q: search.rank(q, mode, "hybrid")[0][:10], allows=mode.allows)
    assert report.hit[5] >= 0.85
    keyword = evaluate(queries, lambda q: search.rank(q, mode, "keyword")[0][:10], allows=mode.allows)
    assert report.hit[5] > keyword.hit[5]  # embeddings are what make other languages work


def _languages() -> list[str]:
    import json

    path = ROOT / "tests" / "data" / "multilingual_queries.jsonl"
    return [json.loads(line)["lang"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
