"""Built-in read-only executors for the shipped read tools, confined to a workspace folder.

``workspace_executors(root)`` gives ``read_file``, ``list_files``, ``glob`` and ``search_files`` as plain
callables ``(tool_input) -> str``, ready for the tool loop's ``executors`` mapping. Every path the model
passes is relative to the workspace; an absolute path, or one that resolves outside the workspace (through
``..`` or a symlink), raises :class:`ExecutorError`, which the tool loop turns into an error tool_result the
model can read. Nothing here writes, and nothing here imports anthropic.

Bounds. Each call has a time budget (``timeout_s``, 10 s by default). A walk over a huge tree stops when it runs
out and the result says it was cut, with a count. Regexes run on the ``regex`` package, whose matching takes a
timeout: a pattern that backtracks past the budget (``(a+)+$`` on a long line) is an ExecutorError naming the
tool and the limit; patterns whose compiling alone would be slow (huge or nested counted repeats) are refused.
Reads stop at ``max_bytes``, listings at ``max_entries``, searches at ``max_matches``, and every output at
``max_chars``.

Confinement. No path is handed to the kernel whole. Each call opens the workspace root, and a path is walked
from there one name at a time, each opened with ``O_NOFOLLOW`` relative to the directory already open
(``dir_fd``) and checked to be the very file ``lstat`` saw, so a symlink swapped in between a check and an open
cannot lead outside: whatever is opened was reached from the root through real directories. Symlinks are
followed only by that walk, which splices the link's target into the rest of the path (``..`` returns to a
directory already held, an absolute target must name a place under the root), so a symlink that stays inside
works and one that leaves is refused. Walks list such symlinks but never descend into a symlinked directory.
Only regular files are read: FIFOs, devices and sockets are refused by read_file and skipped by walks without
being opened (a file is opened ``O_NONBLOCK`` in case one is swapped in). This needs POSIX ``openat`` and
``O_NOFOLLOW``. Not guarded against: a directory moved out of the workspace while a call holds it open.
"""

from __future__ import annotations

import errno
import fnmatch
import math
import os
import re
import stat
import time
from collections.abc import Awaitable, Callable, Generator, Mapping
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, TypedDict, Unpack

import regex

from ..errors import ExecutorError
from ..shared.text import plural

# An executor gets the tool_use input and returns the tool's output: a string (or anything JSON-serialisable),
# or an awaitable of one (async executors, for the async tool loop).
ToolExecutor = Callable[[Mapping[str, Any]], Any | Awaitable[Any]]

READ_ONLY_TOOLS = ("read_file", "list_files", "glob", "search_files")

_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", ".mypy_cache"})


def _flags(*names: str) -> int:
    """The ``os.O_*`` flags named, OR'ed; a flag this system lacks counts 0 (importing works everywhere, and
    Workspace refuses to start where the ones it relies on are missing)."""
    value = 0
    for name in names:
        value |= getattr(os, name, 0)
    return value


_POSIX = {os.open, os.stat} <= os.supports_dir_fd and all(hasattr(os, f"O_{f}") for f in ("NOFOLLOW", "DIRECTORY"))
_DIR_FLAGS = _flags("O_RDONLY", "O_DIRECTORY", "O_NOFOLLOW", "O_CLOEXEC")
# O_NONBLOCK: a FIFO swapped in after the lstat must not block the open (fstat then tells it apart).
_FILE_FLAGS = _flags("O_RDONLY", "O_NOFOLLOW", "O_NONBLOCK", "O_NOCTTY", "O_CLOEXEC")
# What open() says when the name is no longer what lstat saw (ELOOP/EMLINK: now a symlink, ENXIO: a socket).
_CHANGED = frozenset({errno.ELOOP, errno.EMLINK, errno.ENOTDIR, errno.EISDIR, errno.ENOENT, errno.ENXIO})
_MAX_LINKS = 40  # symlinks followed in one path, as the kernel allows
_MAX_RETRIES = 20  # re-looks at a name that keeps changing between lstat and open
_MAX_DEPTH = 100  # directory levels a walk descends (it holds one descriptor per level)
_MAX_DIR_ENTRIES = 100_000  # entries read from one directory
_MAX_REGEX = 2000  # characters
_MIN_MATCH_TIME = 0.01  # seconds: a search with less time left stops instead of starting a match
_MAX_EXPANSION = 100_000  # items the regex package may unroll counted repeats into (see _expansion)


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


# -- opening paths from the root -----------------------------------------------------------------------


class _Refused(Exception):
    """Why a path could not be opened; each tool words it with the path as the model gave it."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason, detail)
        self.reason = reason  # outside, missing, special, unresolvable, denied
        self.detail = detail

    def message(self, given: str, kind: str, verb: str) -> str:
        if self.reason == "outside":
            return f"path {given!r} resolves outside the workspace; access refused"
        if self.reason == "missing":
            return f"no such {kind}: {given}"
        if self.reason == "special":
            return f"{given} is {self.detail}, not a {kind}"
        if self.reason == "denied":
            return f"cannot {verb} {given}: {self.detail}"
        return f"path {given!r} cannot be resolved: {self.detail}"

    @classmethod
    def from_os(cls, exc: OSError) -> _Refused:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return cls("missing")
        reason = "denied" if exc.errno in (errno.EACCES, errno.EPERM) else "unresolvable"
        return cls(reason, exc.strerror or type(exc).__name__)


def _special(mode: int) -> str:
    """What a file that is neither a regular file nor a directory is, for a refusal."""
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def _names(path: str) -> list[str]:
    """The names of ``path`` as a stack (the first name last), without empty and ``.`` names."""
    return [name for name in reversed(path.split("/")) if name not in ("", ".")]


@dataclass
class _Opened:
    """A path opened from the root: ``fds`` holds the root, each directory on the way, then the path itself (a
    directory or a regular file, ``st`` its fstat); ``names`` is its real path below the root. Only the ``owned``
    descriptors were opened for it: the others belong to the path it was opened from, which outlives it."""

    fds: list[int]
    names: list[str]
    owned: list[int]
    st: os.stat_result

    @property
    def fd(self) -> int:
        return self.fds[-1]

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.st.st_mode)

    def rel(self, *more: str) -> str:
        """Its path (or a child's) relative to the workspace root, ``.`` for the root itself."""
        return "/".join([*self.names, *more]) or "."

    def close(self) -> None:
        for fd in self.owned:
            os.close(fd)
        self.owned.clear()


@dataclass(frozen=True)
class _Entry:
    """A directory entry found by a walk: a regular file or directory (or a symlink to one, inside)."""

    parent: _Opened  # open while the entry is being handled
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
            self.root = os.open(workspace.root, _DIR_FLAGS)
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


# -- regexes -------------------------------------------------------------------------------------------

_COUNTED = re.compile(r"\{(\d*)(?:,(\d*))?\}")


def _expansion(source: str) -> int:
    """About how many items the ``regex`` package makes of ``source`` when compiling it. It unrolls counted
    repeats (``x{1000}`` is a thousand items), so nested ones multiply: ``(a{1000}){1000}`` takes seconds to
    compile, and compiling has no timeout. Flags change how sets (nested in V1) and ``#`` (a comment under
    ``x``) read, and a group closed too early would hide a repeat's size: so the pattern is read all four ways
    and the largest size is taken."""
    return max(
        _size(source, nested=nested, comments=comments) for nested in (False, True) for comments in (False, True)
    )


def _size(source: str, *, nested: bool, comments: bool) -> int:
    """Each item counts 1, a repeat multiplies what it repeats (a group: the group's size) by its largest count;
    an escape or a set is one item. Stops counting past _MAX_EXPANSION."""
    sizes = [0]  # size of each open group, innermost last
    last = 0  # size of the item a repeat would apply to
    i = 0
    while i < len(source) and sum(sizes) <= _MAX_EXPANSION:
        char = source[i]
        counted = _COUNTED.match(source, i) if char == "{" else None
        if counted and (counted[1] or counted[2]):
            times = max(int(counted[1] or 0), int(counted[2] or 0))
            sizes[-1] += last * (times - 1)  # the item itself was counted once already
            last *= times
            i = counted.end()
        elif char == "(":
            sizes.append(0)
            last, i = 0, i + 1
        elif char == ")" and len(sizes) > 1:
            last = max(sizes.pop(), 1)
            sizes[-1] += last
            i += 1
        elif char == "#" and comments:
            end = source.find("\n", i)
            i = len(source) if end < 0 else end + 1
        else:
            i = i + 2 if char == "\\" else _set_end(source, i, nested) if char == "[" else i + 1
            last = 1
            sizes[-1] += 1
    return sum(sizes)


def _set_end(source: str, i: int, nested: bool) -> int:
    """The index just past the set that opens at ``source[i]`` (a ``]`` right after ``[`` or ``[^`` is a
    literal); ``nested``: a ``[`` inside opens an inner set, as in the regex package's V1."""
    depth = 0
    while i < len(source):
        char = source[i]
        if char == "\\":
            i += 2
        elif char == "[" and (nested or depth == 0):
            depth += 1
            i += 1
            i += source.startswith("^", i)
            i += source.startswith("]", i)
        else:
            i += 1
            if char == "]":
                depth -= 1
                if depth == 0:
                    break
    return i


def _compile(source: str) -> Any:
    """``source`` compiled by the regex package (Perl/``re`` syntax), or an ExecutorError saying why not."""
    if len(source) > _MAX_REGEX:
        raise ExecutorError(f"the regex is too long ({len(source):,} characters; at most {_MAX_REGEX:,})")
    if _expansion(source) > _MAX_EXPANSION:
        raise ExecutorError(
            f"the regex {source[:100]!r} repeats too much: its counted repeats (such as {{1000}}, nested) would "
            f"unroll into more than {_MAX_EXPANSION:,} items; use + or * instead of large counts"
        )
    try:
        return regex.compile(source)
    except regex.error as exc:
        raise ExecutorError(f"invalid regex {source!r}: {exc}") from None
    except (RecursionError, OverflowError, ValueError) as exc:  # e.g. groups nested too deep for the parser
        raise ExecutorError(f"invalid regex {source[:100]!r}: {type(exc).__name__}") from None


# -- globs ---------------------------------------------------------------------------------------------


class _Glob:
    """A glob matched against paths below the starting directory, as pathlib does: ``*``, ``?`` and ``[...]``
    within one name, ``**`` for any number of directories (a final ``**`` matches directories only). Matching
    runs the segments as a small NFA over the path's names, so a walk can also tell whether a directory can
    lead to a match at all and skip it if not."""

    def __init__(self, pattern: str) -> None:
        parts = PurePosixPath(pattern).parts
        if not parts:
            raise ExecutorError(f"pattern {pattern!r} names no files; give a glob such as *.py or **/*.py")
        # fnmatch.translate's regexes do not backtrack badly (CPython 3.9+) and names are at most 255 bytes.
        self.segments = [None if part == "**" else re.compile(fnmatch.translate(part)) for part in parts]

    def _close(self, states: set[int]) -> set[int]:
        """Add the states reached by ``**`` matching no directory."""
        for i in range(len(self.segments)):
            if i in states and self.segments[i] is None:
                states.add(i + 1)
        return states

    def states(self, parts: tuple[str, ...]) -> set[int]:
        """Segments reached after matching ``parts`` (``len(segments)``: all of them)."""
        states = self._close({0})
        for name in parts:
            following: set[int] = set()
            for i in states:
                if i == len(self.segments):
                    continue
                segment = self.segments[i]
                if segment is None:  # ** takes this directory and stays
                    following.add(i)
                elif segment.match(name):
                    following.add(i + 1)
            states = self._close(following)
        return states

    def matches(self, parts: tuple[str, ...], is_dir: bool) -> bool:
        if self.segments[-1] is None and not is_dir:
            return False
        return len(self.segments) in self.states(parts)

    def leads_on(self, parts: tuple[str, ...]) -> bool:
        """Whether something below the directory ``parts`` could match."""
        return any(i < len(self.segments) for i in self.states(parts))


# -- the workspace -------------------------------------------------------------------------------------


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
        if not _POSIX:
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
        matcher = _Glob(pattern)
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
        pattern = _compile(source)
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

    def _files(self, call: _Call, top: _Opened, name_pattern: str) -> Generator[tuple[str, _Opened], None, None]:
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
                except _Refused:  # changed since the walk saw it
                    continue
                try:
                    if not opened.is_dir:
                        yield entry.rel, opened
                finally:
                    opened.close()

    def _walk(
        self,
        call: _Call,
        top: _Opened,
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
            except _Refused:  # changed since it was listed, or unreadable: leave it out
                continue
            try:
                if sub.is_dir:
                    yield from self._walk(call, sub, recursive=True, enter=enter, prefix=parts)
            finally:
                sub.close()
            if call.timed_out:
                return

    def _entries(self, call: _Call, directory: _Opened, *, skip: frozenset[str]) -> list[tuple[str, bool, bool]]:
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
                    except (OSError, _Refused):  # gone meanwhile; a broken, looping or leaving link
                        continue
                    if kind is not None and not (kind[0] and entry.name in skip):
                        found.append((entry.name, *kind))
        except OSError:  # unreadable directory: what was read so far
            pass
        return sorted(found)

    def _kind(self, call: _Call, directory: _Opened, entry: os.DirEntry[str]) -> tuple[bool, bool] | None:
        """``(is_dir, is_symlink)`` of a directory entry; None for a special file, which is never opened. A
        symlink is opened from ``directory`` to find out (raising _Refused if it does not stay inside)."""
        if entry.is_symlink():
            target = self._open(call, directory, entry.name)
            target.close()
            return target.is_dir, True
        if entry.is_dir(follow_symlinks=False):
            return True, False
        return (False, False) if entry.is_file(follow_symlinks=False) else None

    def _open(self, call: _Call, start: _Opened | None, path: str) -> _Opened:
        """Open ``path``, relative to ``start`` (default: the root), as the kernel would resolve it, but one name
        at a time from directories already open, so nothing swapped in meanwhile can lead outside: each name is
        lstat'ed, then a symlink's target is spliced into the rest of the path, and a directory or regular file
        is opened with O_NOFOLLOW and must be the very file the lstat saw (else it is looked at again). Special
        files are never opened. Raises _Refused."""
        if "\0" in path:
            raise _Refused("unresolvable", "embedded null byte")
        fds = [call.root] if start is None else list(start.fds)
        names = [] if start is None else list(start.names)
        owned: list[int] = []
        todo = _names(path)
        links = retries = 0
        at_file = start is not None and not start.is_dir

        def back() -> None:  # to the parent of the current directory
            fd = fds.pop()
            names.pop()
            if fd in owned:
                owned.remove(fd)
                os.close(fd)

        try:
            while todo:
                if at_file:  # a name after a file's
                    raise _Refused("missing")
                name = todo.pop()
                if name == "..":
                    if not names:
                        raise _Refused("outside")
                    back()
                    continue
                try:
                    seen = os.stat(name, dir_fd=fds[-1], follow_symlinks=False)
                except OSError as exc:
                    raise _Refused.from_os(exc) from None
                if stat.S_ISLNK(seen.st_mode):
                    links += 1
                    if links > _MAX_LINKS:
                        raise _Refused("unresolvable", "too many levels of symbolic links")
                    try:
                        target = os.readlink(name, dir_fd=fds[-1])
                    except OSError:  # no longer a symlink: look again
                        todo.append(name)
                        continue
                    if target.startswith("/"):
                        below = self._below_root(target)
                        if below is None:
                            raise _Refused("outside")
                        while names:
                            back()
                        target = below
                    todo.extend(_names(target))
                    continue
                if not (stat.S_ISDIR(seen.st_mode) or stat.S_ISREG(seen.st_mode)):
                    raise _Refused("special", _special(seen.st_mode))
                try:
                    fd = os.open(name, _DIR_FLAGS if stat.S_ISDIR(seen.st_mode) else _FILE_FLAGS, dir_fd=fds[-1])
                except OSError as exc:
                    if exc.errno not in _CHANGED:
                        raise _Refused.from_os(exc) from None
                else:
                    owned.append(fd)
                    opened = os.fstat(fd)
                    if (opened.st_dev, opened.st_ino) == (seen.st_dev, seen.st_ino):
                        fds.append(fd)
                        names.append(name)
                        at_file = not stat.S_ISDIR(opened.st_mode)
                        continue
                    owned.remove(fd)
                    os.close(fd)
                retries += 1  # swapped between the lstat and the open: look again
                if retries > _MAX_RETRIES:
                    raise _Refused("unresolvable", "it kept changing while being opened")
                todo.append(name)
            return _Opened(fds, names, owned, os.fstat(fds[-1]))
        except BaseException:
            for fd in owned:
                os.close(fd)
            raise

    def _below_root(self, target: str) -> str | None:
        """An absolute symlink target as a path below the root, or None if it is not under the root."""
        parts = PurePosixPath(target).parts
        for prefix in self._prefixes:
            if parts[: len(prefix)] == prefix:
                return "/".join(parts[len(prefix) :])
        return None

    @staticmethod
    def _relative(given: str) -> None:
        if PurePosixPath(given).is_absolute() or PureWindowsPath(given).is_absolute() or given.startswith("~"):
            raise ExecutorError(f"path {given!r} is absolute; give a path relative to the workspace")

    def _open_given(self, call: _Call, given: str, kind: str, verb: str) -> _Opened:
        """Open the path the model gave; a refusal names it as given. ``kind`` is what the tool needs ("file",
        "directory", "file or directory"), ``verb`` what it does ("read", "list", "search")."""
        self._relative(given)
        try:
            return self._open(call, None, given)
        except _Refused as refused:
            raise ExecutorError(refused.message(given, kind, verb)) from None

    def _open_dir(self, call: _Call, given: str, verb: str) -> _Opened:
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


def workspace_executors(root: str | Path, **limits: Unpack[Limits]) -> dict[str, ToolExecutor]:
    """``read_file``, ``list_files``, ``glob`` and ``search_files`` confined to ``root``; ``limits`` as for
    :class:`Workspace` (``timeout_s`` bounds each call, 10 s by default)."""
    workspace = Workspace(root, **limits)
    return {
        "read_file": workspace.read_file,
        "list_files": workspace.list_files,
        "glob": workspace.glob,
        "search_files": workspace.search_files,
    }
