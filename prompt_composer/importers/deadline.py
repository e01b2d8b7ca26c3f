"""The time an import must be done by (``import mcp --timeout``), checked between its steps.

``--timeout`` bounds the whole import: starting the server and listing its tools (the MCP client's own timeout
gets what is left), then drafting each doc, scanning each, writing each file into the staging folder, and the
moment before the files are moved into place. Past the deadline the import stops at the next check with one
:class:`~prompt_composer.errors.ImporterError` line; nothing has been written then (the staging folder is
removed), since the last check comes before the first file is moved into the output folder. Every step between
two checks is bounded too: one tool's description is cut at
:data:`~prompt_composer.importers.tool_list.MAX_DESCRIPTION_CHARS` characters and its schema at
:data:`~prompt_composer.importers.tool_list.MAX_SCHEMA_BYTES` bytes.
"""

from __future__ import annotations

import time

from ..errors import ImporterError
from ..shared.journal import stop_if_interrupted


class Deadline:
    """``seconds`` from now (``None``: no deadline); ``what`` names the import in the error (``MCP server 'x'``)."""

    def __init__(self, seconds: float | None, *, what: str = "the import") -> None:
        self.seconds = seconds
        self.what = what
        self._end = None if seconds is None else time.monotonic() + seconds

    def remaining(self) -> float | None:
        """Seconds left (never below 0), or ``None`` without a deadline."""
        return None if self._end is None else max(0.0, self._end - time.monotonic())

    def check(self, doing: str) -> None:
        """Raise the one-line timeout error, saying what the import was ``doing``, once the deadline has passed."""
        stop_if_interrupted()  # a SIGINT/SIGTERM whose exception was swallowed stops the import here
        if self._end is not None and time.monotonic() > self._end:
            assert self.seconds is not None
            raise ImporterError(
                f"{self.what}: the import did not finish within {self.seconds:g} s (--timeout); it stopped while "
                f"{doing}; nothing written"
            )


NO_DEADLINE = Deadline(None)
