"""Progress of long work (bench, eval, tune, model setup) on a stream the caller owns, usually stderr.

On a terminal: one bar redrawn in place, with counts and the time left. Elsewhere (a CI log, a pipe): no bar; only
the plain lines the caller chose to print (:meth:`Progress.line`), so logs stay clean. The library never prints:
only the CLI makes a :class:`Progress`, on ``sys.stderr``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

BAR_WIDTH = 24
_REDRAW_S = 0.1  # at most ten redraws a second: a fast loop must not spend its time on the terminal
CLEAR_LINE = "\r\x1b[K"  # back to the line's start, then erase it (the CLI's stderr lets this one through)


def format_duration(seconds: float) -> str:
    """``75`` → ``1:15``; ``3725`` → ``1:02:05``."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def render_bar(label: str, done: int, total: int | None, elapsed: float, note: str = "") -> str:
    """``label [#######-----------------] 12/40 30% 0:05 left  note``; without a total, the count and the time so
    far. The time left assumes the rest goes at the pace so far."""
    if total:
        share = min(1.0, done / total)
        filled = round(BAR_WIDTH * share)
        left = f"{format_duration(elapsed / done * (total - done))} left" if done else "--:-- left"
        text = f"{label} [{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {done}/{total} {share:.0%} {left}"
    else:
        text = f"{label} {done} in {format_duration(elapsed)}"
    return f"{text}  {note}" if note else text


class Progress:
    """Counts toward ``total`` (``None``: unknown) on ``stream``. ``interactive`` (default: whether ``stream`` is a
    terminal) chooses the bar; ``clock`` is for tests that need a known time."""

    def __init__(
        self,
        label: str,
        total: int | None,
        stream: TextIO,
        *,
        interactive: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.stream = stream
        self.interactive = stream.isatty() if interactive is None else interactive
        self._clock = clock
        self._start = clock()
        self._drawn_at: float | None = None
        self._shown = False  # a bar is on the screen's last line
        self._note = ""

    def advance(self, n: int = 1, note: str = "") -> None:
        """``n`` more done; ``note`` (the item just done) shows beside the bar."""
        self.done += n
        if note:
            self._note = note
        self._draw(force=self.total is not None and self.done >= self.total)

    def step(self, text: str) -> None:
        """One item done, described by ``text``: beside the bar on a terminal, a plain line elsewhere."""
        if self.interactive:
            self.advance(note=text)
        else:
            self.done += 1
            self.line(text)

    def line(self, text: str) -> None:
        """A plain line, printed whether or not a bar is shown (above it, on a terminal)."""
        if self._shown:
            self.stream.write(CLEAR_LINE)
            self._shown = False
        self.stream.write(text + "\n")
        self.stream.flush()
        if self.interactive and self.done:
            self._draw(force=True)

    def close(self) -> None:
        """End the bar's line (the bar stays, finished); nothing when none was drawn."""
        if self._shown:
            self._draw(force=True)
            self.stream.write("\n")
            self.stream.flush()
            self._shown = False

    def _draw(self, *, force: bool) -> None:
        if not self.interactive:
            return
        now = self._clock()
        if not force and self._drawn_at is not None and now - self._drawn_at < _REDRAW_S:
            return
        self._drawn_at = now
        bar = render_bar(self.label, self.done, self.total, now - self._start, self._note)
        self.stream.write(CLEAR_LINE + bar[: self._columns() - 1])
        self.stream.flush()
        self._shown = True

    def _columns(self) -> int:
        """The terminal's width: a bar longer than the line would wrap, and ``\r`` would redraw only its tail."""
        try:
            return os.get_terminal_size(self.stream.fileno()).columns or 80
        except (OSError, ValueError, AttributeError):
            return 80

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
