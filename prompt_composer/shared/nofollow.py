"""Working on a tree inside a folder without ever following a symlink.

Every step is taken relative to a directory descriptor, and every directory is opened with ``O_NOFOLLOW``: a
symlink anywhere on a path is refused, not followed, and a component swapped for a symlink after it was looked at
is refused too, because the check *is* the open. Files are only ever renamed from one directory descriptor to
another, so whatever a name points at, nothing outside the folder the first descriptor was opened on is reached.
The import journal (:mod:`.journal`) moves files and removes staging folders only through these functions.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_NOT_FOLLOWED = (errno.ELOOP, errno.ENOTDIR, errno.EMLINK)  # what O_NOFOLLOW|O_DIRECTORY says of a non-directory

# Bounds on a staged tree: an import writes one file per tool (thousands at most) a level or two deep, and a
# hostile tree must not make a reader walk forever or hold a descriptor per level without end.
MAX_FILES = 200_000
MAX_DEPTH = 32


class UnsafePath(Exception):
    """A path that is not followed: ``relative`` (as given) and why (``it is a symlink``, ``it is a folder``)."""

    def __init__(self, relative: str, reason: str) -> None:
        super().__init__(f"{relative}: {reason}")
        self.relative = relative
        self.reason = reason


def kind(mode: int) -> str:
    """What an ``lstat`` mode is, for messages: ``a symlink``, ``a folder``, ``a FIFO`` …"""
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device or other special file"


def lstat_at(name: str, dir_fd: int) -> os.stat_result | None:
    """``lstat`` of ``name`` in ``dir_fd`` (the entry itself, never its target); ``None`` when there is none."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def split_relative(relative: str) -> tuple[str, ...]:
    """The components of a plain relative path (``a/b.yaml``); :class:`UnsafePath` for an absolute path, ``..``,
    ``.``, an empty component or a NUL."""
    parts = tuple(relative.split("/"))
    if not relative or any(part in ("", ".", "..") or "\0" in part for part in parts):
        raise UnsafePath(relative, "not a plain relative path")
    return parts


def open_dir(name: str, dir_fd: int | None = None) -> int:
    """A descriptor of the directory ``name`` (relative to ``dir_fd``), never through a symlink: one that is a
    symlink, a file or anything but a directory is an :class:`UnsafePath` saying what it is."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno not in _NOT_FOLLOWED:
            raise
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        raise UnsafePath(name, f"it is {kind(info.st_mode)}, not a folder") from None


@contextmanager
def opened_dir(name: str, dir_fd: int | None = None) -> Iterator[int]:
    """:func:`open_dir` as a context manager that closes the descriptor."""
    fd = open_dir(name, dir_fd)
    try:
        yield fd
    finally:
        os.close(fd)


def regular_files(top_fd: int, *, max_files: int = MAX_FILES, max_depth: int = MAX_DEPTH) -> list[tuple[str, ...]]:
    """Every regular file under the directory ``top_fd``, as path components, sorted. A symlink, a FIFO, a device
    or a socket anywhere in the tree, more than ``max_files`` files or more than ``max_depth`` levels is an
    :class:`UnsafePath` naming it: a tree with one is not walked any further, nor acted on."""
    found: list[tuple[str, ...]] = []

    def visit(fd: int, prefix: tuple[str, ...]) -> None:
        with os.scandir(fd) as entries:
            children = sorted((entry.name, entry) for entry in entries)
        for name, entry in children:
            parts = (*prefix, name)
            if entry.is_dir(follow_symlinks=False):
                if len(parts) > max_depth:
                    raise UnsafePath("/".join(parts), f"nested deeper than {max_depth} folders")
                with opened_dir(name, fd) as child:
                    visit(child, parts)
            elif entry.is_file(follow_symlinks=False):
                found.append(parts)
                if len(found) > max_files:
                    raise UnsafePath("/".join(prefix) or ".", f"more than {max_files:,} files")
            else:
                raise UnsafePath("/".join(parts), f"it is {kind(entry.stat(follow_symlinks=False).st_mode)}")

    visit(top_fd, ())
    return sorted(found)


def parent_dir(root_fd: int, parts: tuple[str, ...], *, create: bool) -> int | None:
    """A descriptor of the folder that holds ``parts`` (its last component is the file) under ``root_fd``, every
    folder on the way opened without following a symlink; missing ones are made when ``create`` is on, else the
    answer is ``None``. The caller closes it."""
    fd = os.dup(root_fd)
    try:
        for index, name in enumerate(parts[:-1]):
            try:
                child = open_dir(name, fd)
            except UnsafePath as exc:
                raise UnsafePath("/".join(parts[: index + 1]), exc.reason) from None
            except FileNotFoundError:
                if not create:
                    os.close(fd)
                    return None
                with suppress(FileExistsError):  # made meanwhile: opened below like any other (a symlink refused)
                    os.mkdir(name, 0o777, dir_fd=fd)
                child = open_dir(name, fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def target_problem(root_fd: int, parts: tuple[str, ...]) -> str | None:
    """Why a regular file cannot be put at ``parts`` under ``root_fd`` without following a symlink or replacing
    what is not a regular file (``modes is a symlink``), or ``None`` when it can. Looks only, changes nothing."""
    try:
        fd = parent_dir(root_fd, parts, create=False)
    except UnsafePath as exc:
        return f"{exc.relative} is {exc.reason.removeprefix('it is ')}"
    if fd is None:
        return None
    try:
        info = lstat_at(parts[-1], fd)
    finally:
        os.close(fd)
    if info is None or stat.S_ISREG(info.st_mode):
        return None
    return f"{'/'.join(parts)} is {kind(info.st_mode)}, where a file must go"


def move_file(from_fd: int, parts: tuple[str, ...], to_fd: int) -> None:
    """Rename the regular file at ``parts`` under ``from_fd`` to the same place under ``to_fd`` (folders made as
    needed), replacing a regular file there. Neither path is followed through a symlink; a source that is not a
    regular file, or a target that is anything but a regular file, is an :class:`UnsafePath` and nothing moves."""
    relative = "/".join(parts)
    source = parent_dir(from_fd, parts, create=False)
    if source is None:
        raise UnsafePath(relative, "it is not staged")
    try:
        info = lstat_at(parts[-1], source)
        if info is None or not stat.S_ISREG(info.st_mode):
            raise UnsafePath(relative, f"it is {kind(info.st_mode) if info else 'missing'}, not a regular file")
        target = parent_dir(to_fd, parts, create=True)
        assert target is not None
        try:
            there = lstat_at(parts[-1], target)
            if there is not None and not stat.S_ISREG(there.st_mode):
                raise UnsafePath(relative, f"it is {kind(there.st_mode)}, where a file must go")
            os.rename(parts[-1], parts[-1], src_dir_fd=source, dst_dir_fd=target)
        finally:
            os.close(target)
    finally:
        os.close(source)


def remove_entry(name: str, dir_fd: int) -> None:
    """Remove ``name`` from the directory ``dir_fd``: a folder with everything in it (never following a symlink
    inside: :func:`shutil.rmtree` on descriptors), a symlink itself (not what it points at), or a file."""
    info = lstat_at(name, dir_fd)
    if info is None:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(name, dir_fd=dir_fd)
    else:
        os.unlink(name, dir_fd=dir_fd)


def write_new(name: str, dir_fd: int, data: bytes, mode: int = 0o666) -> None:
    """Create the file ``name`` in ``dir_fd`` (it must not exist; a symlink there is not followed) holding
    ``data``."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(name, flags, mode, dir_fd=dir_fd)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def read_small(name: str, dir_fd: int, limit: int) -> bytes | None:
    """The bytes of the regular file ``name`` in ``dir_fd`` (not through a symlink), or ``None`` when it is
    missing, not a regular file or longer than ``limit``."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        data = os.read(fd, limit + 1)
        return data if len(data) <= limit else None
    finally:
        os.close(fd)
