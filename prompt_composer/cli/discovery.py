"""Discovery subcommands: ``search`` (what tool_search would answer) and ``eval`` (retrieval metrics)."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any

from ..discovery.evaluate import evaluate, load_queries
from ..discovery.results import SearchStrategy
from ..discovery.search import ToolSearch
from ..discovery.tools import render_search_result
from ._common import add_learn_from, positive_int, registry_of, search_for

_SEARCH_STRATEGIES = ("keyword", "semantic", "hybrid")


def register(sub: Any) -> None:
    p = sub.add_parser("search", help="search a mode's tools, as tool_search does")
    p.add_argument("query")
    p.add_argument("--mode", required=True)
    p.add_argument("--limit", type=positive_int, default=5)
    p.add_argument(
        "--strategy", choices=_SEARCH_STRATEGIES, default=None, help="default: hybrid with embeddings, else keyword"
    )
    p.add_argument("--format", choices=("text", "json"), default="text")
    add_learn_from(p)
    p.set_defaults(handler=cmd_search)

    p = sub.add_parser("eval", help="recall@k, hit@k and MRR of tool search on a JSONL query file")
    p.add_argument("--queries", required=True, metavar="FILE", help='JSONL: {"query": ..., "tools": [names]}')
    p.add_argument("--mode", required=True)
    p.add_argument(
        "--strategy", choices=_SEARCH_STRATEGIES, default=None, help="default: hybrid with embeddings, else keyword"
    )
    p.add_argument("--format", choices=("table", "json"), default="table")
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
    registry = registry_of(args)
    mode = registry.mode(args.mode)
    search = search_for(args, registry) or ToolSearch(registry)
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
    registry = registry_of(args)
    mode = registry.mode(args.mode)
    queries = load_queries(args.queries)
    search = search_for(args, registry) or ToolSearch(registry)
    strategy: SearchStrategy = args.strategy or search.default_strategy()
    if strategy != "keyword" and not search.semantic_available:
        _warn([search.unavailable_warning()])
        strategy = "keyword"

    def rank(query: str) -> list[str]:
        return search.rank(query, mode, strategy)[0][:10]

    report = evaluate(queries, rank, allows=mode.allows, strategy=strategy)
    _warn(report.warnings)
    if args.format == "json":
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
    else:
        print(report.to_table())
    return 0
