"""Tool search: the lexical index (:mod:`.lexical`) and an optional embedding path (:mod:`.semantic`), their
fusion, and the selection strategies (``all | keyword | semantic | hybrid``) built on them (:class:`ToolSearch`).

Every result is filtered by :meth:`Mode.allows`, the one access check: a tool outside the mode never appears
in a result list, a miss explanation or a warning, not even by name.

The lexical path needs only the standard library. The embedding path uses an :class:`~.embeddings.Embedder`
(numpy) when one is given or the optional extra is installed; without it, searches fall back to lexical with
one warning. Tool vectors persist in the user cache (:mod:`.vector_cache`).

A multi-step request is decomposed into needs (:func:`~.needs.decompose`), each searched; requests that led to a
tool's use (:class:`~.phrasings.Phrasings`, e.g. from an event log: :mod:`prompt_composer.learn.phrasings`) become
extra text of that tool. Whether anything matched is a calibrated probability (:mod:`.calibration`); below
:data:`~.calibration.MISS_CONFIDENCE` the result is an explained miss. Values a request names (a path, a URL, a
commit) are matched as the kind of thing they are, and lift the tools that take them (:mod:`.affordances`).
"""

from __future__ import annotations

import difflib
import heapq
import logging
import re
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..core.cards import card_phrasings
from ..core.modes import Mode
from ..shared.extras import extra_of, missing_module, needs_extra
from .affordances import ToolSlots, without_values
from .calibration import MISS_CONFIDENCE, match_probability
from .expand import expansion
from .fusion import Ranked, Scored, merge_needs, relevant_count
from .index_cache import kept_index
from .lexical import DEFAULT_FIELD_WEIGHTS, LexicalIndex, doc_fields
from .needs import decompose
from .phrasings import Phrasings
from .results import STRATEGIES, Hit, Miss, SearchResult, SearchStrategy, Selection, Strategy
from .semantic import ToolVectors, batch_query_vectors, for_embedding, query_vector
from .servers import SERVER_WEIGHT, CardIndex, ServerIndex, add_card_shares, lift_by_server

if TYPE_CHECKING:
    from ..core.registry import Registry
    from .embeddings import Embedder

log = logging.getLogger(__name__)

# The field a tool's document gains at load (:mod:`.expand`: its name as a phrase, its request verbs): its BM25F
# weight. Tuned on the tuning half of the large tasks (docs/benchmarks.md, "Retrieval on the large catalog").
EXPANDED_WEIGHT = 1.0
# A tool's server card (:mod:`prompt_composer.core.cards`: what its server is for) adds to the tool's score its BM25
# share of the best card (times this, on the lexical part's scale) and its z-scored cosine (times this, on the
# semantic part's). Chosen on the tuning half of the large tasks (docs/benchmarks.md, "Server cards and the
# shortlist").
CARD_WEIGHT = 1.0
CARD_SEMANTIC_WEIGHT = 0.45
# A request that names a value (a path, a commit, a line, an issue number, an id: :mod:`.affordances`) adds to each
# tool's score the share of those values its parameters take, times this (on the lexical part's scale).
AFFORDANCE_WEIGHT = 0.6
# Hybrid scores are a convex combination of the normalised BM25 score (share of the top one) and the normalised
# cosine (z-score over the mode's tools, as a share of the top one); tuned on held-out queries, where it beat
# reciprocal-rank fusion (benchmarks/bench_search.py).
FUSION_LEXICAL_WEIGHT = 0.35
# Learned phrasings add to a text's score: the BM25 of the learned field (share of its top) and how close the
# nearest past request is (cosine above LEARNED_COSINE_FLOOR, rescaled to 0..1). Tuned with phrasings cross-fitted
# (a query never sees its own phrasing): see bench_search.py.
LEARNED_LEXICAL_WEIGHT = 0.3
LEARNED_SEMANTIC_WEIGHT = 0.8
LEARNED_COSINE_FLOOR = 0.3
# A server card's example requests count as phrasings of their first tools, at these weights (same floor): a
# person's guess at what users say weighs less than what they said. Chosen on the large catalog's development
# splits (docs/benchmarks.md, "Examples in the cards").
EXAMPLE_LEXICAL_WEIGHT = 0.15
EXAMPLE_SEMANTIC_WEIGHT = 0.6
# Co-use: the CO_USE_TOP best tools lend CO_USE_WEIGHT × their score × P(b used | a used) to each tool b.
CO_USE_WEIGHT = 0.2
CO_USE_TOP = 5


class ToolSearch:
    """Search and selection over one registry's tools.

    ``embedder``: an :class:`~.embeddings.Embedder`, ``None`` to load the default lazily when a semantic or
    hybrid search first needs it, or ``False`` for lexical only. If no embedder can be had, semantic and
    hybrid searches fall back to keyword with one warning (logged once, and carried by the result).

    Tool vectors are cached per text (sha256) and model, and persist by default in the user cache
    (:func:`~.cache_paths.vector_cache_path`): a new process embeds nothing it has seen, and editing one doc of a
    large registry re-embeds that doc only. ``cache_path`` names another file; ``False`` keeps vectors in memory.

    ``phrasings`` (``tool -> [request, ...]``, see :class:`~.phrasings.Phrasings`) are requests that led to a
    tool's successful use; they make the tool easier to find with the words real users used for it. So do the cards'
    examples (:func:`~prompt_composer.core.cards.card_phrasings`), at lower weights (``card_examples=False``: off).
    ``decompose``: search each need of a multi-step request too (:func:`~.needs.decompose`).
    ``index_cache``: keep each mode's keyword index in the user cache too (:mod:`.index_cache`), so a new
    process reads it instead of building it; ``False`` (or ``cache_path=False``) builds it in memory.
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
        server_weight: float = SERVER_WEIGHT,
        expanded_weight: float = EXPANDED_WEIGHT,
        card_weight: float = CARD_WEIGHT,
        card_semantic_weight: float = CARD_SEMANTIC_WEIGHT,
        affordance_weight: float = AFFORDANCE_WEIGHT,
        mask_values: bool = True,
        index_cache: bool = True,
        card_examples: bool = True,
    ) -> None:
        self.registry = registry
        self.affordance_weight = affordance_weight
        self.mask_values = mask_values
        self._slots = ToolSlots(registry.tools)
        self.decompose = decompose
        self.server_weight = server_weight
        # A drafted card only repeats its tools' names, which the index holds already: on the tuning half of the
        # large tasks reading them cost (MRR 0.701 -> 0.647), so search reads the cards a server or a person wrote.
        self.cards = {name: card for name, card in registry.servers.items() if card.source != "drafted"}
        self.card_semantic_weight = card_semantic_weight if self.cards else 0.0
        self.card_weight = card_weight if self.cards else 0.0
        self._weights = {**weights, "expanded": (expanded_weight, 0.3)} if expanded_weight > 0 else weights
        # One lexical index per set of allowed tools: a mode's idf and length norms come from its own tools only,
        # so tools outside the mode (another team's server) cannot shift its ranking.
        self._lexical: dict[frozenset[str], LexicalIndex] = {}
        self._servers: dict[frozenset[str], ServerIndex] = {}
        self._cards: dict[frozenset[str], CardIndex] = {}
        self.phrasings = Phrasings(phrasings or {}, registry.tools)
        # A card's examples are a person's words, even in a drafted card (whose description search leaves out).
        self.examples = Phrasings(card_phrasings(registry.servers.values()) if card_examples else {}, registry.tools)
        self._embedder: Embedder | None = embedder or None
        self._embedder_disabled = embedder is False
        self._embedder_error: str | None = None
        self._embedder_missing: str | None = None  # the module of the `embeddings` extra that is not installed
        self._cache_path: Path | Literal[False] | None = (
            False if cache_path is False else Path(cache_path) if cache_path is not None else None
        )
        self._vectors: ToolVectors | None = None  # built on first semantic use
        self._index_cache = index_cache and cache_path is not False
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
                    self._embedder_missing = missing_module(exc) if extra_of(exc) == "embeddings" else None
        return self._embedder

    def unavailable_warning(self) -> str:
        """The warning given when semantic search falls back to keyword."""
        if self._embedder_missing is not None:  # what to do first, then what was missing
            extra = needs_extra("semantic search", "embeddings")
            return f"{extra} (no module {self._embedder_missing!r}); using keyword search"
        detail = self._embedder_error or "embeddings are disabled"
        return f"semantic search unavailable ({detail}); using keyword search"

    def _warn_once(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            log.warning(message)

    def _without_embedder(self, strategy: Strategy) -> str | None:
        """The warning (logged once) when ``strategy`` needs an embedder and none can be had, else ``None``."""
        if strategy not in ("semantic", "hybrid") or self._get_embedder() is not None:
            return None
        warning = self.unavailable_warning()
        self._warn_once(warning)
        return warning

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
        from .cache_paths import vector_cache_path

        return vector_cache_path(embedder.name)

    def tool_vectors(self) -> Any:
        """The (n, d) matrix of tool vectors in registry order (computed once; cached per text on disk; see
        :class:`~.semantic.ToolVectors`)."""
        return self._tool_vectors().tools

    def _tool_vectors(self) -> ToolVectors:
        embedder = self._get_embedder()
        if embedder is None:
            raise RuntimeError(self.unavailable_warning())
        with self._lock:
            if self._vectors is None:
                self._vectors = ToolVectors(
                    self.registry.tools,
                    self.phrasings,
                    embedder,
                    self.cache_file,
                    cards=self.cards if self.card_semantic_weight > 0 else None,
                    examples=self.examples or None,
                )
            return self._vectors

    def lexical_for(self, mode: Mode) -> LexicalIndex:
        """The lexical index over the tools ``mode`` allows (built on first use, then shared)."""
        key = frozenset(mode.allowed)
        index = self._lexical.get(key)
        if index is None:
            tools = self.registry.tools

            def build() -> LexicalIndex:
                return LexicalIndex(
                    ((n, {**doc_fields(tools[n]), "expanded": expansion(n)}) for n in tools if n in key),
                    weights=self._weights,
                )

            index = kept_index(self.registry, key, self._weights, build) if self._index_cache else build()
            with self._lock:
                index = self._lexical.setdefault(key, index)
        return index

    def cards_for(self, mode: Mode) -> CardIndex:
        """The index of the server cards of the tools ``mode`` allows (built on first use, then shared)."""
        key = frozenset(mode.allowed)
        index = self._cards.get(key)
        if index is None:
            tools = self.registry.tools
            index = CardIndex((tools[n] for n in tools if n in key), self.cards)
            with self._lock:
                index = self._cards.setdefault(key, index)
        return index

    def servers_for(self, mode: Mode) -> ServerIndex:
        """The server index over the tools ``mode`` allows (built on first use, then shared)."""
        key = frozenset(mode.allowed)
        index = self._servers.get(key)
        if index is None:
            tools = self.registry.tools
            index = ServerIndex((tools[n] for n in tools if n in key), self.registry.groups, self.cards)
            with self._lock:
                index = self._servers.setdefault(key, index)
        return index

    # -- scoring one text -------------------------------------------------------------------------

    def _score_text(
        self,
        text: str,
        used: SearchStrategy,
        allows: Callable[[str], bool],
        lexical: LexicalIndex,
        vector: Any = None,
    ) -> Scored:
        """Scores (about 0..1, the best plain match near 1) and 0..1 similarities of the allowed tools for one
        text, plus the evidence the miss model reads; ``lexical``: the mode's index."""
        terms = lexical.query_terms(text)
        scores: dict[str, float] = {}
        similarity: dict[str, float] = {}
        evidence: dict[str, float] = {"cover": 0.0, "cover_all": 0.0, "cos": 0.0, "cos_rel": 0.0}
        if used != "semantic":
            self._add_lexical(lexical, terms, used, allows, scores, similarity, evidence)
            self._add_learned_lexical(terms, allows, scores, evidence)
        if used != "keyword":
            self._add_semantic(text, used, allows, scores, similarity, evidence, vector)
        return Scored(scores, similarity, evidence, terms)

    def _add_lexical(
        self,
        index: LexicalIndex,
        terms: Counter[str],
        used: SearchStrategy,
        allows: Callable[[str], bool],
        scores: dict[str, float],
        similarity: dict[str, float],
        evidence: dict[str, float],
    ) -> None:
        lexical = index.rank(terms, allows)
        if lexical:
            top_name, top = lexical[0]
            evidence["cover"] = index.coverage(terms, top_name, strong=True)
            evidence["cover_all"] = index.coverage(terms, top_name)
            share = (1.0 if used == "keyword" else FUSION_LEXICAL_WEIGHT) / top
            for name, score in lexical:
                scores[name] = score * share
                similarity[name] = index.coverage(terms, name)

    def _add_learned_lexical(
        self, terms: Counter[str], allows: Callable[[str], bool], scores: dict[str, float], evidence: dict[str, float]
    ) -> None:
        for phrasings, weight in ((self.phrasings, LEARNED_LEXICAL_WEIGHT), (self.examples, EXAMPLE_LEXICAL_WEIGHT)):
            learned = phrasings.index
            if learned is None:
                continue
            hits = learned.rank(terms, allows)
            if hits:
                # The words users use for a tool are as telling as its brief.
                learned_cover = learned.coverage(terms, hits[0][0])
                evidence["cover"] = max(evidence["cover"], learned_cover)
                evidence["cover_all"] = max(evidence["cover_all"], learned_cover)
                share = weight / hits[0][1]
                for name, score in hits:
                    scores[name] = scores.get(name, 0.0) + score * share

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
        vectors = self._tool_vectors()
        names = list(self.registry.tools)
        if not names:
            return
        q = vector if vector is not None else query_vector(embedder, for_embedding(text))
        mask = np.fromiter((allows(n) for n in names), dtype=bool, count=len(names))
        if not mask.any():
            return
        sims = (vectors.tools @ q).astype(np.float64)
        allowed_sims = sims[mask]
        spread = float(allowed_sims.std())
        z = (sims - allowed_sims.mean()) / spread if spread > 0 else np.zeros_like(sims)
        top_z = float(z[mask].max())
        weight = 1.0 if used == "semantic" else 1.0 - FUSION_LEXICAL_WEIGHT
        scaled = z * (weight / top_z) if top_z > 0 else np.zeros_like(z)
        evidence["cos"] = float(allowed_sims.max())
        line = vectors.small_talk_line(mask)
        evidence["cos_rel"] = (evidence["cos"] - line) / (1.0 - line) if line < 1.0 else 0.0
        for i in np.flatnonzero(mask):
            name = names[i]
            scores[name] = scores.get(name, 0.0) + float(scaled[i])
            similarity[name] = max(similarity.get(name, 0.0), float(sims[i]))
        card_z = vectors.card_z(q, mask) if top_z > 0 else None
        if card_z is not None:
            # On the same scale as the tool's own; the tool's similarity (the floor, the relevance band, the miss
            # model) stays its own.
            for i in np.flatnonzero(mask & vectors.carded):
                scores[names[i]] += self.card_semantic_weight * float(card_z[i]) * weight / top_z
        # A request close to a card's example matches its tool as much as the tool's own text would: the floor and the
        # relevance band read it (docs/benchmarks.md, "Examples in the cards"). Learned phrasings lift the score only.
        for phrases, phrase_weight, is_similarity in (
            (vectors.learned, LEARNED_SEMANTIC_WEIGHT, False),
            (vectors.examples, EXAMPLE_SEMANTIC_WEIGHT, True),
        ):
            if phrases is None:
                continue
            nearest = phrases.nearest(q)  # each tool's nearest past (or example) request
            lift = phrases.lift(nearest, LEARNED_COSINE_FLOOR)
            for i in np.flatnonzero((lift > 0) & mask):
                scores[names[i]] = scores.get(names[i], 0.0) + phrase_weight * float(lift[i])
                if is_similarity:
                    similarity[names[i]] = max(similarity.get(names[i], 0.0), float(nearest[i]))

    # -- search -----------------------------------------------------------------------------------

    def default_strategy(self) -> SearchStrategy:
        """hybrid when an embedder is available, keyword otherwise."""
        return "hybrid" if self.semantic_available else "keyword"

    def rank(self, query: str, mode: Mode, strategy: SearchStrategy | None = None) -> tuple[list[str], SearchResult]:
        """The full ranking (names, best first) and the result summary, for evaluation."""
        result, ranked = self._search(query, mode, strategy, limit=None)
        return [name for name, _score, _sim in ranked], result

    def search_ranked(
        self, query: str, mode: Mode, *, limit: int = 5, strategy: SearchStrategy | None = None
    ) -> tuple[SearchResult, list[str]]:
        """:meth:`search`, and the full ranking of the mode's tools it was cut from (names, best first), from one
        search."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        result, ranked = self._search(query, mode, strategy, limit=limit)
        return result, [name for name, _score, _sim in ranked]

    def search(self, query: str, mode: Mode, *, limit: int = 5, strategy: SearchStrategy | None = None) -> SearchResult:
        """The ``limit`` best tools of ``mode`` for ``query``; on a weak match, an explained miss instead.

        A request with several steps is decomposed (:func:`~.needs.decompose`) and each step searched; a tool
        scores by the better of the whole request and its best step."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        result, _ranked = self._search(query, mode, strategy, limit=limit)
        return result

    def confidence(self, evidence: Mapping[str, float], strategy: SearchStrategy) -> float:
        """P(a tool of the mode serves the request), from one text's evidence (see :mod:`.calibration`)."""
        return match_probability(evidence, strategy)

    def _search(
        self, query: str, mode: Mode, strategy: SearchStrategy | None, *, limit: int | None, strict: bool = False
    ) -> tuple[SearchResult, Ranked]:
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
    ) -> tuple[SearchResult, Ranked]:
        allows = mode.allows
        warnings: list[str] = []
        used: SearchStrategy = strategy or self.default_strategy()
        warning = self._without_embedder(used)
        if warning is not None:
            warnings.append(warning)
            used = "keyword"

        needs = decompose(query) if self.decompose else [query]
        if len(needs) <= 1:
            needs = []
        # What a request asks is in its words, not in the values it names (a path, a URL, a hash): those are put
        # as the kind of thing they are (the text matched), and lift the tools that take them.
        raw = [query, *needs]
        asked = [(without_values(text) or text) if self.mask_values else text for text in raw]
        vectors = batch_query_vectors(self._get_embedder(), asked) if used != "keyword" and needs else {}
        lexical = self.lexical_for(mode)
        texts = [self._score_text(text, used, allows, lexical, vectors.get(text)) for text in asked]
        if self.affordance_weight > 0:
            scale = 1.0 if used == "keyword" else FUSION_LEXICAL_WEIGHT
            self._slots.lift(raw, [text.scores for text in texts], allows, self.affordance_weight * scale)
        scores, similarity = merge_needs(texts[0], texts[1:])
        terms = texts[0].terms
        if self.card_weight > 0 and terms:
            cards = self.cards_for(mode)
            scale = 1.0 if used == "keyword" else FUSION_LEXICAL_WEIGHT
            add_card_shares(scores, cards.shares(terms), cards.tools, self.card_weight * scale)
        if self.server_weight > 0:
            servers = self.servers_for(mode)
            shares = servers.shares(terms)
            lift_by_server(scores, shares, servers.server.__getitem__, self.server_weight)
        self._lend_co_use(scores, allows)
        confidence = round(max(self.confidence(s.evidence, used) for s in texts), 4)
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
        total = relevant_count(ranked, [s.similarity for s in texts], keyword=used == "keyword")
        shown = ranked if limit is None else ranked[: min(limit, total)]
        tools = self.registry.tools
        hits = tuple(
            Hit(name, tools[name].group, score, sim, tools[name].brief, tools[name].hint) for name, score, sim in shown
        )
        return SearchResult(
            query, mode.slug, used, hits, max(total, len(hits)), confidence, None, tuple(warnings)
        ), ranked

    def _lend_co_use(self, scores: dict[str, float], allows: Callable[[str], bool]) -> None:
        """Tools used for the same tasks as the best ones gain a share of their score (see :data:`CO_USE_WEIGHT`)."""
        if self.phrasings.co_use and scores:
            best = heapq.nlargest(CO_USE_TOP, scores.items(), key=lambda item: (item[1], item[0]))
            lent: dict[str, float] = {}
            for name, score in best:
                for other, p in self.phrasings.co_use.get(name, {}).items():
                    if allows(other):
                        lent[other] = lent.get(other, 0.0) + CO_USE_WEIGHT * max(0.0, score) * p
            for name, extra in lent.items():
                scores[name] = scores.get(name, 0.0) + extra

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
        unavailable = self._without_embedder(strategy)
        if unavailable is not None:
            warnings.append(unavailable)
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
