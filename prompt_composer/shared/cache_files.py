"""Files of the user cache (:mod:`.cache_dir`) that hold derived data as JSON: named per folder, read without
trusting them, written atomically, and bounded in number. :mod:`.yamlcache` keeps parsed docs this way, and
:mod:`prompt_composer.core.counts` token counts.

Why JSON: the cache lives in a folder other programs can write, so it holds data only, never anything that runs
or builds objects when read (pickle does; ``marshal`` can hold code objects and is documented as unsafe for data
one did not write). ``json.loads`` of anything at all returns plain values or raises ``ValueError``.

Whose it is: a cache file is read only when it, and the folder holding it, belong to this process's user and no
one else can write either (as ssh treats ``~/.ssh``): then no other user can have written or replaced it, since
replacing a file takes writing its folder. The folders are created private (0700) and the files 0600, so a cache
this package wrote always passes; one in a folder others can write (a shared or misconfigured cache location) is
ignored with a log line, and the command runs as without a cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputFileError
from .cache_dir import default_cache_dir
from .files import read_bytes

if TYPE_CHECKING:
    import logging

MAX_CACHE_BYTES = 256 * 1024 * 1024


def folder_cache_file(kind: str, root: Path, cache_dir: Path | None = None) -> Path:
    """The cache file of kind ``kind`` for the folder ``root``: ``<cache dir>/<kind>/<folder name>-<hash of the
    folder's resolved path>.json`` (the same folder by any path shares it)."""
    resolved = str(root.resolve())
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(resolved).name).strip("-.")[:40] or "root"
    digest = hashlib.sha256(resolved.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return (cache_dir or default_cache_dir()) / kind / f"{slug}-{digest}.json"


def _foreign(info: os.stat_result) -> str | None:
    """Why a file or folder whose ``stat`` is ``info`` may hold what another user wrote, or None."""
    if info.st_uid != os.geteuid():
        return f"owned by user {info.st_uid}, not this user ({os.geteuid()})"
    if info.st_mode & 0o022:
        return f"writable by others (mode {stat.S_IMODE(info.st_mode):o})"
    return None


def read_cache(path: Path, what: str, logger: logging.Logger) -> tuple[Any, bool]:
    """The JSON value of the cache file ``path`` (``None`` when there is none, or it cannot be read, is not
    JSON, or could hold what another user wrote (see the module docstring): logged as a warning, naming ``what``)
    and whether a file was there."""
    try:
        folder = os.stat(path.parent)
        raw = read_bytes(path, what=what, max_bytes=MAX_CACHE_BYTES)
        info = os.stat(path)  # the same file read: no one else can replace it in a folder only we can write
    except (InputFileError, OSError) as exc:
        there = path.exists() or path.is_symlink()
        if there:
            logger.warning("ignoring the %s %s: %s; it will be rebuilt", what, path, exc)
        return None, there
    foreign = _foreign(folder)
    why = f"its folder is {foreign}" if foreign else _foreign(info)
    if why:
        logger.warning("ignoring the %s %s: %s; nothing of it is used (chmod go-w, or remove it)", what, path, why)
        return None, True
    try:
        return json.loads(raw), True
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON (a truncated write), nested too deeply
        logger.warning("ignoring the %s %s: not JSON (%s); it will be rebuilt", what, path, exc)
        return None, True


def write_cache(path: Path, value: Any, what: str, logger: logging.Logger) -> bool:
    """Write ``value`` as JSON to ``path`` atomically (a temporary file in the same folder, renamed over it; the
    folder created private), so a reader sees the old file or the new one. A file that cannot be written is
    logged (info: a read-only cache is no error) and ``False`` returned."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (ValueError, TypeError, RecursionError) as exc:  # not expected: callers cache plain data only
        logger.warning("not saving the %s %s: %s", what, path, exc)
        return False
    temporary: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
        temporary = None
    except OSError as exc:
        logger.info("cannot save the %s %s: %s", what, path, exc)
        return False
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
    return True


def prune(folder: Path, *, keep: Path, most: int) -> None:
    """Delete the least recently written ``*.json`` files of ``folder`` past ``most`` (never ``keep``)."""
    try:
        files = [(p.stat().st_mtime_ns, p) for p in folder.glob("*.json") if p != keep]
    except OSError:  # one deleted while listing (another process pruning): the next save prunes
        return
    for _, path in sorted(files, reverse=True)[max(most - 1, 0) :]:
        with contextlib.suppress(OSError):
            path.unlink()
