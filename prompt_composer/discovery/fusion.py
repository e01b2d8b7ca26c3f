"""How one request's scores are merged and read: a decomposed request's texts fused into one ranking
(:func:`merge_needs`), and how many of a ranking count as matches (:func:`relevant_count`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# A decomposed task scores each tool by the better of the whole text and its best need (discounted a little:
# a need is a shorter, noisier text than the task).
NEED_WEIGHT = 0.9
# What counts as a match, so that a long tail of weak matches is neither shown nor counted (see :func:`relevant_count`).
KEYWORD_RELATIVE = 0.3
SEMANTIC_BAND = 0.1
# A hit whose similarity (coverage or cosine) falls below this does not count as a match of a hybrid or semantic
# search, however close to the top one it is.
RELEVANT_SIMILARITY = 0.34


Ranked = list[tuple[str, float, float]]  # (name, score, similarity), best first


@dataclass(frozen=True)
class Scored:
    """One text's scores over the allowed tools, and the evidence that it matches anything."""

    scores: dict[str, float]
    similarity: dict[str, float]
    evidence: dict[str, float]
    terms: Counter[str]  # the text's lexical terms


def merge_needs(whole: Scored, parts: Sequence[Scored]) -> tuple[dict[str, float], dict[str, float]]:
    """Scores and similarities of a request's tools: per tool, the better of the whole request and its best need
    (a need's score discounted by :data:`NEED_WEIGHT`)."""
    scores = dict(whole.scores)
    similarity = dict(whole.similarity)
    for part in parts:
        for name, score in part.scores.items():
            if NEED_WEIGHT * score > scores.get(name, float("-inf")):
                scores[name] = NEED_WEIGHT * score
        for name, sim in part.similarity.items():
            similarity[name] = max(similarity.get(name, 0.0), sim)
    return scores, similarity


def relevant_count(ranked: Ranked, texts: Sequence[Mapping[str, float]], *, keyword: bool) -> int:
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
