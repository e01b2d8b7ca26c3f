"""Tiers: how much of each tool a large mode shows, sized to a share of the model's context.

A mode with ``tiers:`` keeps its permanent tools in full and sorts the rest into three forms:

- **brief**: a native definition with the brief and a schema without prose (callable at once);
- **catalog**: one line in the system prompt, the name and a summary of at most :data:`SUMMARY_WORDS` words,
  grouped by server (imported tools; headed by the server's card when it has one) or group; no definition, so not
  callable until loaded;
- **name**: the name alone, grouped the same way, for when even the lines do not fit.

The tools stay brief while the permanent definitions, the built-in tools and every brief fit the share; past it,
the least used tools become catalog lines first, and where even the lines do not fit, names. Usage counts come from
the caller (an event log's counts, say); without them the mode's own order decides (earlier tools stay richer).
A tool that preselection, ``tool_search`` or a fetch loads gets its full definition appended at the end of the
tool list for the rest of the task (see :class:`~prompt_composer.core.composer.Composer`).

With ``stubs: true`` the catalog and name tools are declared in the tool list from the start instead, as *stubs*: the
name, the summary (catalog tools) and a schema that takes any object, and no catalog in the system prompt. A stub
is callable once the task has shown its full text (a call before that runs nothing and brings the text), and
loading one sends its full text in the conversation (the preselection note, the fetch or recovery answer) instead
of appending a definition. The tool list then never changes within a task: a server that renders the tools before
the conversation (a chat template's system block, the Messages API's tools-first cache order) keeps serving the
conversation from its cache when a tool loads, at the price of a few tokens a stub on every request.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from .cards import ServerCard, card_of
from .docs import ToolDoc
from .modes import Mode, TierConfig

Tier = Literal["full", "brief", "catalog", "name", "stub"]
SUMMARY_WORDS = 15
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


@dataclass(frozen=True)
class Tiers:
    """A tiered mode's split of its non-permanent tools; ``budget`` is the share of the context, in tokens, and
    ``fixed`` what the permanent and built-in tools take of it."""

    brief: tuple[str, ...]
    catalog: tuple[str, ...]
    names: tuple[str, ...]
    budget: int
    fixed: int
    stubs: bool = False
    _unlisted: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_unlisted", frozenset(self.catalog) | frozenset(self.names))

    def tier(self, mode: Mode, name: str) -> Tier | None:
        """The tool's tier in ``mode`` (``None`` for a tool the mode does not allow)."""
        if not mode.allows(name):
            return None
        if name in mode.permanent:
            return "full"
        if name not in self._unlisted:
            return "brief"
        if self.stubs:
            return "stub"
        return "catalog" if name in self.catalog else "name"

    def unlisted(self, name: str) -> bool:
        """Whether the tool has no definition until it is loaded (a catalog line or a name, without stubs)."""
        return name in self._unlisted and not self.stubs

    def stubbed(self, name: str) -> bool:
        """Whether the tool is declared as a stub (a catalog or name tool of a mode with ``stubs: true``)."""
        return self.stubs and name in self._unlisted


def summary(doc: ToolDoc, words: int = SUMMARY_WORDS) -> str:
    """The brief's first sentence, cut to ``words`` words (with "…" when cut)."""
    first = _SENTENCE_END.split(doc.brief.strip(), maxsplit=1)[0].strip()
    parts = first.split()
    if len(parts) <= words:
        return first
    return " ".join(parts[:words]).rstrip(",;:") + "…"


def catalog_group(doc: ToolDoc) -> str:
    """What a catalog line is listed under: the MCP server an imported tool came from, else its group."""
    return doc.origin.server if doc.origin is not None else doc.group


def catalog_line(doc: ToolDoc) -> str:
    return f"- {doc.name}: {summary(doc)}"


def grouped(
    names: Sequence[str], docs: Mapping[str, ToolDoc], cards: Mapping[str, ServerCard] | None = None
) -> list[tuple[str, list[str]]]:
    """``names`` grouped by :func:`catalog_group`, groups in order of first appearance, names in given order. With
    ``cards``, a server that has one is headed by its title and the first sentence of its description
    (:meth:`~.cards.ServerCard.heading`): the line that tells a model what the server is for."""
    out: dict[str, list[str]] = {}
    for name in names:
        card = card_of(docs[name], cards) if cards else None
        out.setdefault(card.heading() if card is not None else catalog_group(docs[name]), []).append(name)
    return list(out.items())


def assign(
    mode: Mode,
    config: TierConfig,
    *,
    fixed: int,
    brief_cost: Callable[[str], int],
    line_cost: Callable[[str], int],
    name_cost: Callable[[str], int],
    usage: Mapping[str, int],
) -> Tiers:
    """Split the non-permanent tools of ``mode`` into tiers (see the module docstring). ``fixed`` is what the
    permanent and built-in definitions cost; the ``*_cost`` functions give one tool's cost in each form."""
    budget = int(config.share * config.context_tokens)
    room = budget - fixed
    permanent = set(mode.permanent)
    candidates = [n for n in mode.allowed if n not in permanent]
    position = {name: index for index, name in enumerate(mode.allowed)}
    # Most used first; among equals, the mode's own order. Richer forms go to the front of this list.
    order = sorted(candidates, key=lambda n: (-usage.get(n, 0), position[n]))
    richer, poorer = _split(order, room, brief_cost, line_cost)
    if richer is not None:
        brief, catalog, names = richer, poorer, []
    else:
        lines, rest = _split(order, room, line_cost, name_cost)
        brief, catalog, names = [], (lines if lines is not None else []), (rest if lines is not None else order)
    in_mode_order = sorted  # the lists keep the mode's order, whatever the ranking was
    return Tiers(
        brief=tuple(in_mode_order(brief, key=position.__getitem__)),
        catalog=tuple(in_mode_order(catalog, key=position.__getitem__)),
        names=tuple(in_mode_order(names, key=position.__getitem__)),
        budget=budget,
        fixed=fixed,
        stubs=config.stubs,
    )


def _split(
    order: Sequence[str], room: int, rich: Callable[[str], int], poor: Callable[[str], int]
) -> tuple[list[str] | None, list[str]]:
    """The longest head of ``order`` that can take the rich form while the tail takes the poor one within
    ``room``: ``(head, tail)``, or ``(None, order)`` when not even an empty head fits."""
    rich_head = [0, *itertools.accumulate(rich(n) for n in order)]
    poor_tail = [*reversed([*itertools.accumulate(poor(n) for n in reversed(order))]), 0]
    for cut in range(len(order), -1, -1):
        if rich_head[cut] + poor_tail[cut] <= room:
            return list(order[:cut]), list(order[cut:])
    return None, list(order)
