"""What search and selection return: :class:`Hit` and :class:`Miss` inside a :class:`SearchResult`, and the
:class:`Selection` of tools to send for one request; also the names of the strategies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Strategy = Literal["all", "keyword", "semantic", "hybrid"]
SearchStrategy = Literal["keyword", "semantic", "hybrid"]
STRATEGIES: tuple[Strategy, ...] = ("all", "keyword", "semantic", "hybrid")


@dataclass(frozen=True)
class Hit:
    """One tool in a result list. ``similarity`` is the strategy's own 0..1 measure (query coverage for
    keyword, cosine for semantic, the larger of both for hybrid); ``score`` orders the list."""

    name: str
    group: str
    score: float
    similarity: float
    brief: str
    hint: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "group": self.group,
            "score": round(self.score, 4),
            "similarity": round(self.similarity, 4),
            "brief": self.brief,
        }
        if self.hint:
            out["hint"] = self.hint
        return out


@dataclass(frozen=True)
class Miss:
    """Why nothing matched well, and where to look instead (only names and groups the mode allows)."""

    message: str
    nearest: tuple[str, ...]
    groups: tuple[tuple[str, int], ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "message": self.message,
            "nearest": list(self.nearest),
            "groups": [{"group": g, "tools": n} for g, n in self.groups],
        }


@dataclass(frozen=True)
class SearchResult:
    """A ranked list of a mode's tools. ``total`` counts every tool that matched; ``truncated`` says whether
    the list stops short of it. On a miss, ``hits`` is empty and ``miss`` explains."""

    query: str
    mode: str
    strategy: SearchStrategy
    hits: tuple[Hit, ...]
    total: int
    confidence: float
    miss: Miss | None = None
    warnings: tuple[str, ...] = ()

    @property
    def truncated(self) -> bool:
        return self.total > len(self.hits)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(h.name for h in self.hits)

    def as_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "mode": self.mode,
            "strategy": self.strategy,
            "confidence": self.confidence,
            "total": self.total,
            "truncated": self.truncated,
            "hits": [h.as_dict() for h in self.hits],
            "miss": self.miss.as_dict() if self.miss else None,
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class Selection:
    """The tools chosen to send for one request, in the mode's order, and how they were chosen."""

    tools: tuple[str, ...]
    strategy: Strategy
    reason: str
    total: int = 0
    warnings: tuple[str, ...] = field(default=())

    @property
    def truncated(self) -> bool:
        return self.total > len(self.tools)
