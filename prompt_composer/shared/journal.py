"""Writing many files into a folder all at once, so that a process killed at any moment leaves it old or new.

A write goes through a staging folder *inside* the target folder, ``<folder>/.import-staging-XXXXXXXX/``:

1. every file is written under ``files/`` in the staging folder (the target is untouched so far);
2. the marker ``COMMITTED`` is created in the staging folder: this is the commit point;
3. each staged file is renamed onto its place in the target (``rename(2)`` replaces one file atomically);
4. the staging folder is removed.

Whoever finds a staging folder later (the next import, or any CLI command that loads the folder:
:func:`recover`) finishes step 3 when ``COMMITTED`` is there (the write happened) and otherwise deletes the
staging folder (it did not). So after a ``SIGKILL`` at any moment the folder, once recovered, is the old one or
the new one, never a mix. Why a journal rather than swapping the whole folder: docs/importing.md.

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
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import ImporterError

STAGING_PREFIX = ".import-staging-"  # not ".import-": .import-state.json lives beside it
COMMITTED = "COMMITTED"
# Present in the staging folder when the write created the target folder: rolling back removes it again.
CREATED = "CREATED"
_FILES = "files"

_log = logging.getLogger(__name__)


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
    """What :func:`recover` found and did about one interrupted write."""

    folder: Path
    staging: Path
    outcome: Literal["completed", "rolled back"]
    files: int  # files moved into place (completed) or discarded (rolled back)

    def describe(self) -> str:
        if self.outcome == "completed":
            return (
                f"{self.folder}: an interrupted import had committed; completed it ({self.files} file(s) moved "
                f"into place); the folder holds the new import; removed {self.staging.name}"
            )
        return (
            f"{self.folder}: an interrupted import had not committed; rolled it back ({self.files} staged file(s) "
            f"discarded); the folder is as it was before it; removed {self.staging.name}"
        )


def _no_check(doing: str) -> None:
    return None


@contextmanager
def _locked(folder: Path, *, wait: bool) -> Iterator[bool]:
    """An exclusive ``flock`` on ``folder`` (a directory fd); yields ``False`` when ``wait`` is off and another
    process holds it."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # closing the last fd releases the lock


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM kept pending (not lost) until the block ends; their handlers run right after it."""
    held = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _staged_files(staging: Path) -> list[Path]:
    root = staging / _FILES
    if not root.is_dir():
        return []
    return sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file() or p.is_symlink())


def _roll_forward(folder: Path, staging: Path) -> int:
    """Step 3, idempotent: what is still staged is moved into place (what was moved already is not staged)."""
    moved = 0
    for relative in _staged_files(staging):
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / _FILES / relative, target)
        moved += 1
    return moved


def _staging_folders(folder: Path) -> list[Path]:
    try:
        children = list(folder.iterdir())
    except FileNotFoundError:
        return []
    return sorted(p for p in children if p.name.startswith(STAGING_PREFIX) and p.is_dir() and not p.is_symlink())


def _recover_locked(folder: Path) -> list[Recovery]:
    done: list[Recovery] = []
    created = False
    for staging in _staging_folders(folder):
        if (staging / COMMITTED).exists():
            moved = _roll_forward(folder, staging)
            done.append(Recovery(folder, staging, "completed", moved))
        else:
            created = created or (staging / CREATED).exists()
            done.append(Recovery(folder, staging, "rolled back", len(_staged_files(staging))))
        shutil.rmtree(staging)
    if created and not any(folder.iterdir()):
        folder.rmdir()  # the interrupted write had created it: "as it was" is no folder
    for recovery in done:
        _log.info("%s", recovery.describe())  # the CLI prints what recover() returns
    return done


def recover(folder: str | Path) -> list[Recovery]:
    """Finish or undo every interrupted write into ``folder`` (see the module docstring), and say what was done.

    A write still running in another process (it holds the folder's lock) is left alone, and so is a folder
    that does not exist or is not a directory. Safe to call on any folder, any number of times.
    """
    folder = Path(folder)
    if not folder.is_dir() or not _staging_folders(folder):
        return []
    try:
        with _locked(folder, wait=False) as mine:
            if not mine:
                return []
            return _recover_locked(folder)
    except OSError as exc:  # a read-only folder, a full disk: the folder may hold a mix, so say so and stop
        raise ImporterError(
            f"{folder}: an interrupted import is left in it and could not be completed or undone: {exc}"
        ) from None


def write_all(folder: Path, files: Mapping[str, str], *, check: Callable[[str], None] = _no_check) -> list[Recovery]:
    """Write ``files`` (relative path → text) into ``folder`` (created if missing) all at once; return what was
    recovered first from an earlier interrupted write.

    ``check`` (a deadline's) is called before each file is staged and once more before the commit: if it raises,
    or any exception or signal stops the write before the commit, the staging folder is removed (and ``folder``
    too when this call created it) and nothing has been written.
    """
    created = not folder.exists()
    if created:
        folder.mkdir(parents=True)
    staging: Path | None = None
    committed = applied = False
    try:
        with _locked(folder, wait=True):
            recovered = _recover_locked(folder)
            staging = folder / f"{STAGING_PREFIX}{secrets.token_hex(4)}"
            staging.mkdir()
            if created:
                (staging / CREATED).touch()
            for index, (relative, text) in enumerate(files.items()):
                stop_if_interrupted()
                check(f"writing the files ({index:,} of {len(files):,} staged)")
                path = staging / _FILES / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
            check("moving the files into place")
            stop_if_interrupted()
            try:
                with _signals_held():
                    (staging / COMMITTED).touch()
                    committed = True
                    _roll_forward(folder, staging)
                    applied = True
                    _applied.append(folder)
                    shutil.rmtree(staging)
            except Interrupted as exc:  # delivered as the signals are let through again, so after the write
                exc.applied = applied
                raise
        return recovered
    except BaseException:
        # Before the commit: undo. After it, a failed rename (a full disk) leaves the committed staging folder
        # for the next recover() to finish; removing it would leave the mix this module exists to prevent.
        if not committed:
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)
            if created:
                shutil.rmtree(folder, ignore_errors=True)
        raise
