"""Tool search: a field-weighted BM25 index over the registry, an optional embedding path, their fusion,
and the selection strategies (``all | keyword | semantic | hybrid``) built on them.

Every result is filtered by :meth:`Mode.allows`, the one access check: a tool outside the mode never appears
in a result list, a miss explanation or a warning, not even by name.

The lexical path needs only the standard library (an inverted index whose postings hold precomputed BM25F
weights, so a query is a few dictionary walks). The embedding path uses an :class:`~.embeddings.Embedder`
(numpy) when one is given or the optional extra is installed; without it, searches fall back to lexical with
one warning.
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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .docs import ToolDoc
from .modes import Mode

if TYPE_CHECKING:
    from .embeddings import Embedder
    from .registry import Registry

__all__ = [
    "DEFAULT_FIELD_WEIGHTS",
    "STRATEGIES",
    "Hit",
    "LexicalIndex",
    "Miss",
    "SearchResult",
    "Selection",
    "Strategy",
    "ToolSearch",
    "doc_fingerprint",
    "split_identifier",
    "tokenize",
]

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
    ) -> None:
        self.names: list[str] = []
        field_terms: list[dict[str, Counter[str]]] = []
        totals: dict[str, int] = dict.fromkeys(weights, 0)
        for name, fields in docs:
            self.names.append(name)
            per_field: dict[str, Counter[str]] = {}
            for fname in weights:
                terms = tokenize(fields.get(fname, ""))
                per_field[fname] = Counter(terms)
                totals[fname] += len(terms)
            field_terms.append(per_field)
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

    def coverage(self, query: str | Counter[str], name: str) -> float:
        """The idf-weighted share of the query's terms that occur in the tool's doc (0..1).

        Each term weighs ``1 + idf``; a term the index has never seen weighs like one seen in a single doc, so a
        query in a language the docs do not use has low coverage even if one common word matches, while one
        unusual word in an otherwise matching query does not sink it.
        """
        terms = self.query_terms(query) if isinstance(query, str) else query
        if not terms:
            return 0.0
        doc_id = self._position.get(name)
        total = matched = 0.0
        for term in terms:
            idf = 1.0 + self.idf.get(term, self.unseen_idf)
            total += idf
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
# Below these a result is a miss: nothing matched well.
MISS_COVERAGE = 0.34
# Off-topic requests in several languages: the top cosines they reach calibrate the semantic miss line.
_OFF_TOPIC = (
    "bake a chocolate cake for a birthday party",
    "what will the weather be like tomorrow",
    "book a cheap flight to Tokyo",
    "recommend a jazz album to relax",
    "translate this love poem into Latin",
    "buy running shoes online",
    "wie spät ist es in Sydney",
    "¿dónde está la biblioteca municipal?",
    "我想吃火锅",
    "jaki film obejrzeć wieczorem",
    "la recette de la ratatouille",
    "xyzzy plugh frobnicate",
)
KEYWORD_RELATIVE = 0.3
SEMANTIC_BAND = 0.1
_SEMANTIC_TEXT_CHARS = 1500
_SEMANTIC_HEAD_CHARS = 400  # of the full text, in the one of a tool's semantic texts that reads it


class ToolSearch:
    """Search and selection over one registry's tools.

    ``embedder``: an :class:`~.embeddings.Embedder`, ``None`` to load the default lazily when a semantic or
    hybrid search first needs it, or ``False`` for lexical only. If no embedder can be had, semantic and
    hybrid searches fall back to keyword with one warning (logged once, and carried by the result).
    Tool vectors are cached by doc fingerprint (``cache_path`` persists them between runs).
    """

    def __init__(
        self,
        registry: Registry,
        *,
        embedder: Embedder | Literal[False] | None = None,
        cache_path: str | Path | None = None,
        weights: Mapping[str, tuple[float, float]] = DEFAULT_FIELD_WEIGHTS,
    ) -> None:
        self.registry = registry
        self.lexical = LexicalIndex(((n, doc_fields(d)) for n, d in registry.tools.items()), weights=weights)
        self._embedder: Embedder | None = embedder or None
        self._embedder_disabled = embedder is False
        self._embedder_error: str | None = None
        self._cache_path = Path(cache_path) if cache_path is not None else None
        self._vectors: Any = None  # numpy (n, d) in registry order, built on first semantic use
        self._lock = threading.Lock()
        self._warned: set[str] = set()
        self._miss_cosine: float | None = None

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

    def tool_vectors(self) -> Any:
        """The (n, d) matrix of tool vectors in registry order (computed once; cached per doc fingerprint).

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

                cache = EmbeddingCache(embedder, self._cache_path)
                keys: list[list[str]] = []  # per tool in registry order, the cache keys of its texts
                keyed: dict[str, str] = {}
                for doc in self.registry.tools.values():
                    fingerprint = doc_fingerprint(doc)
                    texts = semantic_texts(doc)
                    keys.append([f"{fingerprint}/{i}" for i in range(len(texts))])
                    keyed.update(zip(keys[-1], texts, strict=True))
                vectors = cache.embed(keyed)
                if self._cache_path is not None:
                    cache.save()
                if keys:
                    matrix = np.stack([np.mean([np.asarray(vectors[k]) for k in tool], axis=0) for tool in keys])
                else:
                    matrix = np.zeros((0, 1), dtype=np.float32)
                self._vectors = matrix.astype(np.float32)
            return self._vectors

    def miss_cosine(self) -> float:
        """The cosine below which a semantic top hit is a miss, calibrated per embedder and registry: just
        above what off-topic queries reach (cosine scales differ widely between models)."""
        if self._miss_cosine is None:
            import numpy as np

            embedder = self._get_embedder()
            assert embedder is not None
            matrix = self.tool_vectors()
            if matrix.shape[0] == 0:
                self._miss_cosine = 1.0
            else:
                tops = np.array([float(np.max(matrix @ embedder.embed_query(q))) for q in _OFF_TOPIC])
                self._miss_cosine = float(tops.mean() + 2.0 * tops.std())
        return self._miss_cosine

    def _semantic_rank(self, query: str, allows: Callable[[str], bool]) -> list[tuple[str, float]]:
        import numpy as np

        embedder = self._get_embedder()
        assert embedder is not None
        matrix = self.tool_vectors()
        names = list(self.registry.tools)
        if not names:
            return []
        q = np.asarray(embedder.embed_query(query), dtype=np.float32)
        if not np.all(np.isfinite(q)):
            raise ValueError("the embedder returned a vector with NaN or infinite values")
        sims = matrix @ q
        order = np.argsort(-sims, kind="stable")
        return [(names[i], float(sims[i])) for i in order if allows(names[i])]

    # -- search -----------------------------------------------------------------------------------

    def default_strategy(self) -> SearchStrategy:
        """hybrid when an embedder is available, keyword otherwise."""
        return "hybrid" if self.semantic_available else "keyword"

    def rank(self, query: str, mode: Mode, strategy: SearchStrategy | None = None) -> tuple[list[str], SearchResult]:
        """The full ranking (names, best first) and the result summary, for evaluation."""
        result, ranked = self._search(query, mode, strategy, limit=None)
        return [name for name, _score, _sim in ranked], result

    def search(self, query: str, mode: Mode, *, limit: int = 5, strategy: SearchStrategy | None = None) -> SearchResult:
        """The ``limit`` best tools of ``mode`` for ``query``; on a weak match, an explained miss instead."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        result, _ranked = self._search(query, mode, strategy, limit=limit)
        return result

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

        terms = self.lexical.query_terms(query)
        lexical = self.lexical.rank(terms, allows)
        confidence = self.lexical.confidence(terms, lexical)
        ranked: list[tuple[str, float, float]]  # name, score, similarity
        weak: bool
        if used == "keyword":
            ranked = [(n, s, self.lexical.coverage(terms, n)) for n, s in lexical]
            weak = not ranked or ranked[0][2] < MISS_COVERAGE
        else:
            semantic = self._semantic_rank(query, allows)
            cosine = dict(semantic)
            if used == "semantic":
                ranked = [(n, s, s) for n, s in semantic]
                weak = not ranked or ranked[0][1] < self.miss_cosine()
            else:
                ranked = self._fuse(terms, lexical, semantic, cosine)
                top_cos = semantic[0][1] if semantic else 0.0
                weak = not ranked or (
                    (not lexical or self.lexical.coverage(terms, lexical[0][0]) < MISS_COVERAGE)
                    and top_cos < self.miss_cosine()
                )
            confidence = max(confidence, _cosine_confidence(semantic, self.miss_cosine()))

        if weak and limit is not None:
            miss = self._explain_miss(query, mode, [n for n, _s, _m in ranked[:limit]])
            result = SearchResult(query, mode.slug, used, (), 0, confidence, miss, tuple(warnings))
            return result, ranked
        # "Matches" are the tools that score near the best one; the long tail of one-common-word matches (or,
        # for embeddings, of every tool) is noise, neither shown nor counted. ``limit=None`` keeps everything.
        total = _relevant_count(ranked, keyword=used == "keyword")
        shown = ranked if limit is None else ranked[: min(limit, total)]
        tools = self.registry.tools
        hits = tuple(
            Hit(name, tools[name].group, score, sim, tools[name].brief, tools[name].hint) for name, score, sim in shown
        )
        return SearchResult(
            query, mode.slug, used, hits, max(total, len(hits)), confidence, None, tuple(warnings)
        ), ranked

    def _fuse(
        self,
        terms: Counter[str],
        lexical: Sequence[tuple[str, float]],
        semantic: Sequence[tuple[str, float]],
        cosine: Mapping[str, float],
    ) -> list[tuple[str, float, float]]:
        """Normalised score fusion: ``FUSION_LEXICAL_WEIGHT`` times the BM25 score as a share of the top one, plus
        the rest times the cosine's z-score over the ranked tools as a share of the top z-score."""
        import numpy as np

        fused: dict[str, float] = {}
        if semantic:
            sims = np.fromiter((s for _n, s in semantic), dtype=np.float64, count=len(semantic))
            spread = float(sims.std())
            z = (sims - sims.mean()) / spread if spread > 0 else np.zeros_like(sims)
            top_z = float(z.max())
            scaled = z * ((1.0 - FUSION_LEXICAL_WEIGHT) / top_z) if top_z > 0 else np.zeros_like(z)
            fused = dict(zip((n for n, _s in semantic), scaled.tolist(), strict=True))
        top_lex = lexical[0][1] if lexical else 0.0
        if top_lex > 0:
            share = FUSION_LEXICAL_WEIGHT / top_lex
            for name, score in lexical:
                fused[name] = fused.get(name, 0.0) + score * share
        coverage = self.lexical.coverage
        order = sorted(fused.items(), key=lambda item: (-item[1], item[0]))
        return [(n, s, max(coverage(terms, n), cosine.get(n, 0.0))) for n, s in order]

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


def _cosine_confidence(semantic: Sequence[tuple[str, float]], line: float) -> float:
    """Map the top cosine to 0..1: 0 at or below the miss line, rising to 1 at a cosine of 1."""
    if not semantic or line >= 1.0:
        return 0.0
    return round(max(0.0, min(1.0, (semantic[0][1] - line) / (1.0 - line))), 4)


def _relevant_count(ranked: Sequence[tuple[str, float, float]], *, keyword: bool) -> int:
    """How many of a ranking count as matches. Keyword: scores of at least ``KEYWORD_RELATIVE`` times the top
    score. Semantic and hybrid: similarities within ``SEMANTIC_BAND`` of the top one (and above the miss line).
    The ranking is best first, so matches are a prefix for keyword and counted anywhere otherwise."""
    if not ranked:
        return 0
    if keyword:
        floor = ranked[0][1] * KEYWORD_RELATIVE
        return sum(1 for _n, score, _sim in ranked if score >= floor)
    top = max(sim for _n, _s, sim in ranked)
    return max(1, sum(1 for _n, _s, sim in ranked if sim >= max(MISS_COVERAGE, top - SEMANTIC_BAND)))
