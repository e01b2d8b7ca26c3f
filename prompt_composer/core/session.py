"""Task sessions: the per-task recent-use FIFO, and a bounded store of sessions keyed by task id.

A task's state is plain data (:class:`SessionData`): the tools it used, the tools ``tool_search`` activated, the
tools whose full text reached the conversation, and, per pin key, what its pinned prompt was composed *from*
(:class:`PinnedPrompt`: registry fingerprint, mode slug and the FIFO / discovery views at pin time, never the
composed text). Every :class:`TaskSession` operation is one read or one read-modify-write of that data, so a store
can keep it anywhere: :class:`InMemorySessionStore` keeps it in the process, behind a lock;
``prompt_composer.redis_store.RedisSessionStore`` (the ``redis`` extra) keeps it in Redis, as JSON, shared by
every process serving the task.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from cachetools import TTLCache

from .modes import Mode

DEFAULT_HISTORY = 64
DEFAULT_DISCOVERED = 32  # tools a task may activate through tool_search
DATA_VERSION = 1  # SessionData.to_dict()'s format

T = TypeVar("T")


def _preselected(value: Any) -> dict[str, list[str]]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ValueError("preselected must be an object keyed by strings")
    return {key: list(_strings(tools, "preselected tools")) for key, tools in value.items()}


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{what} must be a list of strings")
    return tuple(value)


@dataclass(frozen=True)
class PinnedPrompt:
    """What a pinned prompt was composed from: everything :meth:`Composer.compose` reads for it.

    ``recent`` is the mode's FIFO view (``TaskSession.recent(mode)``) and ``discovered`` its discovery view
    (``TaskSession.discovered(mode)``), both taken at pin time. Composition is pure, so
    :meth:`Composer.compose_pinned` gives the pinned prompt back byte-identical, in any process, from a composer
    over the same registry (same fingerprint) with the same templates and context.
    """

    fingerprint: str
    mode: str
    recent: tuple[str, ...] = ()
    discovered: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "fingerprint": self.fingerprint,
            "mode": self.mode,
            "recent": list(self.recent),
            "discovered": list(self.discovered),
        }

    @classmethod
    def from_dict(cls, value: Any) -> PinnedPrompt:
        if not isinstance(value, Mapping):
            raise ValueError("a pinned prompt must be an object")
        fingerprint, mode = value.get("fingerprint"), value.get("mode")
        if not isinstance(fingerprint, str) or not isinstance(mode, str):
            raise ValueError("a pinned prompt needs a string fingerprint and mode")
        return cls(
            fingerprint,
            mode,
            _strings(value.get("recent", []), "pinned recent"),
            _strings(value.get("discovered", []), "pinned discovered"),
        )


@dataclass
class SessionData:
    """One task's state as plain data, and the operations on it (each one atomic in the store that runs it).

    ``history``: distinct tools used, oldest first; ``discovered``: tools activated by tool_search, in discovery
    order; ``expanded``: tools whose full text is in the conversation, first first; ``pinned``: pin key →
    :class:`PinnedPrompt`. :meth:`to_dict` / :meth:`from_dict` give and take JSON-ready dicts.
    """

    history: list[str] = field(default_factory=list)
    discovered: list[str] = field(default_factory=list)
    expanded: list[str] = field(default_factory=list)
    pinned: dict[str, PinnedPrompt] = field(default_factory=dict)
    # Per user message (a digest of its text): the tools preselection chose for it, in the order it chose them.
    preselected: dict[str, list[str]] = field(default_factory=dict)
    # Per user message: the tools its preselection named after those (the shortlist), callable but not loaded.
    shortlisted: dict[str, list[str]] = field(default_factory=dict)

    # -- reads -----------------------------------------------------------------------------------------

    def recent(self, mode: Mode) -> tuple[str, ...]:
        """The mode's FIFO view: the newest ``recent_size`` used tools it allows and does not hold permanent."""
        if mode.recent_size == 0:
            return ()
        permanent = set(mode.permanent)
        picked: list[str] = []
        for tool in reversed(self.history):
            if mode.allows(tool) and tool not in permanent:
                picked.append(tool)
                if len(picked) == mode.recent_size:
                    break
        return tuple(reversed(picked))

    def discovered_in(self, mode: Mode | None) -> tuple[str, ...]:
        """Discovered tools in discovery order; with ``mode``, only those it allows."""
        return tuple(self.discovered) if mode is None else tuple(t for t in self.discovered if mode.allows(t))

    # -- updates ---------------------------------------------------------------------------------------

    def record_uses(self, tools: Iterable[str], limit: int) -> None:
        """Move each tool to the newest end (adding it if new); keep the newest ``limit``."""
        for tool in tools:
            if tool in self.history:
                self.history.remove(tool)
            self.history.append(tool)
        if len(self.history) > limit:
            del self.history[: len(self.history) - limit]

    def discover(self, tools: Iterable[str], limit: int) -> tuple[str, ...]:
        """Append the tools not yet discovered while fewer than ``limit`` are; the ones added."""
        added: list[str] = []
        for tool in tools:
            if tool in self.discovered or len(self.discovered) >= limit:
                continue
            self.discovered.append(tool)
            added.append(tool)
        return tuple(added)

    def mark_expanded(self, tool: str) -> bool:
        if tool in self.expanded:
            return False
        self.expanded.append(tool)
        return True

    def pin(self, key: str, fingerprint: str, mode: Mode) -> PinnedPrompt:
        """The pin under ``key``; on first call, taken now from this data (the first pin wins)."""
        pinned = self.pinned.get(key)
        if pinned is None:
            pinned = PinnedPrompt(fingerprint, mode.slug, self.recent(mode), self.discovered_in(mode))
            self.pinned[key] = pinned
        return pinned

    def preselect(self, key: str, tools: Iterable[str], limit: int, shortlist: Iterable[str] = ()) -> list[str] | None:
        """Record what preselection chose for the message ``key`` and load it (see :meth:`discover`), and the
        shortlist it named; ``None`` when the message was preselected already (the first record wins)."""
        if key in self.preselected:
            return None
        chosen = list(tools)
        self.preselected[key] = chosen
        named = list(shortlist)
        if named:
            self.shortlisted[key] = named
        self.discover(chosen, limit)
        return chosen

    def clear(self) -> None:
        self.history.clear()
        self.discovered.clear()
        self.expanded.clear()
        self.pinned.clear()
        self.preselected.clear()
        self.shortlisted.clear()

    # -- (de)serialisation -----------------------------------------------------------------------------

    def copy(self) -> SessionData:
        return SessionData(
            list(self.history),
            list(self.discovered),
            list(self.expanded),
            dict(self.pinned),
            {key: list(tools) for key, tools in self.preselected.items()},
            {key: list(tools) for key, tools in self.shortlisted.items()},
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": DATA_VERSION,
            "history": list(self.history),
            "discovered": list(self.discovered),
            "expanded": list(self.expanded),
            "pinned": {key: pin.to_dict() for key, pin in self.pinned.items()},
            "preselected": {key: list(tools) for key, tools in self.preselected.items()},
            # Only when there is one, so data of tasks without a shortlist reads as before.
            **({"shortlisted": {k: list(tools) for k, tools in self.shortlisted.items()}} if self.shortlisted else {}),
        }

    @classmethod
    def from_dict(cls, value: Any) -> SessionData:
        """The data :meth:`to_dict` gave; a ``ValueError`` says what is malformed."""
        if not isinstance(value, Mapping):
            raise ValueError("session data must be an object")
        if value.get("version") != DATA_VERSION:
            raise ValueError(f"unsupported session data version {value.get('version')!r} (expected {DATA_VERSION})")
        pinned = value.get("pinned", {})
        if not isinstance(pinned, Mapping) or not all(isinstance(k, str) for k in pinned):
            raise ValueError("pinned must be an object keyed by strings")
        return cls(
            list(_strings(value.get("history", []), "history")),
            list(_strings(value.get("discovered", []), "discovered")),
            list(_strings(value.get("expanded", []), "expanded")),
            {key: PinnedPrompt.from_dict(pin) for key, pin in pinned.items()},
            _preselected(value.get("preselected", {})),
            _preselected(value.get("shortlisted", {})),
        )


class TaskSession:
    """One task's state: the distinct tools it used (oldest first, newest last), the tools tool_search activated,
    the tools expanded in its conversation, and its pinned prompts.

    ``record_use`` is called after a tool call was approved and executed. Re-use moves the tool to the newest
    end. The history is bounded (``history_limit``); each mode sees only its own slice of it (:meth:`recent`),
    so switching modes keeps the history.

    Each method is one atomic read or read-modify-write of the task's :class:`SessionData`. This class keeps the
    data in the process, behind a lock; a shared store subclasses it and overrides :meth:`_read` / :meth:`_update`
    (``prompt_composer.redis_store.RedisTaskSession``), so everything that takes a ``TaskSession`` works with it.
    """

    def __init__(
        self, task_id: str = "", *, history_limit: int = DEFAULT_HISTORY, discovery_limit: int = DEFAULT_DISCOVERED
    ) -> None:
        if history_limit < 1:
            raise ValueError("history_limit must be at least 1")
        if discovery_limit < 0:
            raise ValueError("discovery_limit must be at least 0")
        self.task_id = task_id
        self.history_limit = history_limit
        self.discovery_limit = discovery_limit
        self._data = SessionData()
        self._lock = threading.Lock()

    # -- storage: the two operations a store implements ------------------------------------------------

    def _read(self, operation: str, read: Callable[[SessionData], T]) -> T:
        """``read`` applied to the task's current data (which it must not change)."""
        with self._lock:
            return read(self._data)

    def _update(self, operation: str, update: Callable[[SessionData], T]) -> T:
        """``update`` applied to the task's data, atomically: concurrent updates of the task are serialised.

        ``update`` must be a pure function of the data (a store may run it again on fresh data, e.g. after a
        concurrent writer won)."""
        with self._lock:
            return update(self._data)

    # -- the recent-use FIFO ---------------------------------------------------------------------------

    def record_use(self, tool: str) -> None:
        self._update("record_use", lambda data: data.record_uses((tool,), self.history_limit))

    def record_uses(self, tools: Iterable[str]) -> None:
        """Record several uses, in order, as one update."""
        names = tuple(tools)
        if names:
            self._update("record_uses", lambda data: data.record_uses(names, self.history_limit))

    def history(self) -> tuple[str, ...]:
        """Distinct tools used in this task, oldest first."""
        return self._read("history", lambda data: tuple(data.history))

    def recent(self, mode: Mode) -> tuple[str, ...]:
        """The mode's FIFO: the newest ``recent_size`` tools it allows and does not hold permanent.

        Oldest first, so the order is stable as new tools arrive at the end.
        """
        if mode.recent_size == 0:
            return ()
        return self._read("recent", lambda data: data.recent(mode))

    # -- pinned prompts --------------------------------------------------------------------------------

    def pin(self, key: str, *, fingerprint: str, mode: Mode) -> PinnedPrompt:
        """What the prompt pinned under ``key`` is composed from; on first call taken from the task's state now
        (the mode's FIFO and discovery views), atomically: if two callers race, the first pin wins."""
        pinned = self.pinned(key)
        if pinned is not None:
            return pinned
        return self._update("pin", lambda data: data.pin(key, fingerprint, mode))

    def pinned(self, key: str) -> PinnedPrompt | None:
        """The pin under ``key``, if any."""
        return self._read("pinned", lambda data: data.pinned.get(key))

    # -- expansion, discovery, reset -------------------------------------------------------------------

    def mark_expanded(self, tool: str) -> bool:
        """Note that ``tool``'s full text is now in the conversation; True only the first time in the task."""
        return self._update("mark_expanded", lambda data: data.mark_expanded(tool))

    def expanded(self) -> frozenset[str]:
        return self._read("expanded", lambda data: frozenset(data.expanded))

    def reset(self) -> None:
        """Start the task afresh: empty history, no pinned prompt, nothing expanded or discovered."""
        self._update("reset", lambda data: data.clear())

    def discover(self, tools: Iterable[str]) -> tuple[str, ...]:
        """Activate tools found by tool_search for the rest of the task; returns those newly added.

        Order is discovery order and never changes; a tool found again stays where it is. Once
        ``discovery_limit`` tools are active, further ones are not added (the caller says so).
        """
        names = tuple(tools)
        if not names:
            return ()
        return self._update("discover", lambda data: data.discover(names, self.discovery_limit))

    def discovered(self, mode: Mode | None = None) -> tuple[str, ...]:
        """Active discovered tools in discovery order; with ``mode``, only those it allows."""
        return self._read("discovered", lambda data: data.discovered_in(mode))

    def preselect(self, key: str, tools: Iterable[str], shortlist: Iterable[str] = ()) -> list[str] | None:
        """Record, once per user message (``key``), the tools preselection chose for it, and load them for the
        task, and the ``shortlist`` it named beside them (callable, not loaded); ``None`` when that message was
        preselected already (so a retried request does not search again)."""
        names, named = tuple(tools), tuple(shortlist)
        return self._update("preselect", lambda data: data.preselect(key, names, self.discovery_limit, named))

    def preselections(self) -> dict[str, tuple[str, ...]]:
        """Every user message's preselection so far (message key → tools)."""
        return self._read("preselections", lambda data: {k: tuple(v) for k, v in data.preselected.items()})

    def shortlists(self) -> dict[str, tuple[str, ...]]:
        """Every user message's shortlist so far (message key → tools named, not loaded)."""
        return self._read("shortlists", lambda data: {k: tuple(v) for k, v in data.shortlisted.items()})

    def shortlisted(self) -> frozenset[str]:
        """Every tool a shortlist of the task named (a call of one not yet loaded is answered with its text)."""
        return self._read("shortlisted", lambda data: frozenset(t for v in data.shortlisted.values() for t in v))

    def offered(self, mode: Mode) -> tuple[str, ...]:
        """The tools the task's shortlists named that ``mode`` allows and the task has not loaded, in the order they
        were first named (so a tool list that declares them only ever grows at its end, until one loads)."""

        def read(data: SessionData) -> tuple[str, ...]:
            loaded = set(data.discovered_in(mode))
            named = dict.fromkeys(t for v in data.shortlisted.values() for t in v)
            return tuple(t for t in named if mode.allows(t) and t not in loaded)

        return self._read("offered", read)

    def snapshot(self) -> SessionData:
        """A copy of the task's whole state, read at once."""
        return self._read("snapshot", lambda data: data.copy())

    def __repr__(self) -> str:
        return f"TaskSession({self.task_id!r}, history={list(self.history())!r})"


@runtime_checkable
class SessionStore(Protocol):
    """Where task sessions live: :class:`InMemorySessionStore`, or ``RedisSessionStore`` to share them across
    processes (``prompt_composer.redis_store``)."""

    def get(self, task_id: str) -> TaskSession:
        """The task's session, created empty on first use."""
        ...

    def reset(self, task_id: str) -> TaskSession:
        """Start the task afresh: a new, empty session."""
        ...

    def discard(self, task_id: str) -> None: ...


class InMemorySessionStore:
    """A bounded, thread-safe store: least recently used sessions beyond ``maxsize`` or idle past ``ttl`` go."""

    def __init__(
        self,
        *,
        maxsize: int = 10_000,
        ttl: float = 6 * 3600,
        history_limit: int = DEFAULT_HISTORY,
        discovery_limit: int = DEFAULT_DISCOVERED,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cache: TTLCache[str, TaskSession] = TTLCache(maxsize=maxsize, ttl=ttl, timer=timer)
        self._lock = threading.Lock()
        self._history_limit = history_limit
        self._discovery_limit = discovery_limit

    def _new(self, task_id: str) -> TaskSession:
        return TaskSession(task_id, history_limit=self._history_limit, discovery_limit=self._discovery_limit)

    def get(self, task_id: str) -> TaskSession:
        with self._lock:
            session = self._cache.get(task_id)
            if session is None:
                session = self._new(task_id)
            self._cache[task_id] = session  # re-set on every access: TTL counts idle time
            return session

    def reset(self, task_id: str) -> TaskSession:
        with self._lock:
            session = self._new(task_id)
            self._cache[task_id] = session
            return session

    def discard(self, task_id: str) -> None:
        with self._lock:
            self._cache.pop(task_id, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._cache)

    def __contains__(self, task_id: object) -> bool:
        with self._lock:
            return task_id in self._cache
