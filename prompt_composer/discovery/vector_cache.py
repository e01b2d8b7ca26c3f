"""The vector cache: one embedding per distinct text, keyed by the sha256 of the text, in memory and optionally
in one ``.npz`` file per model (:class:`EmbeddingCache`), so editing one tool doc re-embeds that doc only and
several processes and registries share what was embedded once.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import threading
import time
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputFileError
from ..shared.files import open_regular

if TYPE_CHECKING:
    from .embeddings import Embedder, FloatArray

# Cache problems are logged where they always were, with the embedders (tests and users filter on that name).
log = logging.getLogger(__name__)


class EmbeddingCacheWarning(UserWarning):
    """Kept for compatibility: cache problems are now logged (``prompt_composer.discovery.embeddings``), never raised,
    because a cache that cannot be read or written must not stop a search (not even under ``-W error``)."""


@dataclass
class CacheStats:
    """What an :class:`EmbeddingCache` answered itself, and what it asked the embedder for."""

    hits: int = 0  # keys answered from vectors already cached
    misses: int = 0  # distinct texts sent to the embedder


_FORMAT = "prompt-composer-embedding-cache/2"
_OLD_FORMATS = ("prompt-composer-embedding-cache/1",)  # no use stamps: every vector counts as stale
# A shared file grows with every doc version any registry embedded; past this many vectors (~2 KB each at
# 512-d), save() drops the ones no process has used for longest. Vectors used by this process are never dropped.
DEFAULT_MAX_ENTRIES = 50_000
# A vector's use stamp is refreshed (which costs a write) only when older than this, so a process that only
# reads cached vectors writes nothing.
_STAMP_REFRESH_SECONDS = 7 * 24 * 3600


class EmbeddingCache:
    """Vectors keyed by (embedder, sha256 of the text), optionally persisted to one ``.npz`` file per model.

    :meth:`embed` sends only the texts it has not seen to the embedder, in one batch. With a ``path``, the
    vectors are loaded on creation and :meth:`save` writes back what is new, merged with whatever other
    processes wrote meanwhile (temporary file + ``os.replace``: a reader never sees half a file; two writers
    racing can lose one's new vectors, which are then embedded again, never a broken file). A file that is
    corrupt or was written for another embedder is ignored with a logged warning and rebuilt. Thread-safe.
    """

    def __init__(self, embedder: Embedder, path: Path | None = None, *, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.embedder = embedder
        self.path = path
        self.max_entries = max_entries
        self.stats = CacheStats()
        self._vectors: dict[str, FloatArray] = {}  # sha256 hex digest -> read-only unit vector
        self._stamps: dict[str, int] = {}  # digest -> when a process last used it (unix seconds), from the file
        self._used: set[str] = set()  # digests embed() returned since creation
        self._new: set[str] = set()  # digests embedded (not loaded) since the last save
        self._loaded_signature: tuple[int, int] | None = None
        self._lock = threading.Lock()
        if path is not None and path.exists():
            loaded = self._read(path)
            if loaded is not None:
                self._vectors, self._stamps, self._loaded_signature = loaded

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
                self._new.update(missing)
                self.stats.misses += len(missing)
            self.stats.hits += hits
            self._used.update(digests.values())
            return {key: self._vectors[digest] for key, digest in digests.items()}

    def embed_queries(self, texts: Sequence[str]) -> list[FloatArray]:
        """Query vectors of fixed texts (``embed_query``; some models encode queries differently), cached and
        persisted like documents under a key of their own. For texts every process asks, e.g. calibration probes;
        a user's queries are not worth keeping."""
        with self._lock:
            digests = [hashlib.sha256(b"query\x00" + text.encode("utf-8")).hexdigest() for text in texts]
            missing = [(d, t) for d, t in zip(digests, texts, strict=True) if d not in self._vectors]
        for digest, text in missing:
            vector = np.array(self.embedder.embed_query(text), dtype=np.float32)
            vector.setflags(write=False)
            with self._lock:
                if digest not in self._vectors:
                    self._vectors[digest] = vector
                    self._new.add(digest)
                    self.stats.misses += 1
        with self._lock:
            self.stats.hits += len(texts) - len(missing)
            self._used.update(digests)
            return [self._vectors[d] for d in digests]

    @property
    def dirty(self) -> bool:
        """Whether :meth:`save` has something to write: new vectors, or use stamps gone stale."""
        with self._lock:
            return self._dirty(int(time.time()))

    def _dirty(self, now: int) -> bool:
        if self._new:
            return True
        return any(now - self._stamps.get(d, 0) > _STAMP_REFRESH_SECONDS for d in self._used)

    def save(self) -> bool:
        """Write new vectors to ``path``, merged with the file's current content; return whether it wrote.

        Nothing is written without a path, or when every vector used was loaded from the file with a fresh
        stamp (a process that only reads costs no write). Beyond ``max_entries`` vectors, those used longest
        ago go first (never one used since this cache was created).
        """
        if self.path is None:
            return False
        now = int(time.time())
        with self._lock:
            if not self._dirty(now):
                return False
            vectors = dict(self._vectors)
            stamps = dict(self._stamps)
            used = set(self._used)
            signature = self._loaded_signature
        if self.path.exists() and _signature(self.path) != signature:
            current = self._read(self.path, quiet=True)  # what other processes wrote since we loaded
            if current is not None:
                for digest, vector in current[0].items():
                    vectors.setdefault(digest, vector)
                    stamps[digest] = max(stamps.get(digest, 0), current[1].get(digest, 0))
        for digest in used:
            stamps[digest] = now
        digests = sorted(vectors, key=lambda d: (d not in used, -stamps.get(d, 0), d))[: self.max_entries]
        digests.sort()
        matrix = np.stack([vectors[d] for d in digests]) if digests else np.zeros((0, 0), dtype=np.float32)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as tmp:
                np.savez(
                    tmp,
                    format=np.array(_FORMAT),
                    embedder=np.array(self.embedder.name),
                    digests=np.array(digests, dtype="<U64"),
                    stamps=np.array([stamps.get(d, 0) for d in digests], dtype=np.int64),
                    vectors=matrix.astype(np.float32, copy=False),
                )
                tmp.flush()
                os.fsync(tmp.fileno())
            os.chmod(tmp_name, 0o644)  # mkstemp makes it 0600
            os.replace(tmp_name, self.path)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
        with self._lock:
            self._new.clear()
            self._stamps.update({d: stamps[d] for d in digests})
            self._loaded_signature = _signature(self.path)
        return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._vectors)

    def _read(
        self, path: Path, *, quiet: bool = False
    ) -> tuple[dict[str, FloatArray], dict[str, int], tuple[int, int] | None] | None:
        """The vectors, use stamps and file signature of ``path``, or ``None`` (logged) when it is unusable."""
        try:
            signature = _signature(path)
            # Open the file ourselves: np.load leaks its handle when the zip is truncated; and only a regular file
            # (a FIFO named like the cache is refused, without blocking).
            with open_regular(path, what="embedding cache") as handle, np.load(handle, allow_pickle=False) as data:
                file_format = str(data["format"])
                if file_format != _FORMAT and file_format not in _OLD_FORMATS:
                    raise ValueError(f"unknown format {file_format!r}")
                name = str(data["embedder"])
                digests = data["digests"]
                matrix = data["vectors"]
                stamps = data["stamps"] if "stamps" in data.files else np.zeros(digests.shape, dtype=np.int64)
            if (
                digests.ndim != 1
                or matrix.ndim != 2
                or matrix.dtype != np.float32
                or matrix.shape[0] != digests.shape[0]
                or stamps.shape != digests.shape
            ):
                raise ValueError("digests and vectors do not match")
        except (OSError, InputFileError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            if not quiet:
                log.warning("ignoring embedding cache %s (%s); it will be rebuilt", path, exc)
            return None
        if name != self.embedder.name:
            if not quiet:
                log.warning(
                    "embedding cache %s was built with %r, not %r; it will be rebuilt", path, name, self.embedder.name
                )
            return None
        matrix.setflags(write=False)
        vectors = {str(digest): matrix[i] for i, digest in enumerate(digests)}
        return vectors, dict(zip(vectors, stamps.tolist(), strict=True)), signature


def _signature(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size
