"""Servers as search units (issue 32, MCP-Zero's server-then-tool idea): every tool belongs to a server (an imported
tool's ``origin.server``) or, for a tool of the YAML docs, to its group. A request is scored against each server of
a mode (its name, its description and a summary made of its tools' names and briefs), and a tool's score is then
raised by its server's share of the best server score (:data:`SERVER_WEIGHT`), so the server that obviously owns a
request ("in Notion", "in your memory", "in Chrome") lifts its tools above another server's namesakes.

:class:`CardIndex` scores a request against the mode's server cards alone (:mod:`prompt_composer.core.cards`), and
:func:`add_card_shares` adds each card's share to its tools' scores (on by default: see
:data:`~.search.CARD_WEIGHT`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from ..core.cards import ServerCard, card_of
from ..core.docs import GroupDoc, ToolDoc
from .lexical import LexicalIndex

# A tool's score becomes score × (1 + SERVER_WEIGHT × s), s its server's score as a share of the best server's
# (0..1). Off by default: on the tuning half of the large tasks it moved no task into coverage (MRR +0.01), and
# on LiveMCPBench's dev queries it cost recall@5 at every weight tried (docs/benchmarks.md, "Retrieval on the
# large catalog, split"). ``ToolSearch(server_weight=1.0)`` turns it on.
SERVER_WEIGHT = 0.0
# The fields of a server's document: its name counts most, the summary of its tools least (it is long and shared).
SERVER_FIELDS: Mapping[str, tuple[float, float]] = {
    "name": (3.0, 0.3),
    "description": (2.0, 0.75),
    "tools": (1.0, 0.75),
}


def server_of(doc: ToolDoc) -> str:
    """The server a tool belongs to: the imported server's name, else its group's name."""
    return doc.origin.server if doc.origin is not None else doc.group


def server_description(
    doc: ToolDoc, groups: Mapping[str, GroupDoc], cards: Mapping[str, ServerCard] | None = None
) -> str:
    """What is known of a tool's server: its card's text (an imported tool), a YAML doc's group description (an
    import's group says only "MCP")."""
    card = card_of(doc, cards or {})
    if card is not None:
        return card.search_text
    group = groups.get(doc.group)
    return group.description if doc.origin is None and group is not None else ""


class ServerIndex:
    """BM25F over the servers of one set of tools; immutable after build."""

    def __init__(
        self,
        docs: Iterable[ToolDoc],
        groups: Mapping[str, GroupDoc],
        cards: Mapping[str, ServerCard] | None = None,
    ) -> None:
        names: dict[str, list[str]] = {}
        description: dict[str, str] = {}
        self.server: dict[str, str] = {}
        for doc in docs:
            key = server_of(doc)
            self.server[doc.name] = key
            names.setdefault(key, []).append(f"{doc.name} {doc.brief}")
            description.setdefault(key, server_description(doc, groups, cards))
        self.size = len(names)
        self.index = LexicalIndex(
            (
                (key, {"name": key, "description": description[key], "tools": "\n".join(tools)})
                for key, tools in sorted(names.items())
            ),
            weights=SERVER_FIELDS,
            weak_fields=("tools",),
        )

    def shares(self, terms: Counter[str]) -> dict[str, float]:
        """Server → its score as a share of the best server's (0..1); empty when no server matches, and when the
        set has a single server (nothing to tell apart)."""
        if self.size < 2:
            return {}
        ranked = self.index.rank(terms, lambda _name: True)
        if not ranked or ranked[0][1] <= 0:
            return {}
        top = ranked[0][1]
        return {name: score / top for name, score in ranked}


def lift_by_server(
    scores: dict[str, float], shares: Mapping[str, float], server: Callable[[str], str], weight: float
) -> None:
    """Raise each tool's score by its server's share: score × (1 + weight × share); a negative score (a hybrid
    z-score below the mode's mean) is left alone, so a lift never pushes a poor match further down."""
    if not shares or weight <= 0:
        return
    for name, score in scores.items():
        share = shares.get(server(name), 0.0)
        if share > 0 and score > 0:
            scores[name] = score * (1.0 + weight * share)


class CardIndex:
    """BM25 over the server cards of one set of tools (each card's label and description, a document of its own),
    for the share of a request each tool's server card matches; immutable after build."""

    def __init__(self, docs: Iterable[ToolDoc], cards: Mapping[str, ServerCard]) -> None:
        self.tools: dict[str, list[str]] = {}  # server -> its tools in the set
        used: dict[str, ServerCard] = {}
        for doc in docs:
            card = card_of(doc, cards)
            if card is not None:
                self.tools.setdefault(card.name, []).append(doc.name)
                used[card.name] = card
        self.index = LexicalIndex(
            ((name, {"label": card.label, "description": card.search_text}) for name, card in sorted(used.items())),
            weights={"label": (1.0, 0.3), "description": (1.0, 0.75)},
            weak_fields=(),
        )

    def shares(self, terms: Counter[str]) -> dict[str, float]:
        """Server → its card's score as a share of the best card's (0..1); empty when no card matches."""
        scores = self.index.scores(terms)  # every search asks: no ranking needed, only the best score
        top = max(scores.values(), default=0.0)
        if top <= 0:
            return {}
        names = self.index.names
        return {names[i]: score / top for i, score in scores.items()}


def add_card_shares(
    scores: dict[str, float], shares: Mapping[str, float], tools: Mapping[str, Iterable[str]], weight: float
) -> None:
    """Add ``weight`` × its server card's share to the score of every tool whose card the request matches, on top
    of the tool's own score (``tools``: each server's tools): the card moves a server's tools together and never
    reorders them among themselves."""
    if weight <= 0:
        return
    for server, share in shares.items():
        if share > 0:
            for name in tools.get(server, ()):
                scores[name] = scores.get(name, 0.0) + weight * share
