"""Retrieval evaluation of tool search: recall@k, hit@k, MRR and the worst misses over a JSONL query set.

A query file holds one ``{"query": "...", "tools": ["name", ...]}`` per line (``relevant`` is accepted for
``tools``). Rankings are over the tools the mode allows; an expected tool the mode does not allow counts as
missed, with a warning (its name is the caller's own input, so naming it leaks nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputFileError
from ..shared.files import json_lines, line_error

MAX_MISSES = 20


@dataclass(frozen=True)
class EvalQuery:
    query: str
    tools: tuple[str, ...]


def load_queries(path: str | Path) -> list[EvalQuery]:
    """Read a JSONL query file; a bad line is an error naming ``path:line``."""
    queries: list[EvalQuery] = []
    for line in json_lines(path, what="query file"):
        row = line.value
        tools = row.get("tools", row.get("relevant")) if isinstance(row, dict) else None
        query = row.get("query") if isinstance(row, dict) else None
        if not isinstance(query, str) or not query.strip():
            raise line_error(path, line.number, 'needs a non-empty "query" string')
        if not isinstance(tools, list) or not tools or not all(isinstance(t, str) for t in tools):
            raise line_error(path, line.number, 'needs "tools": a non-empty list of tool names')
        queries.append(EvalQuery(query, tuple(dict.fromkeys(tools))))
    if not queries:
        raise InputFileError(f"{path}: no queries", path=path)
    return queries


@dataclass(frozen=True)
class EvalReport:
    """Mean metrics over the queries; ``misses`` are the queries with the lowest recall@5."""

    strategy: str
    queries: int
    recall: dict[int, float]
    hit: dict[int, float]
    mrr: float
    misses: tuple[dict[str, Any], ...]
    warnings: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "recall@1": round(self.recall[1], 4),
            "recall@5": round(self.recall[5], 4),
            "recall@10": round(self.recall[10], 4),
            "hit@1": round(self.hit[1], 4),
            "hit@5": round(self.hit[5], 4),
            "mrr": round(self.mrr, 4),
            "queries": self.queries,
            "misses": list(self.misses),
        }

    def to_table(self) -> str:
        rows = [
            ("strategy", self.strategy),
            ("queries", str(self.queries)),
            *((f"recall@{k}", f"{self.recall[k]:.3f}") for k in (1, 5, 10)),
            *((f"hit@{k}", f"{self.hit[k]:.3f}") for k in (1, 5)),
            ("mrr", f"{self.mrr:.3f}"),
        ]
        lines = [f"{name:<10} {value}" for name, value in rows]
        if self.misses:
            lines.append("\nmissed most (recall@5, query, expected → got):")
            for miss in self.misses:
                lines.append(
                    f"  {miss['recall@5']:.2f}  {_clip(miss['query'])}\n"
                    f"        expected {', '.join(miss['expected'])}\n        got      {', '.join(miss['got']) or '-'}"
                )
        return "\n".join(lines)


def _clip(text: str, width: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def evaluate(
    queries: Iterable[EvalQuery],
    rank: Callable[[str], Sequence[str]],
    *,
    allows: Callable[[str], bool],
    strategy: str = "",
) -> EvalReport:
    """Score ``rank`` (a query → tool names, best first) on ``queries``.

    recall@k: the mean share of a query's tools in the top k. hit@k: the share of queries with at least one of
    its tools in the top k. MRR: the mean reciprocal rank of the first right tool (0 when none is ranked).
    """
    items = list(queries)
    if not items:
        raise ValueError("no queries to evaluate")
    ks = (1, 5, 10)
    recall = dict.fromkeys(ks, 0.0)
    hit = dict.fromkeys((1, 5), 0.0)
    mrr = 0.0
    outside: dict[str, None] = {}
    scored: list[tuple[float, int, dict[str, Any]]] = []
    for index, item in enumerate(items):
        ranked = list(rank(item.query))
        expected = set(item.tools)
        for tool in item.tools:
            if not allows(tool):
                outside[tool] = None
        for k in ks:
            recall[k] += len(expected & set(ranked[:k])) / len(expected)
        for k in hit:
            hit[k] += any(t in expected for t in ranked[:k])
        first = next((i for i, name in enumerate(ranked) if name in expected), None)
        mrr += 1.0 / (first + 1) if first is not None else 0.0
        r5 = len(expected & set(ranked[:5])) / len(expected)
        scored.append((r5, index, {"query": item.query, "expected": list(item.tools), "got": ranked[:5]}))
    n = len(items)
    worst = sorted(scored, key=lambda entry: (entry[0], entry[1]))[:MAX_MISSES]
    misses = tuple({**miss, "recall@5": round(r5, 4)} for r5, _i, miss in worst if r5 < 1.0)
    warnings: tuple[str, ...] = ()
    if outside:
        names = ", ".join(list(outside)[:10]) + (" …" if len(outside) > 10 else "")
        warnings = (
            f"{len(outside)} expected tool(s) are not in the mode (or the registry) and count as missed: {names}",
        )
    return EvalReport(
        strategy,
        n,
        {k: v / n for k, v in recall.items()},
        {k: v / n for k, v in hit.items()},
        mrr / n,
        misses,
        warnings,
    )
