"""Task sessions in Redis, shared by every process serving an agent (the ``redis`` extra: ``redis`` on PyPI).

::

    from prompt_composer.redis_store import RedisSessionStore

    store = RedisSessionStore("redis://cache:6379/0", ttl=6 * 3600)
    client = wrap(anthropic.Anthropic(), mode="code", task_id="task-42", store=store)

:class:`RedisSessionStore` has the interface of :class:`~prompt_composer.session.InMemorySessionStore`
(``get`` / ``reset`` / ``discard`` / ``in``); ``get`` returns a :class:`RedisTaskSession`, a
:class:`~prompt_composer.session.TaskSession` whose every method reads or updates Redis, so the tool loop and
everything else that takes a ``TaskSession`` work unchanged.

Data
    One Redis string per task, at ``<prefix><task_id>``: the task's
    :class:`~prompt_composer.session.SessionData` as JSON (``SessionData.to_dict()``: history, discovered tools,
    expanded tools, and per pin key what the pinned prompt was composed from). A missing key is an empty task.
    A pinned prompt is recomposed from its pin by the caller's composer, byte-identical in every process whose
    composer has the same registry (fingerprint), templates and context.

Atomicity
    A read is one ``GETEX``. An update is ``WATCH key; GET key``, the operation applied to the data in Python
    (the same :class:`~prompt_composer.session.SessionData` method the in-memory store runs), then
    ``MULTI; SET key json PX ttl; EXEC``. If another client changed the key in between, ``EXEC`` does nothing
    and the update runs again on fresh data (up to ``max_attempts`` times, with a short random backoff), so
    concurrent writers to one task lose nothing. The value is replaced as a whole by one command, so a reader
    never sees a half-written session, whatever happens to the client or the server.

Bounds
    Every write and read sets the key's TTL to ``ttl`` (idle time, as in memory). A task holds at most
    ``history_limit`` used and ``discovery_limit`` discovered tools; its expanded tools are registry tools and its
    pins one per (registry version, mode) it ran in. How many tasks Redis keeps is bounded by the TTL and by
    Redis's own ``maxmemory`` with a ``volatile-lru`` (or ``allkeys-lru``) policy: evicting a task removes its
    key whole, and the task starts afresh.

Failures
    A Redis that is down, slower than ``socket_timeout`` (seconds, for connecting and for each reply), busy past
    ``max_attempts`` conflicting writes, or holding a value that is not a session raises
    :class:`~prompt_composer.errors.SessionStoreError`, naming the store URL (without its password), the
    operation and the task. Besides re-running an update that lost a race, nothing is retried behind the
    caller's back except one reconnect on a broken pooled connection. An update that raised is never
    half-applied: ``error.applied`` is ``False`` when it surely was not applied and ``None`` when the connection
    failed after ``EXEC`` was sent (then it was applied whole or not at all; repeating a session update loses and
    duplicates nothing). A value that is not a session is never overwritten: read it, or ``reset`` / ``discard``
    the task. Without persistence a Redis restart empties every task.

Differences from the in-memory store
    Handles share the task: after ``store.reset(task_id)`` every handle, in every process, sees the empty task
    (in memory, a handle taken before keeps the old session object). ``get`` makes no round trip and creates
    nothing, so ``task_id in store`` is true only once the task was written. Needs Redis 6.2 or newer
    (``GETEX``), standalone or behind Sentinel (pass ``client=sentinel.master_for(...)``).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self, TypeVar
from urllib.parse import urlsplit, urlunsplit

try:
    import redis
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import RedisError, WatchError
    from redis.exceptions import TimeoutError as RedisTimeoutError
    from redis.retry import Retry
except ImportError as exc:  # pragma: no cover - depends on the environment
    from ..errors import MissingExtraError
    from ..shared.extras import needs_extra

    raise MissingExtraError(needs_extra("RedisSessionStore", "redis"), extra="redis") from exc

from ..errors import SessionStoreError
from .session import DEFAULT_DISCOVERED, DEFAULT_HISTORY, SessionData, TaskSession

DEFAULT_URL = "redis://127.0.0.1:6379/0"
DEFAULT_PREFIX = "prompt-composer:task:"

T = TypeVar("T")


def redact(url: str) -> str:
    """``url`` without its password (``redis://user:***@host:6379/0``)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def _client_url(client: Any) -> str:
    kwargs = getattr(getattr(client, "connection_pool", None), "connection_kwargs", {}) or {}
    if kwargs.get("path"):
        return f"unix://{kwargs['path']}?db={kwargs.get('db', 0)}"
    return f"redis://{kwargs.get('host', '?')}:{kwargs.get('port', '?')}/{kwargs.get('db', 0)}"


def _lost_connection(exc: BaseException) -> bool:
    """Whether a WatchError stands for a connection that failed while watching (redis-py raises it so), rather
    than for another client's write."""
    cause = exc.__cause__ or exc.__context__
    while cause is not None:
        if isinstance(cause, RedisConnectionError | RedisTimeoutError | OSError):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


class RedisTaskSession(TaskSession):
    """A task's session whose state lives in Redis: a handle, cheap to make; every method is one atomic read or
    update of the task's key (see the module's documentation). Handles of one task, in any process, share it."""

    def __init__(self, store: RedisSessionStore, task_id: str) -> None:
        super().__init__(task_id, history_limit=store.history_limit, discovery_limit=store.discovery_limit)
        self.store = store

    def _read(self, operation: str, read: Callable[[SessionData], T]) -> T:
        return self.store.read(self.task_id, operation, read)

    def _update(self, operation: str, update: Callable[[SessionData], T]) -> T:
        return self.store.update(self.task_id, operation, update)

    def __repr__(self) -> str:
        return f"RedisTaskSession({self.task_id!r}, store={self.store.url!r})"


class RedisSessionStore:
    """Task sessions in Redis, shared by every process that uses the same server, database and ``prefix``.

    ``url`` is a redis-py URL (``redis://[:password@]host:port/db``, ``rediss://`` for TLS, ``unix://``); or give
    a ready ``client`` (``redis.Redis``; its own timeouts and retries then apply). ``ttl`` (seconds) is how long
    an idle task is kept; ``history_limit`` and ``discovery_limit`` bound each task as in
    :class:`~prompt_composer.session.TaskSession`; every process serving a task should use the same values.
    ``socket_timeout`` (seconds) bounds connecting and each reply; ``max_attempts`` bounds how often one update
    is retried when other writers change the task first.
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        client: redis.Redis | None = None,
        ttl: float = 6 * 3600,
        history_limit: int = DEFAULT_HISTORY,
        discovery_limit: int = DEFAULT_DISCOVERED,
        prefix: str = DEFAULT_PREFIX,
        socket_timeout: float = 2.0,
        max_attempts: int = 100,
    ) -> None:
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        if history_limit < 1:
            raise ValueError("history_limit must be at least 1")
        if discovery_limit < 0:
            raise ValueError("discovery_limit must be at least 0")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if client is None:
            client = redis.Redis.from_url(
                url,
                socket_timeout=socket_timeout,
                socket_connect_timeout=socket_timeout,
                # One immediate reconnect on a broken pooled connection (a restarted server); a timeout is not
                # retried, so a slow server fails after socket_timeout.
                retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
            )
            self.url = redact(url)
        else:
            self.url = redact(url) if url != DEFAULT_URL else _client_url(client)
        self.client = client
        self.ttl = ttl
        self.history_limit = history_limit
        self.discovery_limit = discovery_limit
        self.prefix = prefix
        self.max_attempts = max_attempts
        self.conflicts = 0  # updates run again because another writer changed the task first (a statistic)
        self._ttl_ms = max(1, round(ttl * 1000))

    # -- the SessionStore protocol ---------------------------------------------------------------------

    def get(self, task_id: str) -> RedisTaskSession:
        """A handle on the task's session (no round trip: a task that was never written is empty)."""
        return RedisTaskSession(self, task_id)

    def reset(self, task_id: str) -> RedisTaskSession:
        """Start the task afresh: its data is deleted, for every handle and process."""
        self.discard(task_id)
        return RedisTaskSession(self, task_id)

    def discard(self, task_id: str) -> None:
        try:
            self.client.delete(self.key(task_id))
        except RedisError as exc:
            raise self._error("discard", task_id, exc) from exc

    def __contains__(self, task_id: object) -> bool:
        if not isinstance(task_id, str):
            return False
        try:
            return bool(self.client.exists(self.key(task_id)))
        except RedisError as exc:
            raise self._error("contains", task_id, exc) from exc

    # -- the two primitives a RedisTaskSession runs on -------------------------------------------------

    def key(self, task_id: str) -> str:
        return f"{self.prefix}{task_id}"

    def load(self, task_id: str) -> SessionData:
        """The task's data as stored now (empty if absent)."""
        return self.read(task_id, "load", lambda data: data)

    def read(self, task_id: str, operation: str, read: Callable[[SessionData], T]) -> T:
        """``read`` applied to the task's data, fetched with one ``GETEX`` (which refreshes the TTL)."""
        try:
            raw = self.client.getex(self.key(task_id), px=self._ttl_ms)
        except RedisError as exc:
            raise self._error(operation, task_id, exc) from exc
        return read(self._decode(raw, operation, task_id))

    def update(self, task_id: str, operation: str, update: Callable[[SessionData], T]) -> T:
        """``update`` applied to the task's data atomically (``WATCH`` / ``MULTI`` / ``EXEC``, retried on
        conflict); the data is written back whole, with the TTL refreshed. ``update`` may run more than once, each
        time on fresh data: it must be a pure function of the data."""
        key = self.key(task_id)
        for attempt in range(self.max_attempts):
            sent = False
            try:
                with self.client.pipeline(transaction=True) as pipe:
                    pipe.watch(key)  # type: ignore[no-untyped-call]  # untyped in redis-py
                    data = self._decode(pipe.get(key), operation, task_id)
                    result = update(data)
                    payload = json.dumps(data.to_dict(), ensure_ascii=False, separators=(",", ":"))
                    pipe.multi()
                    pipe.set(key, payload, px=self._ttl_ms)
                    sent = True
                    pipe.execute()
                    return result
            except WatchError as exc:
                if _lost_connection(exc):
                    raise self._error(operation, task_id, exc, applied=None if sent else False) from exc
                # Another writer changed the task since WATCH: nothing was written; run again on fresh data.
                self.conflicts += 1
                time.sleep(random.uniform(0, min(0.05, 0.0005 * 2 ** min(attempt, 10))))
            except RedisError as exc:
                raise self._error(operation, task_id, exc, applied=None if sent else False) from exc
        raise self._failure(
            f"other writers changed the task first {self.max_attempts} times in a row; nothing was written",
            operation,
            task_id,
        )

    # -- helpers ---------------------------------------------------------------------------------------

    def _decode(self, raw: Any, operation: str, task_id: str) -> SessionData:
        if raw is None:
            return SessionData()
        try:
            return SessionData.from_dict(json.loads(raw))
        except ValueError as exc:  # json.JSONDecodeError and UnicodeDecodeError are ValueErrors
            message = f"the stored value at {self.key(task_id)!r} is not a session ({exc}); it was left as it is"
            raise self._failure(message, operation, task_id) from exc

    def _error(
        self, operation: str, task_id: str, exc: Exception, *, applied: bool | None = False
    ) -> SessionStoreError:
        unknown = " (the update may or may not have been applied, whole)" if applied is None else ""
        return self._failure(f"{type(exc).__name__}: {exc}{unknown}", operation, task_id, applied=applied)

    def _failure(
        self, message: str, operation: str, task_id: str, *, applied: bool | None = False
    ) -> SessionStoreError:
        return SessionStoreError(message, store=self.url, operation=operation, task_id=task_id, applied=applied)

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RedisSessionStore({self.url!r}, prefix={self.prefix!r}, ttl={self.ttl!r})"
