"""Search terms from text: identifiers split (``readFile`` → ``read``, ``file``), English plurals stripped, stop
words dropped, CJK runs as character unigrams and bigrams. Standard library only; shared by the lexical index,
task decomposition and learned phrasings.
"""

from __future__ import annotations

import functools
import itertools
import re

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
    """A conservative English stemmer: plurals (files→file, queries→query, matches→match, status stays), then
    -ing, -ed and a final -e, so that the forms of one verb meet (stage, staged, staging → stag; running → run).
    Words of four letters or fewer are kept as they are. Measured (docs/benchmarks.md, "Values as kinds"): MetaTool
    recall@5 0.755 → 0.760, LiveMCPBench recall@10 0.479 → 0.524."""
    if len(word) <= 3 or not word.isascii():
        return word
    if word.endswith("s"):
        if word.endswith("ies"):
            return word[:-3] + "y"
        if word.endswith(("sses", "shes", "ches", "xes", "zes")):
            word = word[:-2]
        elif not word.endswith(("ss", "us", "is", "os")):
            word = word[:-1]
    if len(word) <= 4:
        return word
    for suffix, shortest in (("ing", 6), ("ed", 5)):
        if word.endswith(suffix) and len(word) >= shortest:
            word = word[: -len(suffix)]
            if len(word) > 2 and word[-1] == word[-2] and word[-1] not in "lsz":  # running → run, not fill → fil
                word = word[:-1]
            return word
    return word[:-1] if word.endswith("e") else word


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
