"""Discovery subcommands: ``search`` (what tool_search would answer) and ``eval`` (retrieval metrics)."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ._common import add_learn_from, add_mode_option, positive_int, registry_of, search_for

if TYPE_CHECKING:
    from ..discovery.results import SearchStrategy

_SEARCH_STRATEGIES = ("keyword", "semantic", "hybrid")
GATE_RECALL_K = 5  # --min-recall gates recall@5: the results a tool_search answer shows by default


def unit_interval(text: str) -> float:
    """An argparse type for a threshold between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1")
    return value


def register(sub: Any) -> None:
    p = sub.add_parser("search", help="search a mode's tools, as tool_search does")
    p.add_argument("query", help="what the tool should do, in words")
    add_mode_option(p, "the mode whose tools are searched")
    p.add_argument("--limit", type=positive_int, default=5, help="tools to list at most (default: 5)")
    p.add_argument(
        "--strategy", choices=_SEARCH_STRATEGIES, default=None, help="default: hybrid with embeddings, else keyword"
    )
    p.add_argument("--format", choices=("text", "json"), default="text")
    add_learn_from(p)
    p.set_defaults(handler=cmd_search)

    p = sub.add_parser("eval", help="recall@k, hit@k and MRR of tool search on a JSONL query file")
    p.add_argument("--queries", required=True, metavar="FILE", help='JSONL: {"query": ..., "tools": [names]}')
    add_mode_option(p, "the mode whose tools are searched")
    p.add_argument(
        "--strategy", choices=_SEARCH_STRATEGIES, default=None, help="default: hybrid with embeddings, else keyword"
    )
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument(
        "--min-recall",
        type=unit_interval,
        default=None,
        metavar="R",
        help="exit 1 when recall@5 is below R (0 to 1): a CI gate on search quality",
    )
    p.add_argument(
        "--min-mrr", type=unit_interval, default=None, metavar="M", help="exit 1 when the MRR is below M (0 to 1)"
    )
    add_learn_from(p)
    p.set_defaults(handler=cmd_eval)


@contextlib.contextmanager
def _quiet_search_logs() -> Iterator[None]:
    """Search warnings reach the user once, through the result, on stderr; not again through logging. Scoped, so
    a caller running the CLI in-process (tests, notebooks) keeps its own logging afterwards."""
    logger = logging.getLogger("prompt_composer.discovery")  # search and the modules it runs
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _warn(messages: Any) -> None:
    for message in dict.fromkeys(messages):
        print(f"warning: {message}", file=sys.stderr)


def cmd_search(args: argparse.Namespace) -> int:
    with _quiet_search_logs():
        return _search(args)


def _search(args: argparse.Namespace) -> int:
    from ..discovery.search import ToolSearch
    from ..discovery.tools import render_search_result

    registry = registry_of(args)
    mode = registry.mode(args.mode)
    search = search_for(args, registry) or ToolSearch(registry, index_cache=getattr(args, "cache", True))
    strategy: SearchStrategy | None = args.strategy
    result = search.search(args.query, mode, limit=args.limit, strategy=strategy)
    _warn(result.warnings)
    if args.format == "json":
        print(json.dumps(result.as_dict(), indent=2, ensure_ascii=False))
    else:
        print(render_search_result(result, registry, activates=False))
    return 0 if result.hits else 1


def cmd_eval(args: argparse.Namespace) -> int:
    with _quiet_search_logs():
        return _eval(args)


def _eval(args: argparse.Namespace) -> int:
    from ..discovery.evaluate import evaluate, load_queries
    from ..discovery.search import ToolSearch
    from ..shared.progress import Progress

    registry = registry_of(args)
    mode = registry.mode(args.mode)
    queries = load_queries(args.queries)
    search = search_for(args, registry) or ToolSearch(registry, index_cache=getattr(args, "cache", True))
    strategy: SearchStrategy = args.strategy or search.default_strategy()
    if strategy != "keyword" and not search.semantic_available:
        _warn([search.unavailable_warning()])
        strategy = "keyword"

    # A bar on a terminal, nothing off one: a CI log gets the report only.
    with Progress("eval", len(queries), sys.stderr) as progress:

        def rank(query: str) -> list[str]:
            ranked = search.rank(query, mode, strategy)[0][:10]
            progress.advance()
            return ranked

        report = evaluate(queries, rank, allows=mode.allows, strategy=strategy)
    _warn(report.warnings)
    if args.format == "json":
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
    else:
        print(report.to_table())
    return _gate(report.recall[GATE_RECALL_K], report.mrr, args.min_recall, args.min_mrr)


def _gate(recall: float, mrr: float, min_recall: float | None, min_mrr: float | None) -> int:
    """1 (on stderr, each reason) when a metric is below its threshold, else 0."""
    failed = [
        f"{name} {value:.3f} is below --min-{flag} {floor}"
        for name, flag, value, floor in (
            (f"recall@{GATE_RECALL_K}", "recall", recall, min_recall),
            ("mrr", "mrr", mrr, min_mrr),
        )
        if floor is not None and value < floor
    ]
    for reason in failed:
        print(f"error: {reason}", file=sys.stderr)
    return 1 if failed else 0
