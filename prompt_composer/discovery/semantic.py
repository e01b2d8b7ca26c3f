"""The embedding side of tool search: what the embedder reads of a tool (:func:`semantic_texts`), how a request is
prepared for it (:func:`for_embedding`), and the vectors a query is compared with (:class:`ToolVectors`).

numpy is imported only when vectors are built or compared, so keyword search and importing this module need the
standard library alone.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.cards import ServerCard, card_of
from ..core.docs import ToolDoc
from .lexical import doc_fields
from .tokenize import split_identifier

if TYPE_CHECKING:
    from .embeddings import Embedder
    from .phrasings import Phrasings

# Building vectors belongs to the search: its warnings go to the search's logger (the CLI quiets that one).
log = logging.getLogger(__name__)

_SEMANTIC_TEXT_CHARS = 1500
_SEMANTIC_HEAD_CHARS = 400  # of the full text, in the one of a tool's semantic texts that reads it
# Requests that match no tool of any catalog: the top cosine they reach is a mode's baseline for ``cos_rel``
# (see :data:`~.calibration.MISS_MODELS`).
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

_URL = re.compile(r"\bhttps?://([^/\s]+)\S*?(?=[,.;:!?)\]]*(?:\s|$))")
_PATH = re.compile(r"(?<![\w/])(?:~|\.{1,2})?(?:/[\w.\-]+)+/?")


def for_embedding(text: str) -> str:
    """Paths and URLs are a request's arguments, not its intent: an encoder reads ``/root/markdown/x.md`` as
    "markdown". They become "the file x.md" and "the web page host"."""
    text = _URL.sub(lambda m: f"the web page {m.group(1)}", text)
    return _PATH.sub(lambda m: f"the file {m.group(0).rstrip('/').rpartition('/')[2]}", text)


def doc_fingerprint(doc: ToolDoc) -> str:
    """A hash of what embedding reads of a doc: editing one doc changes only its own fingerprint."""
    payload = json.dumps(doc_fields(doc), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


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


def query_vector(embedder: Embedder, text: str) -> Any:
    """The query vector of one text, refused when the embedder returns NaN or infinite values."""
    import numpy as np

    q = np.asarray(embedder.embed_query(text), dtype=np.float32)
    if not np.all(np.isfinite(q)):
        raise ValueError("the embedder returned a vector with NaN or infinite values")
    return q


def batch_query_vectors(embedder: Embedder | None, texts: Sequence[str]) -> dict[str, Any]:
    """Query vectors of a request and its needs in one batch, when the embedder can (``embed_queries``, as
    :class:`~.embeddings.UseEmbedder` does: a batch streams the weights once); else none, and each text is
    embedded on its own."""
    import numpy as np

    batch = getattr(embedder, "embed_queries", None)
    if batch is None:
        return {}
    unique = list(dict.fromkeys(texts))
    matrix = np.asarray(batch([for_embedding(t) for t in unique]), dtype=np.float32)
    if matrix.shape[0] != len(unique) or not np.all(np.isfinite(matrix)):
        raise ValueError("the embedder returned unusable query vectors")
    return dict(zip(unique, matrix, strict=True))


class ToolVectors:
    """The vectors one search compares queries with, built once through an
    :class:`~.vector_cache.EmbeddingCache` (persisted at ``cache_file`` when given; a file that cannot be saved
    is logged, and the next process embeds again).

    - ``tools``: the (n, d) matrix in registry order. A tool's vector is the mean of the unit vectors of its
      :func:`semantic_texts`, not re-normalised: its dot product with a query is the query's mean cosine over
      those short texts (the encoder reads short texts better than one long one, and a tool whose texts agree
      scores higher than one whose texts scatter).
    - ``learned``: the learned requests' vectors and who used each (:class:`PhraseVectors`); ``None`` without
      learned phrasings. ``examples``: the same of the server cards' example requests (``examples``).
    - ``small_talk``: the vectors of :data:`_SMALL_TALK`, a mode's baseline cosine.

    - ``cards``: per tool, the vector of its server's card text (``cards``; one per server, embedded once), zero
      for a tool without one; ``None`` without cards. Search adds a query's closeness to a tool's card to the
      tool's score, apart from the tool's own similarity (see :meth:`card_sims`).
    """

    def __init__(
        self,
        tools: Mapping[str, ToolDoc],
        phrasings: Phrasings,
        embedder: Embedder,
        cache_file: Path | None,
        *,
        cards: Mapping[str, ServerCard] | None = None,
        examples: Phrasings | None = None,
    ) -> None:
        import numpy as np

        from .vector_cache import EmbeddingCache

        cache = EmbeddingCache(embedder, cache_file)
        keys, keyed = _tool_texts(tools)
        learned = {f"learned/{i}": for_embedding(text) for i, text in enumerate(phrasings.texts)}
        given = examples.texts if examples is not None else ()
        example_texts = {f"example/{i}": for_embedding(text) for i, text in enumerate(given)}
        owners = {name: card_of(doc, cards) for name, doc in tools.items()} if cards else {}
        card_texts = {f"card/{card.name}": card.search_text for card in owners.values() if card is not None}
        vectors = cache.embed({**keyed, **learned, **example_texts, **card_texts})
        self.small_talk: Any = np.stack(cache.embed_queries(_SMALL_TALK)).astype(np.float32)
        try:
            cache.save()
        except OSError as exc:  # a read-only or full cache: search works, the next process re-embeds
            log.warning("could not save tool vectors to %s: %s", cache.path, exc)
        if keys:
            matrix = np.stack([np.mean([np.asarray(vectors[k]) for k in tool], axis=0) for tool in keys])
        else:
            matrix = np.zeros((0, 1), dtype=np.float32)
        position = {name: i for i, name in enumerate(tools)}
        self.learned = PhraseVectors.build(learned, phrasings.owners, vectors, position)
        self.examples = (
            PhraseVectors.build(example_texts, examples.owners, vectors, position) if examples is not None else None
        )
        self.tools: Any = matrix.astype(np.float32)
        self.cards: Any = None
        self.carded: Any = None
        if card_texts and keys:
            rows = [owners.get(name) for name in tools]
            zero = np.zeros(matrix.shape[1], dtype=np.float32)
            self.cards = np.stack([np.asarray(vectors[f"card/{c.name}"]) if c else zero for c in rows]).astype(
                np.float32
            )
            self.carded = np.array([c is not None for c in rows], dtype=bool)
        self._lines: dict[bytes, float] = {}  # allowed-tool mask -> small-talk line

    def card_z(self, q: Any, mask: Any) -> Any:
        """Per tool, the query's closeness to its server's card, z-scored over the tools in ``mask`` that have
        one; ``None`` without cards, or when those cards are all alike to ``q``."""
        if self.cards is None:
            return None
        carded = mask & self.carded
        sims = (self.cards @ q).astype("float64")
        spread = float(sims[carded].std()) if carded.any() else 0.0
        return (sims - sims[carded].mean()) / spread if spread > 0 else None

    def small_talk_line(self, mask: Any) -> float:
        """The mean top cosine that :data:`_SMALL_TALK` reaches over the tools in ``mask`` (cached per set)."""
        key = mask.tobytes()
        line = self._lines.get(key)
        if line is None:
            sims = self.tools[mask] @ self.small_talk.T
            line = float(sims.max(axis=0).mean())
            self._lines[key] = line
        return line


class PhraseVectors:
    """Requests that speak for tools (learned phrasings, a card's examples): one row per distinct request, and
    (request rows, tool positions) pairs saying which tools each one speaks for."""

    def __init__(self, rows: Any, pairs: tuple[Any, Any], tools: int) -> None:
        self.rows = rows
        self.pairs = pairs
        self.tools = tools

    @classmethod
    def build(
        cls,
        keys: Mapping[str, str],
        owners: Sequence[Sequence[str]],
        vectors: Mapping[str, Any],
        position: Mapping[str, int],
    ) -> PhraseVectors | None:
        """From the embedded ``keys`` (in the order of ``owners``: each request's tools); ``None`` without any."""
        import numpy as np

        if not keys:
            return None
        rows = np.stack([np.asarray(vectors[k]) for k in keys]).astype(np.float32)
        pairs = [(row, position[o]) for row, names in enumerate(owners) for o in names]
        return cls(
            rows,
            (np.array([r for r, _t in pairs], dtype=np.int64), np.array([t for _r, t in pairs], dtype=np.int64)),
            len(position),
        )

    def nearest(self, q: Any) -> Any:
        """Per tool, the cosine of ``q`` with its nearest request (-1 for a tool without one)."""
        import numpy as np

        pair_rows, pair_tools = self.pairs
        nearest = np.full(self.tools, -1.0)
        np.maximum.at(nearest, pair_tools, (self.rows @ q)[pair_rows].astype(np.float64))
        return nearest

    @staticmethod
    def lift(nearest: Any, floor: float) -> Any:
        """How close a query came to each tool's nearest request (:meth:`nearest`): the cosine above ``floor``,
        rescaled to 0..1 (0 for a tool without one)."""
        import numpy as np

        return np.clip((nearest - floor) / (1.0 - floor), 0.0, None)


def _tool_texts(tools: Mapping[str, ToolDoc]) -> tuple[list[list[str]], dict[str, str]]:
    """Per tool in registry order, the cache keys of its semantic texts; and every key's text."""
    keys: list[list[str]] = []
    keyed: dict[str, str] = {}
    for doc in tools.values():
        fingerprint = doc_fingerprint(doc)
        texts = semantic_texts(doc)
        keys.append([f"{fingerprint}/{i}" for i in range(len(texts))])
        keyed.update(zip(keys[-1], texts, strict=True))
    return keys, keyed
