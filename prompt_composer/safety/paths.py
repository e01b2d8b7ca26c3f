"""Opening a path the model gave, confined to a root folder: nothing reached through ``..``, a symlink or a file
swapped in meanwhile can lead outside it.

No path is handed to the kernel whole. A path is walked from the root one name at a time, each opened with
``O_NOFOLLOW`` relative to the directory already open (``dir_fd``) and checked to be the very file ``lstat`` saw,
so a symlink swapped in between a check and an open cannot lead outside: whatever is opened was reached from the
root through real directories. Symlinks are followed only by that walk, which splices the link's target into the
rest of the path (``..`` returns to a directory already held, an absolute target must name a place under the
root), so a symlink that stays inside works and one that leaves is refused. Only directories and regular files
are opened: FIFOs, devices and sockets are refused without being opened (a file is opened ``O_NONBLOCK`` in case
one is swapped in). This needs POSIX ``openat`` and ``O_NOFOLLOW``. Not guarded against: a directory moved out of
the root while it is held open.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import PurePosixPath


def _flags(*names: str) -> int:
    """The ``os.O_*`` flags named, OR'ed; a flag this system lacks counts 0 (importing works everywhere, and
    :class:`~prompt_composer.safety.workspace.Workspace` refuses to start where the ones it relies on are missing)."""
    value = 0
    for name in names:
        value |= getattr(os, name, 0)
    return value


POSIX = {os.open, os.stat} <= os.supports_dir_fd and all(hasattr(os, f"O_{f}") for f in ("NOFOLLOW", "DIRECTORY"))
DIR_FLAGS = _flags("O_RDONLY", "O_DIRECTORY", "O_NOFOLLOW", "O_CLOEXEC")
# O_NONBLOCK: a FIFO swapped in after the lstat must not block the open (fstat then tells it apart).
_FILE_FLAGS = _flags("O_RDONLY", "O_NOFOLLOW", "O_NONBLOCK", "O_NOCTTY", "O_CLOEXEC")
# What open() says when the name is no longer what lstat saw (ELOOP/EMLINK: now a symlink, ENXIO: a socket).
_CHANGED = frozenset({errno.ELOOP, errno.EMLINK, errno.ENOTDIR, errno.EISDIR, errno.ENOENT, errno.ENXIO})
_MAX_LINKS = 40  # symlinks followed in one path, as the kernel allows
_MAX_RETRIES = 20  # re-looks at a name that keeps changing between lstat and open


class Refused(Exception):
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
    def from_os(cls, exc: OSError) -> Refused:
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
class Opened:
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


def _below_root(prefixes: Collection[tuple[str, ...]], target: str) -> str | None:
    """An absolute symlink target as a path below the root, or None if it is not under the root. ``prefixes``
    are the root's paths, as parts (its real path, and the path it was given by)."""
    parts = PurePosixPath(target).parts
    for prefix in prefixes:
        if parts[: len(prefix)] == prefix:
            return "/".join(parts[len(prefix) :])
    return None


def _link_target(name: str, dir_fd: int, prefixes: Collection[tuple[str, ...]]) -> tuple[str, bool] | None:
    """Where the symlink ``name`` in ``dir_fd`` points: ``(path, from_root)``, an absolute target made a path below
    the root; None when it is no longer a symlink. Refused when an absolute target is outside the root."""
    try:
        target = os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return None
    if not target.startswith("/"):
        return target, False
    below = _below_root(prefixes, target)
    if below is None:
        raise Refused("outside")
    return below, True


def _open_same(name: str, dir_fd: int, seen: os.stat_result) -> tuple[int, os.stat_result] | None:
    """Open ``name`` in ``dir_fd`` without following a symlink: its descriptor and fstat if it is the very file
    ``seen`` (its lstat), None if it changed since (look again). Refused when it cannot be opened."""
    try:
        fd = os.open(name, DIR_FLAGS if stat.S_ISDIR(seen.st_mode) else _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno not in _CHANGED:
            raise Refused.from_os(exc) from None
        return None
    try:
        opened = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if (opened.st_dev, opened.st_ino) == (seen.st_dev, seen.st_ino):
        return fd, opened
    os.close(fd)
    return None


def open_path(root: int, prefixes: Collection[tuple[str, ...]], start: Opened | None, path: str) -> Opened:
    """Open ``path``, relative to ``start`` (default: the root, the open directory ``root``), as the kernel would
    resolve it, but one name at a time from directories already open, so nothing swapped in meanwhile can lead
    outside: each name is lstat'ed, then a symlink's target is spliced into the rest of the path, and a directory or
    regular file is opened with O_NOFOLLOW and must be the very file the lstat saw (else it is looked at again).
    Special files are never opened. ``prefixes`` as for :func:`_below_root`. Raises Refused."""
    if "\0" in path:
        raise Refused("unresolvable", "embedded null byte")
    fds = [root] if start is None else list(start.fds)
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
                raise Refused("missing")
            name = todo.pop()
            if name == "..":
                if not names:
                    raise Refused("outside")
                back()
                continue
            try:
                seen = os.stat(name, dir_fd=fds[-1], follow_symlinks=False)
            except OSError as exc:
                raise Refused.from_os(exc) from None
            if stat.S_ISLNK(seen.st_mode):
                links += 1
                if links > _MAX_LINKS:
                    raise Refused("unresolvable", "too many levels of symbolic links")
                link = _link_target(name, fds[-1], prefixes)
                if link is None:  # no longer a symlink: look again
                    todo.append(name)
                    continue
                target, from_root = link
                while from_root and names:
                    back()
                todo.extend(_names(target))
                continue
            if not (stat.S_ISDIR(seen.st_mode) or stat.S_ISREG(seen.st_mode)):
                raise Refused("special", _special(seen.st_mode))
            opened = _open_same(name, fds[-1], seen)
            if opened is not None:
                owned.append(opened[0])
                fds.append(opened[0])
                names.append(name)
                at_file = not stat.S_ISDIR(opened[1].st_mode)
                continue
            retries += 1  # swapped between the lstat and the open: look again
            if retries > _MAX_RETRIES:
                raise Refused("unresolvable", "it kept changing while being opened")
            todo.append(name)
        return Opened(fds, names, owned, os.fstat(fds[-1]))
    except BaseException:
        for fd in owned:
            os.close(fd)
        raise
