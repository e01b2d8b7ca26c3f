"""A registry that follows its folder: hot reload for long-running agents and gateways.

``LiveRegistry(docs_dir)`` loads the folder like :func:`~prompt_composer.registry.load_registry` (through the
parsed-file cache unless ``cache=False``, so a reload parses only the files that changed). When the docs
change (:meth:`LiveRegistry.reload`, called by you, by :meth:`LiveRegistry.watch`'s polling thread, or on a signal
with :meth:`LiveRegistry.reload_on_signal`), the new folder is validated *completely* first; only a registry that
loads without a single problem replaces the current one, in one reference assignment, so a reader sees either
the old registry or the new one, never a mix. A bad edit keeps the last good registry serving and reports every
problem (:attr:`LiveRegistry.problems`, ``on_error``).

Registries are immutable, so whatever holds one (a composition in flight, a task's pinned prompt) keeps the
version it started with. The last ``keep`` versions stay reachable by fingerprint (:meth:`LiveRegistry.version`)
so a task pinned at task start keeps composing from its own version until it ends, even after a reload.

A reload reads many files; an editor saves them one by one. The watcher reloads only when the folder's listing
(names, sizes, modification times) has not changed since the previous poll, and discards a load during which the
folder changed, so it does not swap in a half-saved edit that happens to be valid.
"""

from __future__ import annotations

import signal
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType

from ..errors import LoadError, Problem
from .composer import Composer
from .registry import Registry, default_docs_dir, load_registry

Snapshot = tuple[tuple[str, int, int], ...]


def snapshot(root: Path) -> Snapshot:
    """What the folder holds, cheaply: every YAML file's relative path, size and modification time (ns)."""
    entries = []
    for path in sorted(root.rglob("*.y*ml")):
        try:
            stat = path.stat()
        except OSError:  # deleted while listing: the next poll sees the settled folder
            continue
        entries.append((str(path.relative_to(root)), stat.st_size, stat.st_mtime_ns))
    return tuple(entries)


@dataclass(frozen=True)
class Reload:
    """The outcome of one reload: ``swapped`` when a new registry now serves; ``problems`` when the folder did not
    load (the previous registry keeps serving); neither when nothing had changed."""

    swapped: bool
    fingerprint: str
    problems: tuple[Problem, ...] = ()


class LiveRegistry:
    """The current registry of a docs folder, reloaded atomically; see the module docstring."""

    def __init__(
        self,
        directory: str | Path | None = None,
        *,
        keep: int = 8,
        on_reload: Callable[[Registry], None] | None = None,
        on_error: Callable[[LoadError], None] | None = None,
        cache: bool = True,
    ) -> None:
        if keep < 1:
            raise ValueError("keep must be at least 1")
        self.root = Path(directory) if directory is not None else default_docs_dir()
        self._keep = keep
        self._on_reload = on_reload
        self._on_error = on_error
        self._cache = cache  # load_registry's: a reload parses only the files that changed
        self._lock = threading.Lock()  # serialises reloads; readers never take it
        self._seen = snapshot(self.root)
        self._pending: Snapshot | None = None  # a change seen by the last poll, reloaded once it stands still
        # The first load must succeed: there is nothing to fall back to.
        registry = load_registry(self.root, cache=cache)
        self._versions: OrderedDict[str, Composer] = OrderedDict()
        self._current = self._remember(registry)
        self.problems: tuple[Problem, ...] = ()
        self._watcher: threading.Thread | None = None
        self._stop = threading.Event()

    # -- reading ---------------------------------------------------------------------------------------

    @property
    def current(self) -> Registry:
        """The registry serving now (one attribute read: atomic)."""
        return self._current.registry

    @property
    def composer(self) -> Composer:
        """The composer of the current registry (one per version, so its composition cache is kept)."""
        return self._current

    def version(self, fingerprint: str) -> Composer | None:
        """The composer of a recent version (the current one and up to ``keep - 1`` before it), else None."""
        return self._versions.get(fingerprint)

    # -- reloading -------------------------------------------------------------------------------------

    def reload(self) -> Reload:
        """Load the folder now; swap it in if it loads without a problem and differs from the current one."""
        with self._lock:
            before = snapshot(self.root)
            try:
                registry = load_registry(self.root, cache=self._cache)
            except LoadError as exc:
                self.problems = exc.problems
                self._seen = before
                if self._on_error is not None:
                    self._on_error(exc)
                return Reload(False, self.current.fingerprint, exc.problems)
            if snapshot(self.root) != before:  # edited while loading: the next reload reads the settled folder
                return Reload(False, self.current.fingerprint)
            self._seen = before
            self.problems = ()
            if registry.fingerprint == self.current.fingerprint:
                return Reload(False, registry.fingerprint)
            self._current = self._remember(registry)
        if self._on_reload is not None:
            self._on_reload(registry)
        return Reload(True, registry.fingerprint)

    def _remember(self, registry: Registry) -> Composer:
        composer = self._versions.pop(registry.fingerprint, None) or Composer(registry)
        self._versions[registry.fingerprint] = composer
        while len(self._versions) > self._keep:
            self._versions.popitem(last=False)
        return composer

    def poll(self) -> Reload | None:
        """One watcher step: reload when the folder changed since the last look and has since settled."""
        now = snapshot(self.root)
        if now == self._seen:
            return None
        settled = self._pending == now
        self._pending = now
        if not settled:
            return None
        self._pending = None
        return self.reload()

    def watch(self, interval: float = 1.0) -> LiveRegistry:
        """Poll the folder every ``interval`` seconds in a daemon thread until :meth:`close` (or the ``with``
        block ends). A change is reloaded once it has stood still for one interval."""
        if interval <= 0:
            raise ValueError("interval must be positive")
        if self._watcher is not None:
            raise RuntimeError("already watching")
        self._stop.clear()

        def loop() -> None:
            while not self._stop.wait(interval):
                self.poll()

        self._watcher = threading.Thread(target=loop, name=f"prompt-composer-watch:{self.root}", daemon=True)
        self._watcher.start()
        return self

    def reload_on_signal(self, signum: int = signal.SIGHUP) -> None:
        """Reload when the process receives ``signum`` (``kill -HUP``); main thread only, as Python requires."""

        def handler(_signum: int, _frame: FrameType | None) -> None:
            # A signal handler must not block on the reload lock held by the interrupted code: reload elsewhere.
            threading.Thread(target=self.reload, name="prompt-composer-reload", daemon=True).start()

        signal.signal(signum, handler)

    def close(self) -> None:
        """Stop watching (idempotent)."""
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join()
            self._watcher = None

    def __enter__(self) -> LiveRegistry:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
