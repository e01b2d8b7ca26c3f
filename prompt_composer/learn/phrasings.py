"""Learned search phrasings from an event log: the requests that led a task to use a tool, per tool.

:class:`~prompt_composer.discovery.search.ToolSearch` takes them as a plain mapping (``tool -> [request, ...]``);
this module is where they come from when they are learned from use.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..core.builtins import LOOP_TOOLS


def phrasings_from_events(events: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Learned phrasings from an event log (:mod:`.events`, JSONL format 1): a ``search`` event's ``query`` becomes a
    phrasing of each of its ``hits`` that the same task then used successfully (a later ``tool_call`` with
    ``outcome: "ok"``). Searches logged without their query (a log written without content) teach nothing."""
    pending: dict[str, list[tuple[str, set[str]]]] = {}  # task -> searches so far: (query, hits not yet used)
    pairs: list[tuple[str, str]] = []
    for event in events:
        kind, task = event.get("event"), str(event.get("task"))
        if kind == "search":
            query, hits = event.get("query"), event.get("hits")
            if isinstance(query, str) and query.strip() and isinstance(hits, list):
                pending.setdefault(task, []).append((query, {h for h in hits if isinstance(h, str)}))
        elif kind == "tool_call" and event.get("outcome") == "ok":
            tool = event.get("tool")
            if not isinstance(tool, str) or tool in LOOP_TOOLS:
                continue
            for query, hits in pending.get(task, ()):
                if tool in hits:
                    hits.discard(tool)  # one phrasing per (search, tool), however often the tool is used
                    pairs.append((query, tool))
    return phrasings_from_pairs(pairs)


def load_phrasings(paths: Iterable[str | Path]) -> dict[str, list[str]]:
    """:func:`phrasings_from_events` over one or more JSONL event logs (unreadable lines are skipped)."""
    from .events import read_events

    events, _skipped = read_events(paths)
    return phrasings_from_events(events)


def phrasings_from_pairs(pairs: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """``(request, tool)`` pairs (say, a search and the tool then used successfully) → ``tool -> [request, ...]``."""
    out: dict[str, list[str]] = {}
    for request, tool in pairs:
        out.setdefault(tool, []).append(request)
    return out
