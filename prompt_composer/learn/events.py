"""The event log: what the tool loop and the MCP gateway did, one event at a time, to a sink the user chooses.

The loop (``wrap(..., events=log)``, both providers) and the gateway (``Gateway(..., events=log)``) hand each event
to an :class:`EventLog`: a bounded queue drained by one background thread that calls the sink. Handing an event
over never waits on the sink and never raises: when the queue is full, or the sink raises, the event is dropped
and counted (:attr:`EventLog.drops`); a sink that blocks forever fills the queue, and from then on events are
dropped. :meth:`EventLog.close` waits at most ``close_timeout`` seconds for the queue to drain, counts what is left
as dropped, and, when anything was dropped and the sink still answers, writes a last ``dropped`` event saying how
much. So a slow or failing sink can lose events, but it never slows or breaks the loop.

Sinks: :class:`JsonlSink` (one JSON object per line, appended to a file: ``run --log FILE``, ``serve --log FILE``),
:class:`~.otel.OtelSink` (OpenTelemetry spans and metrics after the GenAI semantic conventions; the ``otel`` extra),
or anything with ``write(event)`` and ``close()`` (:class:`Sink`).

Content: by default no event holds tool input, tool output or search query text, only names, counts, outcomes,
token usage and timings. ``EventLog(sink, include_content=True)`` (``run --log-content``) adds ``input`` and
``output`` to ``tool_call`` events and ``query`` to ``search`` events. Learning search phrasings from use (which
queries led to a tool's successful use) needs the queries, so it needs a log written with content.

JSONL format, version 1
=======================

One JSON object per line, UTF-8, appended in the order the events were emitted (a log may hold many runs and
tasks; group by ``task``). A reader skips lines it cannot parse (a run killed mid-write may leave a torn last line)
and events whose ``v`` it does not know, and ignores keys and ``event`` kinds it does not know: later versions
only add. A key listed below holds what it says or ``null``; anything else (``"dropped": "abc"``, a count that is
``NaN`` or negative) is a damaged log, an error naming its line (:func:`read_events`). Times are seconds
(floats); ``ts`` is Unix time when the event was emitted, i.e. when what it describes had ended.

Every event except ``dropped`` has these keys:

=============== ================================================================================================
``v``           ``1``, the format version
``ts``          Unix time, seconds
``event``       ``request``, ``tool_call``, ``fetch``, ``search``, ``refusal``, ``promotion`` or ``list``
``task``        the task id (``wrap(task_id=...)``; the gateway: ``mcp-<12 hex>``, one per MCP session)
``mode``        the mode slug
``fingerprint`` the registry's fingerprint (a live registry's version the event was decided on)
``provider``    ``anthropic`` or ``openai`` (the loop's wire format), ``mcp`` (the gateway)
``iteration``   the loop's request number, from 1 (loop events only; the gateway has no requests)
=============== ================================================================================================

The kinds and their own keys:

``request``: one model API request of the loop.
    ``model`` (as requested), ``stream`` (bool), ``policy`` (promotion policy in force), ``outcome`` (``ok`` or
    ``error``; ``error``: the SDK error's class name, e.g. ``RateLimitError``, after the SDK's own retries),
    ``latency_s`` (request sent → whole response), ``first_token_s`` (to the first streamed content; ``null``
    unless streamed), ``usage`` (``input_tokens`` uncached, ``output_tokens``, ``cache_creation_input_tokens``,
    ``cache_read_input_tokens``: the Anthropic names whatever the provider, zeros on error), ``stop_reason``,
    ``composed_tokens`` (the composed system prompt + tools, counted by the composer), ``full`` and ``brief``
    (the numbers of composed tools sent in full and brief).
``tool_call``: one call the loop or the gateway answered, whatever happened to it.
    ``call_id`` (the API's id; ``text_<iteration>_<n>`` for text-style calls; ``null`` in the gateway: MCP calls
    carry none), ``tool`` (the name called, ``""`` for an unreadable text-style call; through ``call_tool``, the
    inner tool, except for a ``call_tool`` call refused before it was unwrapped, which stays ``call_tool``),
    ``via`` (``call_tool`` or ``null``), ``outcome``: ``ok`` (run, or answered by the loop itself: fetch,
    tool_search), ``error`` (the executor raised, the call could not be read, a tool_search without a query),
    ``refused`` (outside the mode, unknown, no executor, a path outside the mode's file restrictions, arguments
    that fail the tool's schema, a refused fetch; a ``refusal`` event says why) or ``denied`` (``approve`` said
    no). ``duration_s`` (the
    executor's time; 0 when none ran), ``listed`` (``full`` or ``brief``: how the tool was in the prompt the
    call was made from; ``null`` for tools not in it), ``expanded`` (bool: the inline policy appended its full
    text to this result). With content: ``input`` (object) and ``output`` (the text the model got back).
``fetch``: one ``fetch_tool_description`` call (besides its ``tool_call``).
    ``call_id``, ``tool`` (the tool asked for; ``""`` when the call named none), ``outcome`` (``ok`` or ``refused``).
``search``: one ``tool_search`` that ran (besides its ``tool_call``).
    ``call_id``, ``hits`` (names, best first), ``hit_count``, ``total`` (every tool that matched), ``miss`` (bool:
    nothing matched well), ``confidence``, ``strategy``, ``activated`` (the hits that joined the task's tools). With
    content: ``query``. ``strategy`` is ``keyword``, ``semantic`` or ``hybrid``.
``refusal``: one refused access, to a call or to a fetch.
    ``call_id``, ``tool`` (the tool refused: the name called, the inner tool of ``call_tool``, or the tool a fetch
    asked for), ``via`` (``call_tool``, ``fetch`` or ``null``), ``reason`` (the product's own words, no tool text).
``promotion``: a tool's text entering the prompt or the conversation.
    ``tool``, ``kind``: ``fifo`` (an executed call brought the tool into the mode's recent-use FIFO view: under
    ``every_turn`` the next request carries its full text), ``inline`` (its full text was appended to this result)
    or ``discovered`` (tool_search activated it for the rest of the task).
``list``: the gateway answered ``tools/list``.
    ``tools`` (number listed), ``full`` (the names listed in full).

Order: a request's event comes before the events of the calls its response asked for, and a call's ``fetch``,
``search``, ``refusal`` and ``promotion`` events come before its ``tool_call``. A task's tool-use sequence (what
``replay`` and ``tune`` replay) is its ``tool_call`` events with ``outcome: "ok"``, in file order, leaving out
the tools the loop answers itself (``fetch_tool_description``, ``tool_search``); a brief tool the model fetched
first shows as a ``fetch`` event before its use.

``dropped``: written last by :meth:`EventLog.close` when events were lost and the sink still answers: ``v``,
``ts``, ``event``, ``dropped`` (total), ``queue_full``, ``sink_errors``, ``after_close``. A blocked sink gets no
such line; the counts are on :attr:`EventLog.drops` (``run`` prints them on stderr).
"""

from __future__ import annotations

import contextlib
import copy
import errno
import json
import logging
import math
import os
import re
import stat
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Protocol, Self, runtime_checkable

from ..shared.files import json_lines, line_error

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
EVENT_KINDS = ("request", "tool_call", "fetch", "search", "preselect", "refusal", "promotion", "list", "dropped")
OUTCOMES = ("ok", "error", "refused", "denied")
DEFAULT_MAX_QUEUE = 10_000
DEFAULT_CLOSE_TIMEOUT = 5.0
_FIRST_LINE_BYTES = 64 * 1024  # what is read of a log's first line to know it for one
_LINE_START = re.compile(rb'\{"v":\d+,"ts":[0-9.eE+-]+,"event":"[a-z_]+"')  # how JsonlSink starts every line


@runtime_checkable
class Sink(Protocol):
    """Where events go. Called from the event log's own thread, one event at a time, never concurrently."""

    def write(self, event: Mapping[str, Any]) -> None: ...

    def close(self) -> None: ...


class JsonlSink:
    """Appends each event as one JSON line to a file (created if missing) or to an open text stream.

    Appending lets several runs share one log: a file is opened for appending and each line goes out in one
    ``write`` of its own, unbuffered, so lines of several writers do not mix and a crash loses at most the line
    being written. A line the file does not take (a full disk, ``/dev/full``, an I/O error) raises ``OSError``
    and is gone: nothing is kept to come out later, so the event log's drop count is what the file lacks; a line
    cut short by such an error is ended before the next one, so it costs no other line. Opening does not wait for
    a reader on a FIFO (one without a reader is an ``OSError``). A stream passed in is flushed, never closed."""

    def __init__(self, target: str | Path | IO[str]) -> None:
        self._stream: IO[str] | None = None
        self._fd = -1
        self._torn = False  # the last line was cut short: the next one starts on a new line
        if isinstance(target, str | Path):
            self._fd = _open_append(target)
        else:
            self._stream = target

    def write(self, event: Mapping[str, Any]) -> None:
        line = json.dumps(event, ensure_ascii=False, default=str, separators=(",", ":")) + "\n"
        if self._stream is not None:
            self._stream.write(line)
            self._stream.flush()
            return
        payload = ("\n" if self._torn else "").encode() + line.encode("utf-8", "backslashreplace")
        data = memoryview(payload)
        while data:
            try:
                written = os.write(self._fd, data)
            except OSError:
                if len(data) < len(payload):  # part of it is in the file already: a torn line
                    self._torn = True
                raise
            data = data[written:]
        self._torn = False

    def close(self) -> None:
        if self._stream is not None:
            self._stream.flush()
        elif self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)


def _open_append(path: str | Path) -> int:
    """A descriptor appending to ``path``, opened without waiting for a FIFO's reader.

    Appending changes a file, so only to one that is the tool's: a file created here, or a regular file that is
    empty or starts with an event line (``{"v": …, "event": …}``); never through a symlink (``O_NOFOLLOW``). A
    FIFO or a device (``/dev/full``) takes the lines as a stream. Anything else is an ``OSError`` saying why, so
    a log setting pointed at ``~/.bashrc`` writes nothing."""
    flags = os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0) | os.O_NOFOLLOW
    nonblock = getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | nonblock | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        try:
            fd = os.open(path, flags | nonblock)
        except OSError as exc:
            if exc.errno == errno.ELOOP and os.path.islink(path):
                raise OSError(
                    f"{path} is a symlink: an event log is never appended to through one (name the file itself)"
                ) from None
            raise
        try:
            _check_appendable(path, fd)
        except BaseException:
            os.close(fd)
            raise
    if nonblock:  # only the open must not wait: writes to a pipe wait for room (on the log's own thread)
        os.set_blocking(fd, True)
    return fd


def _check_appendable(path: str | Path, fd: int) -> None:
    """Refuse (``OSError``) a regular file that holds something other than an event log (see :func:`_open_append`)."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
        return
    reader = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        again = os.fstat(reader)
        if (again.st_dev, again.st_ino) != (info.st_dev, info.st_ino):
            raise OSError(f"{path} changed while it was opened")
        head = os.pread(reader, _FIRST_LINE_BYTES, 0)
    finally:
        os.close(reader)
    first, newline, _ = head.partition(b"\n")
    try:
        event = json.loads(first) if newline or len(head) < _FIRST_LINE_BYTES else None
    except (ValueError, RecursionError):
        event = None
    if event is None and not newline:  # a first line longer than what is read: this writer's own start of line
        event = {"v": 1, "event": ""} if _LINE_START.match(first) else None
    if not (isinstance(event, dict) and isinstance(event.get("v"), int) and isinstance(event.get("event"), str)):
        raise OSError(
            f"{path} exists and is not an event log (its first line is not an event): the log is appended only to "
            "a file it created or to an event log"
        )


@dataclass(frozen=True)
class DropCounts:
    """Events lost, by cause: the queue was full (the sink is slower than the loop, or blocked), the sink raised,
    the event came after :meth:`EventLog.close`, or it was still queued when ``close`` gave up waiting."""

    queue_full: int = 0
    sink_errors: int = 0
    after_close: int = 0
    unwritten: int = 0

    @property
    def total(self) -> int:
        return self.queue_full + self.sink_errors + self.after_close + self.unwritten

    def as_dict(self) -> dict[str, int]:
        return {
            "dropped": self.total,
            "queue_full": self.queue_full,
            "sink_errors": self.sink_errors,
            "after_close": self.after_close,
            "unwritten": self.unwritten,
        }


class EventLog:
    """A bounded, non-blocking queue in front of a :class:`Sink`, drained by one daemon thread.

    ``sink`` may be a path (a :class:`JsonlSink` is opened on it). :meth:`emit` never blocks and never raises;
    what it cannot hand over is dropped and counted. Close it (or use it as a context manager) to flush: the
    thread is a daemon, so an unclosed log loses what is still queued when the process exits.

    The first time the sink raises (a full disk, ``/dev/full``, a lost connection), the log says so once:
    ``on_sink_error(exc)`` is called (on the log's thread), or without it a warning goes to the
    ``prompt_composer.learn.events`` logger (stderr, when logging is not set up). Later failures are only
    counted; :attr:`sink_error` keeps the first."""

    def __init__(
        self,
        sink: Sink | str | Path,
        *,
        include_content: bool = False,
        max_queue: int = DEFAULT_MAX_QUEUE,
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
        on_sink_error: Callable[[Exception], object] | None = None,
    ) -> None:
        if max_queue < 1:
            raise ValueError("max_queue must be at least 1")
        self.sink: Sink = JsonlSink(sink) if isinstance(sink, str | Path) else sink
        self.include_content = include_content
        self.max_queue = max_queue
        self.close_timeout = close_timeout
        self.on_sink_error = on_sink_error
        self.sink_error: Exception | None = None  # the sink's first failure (later ones are only counted)
        self._items: deque[dict[str, Any]] = deque()
        # One lock for the queue and the counts; the sink is always called outside it, so emit() never waits on it.
        self._cond = threading.Condition()
        self._closed = False
        self._abandoned = False  # close() gave up on a blocked sink: what it still finishes is not counted
        self._emitted = 0
        self._written = 0
        self._queue_full = 0
        self._sink_errors = 0
        self._after_close = 0
        self._unwritten = 0
        self._thread = threading.Thread(target=self._drain, name="prompt-composer-events", daemon=True)
        self._thread.start()

    # -- the producer side (the loop, the gateway) ---------------------------------------------------------

    def emit(self, kind: str, /, **fields: Any) -> None:
        """Queue one event: ``{"v", "ts", "event": kind, **fields}``. Never blocks, never raises."""
        try:
            if "input" in fields:  # the caller's object: written later, on another thread, so copy it now
                fields["input"] = copy.deepcopy(fields["input"])
            event = {"v": SCHEMA_VERSION, "ts": time.time(), "event": kind, **fields}
        except Exception:  # an input that cannot be copied: count it, never break the caller
            with self._cond:
                self._emitted += 1
                self._sink_errors += 1
            return
        with self._cond:
            self._emitted += 1
            if self._closed:
                self._after_close += 1
            elif len(self._items) >= self.max_queue:
                self._queue_full += 1
            else:
                self._items.append(event)
                self._cond.notify()

    # -- the consumer side (the log's thread) ---------------------------------------------------------------

    def _drain(self) -> None:
        while True:
            with self._cond:
                while not self._items and not self._closed:
                    self._cond.wait()
                if not self._items:
                    break
                event = self._items.popleft()
            ok = self._write(event)
            with self._cond:
                if self._abandoned:
                    continue
                if ok:
                    self._written += 1
                else:
                    self._sink_errors += 1
        with self._cond:
            summary = None if self._abandoned else self._drops_locked()
        if summary is not None and summary.total:
            record = {"v": SCHEMA_VERSION, "ts": time.time(), "event": "dropped", **summary.as_dict()}
            del record["unwritten"]  # always 0 here: the queue drained
            self._write(record)
        with contextlib.suppress(Exception):
            self.sink.close()

    def _write(self, event: Mapping[str, Any]) -> bool:
        try:
            self.sink.write(event)
        except Exception as exc:
            if self.sink_error is None:  # only this thread writes: no lock needed
                self.sink_error = exc.with_traceback(None)  # not the frames (they hold the event)
                self._warn(exc)
            return False
        return True

    def _warn(self, exc: Exception) -> None:
        """Say once that the sink failed: the caller's ``on_sink_error``, else a logged warning."""
        try:
            if self.on_sink_error is not None:
                self.on_sink_error(exc)
            else:
                log.warning(
                    "event log: the sink failed (%s: %s); events it cannot take are dropped and counted",
                    type(exc).__name__,
                    exc,
                )
        except Exception:  # a failing report must not stop the log (and never reaches the loop)
            pass

    # -- closing and counts ----------------------------------------------------------------------------------

    def close(self, timeout: float | None = None) -> DropCounts:
        """Stop taking events, wait up to ``timeout`` (default ``close_timeout``) seconds for the queue to drain
        and the sink to close, and return what was dropped. Events still queued after that (a blocked sink) are
        dropped and counted as ``unwritten``. Safe to call again, e.g. to wait longer."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(self.close_timeout if timeout is None else timeout)
        if self._thread.is_alive():
            with self._cond:
                if not self._abandoned:
                    self._abandoned = True
                    # The queued events, and the one the blocked sink holds, will never be counted as written.
                    self._unwritten = self._emitted - self._counted_locked()
                    self._items.clear()
        return self.drops

    def _counted_locked(self) -> int:
        return self._written + self._queue_full + self._sink_errors + self._after_close

    def _drops_locked(self) -> DropCounts:
        return DropCounts(self._queue_full, self._sink_errors, self._after_close, self._unwritten)

    @property
    def drops(self) -> DropCounts:
        with self._cond:
            return self._drops_locked()

    @property
    def dropped(self) -> int:
        """Events lost so far, all causes."""
        return self.drops.total

    @property
    def emitted(self) -> int:
        """Events handed to :meth:`emit` (written, queued or dropped)."""
        with self._cond:
            return self._emitted

    @property
    def written(self) -> int:
        """Events the sink took without raising."""
        with self._cond:
            return self._written

    @property
    def closed(self) -> bool:
        with self._cond:
            return self._closed

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def read_events(paths: Iterable[str | Path]) -> tuple[list[dict[str, Any]], int]:
    """The events of one or more JSONL logs, in file order, and the number of lines skipped: not JSON (a torn
    last line), not an event, or of a later format version.

    An event of a known version whose documented field has the wrong shape (``"dropped": "abc"``, a token count
    that is ``NaN``, negative or past 2**53, an object where a name belongs) is not skipped: the log is damaged or
    was not written by us, and a count built on it would be wrong. It is an
    :class:`~prompt_composer.errors.InputFileError` naming ``path:line`` and the field (:func:`event_problem`)."""
    events: list[dict[str, Any]] = []
    skipped = 0
    for path in paths:
        for line in json_lines(path, what="event log", strict=False):
            event = line.value
            if (
                isinstance(event, dict)
                and isinstance(event.get("event"), str)
                and type(event.get("v")) is int
                and 1 <= event["v"] <= SCHEMA_VERSION
            ):
                problem = event_problem(event)
                if problem is not None:
                    raise line_error(path, line.number, f"event {event['event']!r}: {problem}")
                events.append(event)
            else:
                skipped += 1
    return events, skipped


# --- the fields of an event of format 1, as the module docstring lists them ------------------------------------
# Each kind: what each documented field must hold. Any field may be null (an older writer, a value unknown); keys
# not listed here are ignored, as later versions only add.

_MAX = 2**53  # counts and times past this are no log of ours (and would overflow a float's exact range)
_COUNT, _SECONDS, _NUMBER, _TEXT, _FLAG, _NAMES, _OBJECT = "count", "seconds", "number", "text", "flag", "names", "obj"
_WANTED = {
    _COUNT: "a whole number from 0 to 2**53",
    _SECONDS: "a number of seconds from 0 to 2**53",
    _NUMBER: "a finite number",
    _TEXT: "a string",
    _FLAG: "true or false",
    _NAMES: "a list of strings",
    _OBJECT: "an object",
}
_COMMON = {"ts": _SECONDS, "task": _TEXT, "mode": _TEXT, "fingerprint": _TEXT, "provider": _TEXT, "iteration": _COUNT}
_USAGE = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
_FIELDS: dict[str, dict[str, str]] = {
    "request": {
        "model": _TEXT, "stream": _FLAG, "policy": _TEXT, "outcome": _TEXT, "latency_s": _SECONDS,
        "first_token_s": _SECONDS, "usage": _OBJECT, "stop_reason": _TEXT, "composed_tokens": _COUNT,
        "full": _COUNT, "brief": _COUNT,
    },
    "tool_call": {
        "call_id": _TEXT, "tool": _TEXT, "via": _TEXT, "outcome": _TEXT, "duration_s": _SECONDS, "listed": _TEXT,
        "expanded": _FLAG, "input": _OBJECT, "output": _TEXT,
    },
    "fetch": {"call_id": _TEXT, "tool": _TEXT, "outcome": _TEXT},
    "search": {
        "call_id": _TEXT, "hits": _NAMES, "hit_count": _COUNT, "total": _COUNT, "miss": _FLAG,
        "confidence": _NUMBER, "strategy": _TEXT, "activated": _NAMES, "query": _TEXT,
    },
    "refusal": {"call_id": _TEXT, "tool": _TEXT, "via": _TEXT, "reason": _TEXT},
    "promotion": {"tool": _TEXT, "kind": _TEXT},
    "list": {"tools": _COUNT, "full": _NAMES},
    "preselect": {"tools": _NAMES, "confidence": _NUMBER, "query": _TEXT, "rewrite_s": _SECONDS, "rewritten": _FLAG},
    "dropped": {"dropped": _COUNT, "queue_full": _COUNT, "sink_errors": _COUNT, "after_close": _COUNT},
}  # fmt: skip


def _fits(value: Any, kind: str) -> bool:
    if value is None:
        return True
    if kind == _TEXT:
        return isinstance(value, str)
    if kind == _FLAG:
        return isinstance(value, bool)
    if kind == _NAMES:
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    if kind == _OBJECT:
        return isinstance(value, dict)
    if kind == _COUNT:
        return type(value) is int and 0 <= value <= _MAX
    if type(value) not in (int, float) or (isinstance(value, float) and not math.isfinite(value)):
        return False  # an int is compared as it is: 10**400 cannot become a float
    return bool(0 <= value <= _MAX if kind == _SECONDS else abs(value) <= _MAX)


def _described(value: Any) -> str:
    if isinstance(value, dict | list):
        return "an object" if isinstance(value, dict) else "a list"
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    text = json.dumps(value) if isinstance(value, bool) or value is None else repr(value)
    return text if len(text) <= 40 else text[:40] + "…"


def event_problem(event: Mapping[str, Any]) -> str | None:
    """What is wrong with a format-1 event's documented fields (``"usage.input_tokens is 'abc', not a whole number
    from 0 to 2**53"``), or ``None``: the check :func:`read_events` makes of every event it returns."""
    fields = {**_COMMON, **_FIELDS.get(event["event"], {})}
    for key, kind in fields.items():
        value = event.get(key)
        if not _fits(value, kind):
            return f"{key} is {_described(value)}, not {_WANTED[kind]}"
    usage = event.get("usage")
    if event["event"] == "request" and isinstance(usage, dict):
        for key in _USAGE:
            if not _fits(usage.get(key), _COUNT):
                return f"usage.{key} is {_described(usage[key])}, not {_WANTED[_COUNT]}"
    return None
