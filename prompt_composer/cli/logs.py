"""The command's logging: the ``prompt_composer`` logger at the level -v/-q ask for, written to stderr, for one run
(imported only when -v, -q or ``--format github`` asks for it)."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["logging_to_stderr"]


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a record comes, as ``print(..., file=sys.stderr)`` does."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


class _Levelled(logging.Formatter):
    """``error: …`` and ``warning: …`` as the command's own lines say it, so ``--format github`` makes them error
    and warning annotations; below warning, ``INFO name: …``."""

    def format(self, record: logging.LogRecord) -> str:
        message = super().format(record)
        if record.levelno >= logging.ERROR:
            return f"error: {message}"
        if record.levelno >= logging.WARNING:
            return f"warning: {message}"
        return f"{record.levelname} {record.name}: {message}"


@contextlib.contextmanager
def logging_to_stderr(verbose: int, quiet: int, *, github: bool = False) -> Iterator[None]:
    """The ``prompt_composer`` logger at the level -v/-q ask for, written to stderr, for one run of the command.
    Without either, logging is left as it is (warnings reach stderr through Python's last-resort handler), except
    under ``--format github``, where records are written as the command's own lines (:class:`_Levelled`). Only the
    command does this: the library only logs. Scoped, so a caller running the CLI in-process keeps its own
    logging afterwards."""
    if not verbose and not quiet and not github:
        yield
        return
    levels = (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL + 1)
    logger = logging.getLogger("prompt_composer")
    before = logger.level
    handler = _Stderr()
    handler.setFormatter(_Levelled() if github else logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    if verbose or quiet:
        logger.setLevel(levels[min(max(2 + quiet - verbose, 0), len(levels) - 1)])
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(before)
