"""The workspace tools: ``read_file``, ``list_files``, ``glob`` and ``search_files`` over one folder, read-only,
bounded, and confined to it.

Every path the model passes is relative to the workspace; an absolute path, or one that resolves outside the
workspace (through ``..`` or a symlink), raises :class:`~prompt_composer.errors.ExecutorError`, which the tool
loop turns into an error tool_result the model can read. Paths are opened as :mod:`~prompt_composer.safety.paths`
describes; walks list symlinks that stay inside but never descend into a symlinked directory, and skip special
files without opening them. Nothing here writes.

Bounds. Each call has a time budget (``timeout_s``, 10 s by default). A walk over a huge tree stops when it runs
out and the result says it was cut, with a count. A regex that backtracks past the budget (``(a+)+$`` on a long
line) is an ExecutorError naming the tool and the limit (see :mod:`~prompt_composer.safety.patterns` for the
patterns refused before they run). Reads stop at ``max_bytes``, listings at ``max_entries``, searches at
``max_matches``, and every output at ``max_chars``.
"""

from __future__ import annotations

import fnmatch
import math
import os
import time
from collections.abc import Callable, Generator, Mapping
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, TypedDict

from ..errors import ExecutorError
from ..shared.text import plural
from .paths import DIR_FLAGS, POSIX, Opened, Refused, open_path
from .patterns import Glob, compile_regex

_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", ".mypy_cache"})
_MAX_DEPTH = 100  # directory levels a walk descends (it holds one descriptor per level)
_MAX_DIR_ENTRIES = 100_000  # entries read from one directory
_MIN_MATCH_TIME = 0.01  # seconds: a search with less time left stops instead of starting a match


class Limits(TypedDict, total=False):
    """The bounds of :class:`Workspace` (and ``workspace_executors``), all optional."""

    max_bytes: int
    max_entries: int
    max_matches: int
    max_chars: int
    timeout_s: float


def _string(tool_input: Mapping[str, Any], key: str, *, default: str | None = None) -> str:
    value = tool_input.get(key, default)
    if not isinstance(value, str) or (default is None and not value.strip()):
        raise ExecutorError(f"parameter {key!r} is required and must be a non-empty string")
    return value


def _int(tool_input: Mapping[str, Any], key: str) -> int | None:
    value = tool_input.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ExecutorError(f"parameter {key!r} must be an integer ≥ 1, got {value!r}")
    return value


@dataclass(frozen=True)
class _Entry:
    """A directory entry found by a walk: a regular file or directory (or a symlink to one, inside)."""

    parent: Opened  # open while the entry is being handled
    name: str
    parts: tuple[str, ...]  # its path below the walk's starting directory
    is_dir: bool

    @property
    def rel(self) -> str:
        return self.parent.rel(self.name)


class _Call:
    """One tool call: the workspace root held open for it, its deadline, and what its walk had to leave out."""

    def __init__(self, workspace: Workspace, tool: str) -> None:
        self.tool = tool
        self.limit = workspace.timeout_s
        self.deadline = time.monotonic() + workspace.timeout_s
        self.timed_out = False
        self.looked_at = 0  # directory entries read
        self.partial_dirs = 0  # directories not looked at in full (too many entries, too deep)
        try:
            self.root = os.open(workspace.root, DIR_FLAGS)
        except OSError as exc:
            raise ExecutorError(f"the workspace cannot be opened: {exc.strerror or type(exc).__name__}") from None

    def __enter__(self) -> _Call:
        return self

    def __exit__(self, *exc_info: object) -> None:
        os.close(self.root)

    def remaining(self) -> float:
        """Seconds left; at zero the call is marked as timed out."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            self.timed_out = True
        return left

    def expired(self) -> bool:
        return self.timed_out or self.remaining() <= 0

    def cut_note(self, did: str) -> str:
        """The note of a walk stopped by the deadline; ``did`` says how far it got."""
        return f"[{self.tool} stopped at its time limit of {self.limit:g} s after {did}; the result is incomplete]"

    def notes(self, did: str) -> list[str]:
        notes = [self.cut_note(did)] if self.timed_out else []
        if self.partial_dirs:
            notes.append(
                f"[{plural(self.partial_dirs, 'directory', 'directories')} not looked at in full: more than "
                f"{_MAX_DIR_ENTRIES:,} entries, or deeper than {_MAX_DEPTH} levels]"
            )
        return notes


class Workspace:
    """A folder the executors may read, and nothing outside it.

    ``max_bytes`` bounds a file read, ``max_entries`` a listing or glob, ``max_matches`` a search, ``max_chars``
    any output, and ``timeout_s`` the time of any one call.
    """

    def __init__(
        self,
        root: str | Path,
        *,
        max_bytes: int = 256_000,
        max_entries: int = 1000,
        max_matches: int = 200,
        max_chars: int = 400_000,
        timeout_s: float = 10.0,
    ) -> None:
        if not POSIX:
            raise ExecutorError("the workspace executors need a POSIX system (openat with O_NOFOLLOW)")
        if not (isinstance(timeout_s, int | float) and timeout_s > 0 and math.isfinite(timeout_s)):
            raise ValueError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            missing = "" if self.root.exists() else " (it does not exist)"
            raise ExecutorError(f"workspace {root} is not a directory{missing}")
        # Absolute symlink targets are taken as paths below the root when they start with its real path or the
        # path it was given by (which may go through symlinks); they are still opened from the root.
        self._prefixes = {self.root.parts, Path(os.path.abspath(root)).parts}
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self.max_matches = max_matches
        self.max_chars = max_chars
        self.timeout_s = float(timeout_s)

    # -- tools ---------------------------------------------------------------------------------------

    def read_file(self, tool_input: Mapping[str, Any]) -> str:
        """``path``, optional ``start_line``/``end_line`` (1-based, inclusive): numbered lines ``N | text``."""
        given = _string(tool_input, "path")
        self._relative(given)
        start, end = _int(tool_input, "start_line"), _int(tool_input, "end_line")
        if start is not None and end is not None and end < start:
            raise ExecutorError(f"end_line {end} is before start_line {start}")
        with _Call(self, "read_file") as call:
            opened = self._open_given(call, given, "file", "read")
            try:
                if opened.is_dir:
                    raise ExecutorError(f"{given} is a directory, not a file")
                data = self._read(opened.fd)
            except OSError as exc:  # e.g. EIO, or EAGAIN from a /proc file that would block
                raise ExecutorError(f"cannot read {given}: {exc.strerror or type(exc).__name__}") from None
            finally:
                opened.close()
        if b"\0" in data[:8192]:
            raise ExecutorError(f"{given} is a binary file; it cannot be read as text")
        truncated = len(data) > self.max_bytes
        lines = data[: self.max_bytes].decode("utf-8", "replace").splitlines()
        first = start or 1
        last = min(end or len(lines), len(lines))
        if lines and first > len(lines):
            raise ExecutorError(f"start_line {first} is past the end of {given} ({plural(len(lines), 'line')})")
        width = len(str(last))
        out = [f"{n:>{width}} | {lines[n - 1]}" for n in range(first, last + 1)]
        notes = [f"[truncated: the file is larger than {plural(self.max_bytes, 'byte')}]"] if truncated else []
        return self._join(out, notes, resume=first) if out else "(empty file)"

    def list_files(self, tool_input: Mapping[str, Any]) -> str:
        """``path``, optional ``recursive``: one entry a line, directories ending in ``/``, sorted."""
        given = _string(tool_input, "path", default=".")
        recursive = tool_input.get("recursive", False) is True
        entries: list[str] = []
        with _Call(self, "list_files") as call:
            top = self._open_dir(call, given, "list")
            try:
                with closing(self._walk(call, top, recursive=recursive)) as walk:
                    for entry in walk:
                        entries.append(entry.rel + "/" if entry.is_dir else entry.rel)
                        if len(entries) > self.max_entries:
                            break
            finally:
                top.close()
            return self._listing(call, entries, noun=("entry", "entries"), empty="(empty directory)")

    def glob(self, tool_input: Mapping[str, Any]) -> str:
        """``pattern`` (e.g. ``**/*.py``), optional ``path``: matching files, relative to the workspace."""
        pattern = _string(tool_input, "pattern")
        if PurePosixPath(pattern).is_absolute() or ".." in PurePosixPath(pattern).parts:
            raise ExecutorError(f"pattern {pattern!r} must be relative and must not contain '..'")
        matcher = Glob(pattern)
        given = _string(tool_input, "path", default=".")
        matches: list[str] = []
        with _Call(self, "glob") as call:
            top = self._open_dir(call, given, "list")
            try:
                with closing(self._walk(call, top, recursive=True, enter=matcher.leads_on)) as walk:
                    for entry in walk:
                        if matcher.matches(entry.parts, entry.is_dir):
                            matches.append(entry.rel + "/" if entry.is_dir else entry.rel)
                            if len(matches) > self.max_entries:
                                break
            finally:
                top.close()
            return self._listing(call, matches, noun=("match", "matches"), empty=f"no files match {pattern!r}")

    def search_files(self, tool_input: Mapping[str, Any]) -> str:
        """``path``, ``regex``, optional ``file_pattern``: ``file:line: text`` for each matching line."""
        given = _string(tool_input, "path", default=".")
        self._relative(given)
        source = _string(tool_input, "regex")
        file_pattern = tool_input.get("file_pattern") or "*"
        if not isinstance(file_pattern, str):
            raise ExecutorError("parameter 'file_pattern' must be a string")
        pattern = compile_regex(source)
        out: list[str] = []
        searched = 0
        with _Call(self, "search_files") as call:
            top = self._open_given(call, given, "file or directory", "search")
            try:
                with closing(self._files(call, top, file_pattern)) as files:
                    for rel, opened in files:
                        try:
                            data = self._read(opened.fd)[: self.max_bytes]
                        except OSError:
                            continue
                        if b"\0" in data[:8192]:
                            continue
                        searched += 1
                        self._search(call, pattern, source, rel, data, out)
                        if len(out) > self.max_matches or call.timed_out:
                            break
            finally:
                top.close()
            if len(out) > self.max_matches:
                notes = [f"[stopped after {plural(self.max_matches, 'match', 'matches')}]"]
            else:
                notes = call.notes(f"searching {plural(searched, 'file')}")
            if not out:
                nothing = f"no matches for {source!r}"
                return "\n".join([nothing + " in the files searched", *notes]) if notes else nothing
            return self._join(out[: self.max_matches], notes)

    # -- helpers -------------------------------------------------------------------------------------

    def _search(self, call: _Call, pattern: Any, source: str, rel: str, data: bytes, out: list[str]) -> None:
        """Append ``data``'s matching lines to ``out`` (stopping past max_matches, or when time is up)."""
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            left = call.remaining()
            if left < _MIN_MATCH_TIME:  # too little left to tell a slow regex from a late start: just stop
                call.timed_out = True
                return
            try:
                # concurrent: the GIL is released while matching, so other threads (the loop's) keep going
                found = pattern.search(line, timeout=left, concurrent=True)
            except TimeoutError:
                raise ExecutorError(
                    f"search_files stopped: the regex {source[:100]!r} ran past its time limit of {call.limit:g} s "
                    f"(on {rel} line {number}); nested repeats such as (a+)+ can take exponential time on a long "
                    "line, so simplify the pattern or search fewer files"
                ) from None
            if found:
                out.append(f"{rel}:{number}: {line.strip()[:300]}")
                if len(out) > self.max_matches:
                    return

    def _files(self, call: _Call, top: Opened, name_pattern: str) -> Generator[tuple[str, Opened], None, None]:
        """The regular files to search under ``top`` (or ``top`` itself) whose names match ``name_pattern``, each
        open while it is handled: ``(path relative to the workspace, opened)``. Special files are skipped."""
        if not top.is_dir:
            if fnmatch.fnmatch(top.names[-1], name_pattern):
                yield top.rel(), top
            return
        with closing(self._walk(call, top, recursive=True)) as walk:
            for entry in walk:
                if entry.is_dir or not fnmatch.fnmatch(entry.name, name_pattern):
                    continue
                try:
                    opened = self._open(call, entry.parent, entry.name)
                except Refused:  # changed since the walk saw it
                    continue
                try:
                    if not opened.is_dir:
                        yield entry.rel, opened
                finally:
                    opened.close()

    def _walk(
        self,
        call: _Call,
        top: Opened,
        *,
        recursive: bool,
        enter: Callable[[tuple[str, ...]], bool] | None = None,
        prefix: tuple[str, ...] = (),
    ) -> Generator[_Entry, None, None]:
        """Entries under ``top``, depth first in sorted path order. A recursive walk leaves out ``_SKIP_DIRS``
        and descends into real directories only (not symlinked ones, which could loop), where ``enter`` allows.
        It stops quietly when the call's time is up: the caller reads ``call.timed_out``."""
        for name, is_dir, linked in self._entries(call, top, skip=_SKIP_DIRS if recursive else frozenset()):
            parts = (*prefix, name)
            yield _Entry(top, name, parts, is_dir)
            if not (recursive and is_dir and not linked) or (enter is not None and not enter(parts)):
                continue
            if len(parts) >= _MAX_DEPTH:
                call.partial_dirs += 1
                continue
            if call.expired():
                return
            try:
                sub = self._open(call, top, name)
            except Refused:  # changed since it was listed, or unreadable: leave it out
                continue
            try:
                if sub.is_dir:
                    yield from self._walk(call, sub, recursive=True, enter=enter, prefix=parts)
            finally:
                sub.close()
            if call.timed_out:
                return

    def _entries(self, call: _Call, directory: Opened, *, skip: frozenset[str]) -> list[tuple[str, bool, bool]]:
        """``(name, is_dir, is_symlink)`` for the regular files and directories in ``directory``, and the symlinks
        to them that stay inside (found by opening them from here: broken, looping and leaving ones are left
        out), sorted by name. Directories named in ``skip`` are left out."""
        found: list[tuple[str, bool, bool]] = []
        try:
            with os.scandir(directory.fd) as scan:
                for entry in scan:
                    call.looked_at += 1
                    if call.expired():
                        break
                    if len(found) >= _MAX_DIR_ENTRIES:
                        call.partial_dirs += 1
                        break
                    try:
                        kind = self._kind(call, directory, entry)
                    except (OSError, Refused):  # gone meanwhile; a broken, looping or leaving link
                        continue
                    if kind is not None and not (kind[0] and entry.name in skip):
                        found.append((entry.name, *kind))
        except OSError:  # unreadable directory: what was read so far
            pass
        return sorted(found)

    def _kind(self, call: _Call, directory: Opened, entry: os.DirEntry[str]) -> tuple[bool, bool] | None:
        """``(is_dir, is_symlink)`` of a directory entry; None for a special file, which is never opened. A
        symlink is opened from ``directory`` to find out (raising Refused if it does not stay inside)."""
        if entry.is_symlink():
            target = self._open(call, directory, entry.name)
            target.close()
            return target.is_dir, True
        if entry.is_dir(follow_symlinks=False):
            return True, False
        return (False, False) if entry.is_file(follow_symlinks=False) else None

    def _open(self, call: _Call, start: Opened | None, path: str) -> Opened:
        """Open ``path`` relative to ``start`` (default: the root), confined to the root (see
        :func:`~prompt_composer.safety.paths.open_path`). Raises Refused."""
        return open_path(call.root, self._prefixes, start, path)

    @staticmethod
    def _relative(given: str) -> None:
        if PurePosixPath(given).is_absolute() or PureWindowsPath(given).is_absolute() or given.startswith("~"):
            raise ExecutorError(f"path {given!r} is absolute; give a path relative to the workspace")

    def _open_given(self, call: _Call, given: str, kind: str, verb: str) -> Opened:
        """Open the path the model gave; a refusal names it as given. ``kind`` is what the tool needs ("file",
        "directory", "file or directory"), ``verb`` what it does ("read", "list", "search")."""
        self._relative(given)
        try:
            return self._open(call, None, given)
        except Refused as refused:
            raise ExecutorError(refused.message(given, kind, verb)) from None

    def _open_dir(self, call: _Call, given: str, verb: str) -> Opened:
        top = self._open_given(call, given, "directory", verb)
        if not top.is_dir:
            top.close()
            raise ExecutorError(f"{given} is a file, not a directory")
        return top

    def _read(self, fd: int) -> bytes:
        """Up to ``max_bytes + 1`` bytes of an open regular file (one more than kept, to tell a cut file)."""
        chunks: list[bytes] = []
        size = 0
        while size <= self.max_bytes:
            chunk = os.read(fd, min(self.max_bytes + 1 - size, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)

    def _listing(self, call: _Call, items: list[str], *, noun: tuple[str, str], empty: str) -> str:
        if len(items) > self.max_entries:
            return self._join(items[: self.max_entries], [f"[stopped after {plural(self.max_entries, *noun)}]"])
        notes = call.notes(f"looking at {plural(call.looked_at, 'entry', 'entries')}")
        return self._join(items, notes) if items else "\n".join([empty, *notes])

    def _join(self, lines: list[str], notes: list[str], *, resume: int | None = None) -> str:
        """``lines`` then ``notes``, one a line, with as many lines as fit in ``max_chars`` (and a note saying
        where the cut is; ``resume``: the first line's number in a file, to say where to read on)."""
        size = 0
        for kept, line in enumerate(lines):
            size += len(line) + 1
            if size > self.max_chars:
                where = f"; read on with start_line {resume + kept}" if resume is not None else ""
                limit = plural(self.max_chars, "character")
                cut = f"[cut after {plural(kept, 'line')}: output is limited to {limit}{where}]"
                return "\n".join([*lines[:kept], cut, *notes])
        return "\n".join([*lines, *notes])
