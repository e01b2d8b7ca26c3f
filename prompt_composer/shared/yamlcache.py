"""YAML files parsed once: the parsed data of a folder's YAML files, kept between processes in the user cache.

Parsing is nearly all the time a cold command spends on a large docs folder; the files seldom change between two
runs. :class:`YamlCache` keeps, per folder, one JSON file in ``<cache dir>/registry/`` (see
:mod:`.cache_dir`) holding each file's parsed data under the file's identity: its size, modification and change
times (ns), inode and device, and the SHA-256 of its bytes. A file whose identity is unchanged is not read; any
change (an edit, a rename over it, a copy, a ``touch``) makes its identity differ and that file alone is parsed
again. File times are only as fine as the file system keeps them (2 s on FAT, a clock tick elsewhere): an entry
recorded within :data:`RACY_NS` of the file's last change could miss an edit made in the same tick, so such an
entry is checked against the file's hash each time it is used, until the file is old enough to trust its times.

A file whose data validated as a model keeps, in place of its data, what validation gave
(:meth:`YamlCache.keep`): a record (:mod:`.model_records`) bound to the model's class and
:func:`~.model_records.definition` (a hash of the package's, pydantic's and pydantic-core's versions and the source
of the modules that define the model). While the file's identity and the definition are unchanged,
:meth:`YamlCache.validated` rebuilds that model without validating: validation is a function of the bytes and the
definition, both the same. Once the definition changes, the file is parsed and validated again. Everything that
spans files (a mode's tools, duplicate names, a tool doc's name against its file name) is checked on every load all
the same. Data an entry holds (a file that did not validate, or that no model reads) is checked by the caller
exactly as a fresh parse is.

Why a record can be trusted: the cache is the user's own derived data, in the user's own cache folder, and a
cache file is read only when it and its folder belong to this user and no one else can write them
(:func:`~.cache_files.read_cache`); a file another user could have written is ignored whole. Within that, a record
is used only for a file whose identity (size, times in ns, inode, device; or, when recent, its SHA-256) is the one
recorded, under the same definition. Where the folder comes from: ``$PROMPT_COMPOSER_CACHE``, else the XDG cache
folder; an environment a checkout can set (a ``.env`` file) could point it into the checkout, whose files are the
user's, but entries written before the checkout existed cannot name the identity its files get when checked out
(inode and change time), so they are never used. A record that does not fit its model is ignored and the file
validated.

It is never trusted to be well formed either: a file that is not JSON, is truncated, names another package
version, schema or folder, or holds an entry of the wrong shape is ignored whole, with a log line, and rebuilt.

It is JSON (see :mod:`.cache_files` for why): JSON holds exactly what a tool doc is made of (mappings with
string keys, lists, strings, numbers, booleans, null); a file whose data holds anything else (a YAML timestamp, a
set) is simply not cached. ``json.loads`` of a 331-tool folder's cache takes ~10 ms. It is written atomically,
so a reader sees the old cache or the new one, and two processes saving at once leave one complete cache. At
most :data:`MAX_FOLDERS` folders are kept (the least recently written go first).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from ..errors import InputFileError, Problem
from .cache_files import folder_cache_file, prune, read_cache, write_cache
from .files import read_bytes
from .logs import get_logger
from .model_records import Unrecordable, definition, rebuild, record
from .sources import source_digest
from .version import VERSION
from .yamlfile import MAX_YAML_BYTES, LineMap, parse_yaml, read_yaml, yaml_text

logger = get_logger(__name__)

FORMAT = "prompt-composer parsed YAML"
SCHEMA = 2  # raised whenever what an entry holds, or how data is read, changes
# An entry recorded less than this after its file last changed is checked by hash (see the module docstring):
# the coarsest file times in common use (FAT) are 2 s apart.
RACY_NS = 2_000_000_000
MAX_FOLDERS = 64
WHAT = "parsed-YAML cache"
_IDENTITY = ("size", "mtime_ns", "ctime_ns", "ino", "dev")
_ENTRY_KEYS = frozenset({*_IDENTITY, "sha256", "checked_ns"})  # and "data" or "model"
_MODEL_KEYS = frozenset({"class", "definition", "record"})
_SHA256 = re.compile(r"[0-9a-f]{64}")
M = TypeVar("M", bound=BaseModel)


def cache_file(root: Path, cache_dir: Path | None = None) -> Path:
    """The cache file of the folder ``root``: ``<cache dir>/registry/<folder name>-<hash of its path>.json``."""
    return folder_cache_file("registry", root, cache_dir)


def _identity(info: os.stat_result) -> dict[str, int]:
    return {
        "size": info.st_size,
        "mtime_ns": info.st_mtime_ns,
        "ctime_ns": info.st_ctime_ns,
        "ino": info.st_ino,
        "dev": info.st_dev,
    }


def _plain(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is JSON's own kind of data, so that it reads back from JSON equal to itself."""
    kind = type(value)
    if kind in (str, int, bool) or value is None:
        return True
    if kind is float:
        return True  # NaN and the infinities included: Python's json writes and reads them
    if depth > 200:
        return False
    if kind is list:
        return all(_plain(item, depth + 1) for item in value)
    if kind is dict:
        return all(type(key) is str and _plain(item, depth + 1) for key, item in value.items())
    return False


def _class_name(model: type[BaseModel]) -> str:
    return f"{model.__module__}.{model.__qualname__}"


def _is_str(value: Any) -> bool:
    return type(value) is str


def _is_int(value: Any) -> bool:
    return type(value) is int and value >= 0


def _entries(document: Any, root: str) -> dict[str, dict[str, Any]] | str:
    """The entries of a cache document, or why the document is not one this version can use."""
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        return "not a parsed-YAML cache"
    if document.get("schema") != SCHEMA or document.get("version") != VERSION:
        return f"written by another version (package {document.get('version')!r}, schema {document.get('schema')!r})"
    if document.get("root") != root:
        return f"the cache of another folder ({document.get('root')!r})"
    files = document.get("files")
    if not isinstance(files, dict):
        return "no files"
    for name, entry in files.items():
        if (
            not isinstance(entry, dict)
            or not entry.keys() >= _ENTRY_KEYS
            or entry.keys() - _ENTRY_KEYS not in ({"data"}, {"model"})
        ):
            return f"a malformed entry for {name!r}"
        model = entry.get("model", {"class": "", "definition": "", "record": {}})
        if (
            not isinstance(model, dict)
            or model.keys() != _MODEL_KEYS
            or not all(map(_is_str, (model["class"], model["definition"])))
        ):
            return f"a malformed entry for {name!r}"
        if not all(_is_int(entry[key]) for key in (*_IDENTITY, "checked_ns")):
            return f"a malformed entry for {name!r}"
        if not isinstance(entry["sha256"], str) or not _SHA256.fullmatch(entry["sha256"]):
            return f"a malformed entry for {name!r}"
    return files


class YamlCache:
    """The parsed YAML files of the folder ``root``, read from and saved to its cache file (see the module
    docstring). :meth:`read` is :func:`~.yamlfile.read_yaml` through the cache, :meth:`validated` and :meth:`keep`
    the validated models (see :func:`~.yamlfile.load_model`); :meth:`save` writes what changed.

    A file read from the cache comes without its line map (``{}``): lines matter only to place a problem, and a
    caller that finds one reads the files again with :meth:`parse`, which always parses (and caches what is
    good). One instance serves one load; it is not shared between threads."""

    def __init__(self, root: Path, *, cache_dir: Path | None = None) -> None:
        self.root = root.resolve()
        self.path = cache_file(root, cache_dir)
        self._prefix = os.path.join(os.path.abspath(root), "")  # how the loader names the folder's files
        self._existed = False
        self._dirty = False
        self._seen: dict[str, dict[str, Any]] = {}
        self._checked: dict[str, dict[str, Any]] = {}  # entries found unchanged in this load
        self._unkept = False  # whether a file was read in this load that no entry describes
        self._derived: dict[str, dict[str, str]] = {}
        self._derived_now: set[str] = set()  # the kinds keep_derived kept in this load
        self._entries = self._load()
        self.hits = 0
        self.parsed = 0

    def _load(self) -> dict[str, dict[str, Any]]:
        document, self._existed = read_cache(self.path, WHAT, logger)
        if document is None:
            return {}
        entries = _entries(document, str(self.root))
        if isinstance(entries, str):
            import logging

            level = logging.INFO if entries.startswith("written by another version") else logging.WARNING
            logger.log(level, "ignoring the %s %s: %s; it will be rebuilt", WHAT, self.path, entries)
            return {}
        derived = document.get("derived")
        if isinstance(derived, dict):
            self._derived = {
                kind: kept
                for kind, kept in derived.items()
                if isinstance(kept, dict) and kept.keys() == {"inputs", "value"} and all(map(_is_str, kept.values()))
            }
        return entries

    def _name(self, path: Path) -> str | None:
        """The key of ``path`` in this folder's cache (its path under the folder), or None for a file elsewhere."""
        name = os.path.abspath(path)
        if not name.startswith(self._prefix):
            return None
        return name[len(self._prefix) :].replace(os.sep, "/")

    def _fresh(self, path: Path) -> tuple[str, dict[str, Any]] | None:
        """``path``'s key and entry when the file is unchanged since the entry was recorded, else None."""
        name = self._name(path)
        entry = self._entries.get(name) if name is not None else None
        if entry is None or name is None:
            return None
        if self._checked.get(name) is entry:
            return name, entry
        try:
            info = os.stat(path)
        except OSError:
            return None
        if not stat.S_ISREG(info.st_mode) or not self._unchanged(path, entry, info):
            return None
        self._checked[name] = entry
        return name, entry

    def read(self, path: Path) -> tuple[Any, LineMap, list[Problem]]:
        """``path``'s data from the cache when the file is unchanged (with an empty line map), else parsed."""
        fresh = self._fresh(path)
        if fresh is None or "data" not in fresh[1]:  # an entry that keeps a model has no data: parse again
            return self.parse(path)
        name, entry = fresh
        self._seen[name] = entry
        self.hits += 1
        return entry["data"], {}, []

    def validated(self, path: Path, model: type[M]) -> M | None:
        """The ``model`` that validating ``path``'s data gave when :meth:`keep` recorded it, rebuilt without
        validation, when the file and the model's definition are unchanged since; else None (read and validate)."""
        fresh = self._fresh(path)
        if fresh is None:
            return None
        name, entry = fresh
        kept = entry.get("model")
        if kept is None or kept["class"] != _class_name(model) or kept["definition"] != definition(model):
            return None
        try:
            obj = rebuild(kept["record"], model)
        except Unrecordable as exc:
            logger.info("validating %s again: its record in the %s %s does not fit: %s", path, WHAT, self.path, exc)
            return None
        self._seen[name] = entry
        self.hits += 1
        return obj

    def keep(self, path: Path, obj: BaseModel) -> None:
        """Record ``obj``, what validating the data just read from ``path`` (with :meth:`read`) gave, in that
        file's entry, for :meth:`validated` to rebuild in a later load."""
        name = self._name(path)
        entry = self._seen.get(name) if name is not None else None
        kind = type(obj)
        signature = definition(kind)
        if entry is None or name is None or signature is None:
            return
        kept = entry.get("model")
        if kept is not None and kept["class"] == _class_name(kind) and kept["definition"] == signature:
            return
        written = record(obj)
        if written is not None:  # the model in place of the data: what a later load needs of the same bytes
            kept = {"class": _class_name(kind), "definition": signature, "record": written}
            self._seen[name] = {**{k: v for k, v in entry.items() if k != "data"}, "model": kept}
            self._dirty = True

    def _unchanged(self, path: Path, entry: dict[str, Any], info: os.stat_result) -> bool:
        if any(entry[key] != value for key, value in _identity(info).items()):
            return False
        last_change = max(info.st_mtime_ns, info.st_ctime_ns)
        if last_change < entry["checked_ns"] - RACY_NS:
            return True
        try:  # recorded too soon after the file changed to trust its times: compare the bytes
            data = read_bytes(path, what="YAML file", max_bytes=MAX_YAML_BYTES)
        except InputFileError:
            return False
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            return False
        now = time.time_ns()
        if last_change < now - RACY_NS:  # old enough now: its times are trusted from here on
            entry["checked_ns"] = now
            self._dirty = True
        return True

    def parse(self, path: Path) -> tuple[Any, LineMap, list[Problem]]:
        """:func:`~.yamlfile.read_yaml`, remembering the data of a file that parses without a problem."""
        self.parsed += 1
        name = self._name(path)
        if name is None:
            self._unkept = True
            return read_yaml(path)
        checked = time.time_ns()  # before the stat: an edit after this instant is within RACY_NS of it
        try:
            info = os.stat(path)
        except OSError:
            info = None
        text = yaml_text(path)
        self._seen.pop(name, None)
        if isinstance(text, Problem):
            self._unkept = True
            return None, {}, [text]
        data, lines, problems = parse_yaml(text, path)
        if info is not None and stat.S_ISREG(info.st_mode) and not problems and data is not None:
            # Whether the data is JSON's own (else the entry is not written) is asked when saving: most files'
            # data is replaced by their validated model before then (see keep).
            digest = hashlib.sha256(text.encode()).hexdigest()
            self._seen[name] = {**_identity(info), "sha256": digest, "checked_ns": checked, "data": data}
        else:
            self._unkept = True
        return data, lines, problems

    def _inputs(self, kind: str, code: Iterable[str]) -> str | None:
        """A digest of everything a value of ``kind`` derived from this load's files depends on: ``code`` (the
        modules that derive it, see :func:`~.sources.source_digest`), and each file read by its name, its
        bytes (SHA-256) and the model it validated as (class and definition). None when a file read holds no
        model (its data is validated by the caller, whose definition this cache does not know), or that no entry
        describes."""
        source = source_digest(code)
        if source is None or self._unkept:
            return None
        digest = hashlib.sha256(f"{kind}\0{source}".encode())
        for name, entry in sorted(self._seen.items()):
            model = entry.get("model")
            if model is None or model["definition"] is None:
                return None
            digest.update(f"\0{name}\0{entry['sha256']}\0{model['class']}\0{model['definition']}".encode())
        return digest.hexdigest()

    def derived(self, kind: str, code: Iterable[str]) -> str | None:
        """The value of ``kind`` that :meth:`keep_derived` kept when the very files read in this load (the same
        names, bytes and model definitions) were read, and ``code`` was the same; else None. Call it once every
        file is read."""
        kept = self._derived.get(kind)
        # Only when every file came from an entry checked against the file's identity: the inputs' digest is of
        # names, bytes and versions anyone can know, so a cache planted in a checkout could name it; an identity
        # (inode, change time) it cannot, so a cache file that vouches for every file was written here, by this user.
        if kept is None or self.parsed or kept["inputs"] != self._inputs(kind, list(code)):
            return None
        return kept["value"]

    def keep_derived(self, kind: str, code: Iterable[str], value: str) -> bool:
        """Keep ``value``, derived by ``code`` from the files read in this load and nothing else, for
        :meth:`derived` to give back while they are unchanged; whether it is kept (not when a file read holds no
        model, or no entry describes it)."""
        inputs = self._inputs(kind, list(code))
        if inputs is None:  # nothing vouches for this load's files: no value read back may stand for them later
            self._dirty = self._derived.pop(kind, None) is not None or self._dirty
            return False
        kept = {"inputs": inputs, "value": value}
        self._derived_now.add(kind)
        if self._derived.get(kind) != kept:
            self._derived[kind] = kept
            self._dirty = True
        return True

    def save(self) -> None:
        """Write the entries of the files read since this cache was opened (a file no longer read drops out),
        atomically, if anything changed; a cache that cannot be written is logged and left alone."""
        files = {
            name: entry for name, entry in sorted(self._seen.items()) if "data" not in entry or _plain(entry["data"])
        }
        unchanged = files.keys() == self._entries.keys() and all(e is self._entries[n] for n, e in files.items())
        if unchanged and not self._dirty:  # every entry read as it was written (a new one is a new object)
            return
        document = {
            "format": FORMAT,
            "schema": SCHEMA,
            "version": VERSION,
            "root": str(self.root),
            "files": files,
            # After a load that parsed a file, only what this load derived: a value read back from the document then
            # was vouched for by nothing (see derived), so it goes, however well its inputs match.
            "derived": self._derived if not self.parsed else {k: self._derived[k] for k in self._derived_now},
        }
        if not write_cache(self.path, document, WHAT, logger):
            return
        self._entries, self._dirty = files, False
        if not self._existed:
            self._existed = True
            prune(self.path.parent, keep=self.path, most=MAX_FOLDERS)
