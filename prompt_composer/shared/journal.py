"""Writing many files into a folder all at once, so that a process killed at any moment leaves it old or new.

A write goes through a staging folder *inside* the target folder, ``<folder>/.import-staging-XXXXXXXX/``:

0. the staging folder is made (mode 0700) and recorded in the user's state folder, outside any checkout, with a
   random nonce that also goes into it as ``NONCE`` (:mod:`.journal_records`);
1. every file is written under ``files/`` in the staging folder (the target is untouched so far);
2. the marker ``COMMITTED`` is created in the staging folder: this is the commit point;
3. each staged file is renamed onto its place in the target (``rename(2)`` replaces one file atomically);
4. the staging folder and its record are removed.

Only an import (:func:`write_all`, which first recovers) and ``prompt-composer import --recover``
(:func:`recover`) act on a staging folder found later, and only on one whose record matches it (same folder,
name, device, inode, owner and nonce): then step 3 is finished when ``COMMITTED`` is there (the write happened)
and the staging folder is deleted otherwise (it did not). So after a ``SIGKILL`` at any moment the folder, once
recovered, is the old one or the new one, never a mix. A staging folder without a matching record (one committed
to a repository) is never applied nor rolled back: it is refused, and :func:`discard` removes it when asked.
Commands that only read a folder look and report (:mod:`.journal_state`), never act.

Nothing here follows a symlink (:mod:`.nofollow`): a staging folder, its ``files``, or any part of a staged or
target path that is a symlink is refused, only regular files move, and every step runs on directory descriptors
opened inside the docs folder, so no file lands outside it. Targets are checked before the commit, so an import
whose file would land on a folder (or a symlink) fails with nothing written rather than committing a journal that
cannot complete. Why a journal rather than swapping the whole folder: docs/importing.md.

Concurrency: the writer holds an exclusive ``flock`` on the target folder itself for the whole write; recovery
takes it without waiting, so a staging folder of a write still running is never touched (the kernel drops
the lock of a killed process). SIGINT and SIGTERM are held back during steps 2–4 (milliseconds of renames), so
a signal there lets the write finish instead of leaving work for the next run.
"""

from __future__ import annotations

import fcntl
import logging
import os
import secrets
import shutil
import signal
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import ImporterError
from . import journal_records
from .journal_records import Record
from .journal_state import (
    COMMITTED,
    CREATED,
    FILES,
    NONCE,
    STAGING_PREFIX,
    marker,
    opened_dir_following,
    ours,
    real_folder,
    recover_command,
    staged,
    staging_names,
)
from .nofollow import (
    UnsafePath,
    move_file,
    open_dir,
    opened_dir,
    parent_dir,
    remove_entry,
    split_relative,
    target_problem,
    write_new,
)

__all__ = ["COMMITTED", "CREATED", "STAGING_PREFIX", "Interrupted", "Recovery", "discard", "recover", "write_all"]

_log = logging.getLogger(__name__)
_LOCK_TRIES = 20  # recovery's lock, tried every 50 ms: a reader holds a shared lock for an instant (journal_state)


class Interrupted(BaseException):
    """Raised by the CLI's SIGINT/SIGTERM handler; a ``BaseException`` like ``KeyboardInterrupt``, so that
    nothing meant for errors swallows it. ``applied`` says whether the write it stopped had already committed."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.applied = False


# The signals delivered to this process as Interrupted (see interrupt()): an exception raised by a signal handler
# can land in code that swallows it (a __del__, a callback of the MCP client's event loop), so the import's own
# checkpoints look here too and stop at the next one.
_delivered: list[int] = []
_applied: list[Path] = []  # every folder write_all() applied in this process, in order


def interrupt(signum: int, *, raise_now: bool = True) -> None:
    """What the CLI's SIGINT/SIGTERM handler calls: remember the signal, and raise :class:`Interrupted` (unless
    ``raise_now`` is off: the caller stops the work another way, and :func:`interrupted_by` says why)."""
    _delivered.append(signum)
    if raise_now:
        raise Interrupted(signum)


def interrupted_by() -> int | None:
    """The first signal delivered through :func:`interrupt` and not yet cleared, if any."""
    return _delivered[0] if _delivered else None


def stop_if_interrupted() -> None:
    """Raise :class:`Interrupted` again if a signal came whose exception was swallowed (see ``_delivered``)."""
    if _delivered:
        raise Interrupted(_delivered[0])


def applied_writes() -> int:
    """How many writes :func:`write_all` has applied in this process (a signal after one is not "nothing
    written")."""
    return len(_applied)


def clear_interrupted() -> None:
    """Forget delivered signals (the CLI has reported them)."""
    _delivered.clear()


@dataclass(frozen=True)
class Recovery:
    """What :func:`recover` (or :func:`discard`) found and did about one interrupted write."""

    folder: Path
    staging: Path
    outcome: Literal["completed", "rolled back", "discarded"]
    files: int  # files moved into place (completed) or discarded (rolled back, discarded)
    committed: bool = False  # of a discarded one: it had committed, so what it had moved already stays

    def describe(self) -> str:
        if self.outcome == "completed":
            return (
                f"{self.folder}: an interrupted import had committed; completed it ({self.files} file(s) moved "
                f"into place); the folder holds the new import; removed {self.staging.name}"
            )
        if self.outcome == "discarded":
            kept = (
                "; it had committed, so the files it had moved already stay: the folder may hold a mix of old and "
                "new files"
                if self.committed
                else ""
            )
            return (
                f"{self.folder}: discarded {self.staging.name} without applying it ({self.files} staged file(s) "
                f"removed){kept}"
            )
        return (
            f"{self.folder}: an interrupted import had not committed; rolled it back ({self.files} staged file(s) "
            f"discarded); the folder is as it was before it; removed {self.staging.name}"
        )


def _no_check(doing: str) -> None:
    return None


@contextmanager
def _locked(folder_fd: int, *, wait: bool) -> Iterator[bool]:
    """An exclusive ``flock`` on the open folder; yields ``False`` when ``wait`` is off and another process keeps
    holding it (an import writing)."""
    if wait:
        fcntl.flock(folder_fd, fcntl.LOCK_EX)
    else:
        for attempt in range(_LOCK_TRIES):
            try:
                fcntl.flock(folder_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if attempt == _LOCK_TRIES - 1:
                    yield False
                    return
                time.sleep(0.05)
    try:
        yield True
    finally:
        fcntl.flock(folder_fd, fcntl.LOCK_UN)


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM kept pending (not lost) until the block ends; their handlers run right after it."""
    held = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _foreign(folder: Path, name: str, reason: str) -> ImporterError:
    return ImporterError(
        f"{folder / name}: an interrupted import's staging folder that prompt-composer has no record of writing "
        f"here ({reason}), e.g. one committed to a repository: it is never applied nor rolled back, and nothing "
        f"was changed; inspect it and delete it, or run `{recover_command(folder, discard=True)}` to delete only "
        "that staging folder"
    )


def _blocked(folder: Path, name: str, problem: str) -> ImporterError:
    return ImporterError(
        f"{folder}: the interrupted import in {name} cannot be completed: {problem}; nothing was moved. Move that "
        f"away and run `{recover_command(folder)}`, or give the import up with "
        f"`{recover_command(folder, discard=True)}` (the files it had moved already stay)"
    )


def _is_empty(dir_fd: int) -> bool:
    with os.scandir(dir_fd) as entries:
        return next(entries, None) is None


def _recover_locked(folder: Path, folder_fd: int, *, keep_folder: bool = False) -> list[Recovery]:
    """Every journal of the (locked) folder checked first, then acted on: one that is not this tool's, or that
    cannot complete, stops everything before anything changes. ``keep_folder``: a write is about to go into the
    folder, so it stays even when the rolled-back write had created it."""
    plans: list[tuple[str, int, bool, list[tuple[str, ...]]]] = []
    with ExitStack() as stack:
        for name in staging_names(folder_fd):
            try:
                staging_fd = open_dir(name, folder_fd)
            except UnsafePath as exc:
                raise _foreign(folder, name, exc.reason) from None
            except FileNotFoundError:
                continue
            stack.callback(os.close, staging_fd)
            # An empty one is a write killed between making it and recording it: nothing in it to apply or keep.
            if not ours(folder, name, staging_fd) and not _is_empty(staging_fd):
                raise _foreign(folder, name, f"no matching record in {journal_records.journals_dir()}")
            committed = marker(staging_fd, COMMITTED)
            if committed is None:
                raise _foreign(folder, name, f"its {COMMITTED} is not a regular file")
            try:
                files = staged(staging_fd)
            except UnsafePath as exc:
                raise _foreign(folder, name, f"{exc.relative}: {exc.reason}") from None
            for parts in files if committed else ():
                problem = target_problem(folder_fd, parts)
                if problem:
                    raise _blocked(folder, name, problem)
            plans.append((name, staging_fd, committed, files))
        done: list[Recovery] = []
        created = False
        for name, staging_fd, committed, files in plans:
            if committed:
                with opened_dir(FILES, staging_fd) as files_fd:
                    for parts in files:
                        move_file(files_fd, parts, folder_fd)
                done.append(Recovery(folder, folder / name, "completed", len(files)))
            else:
                created = created or marker(staging_fd, CREATED) is True
                done.append(Recovery(folder, folder / name, "rolled back", len(files)))
            remove_entry(name, folder_fd)
            journal_records.forget(real_folder(folder), name)
    if created and not keep_folder and _is_empty(folder_fd):
        folder.rmdir()  # the interrupted write had created it: "as it was" is no folder
    for recovery in done:
        _log.info("%s", recovery.describe())  # the CLI prints what recover() returns
    return done


def recover(folder: str | Path) -> list[Recovery]:
    """Finish or undo every interrupted write of this tool into ``folder`` (see the module docstring), and say
    what was done. A staging folder this tool has no record of writing is an :class:`ImporterError` (nothing is
    changed): inspect it, or :func:`discard` it.

    A write still running in another process (it holds the folder's lock) is left alone, and so is a folder
    that does not exist or is not a directory. Safe to call on any folder, any number of times.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    try:
        with opened_dir_following(folder) as folder_fd:
            if not staging_names(folder_fd):
                return []
            with _locked(folder_fd, wait=False) as mine:
                return _recover_locked(folder, folder_fd) if mine else []
    except (OSError, UnsafePath) as exc:  # a read-only folder, a full disk: the folder may hold a mix, so say so
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise ImporterError(
            f"{folder}: an interrupted import is left in it and could not be completed or undone: {reason}"
        ) from None


def discard(folder: str | Path) -> list[Recovery]:
    """Remove every staging folder of ``folder`` without applying it, whoever wrote it: a staging folder is
    deleted without following a symlink inside it, and one that is a symlink loses only the link. What an import
    that had committed already moved stays (the report says so)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ImporterError(f"{folder}: no such docs folder")
    done: list[Recovery] = []
    try:
        with opened_dir_following(folder) as folder_fd, _locked(folder_fd, wait=False) as mine:
            if not mine:
                raise ImporterError(f"{folder}: an import is writing into it now; nothing was discarded")
            for name in staging_names(folder_fd):
                files, committed, mine = 0, False, False
                with suppress(UnsafePath, OSError), opened_dir(name, folder_fd) as staging_fd:
                    mine = ours(folder, name, staging_fd)
                    committed = marker(staging_fd, COMMITTED) is True
                    files = len(staged(staging_fd))
                remove_entry(name, folder_fd)
                if mine:
                    journal_records.forget(real_folder(folder), name)
                # A mix is possible only when an import of ours had committed; a foreign one moved nothing.
                done.append(Recovery(folder, folder / name, "discarded", files, committed and mine))
    except OSError as exc:
        raise ImporterError(f"{folder}: could not discard the staging folders: {exc.strerror or exc}") from None
    return done


def write_all(folder: Path, files: Mapping[str, str], *, check: Callable[[str], None] = _no_check) -> list[Recovery]:
    """Write ``files`` (relative path → text) into ``folder`` (created if missing) all at once; return what was
    recovered first from an earlier interrupted write.

    ``check`` (a deadline's) is called before each file is staged and once more before the commit: if it raises,
    or any exception or signal stops the write before the commit, the staging folder is removed (and ``folder``
    too when this call created it) and nothing has been written. A path that would land on a folder or a
    symlink, or leave the folder, is an :class:`ImporterError` before anything is staged.
    """
    try:
        paths = {relative: split_relative(relative) for relative in files}
    except UnsafePath as exc:
        raise ImporterError(f"{folder}: cannot write {exc.relative!r}: {exc.reason}; nothing was written") from None
    created = not os.path.lexists(folder)
    try:
        if created:
            folder.mkdir(parents=True)
        folder_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ImporterError(f"{folder}: cannot write the docs folder: {exc.strerror or exc}") from None
    real = real_folder(folder)
    name: str | None = None
    committed = applied = False
    try:
        with ExitStack() as stack, _locked(folder_fd, wait=True):
            recovered = _recover_locked(folder, folder_fd, keep_folder=True)
            for parts in paths.values():
                problem = target_problem(folder_fd, parts)
                if problem:
                    raise ImporterError(f"{folder}: cannot write there: {problem}; nothing was written")
            name = f"{STAGING_PREFIX}{secrets.token_hex(4)}"
            os.mkdir(name, 0o700, dir_fd=folder_fd)
            staging_fd = open_dir(name, folder_fd)
            stack.callback(os.close, staging_fd)
            info = os.fstat(staging_fd)
            nonce = journal_records.new_nonce()
            journal_records.save(Record(real, name, info.st_dev, info.st_ino, info.st_uid, nonce))
            write_new(NONCE, staging_fd, nonce.encode(), 0o600)
            if created:
                write_new(CREATED, staging_fd, b"")
            os.mkdir(FILES, 0o700, dir_fd=staging_fd)
            files_fd = open_dir(FILES, staging_fd)
            stack.callback(os.close, files_fd)
            for index, (relative, text) in enumerate(files.items()):
                stop_if_interrupted()
                check(f"writing the files ({index:,} of {len(files):,} staged)")
                parent = parent_dir(files_fd, paths[relative], create=True)
                assert parent is not None
                try:
                    write_new(paths[relative][-1], parent, text.encode("utf-8"))
                finally:
                    os.close(parent)
            check("moving the files into place")
            stop_if_interrupted()
            try:
                with _signals_held():
                    write_new(COMMITTED, staging_fd, b"")
                    committed = True
                    for parts in paths.values():
                        move_file(files_fd, parts, folder_fd)
                    applied = True
                    _applied.append(folder)
                    remove_entry(name, folder_fd)
                    journal_records.forget(real, name)
            except Interrupted as exc:  # delivered as the signals are let through again, so after the write
                exc.applied = applied
                raise
        return recovered
    except BaseException as exc:
        # Before the commit: undo. After it, a failed rename (a full disk) leaves the committed staging folder
        # for `import --recover` to finish; removing it would leave the mix this module exists to prevent.
        if not committed:
            if name is not None:
                with suppress(OSError):
                    remove_entry(name, folder_fd)
                journal_records.forget(real, name)
            if created:
                shutil.rmtree(folder, ignore_errors=True)
        if isinstance(exc, OSError | UnsafePath):
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            if committed:
                raise ImporterError(
                    f"{folder}: the import committed but could not be completed: {reason}; run "
                    f"`{recover_command(folder)}` to finish it"
                ) from None
            raise ImporterError(f"{folder}: cannot write the import: {reason}; nothing was written") from None
        raise
    finally:
        os.close(folder_fd)
