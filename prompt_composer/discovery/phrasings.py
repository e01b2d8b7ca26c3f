"""Learned phrasings: the requests that led to each tool's successful use, as extra searchable text of that tool
(:class:`Phrasings`). Loading them from an event log is :mod:`prompt_composer.learn.phrasings`; a server card's
``examples`` (:func:`~prompt_composer.core.cards.card_phrasings`) are read the same way, before any use is logged,
at weights of their own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from .lexical import LexicalIndex

# The one lexical field of learned requests: weight 1, the usual BM25 length normalisation.
_LEARNED: Mapping[str, tuple[float, float]] = {"learned": (1.0, 0.75)}


class Phrasings:
    """What use taught: per tool, the requests that led to its successful use (``tool -> [request, ...]``).

    They become extra text of their tool: a lexical field of their own (the words real users used for it), a set
    of vectors the query is compared with (the closest past request counts), and co-use: tools whose phrasings
    share a request were used for the same task, so finding one suggests the other. Tools the registry does not
    hold are ignored; blank requests too. Built from a plain mapping, e.g. from an event log's ``search`` events
    (query text is opt-in there).
    """

    def __init__(self, phrasings: Mapping[str, Sequence[str]], tools: Iterable[str]) -> None:
        known = set(tools)
        self.by_tool: dict[str, tuple[str, ...]] = {}
        for tool, texts in phrasings.items():
            if tool in known:
                kept = tuple(dict.fromkeys(t.strip() for t in texts if t and t.strip()))
                if kept:
                    self.by_tool[tool] = kept
        owners: dict[str, list[str]] = {}
        for tool, texts in self.by_tool.items():
            for text in texts:
                owners.setdefault(text, []).append(tool)
        self.texts: tuple[str, ...] = tuple(owners)
        self.owners: tuple[tuple[str, ...], ...] = tuple(tuple(owners[t]) for t in self.texts)
        # P(b used | a used), over the requests a was used for.
        co_use: dict[str, dict[str, float]] = {}
        for tool, texts in self.by_tool.items():
            counts: Counter[str] = Counter()
            for text in texts:
                counts.update(o for o in owners[text] if o != tool)
            if counts:
                co_use[tool] = {other: n / len(texts) for other, n in counts.items()}
        self.co_use = co_use
        self.index = (
            LexicalIndex(
                ((tool, {"learned": "\n".join(texts)}) for tool, texts in self.by_tool.items()), weights=_LEARNED
            )
            if self.by_tool
            else None
        )

    def __bool__(self) -> bool:
        return bool(self.by_tool)
