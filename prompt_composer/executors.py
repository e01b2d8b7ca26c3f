"""Built-in read-only executors for the shipped read tools, confined to a workspace folder.

``workspace_executors(root)`` gives ``read_file``, ``list_files``, ``glob`` and ``search_files`` as plain
callables ``(tool_input) -> str``, ready for the tool loop's ``executors`` mapping. Every path the model
passes is relative to the workspace; an absolute path, or one that resolves outside the workspace (through
``..`` or a symlink), raises :class:`ExecutorError`, which the tool loop turns into an error tool_result the
model can read. Nothing here writes, and nothing here imports anthropic.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from .errors import PromptComposerError

__all__ = [
    "READ_ONLY_TOOLS",
    "ExecutorError",
    "ToolExecutor",
    "Workspace",
    "workspace_executors",
]

# An executor gets the tool_use input and returns the tool's output: a string (or anything JSON-serialisable),
# or an awaitable of one (async executors, for the async tool loop).
ToolExecutor = Callable[[Mapping[str, Any]], Any | Awaitable[Any]]

READ_ONLY_TOOLS = ("read_file", "list_files", "glob", "search_files")

_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".venv", ".mypy_cache"})


class ExecutorError(PromptComposerError):
    """A tool call the executor refuses or cannot carry out; its message goes back to the model."""


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


def _count(n: int, noun: str, plural: str | None = None) -> str:
    """``1 line``, ``2 lines``; ``plural`` for irregular nouns."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


class Workspace:
    """A folder the executors may read, and nothing outside it.

    ``max_bytes`` bounds a file read, ``max_entries`` a listing or glob, ``max_matches`` a search.
    """

    def __init__(
        self, root: str | Path, *, max_bytes: int = 256_000, max_entries: int = 1000, max_matches: int = 200
    ) -> None:
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            missing = "" if self.root.exists() else " (it does not exist)"
            raise ExecutorError(f"workspace {root} is not a directory{missing}")
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self.max_matches = max_matches

    # -- confinement ---------------------------------------------------------------------------------

    def resolve(self, path: str) -> Path:
        """The real path of ``path`` (relative to the workspace), refused if it is absolute or leaves it."""
        if PurePosixPath(path).is_absolute() or PureWindowsPath(path).is_absolute() or path.startswith("~"):
            raise ExecutorError(f"path {path!r} is absolute; give a path relative to the workspace")
        try:
            candidate = (self.root / path).resolve()
        except (OSError, RuntimeError, ValueError) as exc:  # symlink loop (RuntimeError on 3.11), NUL byte, too long
            raise ExecutorError(f"path {path!r} cannot be resolved: {exc}") from None
        if not self.contains(candidate):
            raise ExecutorError(f"path {path!r} resolves outside the workspace; access refused")
        return candidate

    def contains(self, resolved: Path) -> bool:
        return resolved == self.root or self.root in resolved.parents

    def relative(self, resolved: Path) -> str:
        rel = resolved.relative_to(self.root).as_posix()
        return rel or "."

    def _inside(self, path: Path) -> bool:
        """Whether ``path`` (found by walking) really lives inside the workspace, symlinks followed."""
        try:
            return self.contains(path.resolve())
        except (OSError, RuntimeError, ValueError):  # a symlink loop is skipped, not fatal to the whole walk
            return False

    # -- tools ---------------------------------------------------------------------------------------

    def read_file(self, tool_input: Mapping[str, Any]) -> str:
        """``path``, optional ``start_line``/``end_line`` (1-based, inclusive): numbered lines ``N | text``."""
        given = _string(tool_input, "path")
        path = self.resolve(given)
        start, end = _int(tool_input, "start_line"), _int(tool_input, "end_line")
        if start is not None and end is not None and end < start:
            raise ExecutorError(f"end_line {end} is before start_line {start}")
        if not path.is_file():
            raise ExecutorError(self._not_a("file", given, path))
        try:
            with path.open("rb") as fh:
                data = fh.read(self.max_bytes + 1)
        except OSError as exc:  # e.g. no permission: say so without the absolute path
            raise ExecutorError(f"cannot read {given}: {exc.strerror or type(exc).__name__}") from None
        if b"\0" in data[:8192]:
            raise ExecutorError(f"{given} is a binary file; it cannot be read as text")
        truncated = len(data) > self.max_bytes
        lines = data[: self.max_bytes].decode("utf-8", "replace").splitlines()
        first = start or 1
        last = min(end or len(lines), len(lines))
        if lines and first > len(lines):
            raise ExecutorError(f"start_line {first} is past the end of {given} ({_count(len(lines), 'line')})")
        width = len(str(last))
        out = [f"{n:>{width}} | {lines[n - 1]}" for n in range(first, last + 1)]
        if truncated:
            out.append(f"[truncated: the file is larger than {_count(self.max_bytes, 'byte')}]")
        return "\n".join(out) if out else "(empty file)"

    def list_files(self, tool_input: Mapping[str, Any]) -> str:
        """``path``, optional ``recursive``: one entry a line, directories ending in ``/``, sorted."""
        given = _string(tool_input, "path", default=".")
        top = self._directory(given)
        recursive = tool_input.get("recursive", False) is True
        entries: list[str] = []
        try:
            for entry in self._walk(top, recursive=recursive):
                rel = entry.relative_to(self.root).as_posix()
                entries.append(rel + "/" if entry.is_dir() else rel)
                if len(entries) > self.max_entries:
                    break
        except OSError as exc:  # e.g. no permission to list it
            raise ExecutorError(f"cannot list {given}: {exc.strerror or type(exc).__name__}") from None
        return self._listing(entries, noun=("entry", "entries"), empty="(empty directory)")

    def glob(self, tool_input: Mapping[str, Any]) -> str:
        """``pattern`` (e.g. ``**/*.py``), optional ``path``: matching files, relative to the workspace."""
        pattern = _string(tool_input, "pattern")
        if PurePosixPath(pattern).is_absolute() or ".." in PurePosixPath(pattern).parts:
            raise ExecutorError(f"pattern {pattern!r} must be relative and must not contain '..'")
        top = self._directory(_string(tool_input, "path", default="."))
        matches: list[str] = []
        for found in sorted(top.glob(pattern)):
            if not self._inside(found) or any(part in _SKIP_DIRS for part in found.relative_to(top).parts):
                continue
            matches.append(found.relative_to(self.root).as_posix() + ("/" if found.is_dir() else ""))
            if len(matches) > self.max_entries:
                break
        return self._listing(matches, noun=("match", "matches"), empty=f"no files match {pattern!r}")

    def search_files(self, tool_input: Mapping[str, Any]) -> str:
        """``path``, ``regex``, optional ``file_pattern``: ``file:line: text`` for each matching line."""
        given = _string(tool_input, "path", default=".")
        top = self.resolve(given)
        source = _string(tool_input, "regex")
        file_pattern = tool_input.get("file_pattern") or "*"
        if not isinstance(file_pattern, str):
            raise ExecutorError("parameter 'file_pattern' must be a string")
        try:
            regex = re.compile(source)
        except re.error as exc:
            raise ExecutorError(f"invalid regex {source!r}: {exc}") from None
        if top.is_file():
            files: Iterator[Path] = iter([top])
        elif top.is_dir():
            files = (p for p in self._walk(top, recursive=True) if p.is_file())
        else:
            raise ExecutorError(
                f"{given} is neither a file nor a directory" if top.exists() else f"no such file or directory: {given}"
            )
        out: list[str] = []
        for file in files:
            if not fnmatch.fnmatch(file.name, file_pattern):
                continue
            try:
                data = file.read_bytes()[: self.max_bytes]
            except OSError:
                continue
            if b"\0" in data[:8192]:
                continue
            rel = file.relative_to(self.root).as_posix()
            for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
                if regex.search(line):
                    out.append(f"{rel}:{number}: {line.strip()[:300]}")
                    if len(out) > self.max_matches:
                        break
            if len(out) > self.max_matches:
                break
        if len(out) > self.max_matches:
            stopped = f"[stopped after {_count(self.max_matches, 'match', 'matches')}]"
            return "\n".join([*out[: self.max_matches], stopped])
        return "\n".join(out) if out else f"no matches for {source!r}"

    # -- helpers -------------------------------------------------------------------------------------

    def _directory(self, given: str) -> Path:
        """The resolved directory ``given`` names; refused, naming ``given``, if it is missing or a file."""
        top = self.resolve(given)
        if not top.is_dir():
            raise ExecutorError(self._not_a("directory", given, top))
        return top

    @staticmethod
    def _not_a(kind: str, given: str, resolved: Path) -> str:
        """Why ``given`` (as the model wrote it) is not the ``kind`` ("file" or "directory") a tool needs."""
        if not resolved.exists():
            return f"no such {kind}: {given}"
        actual = "a directory" if resolved.is_dir() else "a file" if resolved.is_file() else "a special file"
        return f"{given} is {actual}, not a {kind}"

    def _walk(self, top: Path, *, recursive: bool) -> Iterator[Path]:
        """Entries under ``top`` in sorted order; symlinks leaving the workspace are skipped, never followed."""
        if not recursive:
            for entry in sorted(top.iterdir()):
                if self._inside(entry):
                    yield entry
            return
        for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
            base = Path(dirpath)
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and self._inside(base / d))
            for name in sorted([*dirnames, *filenames]):
                entry = base / name
                if self._inside(entry):
                    yield entry

    def _listing(self, items: list[str], *, noun: tuple[str, str], empty: str) -> str:
        if not items:
            return empty
        if len(items) > self.max_entries:
            stopped = f"[stopped after {_count(self.max_entries, *noun)}]"
            return "\n".join([*items[: self.max_entries], stopped])
        return "\n".join(items)


def workspace_executors(root: str | Path, **limits: int) -> dict[str, ToolExecutor]:
    """``read_file``, ``list_files``, ``glob`` and ``search_files`` confined to ``root``."""
    workspace = Workspace(root, **limits)
    return {
        "read_file": workspace.read_file,
        "list_files": workspace.list_files,
        "glob": workspace.glob,
        "search_files": workspace.search_files,
    }
