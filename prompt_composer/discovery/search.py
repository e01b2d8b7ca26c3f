"""Tool search: a field-weighted BM25 index over the registry, an optional embedding path, their fusion,
and the selection strategies (``all | keyword | semantic | hybrid``) built on them.

Every result is filtered by :meth:`Mode.allows`, the one access check: a tool outside the mode never appears
in a result list, a miss explanation or a warning, not even by name.

The lexical path needs only the standard library (an inverted index whose postings hold precomputed BM25F
weights, so a query is a few dictionary walks). The embedding path uses an :class:`~.embeddings.Embedder`
(numpy) when one is given or the optional extra is installed; without it, searches fall back to lexical with
one warning. Tool vectors persist in the user cache (:mod:`.embeddings`).

A multi-step request is decomposed into needs (:func:`decompose`), each searched; requests that led to a tool's
use (:class:`Phrasings`, e.g. from an event log: :func:`load_phrasings`) become extra text of that tool. Whether
anything matched is a calibrated probability (:data:`MISS_MODELS`); below :data:`MISS_CONFIDENCE` the result is an
explained miss.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import heapq
import itertools
import json
import logging
import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..core.docs import ToolDoc
from ..core.modes import Mode

if TYPE_CHECKING:
    from ..core.registry import Registry
    from .embeddings import Embedder

log = logging.getLogger(__name__)

Strategy = Literal["all", "keyword", "semantic", "hybrid"]
SearchStrategy = Literal["keyword", "semantic", "hybrid"]
STRATEGIES: tuple[Strategy, ...] = ("all", "keyword", "semantic", "hybrid")

# --- tokenization -----------------------------------------------------------------------------------

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[^\W_]+(?:[_\-:.][^\W_]+)*|_+", re.UNICODE)
_PARTS = re.compile(r"[_\-:.]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_MAX_WORD = 64
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "could",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "please",
        "should",
        "so",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "this",
        "those",
        "to",
        "use",
        "used",
        "uses",
        "using",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "will",
        "with",
        "would",
        "you",
        "your",
        "want",
        "need",
    ]
)


def _stem(word: str) -> str:
    """A conservative English plural stripper: files→file, queries→query, matches→match, status stays."""
    if len(word) <= 3 or not word.isascii() or not word.endswith("s"):
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if word.endswith(("ss", "us", "is", "os")):
        return word
    return word[:-1]


def split_identifier(name: str) -> list[str]:
    """``mcp__github__createIssue`` → ``[mcp, github, create, issue]``; also ``server::tool``, ``a-b``, ``a_b``."""
    parts: list[str] = []
    for chunk in _PARTS.split(name):
        parts.extend(p.lower() for p in _CAMEL.split(chunk) if p)
    return parts


def tokenize(text: str) -> list[str]:
    """Lower-cased, lightly stemmed terms without stop words.

    Identifiers are split (``read_file`` → ``read``, ``file``) and also kept whole (``read_file``), so an
    exact tool name in a query is a strong match. CJK runs become character unigrams and bigrams.
    """
    terms: list[str] = []
    for match in _WORD.finditer(text):
        terms.extend(_word_terms(match.group()))
    return terms


@functools.lru_cache(maxsize=65536)
def _word_terms(word: str) -> tuple[str, ...]:
    if word.startswith("_") or len(word) > _MAX_WORD:
        return ()  # underscores alone, and blobs (base64, hashes) that would split into noise
    terms: list[str] = []
    pieces = split_identifier(word)
    if len(pieces) > 1:
        terms.append("".join(pieces))
    for piece in pieces:
        if _CJK.search(piece):
            terms.extend(_cjk_terms(piece))
        elif len(piece) > 1 and piece not in _STOPWORDS:
            terms.append(_stem(piece))
    return tuple(terms)


def _cjk_terms(piece: str) -> list[str]:
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        out.extend(run)
        out.extend(a + b for a, b in itertools.pairwise(run))
        run.clear()

    latin = ""
    for ch in piece:
        if _CJK.match(ch):
            if latin:
                out.append(_stem(latin))
                latin = ""
            run.append(ch)
        else:
            flush()
            latin += ch
    flush()
    if latin:
        out.append(_stem(latin))
    return out


# --- the lexical index --------------------------------------------------------------------------------

# Field → (weight, length normalisation b). Names and the curated `queries` say most about a tool.
DEFAULT_FIELD_WEIGHTS: Mapping[str, tuple[float, float]] = {
    "name": (3.0, 0.3),
    "queries": (2.0, 0.5),
    "brief": (2.0, 0.75),
    "hint": (1.0, 0.5),
    "full": (1.0, 0.75),
}


def doc_fields(doc: ToolDoc) -> dict[str, str]:
    """The searchable text of a tool doc, by field."""
    return {
        "name": doc.name,
        "queries": "\n".join(doc.queries),
        "brief": doc.brief,
        "hint": doc.hint or "",
        "full": doc.full,
    }


def doc_fingerprint(doc: ToolDoc) -> str:
    """A hash of what embedding reads of a doc: editing one doc changes only its own fingerprint."""
    payload = json.dumps(doc_fields(doc), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


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


# --- decomposition: a task into needs ------------------------------------------------------------------------

# Real tasks name several steps ("find the paper, read it, then save a summary to notes.md"); one search over the
# whole text finds the step its words dominate. Splitting is lexical: sentences, then connectives ("then",
# "finally", "also", ";"), then a comma or "and" in front of an action verb. No model, so it costs microseconds
# and behaves the same in every process.
_SENTENCES = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])|:\s+|\n+")
_CONNECTIVES = re.compile(
    r"\s*,?\s*\b(?:and then|then|after that|afterwards|finally|also|next|und dann|dann|danach|anschließend|"
    r"luego|después|despues|puis|ensuite|potem|następnie|затем|потом|e poi|poi|depois)\b\s*,?\s*"
    r"|\s*(?:然后|接着|之后|并且|再把)\s*",
    re.IGNORECASE,
)
# Verbs that start a step of a request to an agent with tools; ", VERB" or "and VERB" starts a new need.
_ACTION_VERBS = (  # noqa: SIM905 (a word list reads better as text)
    "add analyse analyze book build calculate change check click collect compare compile compute convert copy count "
    "create delete deploy describe download draft draw edit email estimate evaluate explain export extract fetch "
    "fill find fix generate get give identify import include insert install introduce list load locate look make map "
    "merge move navigate notify open organise organize pick plan plot post print publish pull push read recommend "
    "remind remove rename render replace report research retrieve review run save scan schedule search send set show "
    "sort split store suggest summarise summarize take tell test track translate update upload verify view visualise "
    "visualize write"
).split()
_VERB_SPLIT = re.compile(r"\s*(?:,\s*(?:and\s+)?|\s+and\s+)(?=(?:" + "|".join(_ACTION_VERBS) + r")\b)", re.IGNORECASE)
MAX_NEEDS = 8  # each need costs a lexical pass and, with embeddings, one query embedding


def decompose(query: str) -> list[str]:
    """The needs of a request, in order: its sentences and clauses, split at connectives ("then", "finally",
    "also", ";") and at a comma or "and" before an action verb. Fragments with no searchable word ("Also",
    a base64 blob) are dropped, duplicates too; at most :data:`MAX_NEEDS`. A one-step request gives itself."""
    needs: list[str] = []
    for sentence in _SENTENCES.split(query):
        for clause in _CONNECTIVES.split(sentence):
            for part in _VERB_SPLIT.split(clause):
                text = part.strip(" \t,.;:!?-。！？；，、")
                if text and tokenize(text) and text not in needs:
                    needs.append(text)
    if len(needs) <= 1:
        return [query.strip()] if query.strip() else []
    return needs[:MAX_NEEDS]


# --- learned phrasings ---------------------------------------------------------------------------------------


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


_LEARNED: Mapping[str, tuple[float, float]] = {"learned": (1.0, 0.75)}


# --- results ------------------------------------------------------------------------------------------


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


# --- the search facade ----------------------------------------------------------------------------------

# Hybrid scores are a convex combination of the normalised BM25 score (share of the top one) and the normalised
# cosine (z-score over the mode's tools, as a share of the top one). Measured on MetaTool dev (tuned on a random
# half, checked on the other): 0.35 recalls ~2 points more at 5 than confidence-weighted reciprocal-rank fusion.
FUSION_LEXICAL_WEIGHT = 0.35
# Learned phrasings add to a text's score: the BM25 of the learned field (share of its top) and how close the
# nearest past request is (cosine above LEARNED_COSINE_FLOOR, rescaled to 0..1). Tuned on MetaTool and
# LiveMCPBench dev with phrasings cross-fitted (a query never sees its own phrasing): see bench_search.py.
LEARNED_LEXICAL_WEIGHT = 0.3
LEARNED_SEMANTIC_WEIGHT = 0.8
LEARNED_COSINE_FLOOR = 0.3
# A decomposed task scores each tool by the better of the whole text and its best need (discounted a little:
# a need is a shorter, noisier text than the task).
NEED_WEIGHT = 0.9
# Co-use: the CO_USE_TOP best tools lend CO_USE_WEIGHT × their score × P(b used | a used) to each tool b.
CO_USE_WEIGHT = 0.2
CO_USE_TOP = 5
KEYWORD_RELATIVE = 0.3
SEMANTIC_BAND = 0.1
_SEMANTIC_TEXT_CHARS = 1500
_SEMANTIC_HEAD_CHARS = 400  # of the full text, in the one of a tool's semantic texts that reads it

# Miss calibration: P(a tool of the mode serves the request) = sigmoid(bias + Σ weight × evidence), a logistic
# regression fitted by `python3 benchmarks/bench_search.py --calibrate` on half of our no-match requests
# (tests/data/no_match_queries.jsonl, against the shipped docs) and half of the real MetaTool / LiveMCPBench dev
# queries and our own shipped-docs queries; the other halves report the miss rate and what the line costs. The
# line is the highest that costs no real query set more than 0.02 recall@5 on the fitting half; the bias is
# shifted so that it sits at MISS_CONFIDENCE. Evidence, from the best-matching text of the
# request (the whole request or one of its needs):
# - ``cover``: the idf-weighted share of the query's words found in the top lexical hit's name, queries, brief or
#   hint (not its full text: one common word deep in a manual is no evidence); ``cover_all``: over every field;
# - ``cos_rel``: how far the top cosine stands above the cosine that small talk reaches in this mode
#   (:data:`_SMALL_TALK`), as a share of the way to 1; relative, so a model whose cosines run high (e5) reads the
#   same line as one whose cosines run low (USE).
MISS_MODELS: Mapping[str, tuple[float, Mapping[str, float]]] = {
    "keyword": (-0.397, {"cover": 3.21, "cover_all": 2.65}),
    "semantic": (-0.455, {"cos_rel": 6.79}),
    "hybrid": (-0.966, {"cover": 2.37, "cover_all": 2.14, "cos_rel": 5.62}),
}
MISS_CONFIDENCE = 0.5  # below this, the result is an explained miss
# Requests that match no tool of any catalog: the top cosine they reach is a mode's baseline for ``cos_rel``.
_SMALL_TALK = (
    "hello",
    "thanks, that's all for now",
    "ok, sounds good",
    "lorem ipsum dolor sit amet",
    "the quick brown fox jumps over the lazy dog",
    "xyzzy plugh frobnicate",
    "asdf qwerty zxcv",
    "yes please",
    "I see what you mean",
    "hmm, let me think about it",
)


@dataclass(frozen=True)
class _Scored:
    """One text's scores over the allowed tools, and the evidence that it matches anything."""

    scores: dict[str, float]
    similarity: dict[str, float]
    evidence: dict[str, float]


class ToolSearch:
    """Search and selection over one registry's tools.

    ``embedder``: an :class:`~.embeddings.Embedder`, ``None`` to load the default lazily when a semantic or
    hybrid search first needs it, or ``False`` for lexical only. If no embedder can be had, semantic and
    hybrid searches fall back to keyword with one warning (logged once, and carried by the result).

    Tool vectors are cached per text (sha256) and model, and persist by default in the user cache
    (:func:`~.embeddings.vector_cache_path`): a new process embeds nothing it has seen, and editing one doc of a
    large registry re-embeds that doc only. ``cache_path`` names another file; ``False`` keeps vectors in memory.

    ``phrasings`` (``tool -> [request, ...]``, see :class:`Phrasings`) are requests that led to a tool's
    successful use; they make the tool easier to find with the words real users used for it. ``decompose``:
    search each need of a multi-step request too (:func:`decompose`).
    """

    def __init__(
        self,
        registry: Registry,
        *,
        embedder: Embedder | Literal[False] | None = None,
        cache_path: str | Path | Literal[False] | None = None,
        weights: Mapping[str, tuple[float, float]] = DEFAULT_FIELD_WEIGHTS,
        phrasings: Mapping[str, Sequence[str]] | None = None,
        decompose: bool = True,
    ) -> None:
        self.registry = registry
        self.decompose = decompose
        self.lexical = LexicalIndex(((n, doc_fields(d)) for n, d in registry.tools.items()), weights=weights)
        self.phrasings = Phrasings(phrasings or {}, registry.tools)
        self._embedder: Embedder | None = embedder or None
        self._embedder_disabled = embedder is False
        self._embedder_error: str | None = None
        self._cache_path: Path | Literal[False] | None = (
            False if cache_path is False else Path(cache_path) if cache_path is not None else None
        )
        self._vectors: Any = None  # numpy (n, d) in registry order, built on first semantic use
        self._phrase_vectors: Any = None  # numpy (p, d), one row per distinct learned request
        self._phrase_pairs: Any = None  # (request rows, tool positions): who used each learned request
        self._small_talk: Any = None  # numpy (len(_SMALL_TALK), d)
        self._lines: dict[bytes, float] = {}  # allowed-tool mask -> small-talk line
        self._lock = threading.Lock()
        self._warned: set[str] = set()

    # -- embeddings -------------------------------------------------------------------------------

    @property
    def semantic_available(self) -> bool:
        """Whether an embedder is configured or can be loaded (loads the default on first call)."""
        return self._get_embedder() is not None

    def _get_embedder(self) -> Embedder | None:
        if self._embedder is not None or self._embedder_disabled:
            return self._embedder
        if self._embedder_error is not None:
            return None
        with self._lock:
            if self._embedder is None and self._embedder_error is None:
                try:
                    from .embeddings import default_embedder

                    self._embedder = default_embedder()
                except Exception as exc:  # ImportError, EmbeddingUnavailable, a broken model file…
                    self._embedder_error = f"{type(exc).__name__}: {exc}"
        return self._embedder

    def unavailable_warning(self) -> str:
        """The warning given when semantic search falls back to keyword."""
        detail = self._embedder_error or "embeddings are disabled"
        return f"semantic search unavailable ({detail}); using keyword search"

    def _warn_once(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            log.warning(message)

    @property
    def cache_file(self) -> Path | None:
        """Where tool vectors persist (``None``: in memory only, or no embedder yet)."""
        if self._cache_path is False:
            return None
        if self._cache_path is not None:
            return self._cache_path
        embedder = self._embedder
        if embedder is None:
            return None
        from .embeddings import vector_cache_path

        return vector_cache_path(embedder.name)

    def tool_vectors(self) -> Any:
        """The (n, d) matrix of tool vectors in registry order (computed once; cached per text on disk).

        A tool's vector is the mean of the unit vectors of its :func:`semantic_texts`, not re-normalised: its dot
        product with a query is the query's mean cosine over those short texts (the encoder reads short texts
        better than one long one, and a tool whose texts agree scores higher than one whose texts scatter)."""
        embedder = self._get_embedder()
        if embedder is None:
            raise RuntimeError(self.unavailable_warning())
        with self._lock:
            if self._vectors is None:
                import numpy as np

                from .embeddings import EmbeddingCache

                cache = EmbeddingCache(embedder, self.cache_file)
                keys: list[list[str]] = []  # per tool in registry order, the cache keys of its texts
                keyed: dict[str, str] = {}
                for doc in self.registry.tools.values():
                    fingerprint = doc_fingerprint(doc)
                    texts = semantic_texts(doc)
                    keys.append([f"{fingerprint}/{i}" for i in range(len(texts))])
                    keyed.update(zip(keys[-1], texts, strict=True))
                learned = {f"learned/{i}": _for_embedding(text) for i, text in enumerate(self.phrasings.texts)}
                vectors = cache.embed({**keyed, **learned})
                self._small_talk = np.stack(cache.embed_queries(_SMALL_TALK)).astype(np.float32)
                try:
                    cache.save()
                except OSError as exc:  # a read-only or full cache: search works, the next process re-embeds
                    log.warning("could not save tool vectors to %s: %s", cache.path, exc)
                if keys:
                    matrix = np.stack([np.mean([np.asarray(vectors[k]) for k in tool], axis=0) for tool in keys])
                else:
                    matrix = np.zeros((0, 1), dtype=np.float32)
                if learned:
                    self._phrase_vectors = np.stack([np.asarray(vectors[k]) for k in learned]).astype(np.float32)
                    position = {name: i for i, name in enumerate(self.registry.tools)}
                    owned = enumerate(self.phrasings.owners)
                    pairs = [(row, position[o]) for row, owners in owned for o in owners]
                    self._phrase_pairs = (
                        np.array([r for r, _t in pairs], dtype=np.int64),
                        np.array([t for _r, t in pairs], dtype=np.int64),
                    )
                self._vectors = matrix.astype(np.float32)
            return self._vectors

    def _query_vector(self, embedder: Embedder, text: str) -> Any:
        import numpy as np

        q = np.asarray(embedder.embed_query(text), dtype=np.float32)
        if not np.all(np.isfinite(q)):
            raise ValueError("the embedder returned a vector with NaN or infinite values")
        return q

    def _semantic_rank(self, query: str, allows: Callable[[str], bool]) -> list[tuple[str, float]]:
        """The allowed tools by cosine with ``query``, best first."""
        import numpy as np

        embedder = self._get_embedder()
        assert embedder is not None
        matrix = self.tool_vectors()
        names = list(self.registry.tools)
        if not names:
            return []
        sims = matrix @ self._query_vector(embedder, query)
        order = np.argsort(-sims, kind="stable")
        return [(names[i], float(sims[i])) for i in order if allows(names[i])]

    # -- scoring one text -------------------------------------------------------------------------

    def _score_text(
        self, text: str, used: SearchStrategy, allows: Callable[[str], bool], vector: Any = None
    ) -> _Scored:
        """Scores (about 0..1, the best plain match near 1) and 0..1 similarities of the allowed tools for one
        text, plus the evidence the miss model reads."""
        terms = self.lexical.query_terms(text)
        scores: dict[str, float] = {}
        similarity: dict[str, float] = {}
        evidence: dict[str, float] = {"cover": 0.0, "cover_all": 0.0, "cos": 0.0, "cos_rel": 0.0}
        if used != "semantic":
            lexical = self.lexical.rank(terms, allows)
            if lexical:
                top_name, top = lexical[0]
                evidence["cover"] = self.lexical.coverage(terms, top_name, strong=True)
                evidence["cover_all"] = self.lexical.coverage(terms, top_name)
                share = (1.0 if used == "keyword" else FUSION_LEXICAL_WEIGHT) / top
                for name, score in lexical:
                    scores[name] = score * share
                    similarity[name] = self.lexical.coverage(terms, name)
            learned = self.phrasings.index
            if learned is not None:
                hits = learned.rank(terms, allows)
                if hits:
                    # The words real users used for a tool are as telling as its brief.
                    learned_cover = learned.coverage(terms, hits[0][0])
                    evidence["cover"] = max(evidence["cover"], learned_cover)
                    evidence["cover_all"] = max(evidence["cover_all"], learned_cover)
                    share = LEARNED_LEXICAL_WEIGHT / hits[0][1]
                    for name, score in hits:
                        scores[name] = scores.get(name, 0.0) + score * share
        if used != "keyword":
            self._add_semantic(text, used, allows, scores, similarity, evidence, vector)
        return _Scored(scores, similarity, evidence)

    def _add_semantic(
        self,
        text: str,
        used: SearchStrategy,
        allows: Callable[[str], bool],
        scores: dict[str, float],
        similarity: dict[str, float],
        evidence: dict[str, float],
        vector: Any = None,
    ) -> None:
        import numpy as np

        embedder = self._get_embedder()
        assert embedder is not None
        matrix = self.tool_vectors()
        names = list(self.registry.tools)
        if not names:
            return
        q = vector if vector is not None else self._query_vector(embedder, _for_embedding(text))
        mask = np.fromiter((allows(n) for n in names), dtype=bool, count=len(names))
        if not mask.any():
            return
        sims = (matrix @ q).astype(np.float64)
        allowed_sims = sims[mask]
        spread = float(allowed_sims.std())
        z = (sims - allowed_sims.mean()) / spread if spread > 0 else np.zeros_like(sims)
        top_z = float(z[mask].max())
        weight = 1.0 if used == "semantic" else 1.0 - FUSION_LEXICAL_WEIGHT
        scaled = z * (weight / top_z) if top_z > 0 else np.zeros_like(z)
        evidence["cos"] = float(allowed_sims.max())
        line = self._small_talk_line(mask)
        evidence["cos_rel"] = (evidence["cos"] - line) / (1.0 - line) if line < 1.0 else 0.0
        for i in np.flatnonzero(mask):
            name = names[i]
            scores[name] = scores.get(name, 0.0) + float(scaled[i])
            similarity[name] = max(similarity.get(name, 0.0), float(sims[i]))
        if self._phrase_vectors is not None:
            # The nearest past request of each tool: cosines of the (request, owner) pairs, maxed per owner.
            pair_rows, pair_tools = self._phrase_pairs
            nearest = np.full(len(names), -1.0)
            np.maximum.at(nearest, pair_tools, (self._phrase_vectors @ q)[pair_rows].astype(np.float64))
            lift = np.clip((nearest - LEARNED_COSINE_FLOOR) / (1.0 - LEARNED_COSINE_FLOOR), 0.0, None)
            for i in np.flatnonzero((lift > 0) & mask):
                scores[names[i]] = scores.get(names[i], 0.0) + LEARNED_SEMANTIC_WEIGHT * float(lift[i])

    def _batch_vectors(self, texts: Sequence[str]) -> dict[str, Any]:
        """Query vectors of a request and its needs in one batch, when the embedder can (``embed_queries``, as
        :class:`~.embeddings.UseEmbedder` does: one batch costs about what two single queries do); else none,
        and each text is embedded on its own."""
        import numpy as np

        embedder = self._get_embedder()
        batch = getattr(embedder, "embed_queries", None)
        if batch is None:
            return {}
        unique = list(dict.fromkeys(texts))
        matrix = np.asarray(batch([_for_embedding(t) for t in unique]), dtype=np.float32)
        if matrix.shape[0] != len(unique) or not np.all(np.isfinite(matrix)):
            raise ValueError("the embedder returned unusable query vectors")
        return dict(zip(unique, matrix, strict=True))

    def _small_talk_line(self, mask: Any) -> float:
        """The mean top cosine that :data:`_SMALL_TALK` reaches over the tools in ``mask`` (cached per set)."""

        key = mask.tobytes()
        line = self._lines.get(key)
        if line is None:
            sims = self.tool_vectors()[mask] @ self._small_talk.T  # tool_vectors() embeds the small talk too
            line = float(sims.max(axis=0).mean())
            self._lines[key] = line
        return line

    # -- search -----------------------------------------------------------------------------------

    def default_strategy(self) -> SearchStrategy:
        """hybrid when an embedder is available, keyword otherwise."""
        return "hybrid" if self.semantic_available else "keyword"

    def rank(self, query: str, mode: Mode, strategy: SearchStrategy | None = None) -> tuple[list[str], SearchResult]:
        """The full ranking (names, best first) and the result summary, for evaluation."""
        result, ranked = self._search(query, mode, strategy, limit=None)
        return [name for name, _score, _sim in ranked], result

    def search(self, query: str, mode: Mode, *, limit: int = 5, strategy: SearchStrategy | None = None) -> SearchResult:
        """The ``limit`` best tools of ``mode`` for ``query``; on a weak match, an explained miss instead.

        A request with several steps is decomposed (:func:`decompose`) and each step searched; a tool scores by
        the better of the whole request and its best step."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        result, _ranked = self._search(query, mode, strategy, limit=limit)
        return result

    def confidence(self, evidence: Mapping[str, float], strategy: SearchStrategy) -> float:
        """P(a tool of the mode serves the request), from one text's evidence (see :data:`MISS_MODELS`)."""
        bias, weights = MISS_MODELS[strategy]
        z = bias + sum(w * evidence.get(k, 0.0) for k, w in weights.items())
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))

    def _search(
        self, query: str, mode: Mode, strategy: SearchStrategy | None, *, limit: int | None, strict: bool = False
    ) -> tuple[SearchResult, list[tuple[str, float, float]]]:
        """Rank; if the embedder fails at query time, fall back to keyword with a warning (``strict``: raise)."""
        try:
            return self._search_once(query, mode, strategy, limit=limit)
        except Exception as exc:
            if strict or strategy == "keyword":
                raise
            warning = f"semantic search failed ({type(exc).__name__}: {exc}); using keyword search"
            log.warning(warning)
            result, ranked = self._search_once(query, mode, "keyword", limit=limit)
            return replace(result, warnings=(*result.warnings, warning)), ranked

    def _search_once(
        self, query: str, mode: Mode, strategy: SearchStrategy | None, *, limit: int | None
    ) -> tuple[SearchResult, list[tuple[str, float, float]]]:
        allows = mode.allows
        warnings: list[str] = []
        used: SearchStrategy = strategy or self.default_strategy()
        if used in ("semantic", "hybrid") and self._get_embedder() is None:
            warning = self.unavailable_warning()
            self._warn_once(warning)
            warnings.append(warning)
            used = "keyword"

        needs = decompose(query) if self.decompose else [query]
        if len(needs) <= 1:
            needs = []
        vectors = self._batch_vectors([query, *needs]) if used != "keyword" and needs else {}
        whole = self._score_text(query, used, allows, vectors.get(query))
        parts = [self._score_text(need, used, allows, vectors.get(need)) for need in needs]
        scores = dict(whole.scores)
        similarity = dict(whole.similarity)
        for part in parts:
            for name, score in part.scores.items():
                if NEED_WEIGHT * score > scores.get(name, float("-inf")):
                    scores[name] = NEED_WEIGHT * score
            for name, sim in part.similarity.items():
                similarity[name] = max(similarity.get(name, 0.0), sim)
        if self.phrasings.co_use and scores:
            best = heapq.nlargest(CO_USE_TOP, scores.items(), key=lambda item: (item[1], item[0]))
            lent: dict[str, float] = {}
            for name, score in best:
                for other, p in self.phrasings.co_use.get(name, {}).items():
                    if allows(other):
                        lent[other] = lent.get(other, 0.0) + CO_USE_WEIGHT * max(0.0, score) * p
            for name, extra in lent.items():
                scores[name] = scores.get(name, 0.0) + extra
        confidence = round(max(self.confidence(s.evidence, used) for s in (whole, *parts)), 4)
        ranked = [
            (name, score, similarity.get(name, 0.0))
            for name, score in sorted(scores.items(), key=lambda item: (-item[1], item[0]))
        ]
        weak = not ranked or confidence < MISS_CONFIDENCE
        if weak and limit is not None:
            miss = self._explain_miss(query, mode, [n for n, _s, _m in ranked[:limit]])
            result = SearchResult(query, mode.slug, used, (), 0, confidence, miss, tuple(warnings))
            return result, ranked
        # "Matches" are the tools that score near the best one; the long tail of one-common-word matches (or,
        # for embeddings, of every tool) is noise, neither shown nor counted. ``limit=None`` keeps everything.
        texts = [s.similarity for s in (whole, *parts)]
        total = _relevant_count(ranked, texts, keyword=used == "keyword")
        shown = ranked if limit is None else ranked[: min(limit, total)]
        tools = self.registry.tools
        hits = tuple(
            Hit(name, tools[name].group, score, sim, tools[name].brief, tools[name].hint) for name, score, sim in shown
        )
        return SearchResult(
            query, mode.slug, used, hits, max(total, len(hits)), confidence, None, tuple(warnings)
        ), ranked

    def _explain_miss(self, query: str, mode: Mode, candidates: Sequence[str]) -> Miss:
        """Nearest names (weak candidates first, then names spelled like the query's words) and the mode's
        groups with their tool counts. Only names the mode allows."""
        allowed = mode.allowed
        nearest: list[str] = [c for c in candidates if mode.allows(c)][:3]
        words = [w for w in re.findall(r"[\w:.-]+", query.lower()) if len(w) > 2]
        for word in words:
            for name in difflib.get_close_matches(word, [a.lower() for a in allowed], n=2, cutoff=0.6):
                original = next(a for a in allowed if a.lower() == name)
                if original not in nearest:
                    nearest.append(original)
        groups: Counter[str] = Counter(self.registry.tools[n].group for n in allowed)
        group_list = tuple(sorted(groups.items(), key=lambda item: (-item[1], item[0])))
        message = (
            f"No tool of mode {mode.slug!r} matches {query!r} well."
            if allowed
            else f"Mode {mode.slug!r} has no tools to search."
        )
        return Miss(message, tuple(nearest[:5]), group_list)

    # -- selection --------------------------------------------------------------------------------

    def select(
        self,
        request: str,
        mode: Mode,
        *,
        strategy: Strategy = "hybrid",
        threshold: float = 0.0,
        max_results: int | None = None,
    ) -> Selection:
        """Which of the mode's tools to send for ``request``. Never leaves the model without tools:

        - ``all``: every tool of the mode;
        - no embedding model (``semantic``/``hybrid``): keyword, with a warning;
        - the embedder fails at query time: every tool, with a warning;
        - nothing at or above ``threshold`` (a 0..1 similarity, see :class:`Hit`): every tool;
        - a mode with no tools (an empty registry): nothing.

        Chosen tools keep the mode's order; permanent tools are always included.
        """
        allowed = mode.allowed
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
        if max_results is not None and max_results < 1:
            raise ValueError("max_results must be at least 1")
        if not allowed:
            return Selection((), strategy, "the mode has no tools")
        if strategy == "all":
            return Selection(allowed, "all", "strategy all: every tool of the mode", len(allowed))
        warnings: list[str] = []
        used: Strategy = strategy
        if strategy in ("semantic", "hybrid") and self._get_embedder() is None:
            warning = self.unavailable_warning()
            self._warn_once(warning)
            warnings.append(warning)
            used = "keyword"
        try:
            result, ranked = self._search(request, mode, "keyword" if used == "all" else used, limit=None, strict=True)
        except Exception as exc:  # the embedder failed at query time
            warning = f"tool selection failed ({type(exc).__name__}: {exc}); sending every tool of the mode"
            log.warning(warning)
            return Selection(allowed, "all", "fallback: search error", len(allowed), (*warnings, warning))
        warnings.extend(w for w in result.warnings if w not in warnings)
        above = [name for name, _score, sim in ranked if sim >= threshold and sim > 0.0]
        if not above:
            return Selection(
                allowed,
                "all",
                f"fallback: no tool reached the threshold {threshold}; sending every tool of the mode",
                len(allowed),
                tuple(warnings),
            )
        total = len(above)
        chosen = set(above[:max_results] if max_results is not None else above) | set(mode.permanent)
        tools = tuple(n for n in allowed if n in chosen)
        reason = f"{used}: {total} tool(s) at or above similarity {threshold}"
        if max_results is not None and total > max_results:
            reason += f"; the best {max_results} kept, {total - max_results} dropped"
        return Selection(tools, used, reason, total + len(set(mode.permanent) - set(above)), tuple(warnings))


_URL = re.compile(r"\bhttps?://([^/\s]+)\S*?(?=[,.;:!?)\]]*(?:\s|$))")
_PATH = re.compile(r"(?<![\w/])(?:~|\.{1,2})?(?:/[\w.\-]+)+/?")


def _for_embedding(text: str) -> str:
    """Paths and URLs are a request's arguments, not its intent: an encoder reads ``/root/markdown/x.md`` as
    "markdown". They become "the file x.md" and "the web page host"."""
    text = _URL.sub(lambda m: f"the web page {m.group(1)}", text)
    return _PATH.sub(lambda m: f"the file {m.group(0).rstrip('/').rpartition('/')[2]}", text)


def semantic_texts(doc: ToolDoc) -> list[str]:
    """What the embedder reads of a tool, as short texts embedded one by one: the brief, the split name with the
    brief (and hint), the split name with the start of the full text (past a leading heading line), and each
    curated query."""
    words = " ".join(split_identifier(doc.name))
    named = f"{words}: {doc.brief}"
    if doc.hint:
        named = f"{named} {doc.hint}"
    body = doc.full.strip()
    if body.startswith("#"):
        body = body.partition("\n")[2].strip()
    texts = [doc.brief, named, f"{words}\n{body[:_SEMANTIC_HEAD_CHARS]}" if body else words]
    texts.extend(q for q in doc.queries if q.strip())
    return texts


def semantic_text(doc: ToolDoc) -> str:
    """One text for a tool: its split name, brief, hint and curated queries, then the start of its full text
    (small models read ~512 tokens). Search embeds :func:`semantic_texts` instead."""
    parts = [" ".join(split_identifier(doc.name)), doc.brief]
    if doc.hint:
        parts.append(doc.hint)
    if doc.queries:
        parts.append("; ".join(doc.queries))
    head = "\n".join(parts)
    room = max(0, _SEMANTIC_TEXT_CHARS - len(head))
    return f"{head}\n{doc.full[:room]}" if room else head


# A hit whose similarity (coverage or cosine) falls below this does not count as a match of a hybrid or semantic
# search, however close to the top one it is.
RELEVANT_SIMILARITY = 0.34


def _relevant_count(
    ranked: Sequence[tuple[str, float, float]], texts: Sequence[Mapping[str, float]], *, keyword: bool
) -> int:
    """How many of a ranking count as matches. Keyword: scores of at least ``KEYWORD_RELATIVE`` times the top
    score. Semantic and hybrid: tools whose similarity to some text of the request (the whole request or one of
    its needs: ``texts`` holds their similarities) is within ``SEMANTIC_BAND`` of that text's best (and at least
    ``RELEVANT_SIMILARITY``); each need has its own best, so one strong need does not hide the others' tools."""
    if not ranked:
        return 0
    if keyword:
        floor = ranked[0][1] * KEYWORD_RELATIVE
        return sum(1 for _n, score, _sim in ranked if score >= floor)
    relevant: set[str] = set()
    for sims in texts:
        if sims:
            line = max(RELEVANT_SIMILARITY, max(sims.values()) - SEMANTIC_BAND)
            relevant.update(name for name, sim in sims.items() if sim >= line)
    return max(1, len(relevant))


class LazySearch:
    """The wrapper's :class:`ToolSearch`: the one given, or one built from the registry on first use (shared by
    every client :meth:`~ComposedClientBase.for_task` derives)."""

    def __init__(self, registry: Registry, search: ToolSearch | None) -> None:
        if search is not None and search.registry.fingerprint != registry.fingerprint:
            raise ValueError("the ToolSearch was built for another registry than the composer's")
        self._registry = registry
        self._search = search
        self._lock = threading.Lock()

    def get(self) -> ToolSearch:
        with self._lock:
            if self._search is None:
                self._search = ToolSearch(self._registry)
            return self._search
