"""Task sessions: the per-task recent-use FIFO, and a bounded store of sessions keyed by task id."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from cachetools import TTLCache

from .modes import Mode

if TYPE_CHECKING:
    from .composer import ComposedPrompt

__all__ = ["InMemorySessionStore", "SessionStore", "TaskSession"]

DEFAULT_HISTORY = 64
DEFAULT_DISCOVERED = 32  # tools a task may activate through tool_search


class TaskSession:
    """One task's mutable state: the distinct tools it used, oldest first, newest last.

    ``record_use`` is called after a tool call was approved and executed. Re-use moves the tool to the newest
    end. The history is bounded (``history_limit``); each mode sees only its own slice of it (:meth:`recent`),
    so switching modes keeps the history.
    """

    def __init__(
        self, task_id: str = "", *, history_limit: int = DEFAULT_HISTORY, discovery_limit: int = DEFAULT_DISCOVERED
    ) -> None:
        if history_limit < 1:
            raise ValueError("history_limit must be at least 1")
        if discovery_limit < 0:
            raise ValueError("discovery_limit must be at least 0")
        self.discovery_limit = discovery_limit
        # Tools activated by tool_search, in discovery order (never reordered: the tool list grows at its end).
        self._discovered: dict[str, None] = {}
        self.task_id = task_id
        self.history_limit = history_limit
        # dict keeps insertion order: delete + insert moves a tool to the newest end in O(1).
        self._history: dict[str, None] = {}
        # Promotion-policy state (prompt_composer.anthropic): the prompt pinned at task start, per key (registry
        # fingerprint + mode), and the tools whose full text already reached the conversation in this task.
        self._pinned: dict[str, ComposedPrompt] = {}
        self._expanded: set[str] = set()
        self._lock = threading.Lock()

    def record_use(self, tool: str) -> None:
        with self._lock:
            self._history.pop(tool, None)
            self._history[tool] = None
            while len(self._history) > self.history_limit:
                del self._history[next(iter(self._history))]

    def record_uses(self, tools: Iterable[str]) -> None:
        for tool in tools:
            self.record_use(tool)

    def history(self) -> tuple[str, ...]:
        """Distinct tools used in this task, oldest first."""
        with self._lock:
            return tuple(self._history)

    def recent(self, mode: Mode) -> tuple[str, ...]:
        """The mode's FIFO: the newest ``recent_size`` tools it allows and does not hold permanent.

        Oldest first, so the order is stable as new tools arrive at the end.
        """
        if mode.recent_size == 0:
            return ()
        permanent = set(mode.permanent)
        picked: list[str] = []
        for tool in reversed(self.history()):
            if mode.allows(tool) and tool not in permanent:
                picked.append(tool)
                if len(picked) == mode.recent_size:
                    break
        return tuple(reversed(picked))

    def pinned_prompt(self, key: str, compose: Callable[[], ComposedPrompt]) -> ComposedPrompt:
        """The prompt pinned under ``key`` for this task; composed with ``compose`` and pinned on first call.

        ``compose`` runs outside the lock (it reads this session); if two threads race, the first pin wins.
        """
        with self._lock:
            prompt = self._pinned.get(key)
        if prompt is not None:
            return prompt
        composed = compose()
        with self._lock:
            return self._pinned.setdefault(key, composed)

    def mark_expanded(self, tool: str) -> bool:
        """Note that ``tool``'s full text is now in the conversation; True only the first time in the task."""
        with self._lock:
            if tool in self._expanded:
                return False
            self._expanded.add(tool)
            return True

    def expanded(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._expanded)

    def reset(self) -> None:
        """Start the task afresh: empty history, no pinned prompt, nothing expanded."""
        with self._lock:
            self._history.clear()
            self._pinned.clear()
            self._expanded.clear()
            self._discovered.clear()

    def discover(self, tools: Iterable[str]) -> tuple[str, ...]:
        """Activate tools found by tool_search for the rest of the task; returns those newly added.

        Order is discovery order and never changes; a tool found again stays where it is. Once
        ``discovery_limit`` tools are active, further ones are not added (the caller says so).
        """
        added: list[str] = []
        with self._lock:
            for tool in tools:
                if tool in self._discovered or len(self._discovered) >= self.discovery_limit:
                    continue
                self._discovered[tool] = None
                added.append(tool)
        return tuple(added)

    def discovered(self, mode: Mode | None = None) -> tuple[str, ...]:
        """Active discovered tools in discovery order; with ``mode``, only those it allows."""
        with self._lock:
            tools = tuple(self._discovered)
        return tools if mode is None else tuple(t for t in tools if mode.allows(t))

    def __repr__(self) -> str:
        return f"TaskSession({self.task_id!r}, history={list(self.history())!r})"


@runtime_checkable
class SessionStore(Protocol):
    """Where task sessions live. Inject your own (e.g. backed by Redis) to share them across processes."""

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
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cache: TTLCache[str, TaskSession] = TTLCache(maxsize=maxsize, ttl=ttl, timer=timer)
        self._lock = threading.Lock()
        self._history_limit = history_limit

    def get(self, task_id: str) -> TaskSession:
        with self._lock:
            session = self._cache.get(task_id)
            if session is None:
                session = TaskSession(task_id, history_limit=self._history_limit)
            self._cache[task_id] = session  # re-set on every access: TTL counts idle time
            return session

    def reset(self, task_id: str) -> TaskSession:
        with self._lock:
            session = TaskSession(task_id, history_limit=self._history_limit)
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
