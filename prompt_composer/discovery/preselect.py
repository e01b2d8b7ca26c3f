"""Preselection: the tools a request calls for, found before the model is asked.

A small model asked to search or fetch mostly does neither. A mode with ``preselect: {k, min_confidence}`` has
the user's own words searched (needs decomposition and learned phrasings included, as ``tool_search`` does) over
its tools before each new user message goes out, and the best ``k`` whose confidence passes the floor are loaded
for the task. Permanent tools are never counted: they are in full already; and a tool that ranks below the best
permanent one is not loaded (the request is served by a tool the model has in full).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.modes import Mode, PreselectConfig
from .needs import decompose
from .results import SearchResult
from .search import ToolSearch


@dataclass(frozen=True)
class Preselection:
    """What one preselection found: the tools to load, best first, with their confidence (the search's 0..1
    similarity of each tool to the request), and the request's own confidence that any tool serves it."""

    query: str
    tools: tuple[str, ...]
    confidences: tuple[float, ...]
    confidence: float

    def as_fields(self, *, include_content: bool) -> dict[str, object]:
        """The fields of a ``preselect`` event (the query only with content)."""
        return {
            "tools": list(self.tools),
            "confidences": [round(c, 4) for c in self.confidences],
            "confidence": round(self.confidence, 4),
            **({"query": self.query} if include_content else {}),
        }


def preselect(search: ToolSearch, mode: Mode, text: str, config: PreselectConfig) -> Preselection:
    """The best ``config.k`` tools of ``mode`` for ``text`` at or above ``config.min_confidence`` that rank above
    every permanent tool; none on a miss. A request of several steps (:func:`~.needs.decompose`) gets the best
    such tool of each step first, so a step a permanent tool serves does not hide the others."""
    query = " ".join(text.split())
    if not query:
        return Preselection("", (), (), 0.0)
    result = search.search(query, mode, limit=config.k + len(mode.permanent))
    needs = decompose(query) if search.decompose else []
    chosen: dict[str, float] = {}
    if len(needs) > 1:
        for need in needs:
            for name, similarity in _above_permanent(search.search(need, mode, limit=config.k), mode, config)[:1]:
                chosen.setdefault(name, similarity)
    for name, similarity in _above_permanent(result, mode, config):
        chosen.setdefault(name, similarity)
    picked = list(chosen.items())[: config.k]
    return Preselection(query, tuple(n for n, _ in picked), tuple(c for _, c in picked), result.confidence)


def _above_permanent(result: SearchResult, mode: Mode, config: PreselectConfig) -> list[tuple[str, float]]:
    """The hits ranked above the best permanent tool, at or above the floor. A permanent tool is in full already:
    what ranks below it serves the request less well by the search's own measure, and only gives a small model a
    wrong tool to call (docs/tool-choice.md)."""
    permanent = set(mode.permanent)
    ranked = list(result.hits)
    first = next((i for i, h in enumerate(ranked) if h.name in permanent), len(ranked))
    return [(h.name, h.similarity) for h in ranked[:first] if h.similarity >= config.min_confidence]
