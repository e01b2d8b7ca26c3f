"""Server cards on the search corpora (issue 38): LiveMCPBench and MetaTool, the ``eval`` protocol of
:mod:`bench_search` (hybrid, the dev queries, no learned phrasings), with and without cards.

LiveMCPBench's tools carry their server's own ``server_description``. *Before* (the protocol until issue 38) it is
appended to each tool's full text; *cards* gives each tool its ``origin`` and the description a card of its server
instead (:func:`search_corpora.livemcp_cards`), which search indexes in a field of its own and in the embedded
text; *cards + full* keeps both. MetaTool's tools have no server, so cards cannot change it: it is measured to show
that nothing else moved.

Run: ``python3 benchmarks/retrieval_cards.py [--metatool N] [--card-weight W] [--card-semantic-weight W]``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import search_corpora as corpora

from prompt_composer.discovery.evaluate import EvalQuery, EvalReport, evaluate
from prompt_composer.discovery.search import CARD_SEMANTIC_WEIGHT, CARD_WEIGHT, ToolSearch


def _report(registry: Any, rows: Sequence[dict[str, Any]], **weights: float) -> EvalReport:
    mode = registry.mode("all")
    search = ToolSearch(registry, **weights)
    queries = [EvalQuery(r["query"], tuple(r["tools"])) for r in rows]
    return evaluate(queries, lambda q: search.rank(q, mode, "hybrid")[0][:10], allows=mode.allows)


def _row(label: str, report: EvalReport) -> str:
    return f"| {label} | {report.recall[5]:.3f} | {report.recall[10]:.3f} | {report.mrr:.3f} |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--metatool", type=int, default=None, help="the first N MetaTool dev queries (default all)")
    parser.add_argument("--skip-metatool", action="store_true")
    parser.add_argument("--card-weight", type=float, default=CARD_WEIGHT)
    parser.add_argument("--card-semantic-weight", type=float, default=CARD_SEMANTIC_WEIGHT)
    args = parser.parse_args()
    weights = {"card_weight": args.card_weight, "card_semantic_weight": args.card_semantic_weight}
    print("| corpus, variant | recall@5 | recall@10 | MRR |\n|---|---:|---:|---:|")
    rows = corpora.livemcp_queries()
    cards = corpora.livemcp_cards()
    before = corpora.registry_of(corpora.livemcp_docs())
    with_cards = corpora.registry_of(corpora.livemcp_docs(cards=True), servers=cards)
    both = corpora.registry_of(
        [
            d.model_copy(update={"origin": c.origin})
            for d, c in zip(corpora.livemcp_docs(), corpora.livemcp_docs(cards=True), strict=True)
        ],
        servers=cards,
    )
    print(
        _row("LiveMCPBench, before (server_description in the full text)", _report(before, rows, **weights)), flush=True
    )
    print(_row("LiveMCPBench, cards", _report(with_cards, rows, **weights)), flush=True)
    print(_row("LiveMCPBench, cards + full text as before", _report(both, rows, **weights)), flush=True)
    if not args.skip_metatool:
        queries = corpora.metatool_queries()
        queries = queries[: args.metatool] if args.metatool else queries
        label = f"MetaTool ({len(queries)} queries; no servers)"
        print(_row(label, _report(corpora.registry_of(corpora.metatool_docs()), queries, **weights)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
