"""What a docs folder's import journals are, read only: for the commands that read a docs folder (and the
library's ``load_registry``), which must never complete, undo or delete a journal, only say what is there.

A staging folder without ``COMMITTED`` means the import never reached its commit point: the folder itself is the
old one, intact, and reading it is safe, so a reader goes on and warns. A committed one means the folder may hold
a mix of old and new files, so a reader refuses it, as it refuses any folder that does not load, and says what
recovery would do. So does a staging "folder" that is a symlink, or whose marker is not a regular file: it cannot
be read without following a link, and this tool never makes one. See :mod:`.journal` for the writer and
:mod:`.journal_records` for how a journal is known to be this tool's.
"""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..errors import Problem
from . import journal_records
from .logs import get_logger
from .nofollow import UnsafePath, lstat_at, open_dir, read_small, regular_files, target_problem

STAGING_PREFIX = ".import-staging-"  # not ".import-": .import-state.json lives beside it
COMMITTED = "COMMITTED"
# Present in the staging folder when the write created the target folder: rolling back removes it again.
CREATED = "CREATED"
NONCE = "NONCE"
FILES = "files"
_MAX_NONCE = 256

_log = get_logger(__name__)


def real_folder(folder: Path) -> str:
    """The real path a journal record keys a docs folder by."""
    return os.path.realpath(folder)


def staging_names(folder_fd: int) -> list[str]:
    """The names in the folder that look like staging folders: directories and symlinks (never followed) whose
    name starts with :data:`STAGING_PREFIX`. A regular file of that name is nobody's journal and is ignored."""
    with os.scandir(folder_fd) as entries:
        return sorted(
            entry.name
            for entry in entries
            if entry.name.startswith(STAGING_PREFIX) and (entry.is_symlink() or entry.is_dir(follow_symlinks=False))
        )


def marker(staging_fd: int, name: str) -> bool | None:
    """Whether a marker file is there: ``True`` for a regular file, ``False`` for none, ``None`` for anything
    else (a symlink, a folder), which no writer of this tool makes."""
    info = lstat_at(name, staging_fd)
    if info is None:
        return False
    return True if stat.S_ISREG(info.st_mode) else None


def ours(folder: Path, name: str, staging_fd: int) -> bool:
    """Whether the open staging folder ``name`` of ``folder`` is one this tool recorded writing (see
    :mod:`.journal_records`)."""
    record = journal_records.load(real_folder(folder), name)
    if record is None:
        return False
    return record.describes(os.fstat(staging_fd), read_small(NONCE, staging_fd, _MAX_NONCE))


def staged(staging_fd: int) -> list[tuple[str, ...]]:
    """The staged files (regular files under ``files/``), as path components; :class:`UnsafePath` when ``files``
    or anything in it is a symlink or special file."""
    try:
        files_fd = open_dir(FILES, staging_fd)
    except FileNotFoundError:
        return []
    except UnsafePath as exc:
        raise UnsafePath(FILES, exc.reason) from None
    try:
        return regular_files(files_fd)
    except UnsafePath as exc:
        raise UnsafePath(f"{FILES}/{exc.relative}", exc.reason) from None
    finally:
        os.close(files_fd)


def recover_command(folder: Path, *, discard: bool = False) -> str:
    import shlex  # only when an interrupted import is found

    return f"prompt-composer import --recover{' --discard' if discard else ''} --docs {shlex.quote(str(folder))}"


@dataclass(frozen=True)
class Pending:
    """One staging folder found in a docs folder, as a reader sees it."""

    folder: Path
    staging: Path
    committed: bool | None  # None: not readable as a journal (a symlink, a marker that is not a regular file)
    files: int  # staged regular files
    ours: bool  # recorded as written by this tool (see journal_records)
    running: bool  # an import holds the folder's lock now
    blocker: str | None = None  # why recovery could not act on it (a target that is a folder; a symlink)

    @property
    def refused(self) -> bool:
        """Whether a reader must refuse the folder: the journal committed, or cannot be read as one."""
        return self.committed is not False

    def describe(self) -> str:
        """What it is and what would be done about it, in one sentence (no path prefix)."""
        discard = recover_command(self.folder, discard=True)
        if self.committed is None:
            return (
                f"an interrupted import's staging folder that cannot be read without following a link "
                f"({self.blocker}); this tool never writes one like it, so it is left untouched and the folder is "
                f"not read while it is there; inspect it and delete it, or run `{discard}`"
            )
        if self.committed and self.running:
            return "an import is moving its files into this folder right now; run the command again when it ends"
        action = f"apply {self.files} staged file(s)" if self.committed else f"discard {self.files} staged file(s)"
        if not self.ours:
            state = "committed" if self.committed else "not committed"
            besides = f"; besides, {self.blocker}" if self.blocker else ""
            head = (
                f"an interrupted import ({state}, {self.files} staged file(s); recovery refuses it) that "
                f"prompt-composer has no record of writing, e.g. a staging folder committed to a repository: it is "
                f"left untouched and never applied{besides}"
            )
            tail = f"inspect it and delete it, or run `{discard}`"
            if self.committed:
                return f"{head}; the folder is not read while it is there; {tail}"
            return f"{head}; the folder is as it was before it and is read as it is; {tail}"
        if not self.committed:
            return (
                f"an interrupted import, not committed: the folder is as it was before it and is read as it is; "
                f"recovery would {action}: run `{recover_command(self.folder)}`"
            )
        if self.blocker:
            return (
                f"an interrupted import, committed, that recovery cannot complete: {self.blocker}; the folder may "
                f"hold a mix of old and new files and is not read; move that away and run "
                f"`{recover_command(self.folder)}`, or give the import up with "
                f"`{discard}` (the files it moved already stay)"
            )
        return (
            f"an interrupted import, committed: recovery would {action}; until then the folder may hold a mix of "
            f"old and new files and is not read: run `{recover_command(self.folder)}`"
        )


def _is_locked(folder_fd: int) -> bool:
    """Whether another process holds the folder's lock (an import writing); takes a shared lock for an instant."""
    try:
        fcntl.flock(folder_fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    fcntl.flock(folder_fd, fcntl.LOCK_UN)
    return False


def _inspect(folder: Path, folder_fd: int, name: str, running: bool) -> Pending:
    try:
        return _inspected(folder, folder_fd, name, running)
    except OSError as exc:  # an unreadable staging folder: what it holds cannot be told, so it is not read past
        return Pending(folder, folder / name, None, 0, False, running, f"cannot read it: {exc.strerror or exc}")


def _inspected(folder: Path, folder_fd: int, name: str, running: bool) -> Pending:
    staging = folder / name
    try:
        staging_fd = open_dir(name, folder_fd)
    except UnsafePath as exc:
        return Pending(folder, staging, None, 0, False, running, exc.reason)
    except FileNotFoundError:  # removed meanwhile (an import finishing)
        return Pending(folder, staging, False, 0, False, running)
    try:
        committed = marker(staging_fd, COMMITTED)
        if committed is None:
            return Pending(folder, staging, None, 0, False, running, f"{COMMITTED} is not a regular file")
        mine = ours(folder, name, staging_fd)
        try:
            files = staged(staging_fd)
        except UnsafePath as exc:
            if committed:
                return Pending(folder, staging, None, 0, mine, running, f"{exc.relative}: {exc.reason}")
            return Pending(folder, staging, False, 0, mine, running, f"{exc.relative}: {exc.reason}")
        blocker = None
        if committed or not mine:  # what recovery could not get past (a foreign one: said, not acted on)
            blocker = next(filter(None, (target_problem(folder_fd, parts) for parts in files)), None)
        return Pending(folder, staging, committed, len(files), mine, running, blocker)
    finally:
        os.close(staging_fd)


@contextmanager
def opened_dir_following(folder: Path) -> Iterator[int]:
    """The docs folder itself opened as a directory (the path the user or the settings gave may pass through
    symlinks; what is *inside* it is never followed)."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        yield fd
    finally:
        os.close(fd)


def pending(folder: str | Path) -> list[Pending]:
    """Every staging folder in ``folder``, read only: nothing is completed, undone, deleted or followed."""
    folder = Path(folder)
    try:
        with opened_dir_following(folder) as folder_fd:
            names = staging_names(folder_fd)
            if not names:
                return []
            running = _is_locked(folder_fd)
            return [_inspect(folder, folder_fd, name, running) for name in names]
    except OSError:  # the folder itself is not a readable folder: the loader reports that
        return []


def journal_problems(folder: str | Path) -> list[Problem]:
    """What a reader of ``folder`` must refuse (one :class:`Problem` per committed or unreadable journal, at the
    staging folder); an uncommitted one is logged as a warning and the folder is read as it is."""
    problems: list[Problem] = []
    for found in pending(folder):
        if found.refused:
            problems.append(Problem(found.staging, 1, found.describe()))
        elif not found.running:
            _log.warning("%s: %s", found.staging, found.describe())
    return problems
