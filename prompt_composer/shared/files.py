"""Reading the files a user hands us, safely: regular files only, a size cap, and errors naming the file.

Every file the project loads (tool docs, modes, overlays, server lists, task, query, trace and event files) comes
through :func:`read_text`: a FIFO, a device or a socket is refused before it is read (opening one can block
forever or never end), a file over the cap is refused before it is read whole, and what cannot be read or decoded
is an :class:`~prompt_composer.errors.InputFileError` carrying the path. JSON Lines files are read with
:func:`json_lines`, which reports a bad line as ``path:line``.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import InputFileError

# Large enough for any real input here (the biggest corpus file is ~12 MB); small enough that a hostile or mistaken
# path cannot make a loader hold gigabytes.
MAX_INPUT_BYTES = 64 * 1024 * 1024


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "it is a directory"
    if stat.S_ISFIFO(mode):
        return "it is a FIFO, not a regular file"
    if stat.S_ISSOCK(mode):
        return "it is a socket, not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "it is a device, not a regular file"
    return "it is not a regular file"


def _open_regular(path: str | Path, what: str, max_bytes: int | None) -> int:
    """A descriptor of the regular file ``path`` (at most ``max_bytes`` long, when given); else InputFileError.

    Opened without blocking (a FIFO opens at once, and is then refused by its type); the type and size are checked
    on the open descriptor, so the file cannot be swapped for another between the check and the read."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise InputFileError(f"{path}: cannot read the {what}: {exc.strerror or exc}", path=path) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputFileError(f"{path}: cannot read the {what}: {_kind(info.st_mode)}", path=path)
        if max_bytes is not None and info.st_size > max_bytes:
            raise InputFileError(
                f"{path}: cannot read the {what}: {info.st_size:,} bytes, over the limit of {max_bytes:,}", path=path
            )
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular(path: str | Path, *, what: str = "file") -> BinaryIO:
    """The regular file ``path`` opened for reading (binary); a FIFO, device, socket or directory is an
    InputFileError, refused without blocking. For large files read in their own format (no size cap here)."""
    return os.fdopen(_open_regular(path, what, None), "rb")


def read_bytes(path: str | Path, *, what: str = "file", max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them; anything else is an InputFileError.

    The file is opened without blocking (a FIFO opens at once, and is then refused by its type), its type and size
    are checked on the open descriptor, and at most ``max_bytes + 1`` bytes are read (a file that grows while it
    is read is refused too)."""
    fd = _open_regular(path, what, max_bytes)
    try:
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:
            raise InputFileError(
                f"{path}: the {what} is over {max_bytes:,} bytes; at most that many are read", path=path
            )
        return b"".join(chunks)
    except OSError as exc:
        raise InputFileError(f"{path}: cannot read the {what}: {exc.strerror or exc}", path=path) from None
    finally:
        os.close(fd)


def read_text(path: str | Path, *, what: str = "file", max_bytes: int = MAX_INPUT_BYTES) -> str:
    """:func:`read_bytes`, decoded as UTF-8 (a byte that is not UTF-8 is an InputFileError naming its offset)."""
    data = read_bytes(path, what=what, max_bytes=max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(f"{path}: cannot read the {what}: not UTF-8 text (byte {exc.start})", path=path) from None


@dataclass(frozen=True)
class JsonLine:
    """One non-blank line of a JSON Lines file: its number, and its value or why it is not JSON."""

    number: int
    value: Any = None
    error: str | None = None


def json_lines(path: str | Path, *, what: str = "file", strict: bool = True) -> Iterator[JsonLine]:
    """The non-blank lines of a JSON Lines file, parsed. ``strict``: a line that is not JSON is an InputFileError
    naming ``path:line``; otherwise it comes back with its ``error`` (for logs, whose last line may be torn)."""
    text = read_text(path, what=what)
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield JsonLine(number, json.loads(line))
        except (ValueError, RecursionError) as exc:
            if isinstance(exc, RecursionError):
                message = "nested too deeply"
            else:
                message = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            if strict:
                raise InputFileError(f"{path}:{number}: invalid JSON: {message}", path=path, line=number) from None
            yield JsonLine(number, error=message)


def line_error(path: str | Path, number: int, message: str) -> InputFileError:
    """An InputFileError for a problem on one line of ``path``."""
    return InputFileError(f"{path}:{number}: {message}", path=path, line=number)
