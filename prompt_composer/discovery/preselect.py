"""Preselection: the tools a request calls for, found before the model is asked.

A small model asked to search or fetch mostly does neither. A mode with ``preselect: {k, min_confidence}`` has
the user's own words searched (needs decomposition and learned phrasings included, as ``tool_search`` does) over
its tools before each new user message goes out, and the best ``k`` whose confidence passes the floor are loaded
for the task. Permanent tools are never counted: they are in full already; and a tool that ranks below the best
permanent one is not loaded (the request is served by a tool the model has in full), nor is any tool when the
request's own words match a permanent tool best.

The *shortlist* (``preselect: {shortlist: n}``) names the next ``n`` tools of the same ranking, with a summary
each, in the preselection note: the right tool is in the search's top ten far more often than in its top three,
and a name costs a tenth of a definition. They are callable; a call of one is answered with its documentation
and loads it (see :func:`~prompt_composer.core.loading.check_unseen`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from ..core.modes import Mode, PreselectConfig
from .search import ToolSearch

# k per request: a tool is loaded only when its score is at least this share of the best tool's, so a clear leader
# loads alone and a near tie loads both (each extra tool is a distractor for a small model). Tuned on the tuning
# half of the large tasks for coverage and precision (docs/benchmarks.md, "Retrieval on the large catalog").
LEAD_SHARE = 0.7


@dataclass(frozen=True)
class Preselection:
    """What one preselection found: the tools to load, best first, with their confidence (the search's 0..1
    similarity of each tool to the request), and the request's own confidence that any tool serves it."""

    query: str
    tools: tuple[str, ...]
    confidences: tuple[float, ...]
    confidence: float
    # The next tools of the ranking, named (with a summary) but not loaded: see the module docstring.
    shortlist: tuple[str, ...] = ()

    def as_fields(self, *, include_content: bool) -> dict[str, object]:
        """The fields of a ``preselect`` event (the query only with content)."""
        return {
            "tools": list(self.tools),
            "confidences": [round(c, 4) for c in self.confidences],
            "confidence": round(self.confidence, 4),
            **({"shortlist": list(self.shortlist)} if self.shortlist else {}),
            **({"query": self.query} if include_content else {}),
        }


def preselect(
    search: ToolSearch, mode: Mode, text: str, config: PreselectConfig, *, lead_share: float | None = None
) -> Preselection:
    """The best ``config.k`` tools of ``mode`` for ``text`` that rank above every permanent tool, in rank order
    until the first below ``config.min_confidence``; none on a miss, and none when the keywords alone rank a
    permanent tool first.

    A permanent tool is in full already: what ranks below the best one serves the request less well by the
    search's own measure, and only gives a small model a wrong tool to call (docs/tool-choice.md). The search
    scores a request of several steps by its best step, so the cut does not hide a step's own tool; searching each
    step apart was tried and loaded more distractors (a step like "tell me what fails" matches debugger tools).

    When the search fuses keywords with embeddings, the keyword ranking is asked too: if its best tool is a
    permanent one, the request names what a permanent tool does ("where is parse_config called?" and
    ``search_files``), and nothing is loaded. An embedding ranks by topic and can put neighbours first (browser
    config tools for "parse_config"), which a small model then calls instead of the tool it has in full.

    The shortlist (``config.shortlist``) is the best tools of the same ranking after the loaded ones, permanent
    ones left out; none when nothing is loaded because the keywords rank a permanent tool first."""
    lead_share = LEAD_SHARE if lead_share is None else lead_share
    query = " ".join(text.split())
    if not query:
        return Preselection("", (), (), 0.0)
    permanent = set(mode.permanent)
    result, ranking = search.search_ranked(query, mode, limit=config.k + len(permanent))
    if permanent and result.strategy != "keyword" and _keyword_top(search, mode, query) in permanent:
        return Preselection(query, (), (), result.confidence)
    ranked = list(result.hits)
    first = next((i for i, h in enumerate(ranked) if h.name in permanent), len(ranked))
    # The floor ends the list at the first hit below it: the search's similarity is not monotonic in its rank, and
    # skipping a better-ranked tool to load a worse-ranked one only hands the model the worse one.
    hits = list(itertools.takewhile(lambda h: h.similarity >= config.min_confidence, ranked[:first]))[: config.k]
    if hits and lead_share > 0:
        hits = [h for h in hits if h.score >= lead_share * hits[0].score]
    loaded = tuple(h.name for h in hits)
    shortlist = _shortlist(mode, ranking, loaded, config.shortlist)
    return Preselection(query, loaded, tuple(h.similarity for h in hits), result.confidence, shortlist)


def _shortlist(mode: Mode, ranking: list[str], loaded: tuple[str, ...], size: int) -> tuple[str, ...]:
    """The best ``size`` tools of ``ranking`` that are neither loaded nor permanent (only tools of ``mode``)."""
    if size <= 0:
        return ()
    skip = {*loaded, *mode.permanent}
    return tuple(itertools.islice((n for n in ranking if n not in skip and mode.allows(n)), size))


def _keyword_top(search: ToolSearch, mode: Mode, query: str) -> str | None:
    """The best tool of the keyword ranking of ``query``, or ``None`` when the keywords match nothing well."""
    keyword = search.search(query, mode, limit=1, strategy="keyword")
    return keyword.hits[0].name if keyword.hits else None
