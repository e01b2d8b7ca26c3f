"""The lexical index: BM25F over a tool doc's named fields (name, curated queries, brief, hint, full text).

Postings hold each (term, doc) weight precomputed, so a query is a few dictionary walks; pure Python, so the
keyword strategy needs nothing beyond the standard library.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from ..core.docs import ToolDoc
from .tokenize import tokenize

# Field → (weight, length normalisation b). Names and the curated `queries` say most about a tool.
DEFAULT_FIELD_WEIGHTS: Mapping[str, tuple[float, float]] = {
    "name": (3.0, 0.3),
    "queries": (2.0, 0.5),
    "brief": (2.0, 0.75),
    "hint": (1.0, 0.5),
    "full": (1.0, 0.75),
}


def _finite(value: Any) -> bool:
    # a float as JSON reads it; an int past a float's range (10**400) would raise in isfinite
    return (type(value) is float and math.isfinite(value)) or (type(value) is int and abs(value) < 2**53)


def _strings(values: Any) -> list[str]:
    if not isinstance(values, list) or not all(type(v) is str for v in values):
        raise ValueError("strong terms")
    return values


def doc_fields(doc: ToolDoc) -> dict[str, str]:
    """The searchable text of a tool doc, by field."""
    return {
        "name": doc.name,
        "queries": "\n".join(doc.queries),
        "brief": doc.brief,
        "hint": doc.hint or "",
        "full": doc.full,
    }


class LexicalIndex:
    """BM25F over named fields. Postings hold each (term, doc) weight precomputed, so scoring a query is a
    sum over the postings of its terms. Pure Python; thread-safe to query (immutable after build)."""

    def __init__(
        self,
        docs: Iterable[tuple[str, Mapping[str, str]]],
        *,
        weights: Mapping[str, tuple[float, float]] = DEFAULT_FIELD_WEIGHTS,
        k1: float = 1.2,
        weak_fields: Collection[str] = ("full",),
    ) -> None:
        self.names: list[str] = []
        field_terms: list[dict[str, Counter[str]]] = []
        self._strong: list[frozenset[str]] = []  # per doc, the terms of its fields other than ``weak_fields``
        totals: dict[str, int] = dict.fromkeys(weights, 0)
        for name, fields in docs:
            self.names.append(name)
            per_field: dict[str, Counter[str]] = {}
            for fname in weights:
                terms = tokenize(fields.get(fname, ""))
                per_field[fname] = Counter(terms)
                totals[fname] += len(terms)
            field_terms.append(per_field)
            self._strong.append(frozenset(t for f, c in per_field.items() if f not in weak_fields for t in c))
        n = len(self.names)
        self.size = n
        avg = {f: (totals[f] / n if n else 0.0) or 1.0 for f in weights}
        df: Counter[str] = Counter()
        pseudo_tf: list[dict[str, float]] = []
        for per_field in field_terms:
            tf: dict[str, float] = {}
            for fname, (weight, b) in weights.items():
                counts = per_field[fname]
                if not counts:
                    continue
                norm = 1.0 - b + b * (sum(counts.values()) / avg[fname])
                for term, count in counts.items():
                    tf[term] = tf.get(term, 0.0) + weight * count / norm
            pseudo_tf.append(tf)
            df.update(tf.keys())
        self.idf: dict[str, float] = {t: math.log(1.0 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
        self.unseen_idf = math.log(1.0 + (n - 0.5) / 1.5) if n else 1.0  # the idf of a term in one doc
        self.postings: dict[str, dict[int, float]] = {}
        for doc_id, tf in enumerate(pseudo_tf):
            for term, value in tf.items():
                self.postings.setdefault(term, {})[doc_id] = self.idf[term] * value * (k1 + 1) / (k1 + value)
        self._position = {name: i for i, name in enumerate(self.names)}

    def to_data(self) -> dict[str, Any]:
        """The index as JSON's own data, for :meth:`from_data` to read back equal (floats are written exactly)."""
        return {
            "names": self.names,
            "idf": self.idf,
            "unseen_idf": self.unseen_idf,
            "postings": {term: [list(posting), list(posting.values())] for term, posting in self.postings.items()},
            "strong": [sorted(terms) for terms in self._strong],
        }

    @classmethod
    def from_data(cls, data: Any) -> LexicalIndex:
        """The index :meth:`to_data` wrote; ``ValueError`` when ``data`` is not one (its shape is checked, so a
        damaged copy is refused rather than half-used)."""
        if not isinstance(data, dict) or data.keys() != {"names", "idf", "unseen_idf", "postings", "strong"}:
            raise ValueError("not a keyword index")
        names, idf, postings, strong = data["names"], data["idf"], data["postings"], data["strong"]
        if not (isinstance(names, list) and all(type(n) is str for n in names) and len(set(names)) == len(names)):
            raise ValueError("names")
        if not (isinstance(idf, dict) and all(_finite(v) for v in idf.values()) and _finite(data["unseen_idf"])):
            raise ValueError("idf")
        if not (isinstance(strong, list) and len(strong) == len(names)):
            raise ValueError("strong terms")
        index = cls.__new__(cls)
        index.names = names
        index.size = len(names)
        index.idf = idf
        index.unseen_idf = float(data["unseen_idf"])
        index._strong = [frozenset(_strings(terms)) for terms in strong]
        if not isinstance(postings, dict) or postings.keys() != idf.keys():
            raise ValueError("postings")
        index.postings = {}
        for term, pair in postings.items():
            if not (
                isinstance(pair, list)
                and len(pair) == 2
                and all(isinstance(part, list) for part in pair)
                and len(pair[0]) == len(pair[1])
            ):
                raise ValueError("postings")
            ids, weights = pair
            if not all(type(i) is int and 0 <= i < index.size for i in ids) or not all(map(_finite, weights)):
                raise ValueError("postings")
            index.postings[term] = dict(zip(ids, weights, strict=True))
        index._position = {name: i for i, name in enumerate(names)}
        return index

    def query_terms(self, query: str) -> Counter[str]:
        return Counter(tokenize(query))

    def scores(self, query: str | Counter[str]) -> dict[int, float]:
        """Doc id → BM25F score for every doc matching at least one term (a repeated query term counts with the
        square root of its count, so a file path that repeats a word does not swamp the rest)."""
        acc: dict[int, float] = {}
        get = acc.get
        terms = self.query_terms(query) if isinstance(query, str) else query
        for term, qtf in terms.items():
            posting = self.postings.get(term)
            if posting is None:
                continue
            for doc_id, weight in posting.items():
                acc[doc_id] = get(doc_id, 0.0) + weight * (1.0 if qtf == 1 else math.sqrt(qtf))
        return acc

    def rank(
        self, query: str | Counter[str], allows: Callable[[str], bool], limit: int | None = None
    ) -> list[tuple[str, float]]:
        """Matching tools that ``allows`` admits, best first (ties by name), at most ``limit``."""
        names = self.names
        scored = [(score, names[i]) for i, score in self.scores(query).items() if allows(names[i])]
        key: Callable[[tuple[float, str]], tuple[float, str]] = lambda item: (-item[0], item[1])  # noqa: E731
        best = heapq.nsmallest(limit, scored, key=key) if limit is not None else sorted(scored, key=key)
        return [(name, score) for score, name in best]

    def coverage(self, query: str | Counter[str], name: str, *, strong: bool = False) -> float:
        """The idf-weighted share of the query's terms that occur in the tool's doc (0..1); ``strong``: in its
        fields other than the weak ones (the full text), where a match says more about what the tool is for.

        Each term weighs ``1 + idf``; a term the index has never seen weighs like one seen in a single doc, so a
        query in a language the docs do not use has low coverage even if one common word matches, while one
        unusual word in an otherwise matching query does not sink it.
        """
        terms = self.query_terms(query) if isinstance(query, str) else query
        if not terms:
            return 0.0
        doc_id = self._position.get(name)
        strong_terms = self._strong[doc_id] if strong and doc_id is not None else None
        total = matched = 0.0
        for term in terms:
            idf = 1.0 + self.idf.get(term, self.unseen_idf)
            total += idf
            if strong_terms is not None:
                matched += idf if term in strong_terms else 0.0
                continue
            posting = self.postings.get(term)
            if doc_id is not None and posting is not None and doc_id in posting:
                matched += idf
        return matched / total if total else 0.0

    def confidence(self, query: str | Counter[str], ranked: Sequence[tuple[str, float]]) -> float:
        """How sure the lexical ranking is, 0..1: the top hit's query coverage, discounted when the runner-up
        scores almost the same (an ambiguous list)."""
        if not ranked:
            return 0.0
        top_name, top = ranked[0]
        cover = self.coverage(query, top_name)
        second = ranked[1][1] if len(ranked) > 1 else 0.0
        margin = (top - second) / top if top > 0 else 0.0
        return round(cover * (0.75 + 0.25 * min(1.0, 2.0 * margin)), 4)
