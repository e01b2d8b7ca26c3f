"""One exception tree, rooted at :class:`PromptComposerError`.

::

    PromptComposerError
    ├── LoadError            tool docs / modes failed validation (carries every Problem)
    ├── UnknownModeError     a mode slug that the registry does not have   (.mode, .available)
    ├── UnknownToolError     a tool name that the registry does not have   (.tool, .available)
    ├── ImporterError        an import source (tool list, MCP server, .roomodes) is unusable; nothing written
    ├── InputFileError       an input file is unreadable, not a regular file, too large or malformed (.path, .line)
    ├── EmbeddingUnavailable the embedding model package is missing or failed to load (search falls back)
    ├── LocalModelError      the local model could not be set up or started (offline, hash mismatch, no runtime)
    ├── MissingExtraError    a feature needs an optional extra that is not installed (.extra); also an ImportError
    ├── SessionStoreError    a shared session store (Redis) is down, slow or holds unreadable data (.store, .operation)
    └── ExecutorError        a tool call an executor refuses or cannot run; its text goes to the model
        └── UpstreamError    a routed call's MCP server is missing, failed, died or hung (.server, .tool)

Errors carry their context as attributes so callers never parse messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "AuthConfigError",
    "EmbeddingUnavailable",
    "ExecutorError",
    "ImporterError",
    "InputFileError",
    "LoadError",
    "LocalModelError",
    "MissingExtraError",
    "Problem",
    "PromptComposerError",
    "SessionStoreError",
    "UnknownModeError",
    "UnknownToolError",
    "UpstreamError",
]


class PromptComposerError(Exception):
    """Base class of every error this package raises on purpose."""


@dataclass(frozen=True, order=True)
class Problem:
    """One validation problem, located in a file (``path:line: message``)."""

    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


class LoadError(PromptComposerError):
    """Loading failed; ``problems`` lists every problem found, sorted by file and line."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(sorted(problems))
        super().__init__("\n".join(str(p) for p in self.problems))

    def summary(self) -> str:
        """The first problem, and how many more there are: for one-line error messages."""
        if not self.problems:
            return "no problems"
        more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        return f"{self.problems[0]}{more}"

    @property
    def path(self) -> Path | None:
        """The file of the first problem (convenient when there is only one)."""
        return self.problems[0].path if self.problems else None


def did_you_mean(name: str, candidates: Sequence[str]) -> str:
    """``"did you mean 'glob'?"`` (up to three close names), or ``""`` when none is close: the one hint every
    unknown name gets, whether a tool, a mode or a settings key."""
    import difflib  # only when a name is not found: not on every start

    by_lower = {c.lower(): c for c in candidates}
    close = [by_lower[m] for m in difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.6)]
    if not close:
        return ""
    return f"did you mean {' or '.join(repr(c) for c in close)}?"


class UnknownModeError(PromptComposerError, KeyError):
    def __init__(self, mode: str, available: Sequence[str]) -> None:
        self.mode = mode
        self.available = tuple(available)
        listing = f"available modes: {', '.join(self.available) or '(none)'}"
        hint = did_you_mean(mode, self.available)
        super().__init__(f"unknown mode {mode!r}; {hint} ({listing})" if hint else f"unknown mode {mode!r}; {listing}")

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class UnknownToolError(PromptComposerError, KeyError):
    def __init__(self, tool: str, available: Sequence[str]) -> None:
        self.tool = tool
        self.available = tuple(available)
        # A close name is the hint; the whole list only when nothing is close (a catalog may hold hundreds).
        hint = did_you_mean(tool, self.available) or f"available tools: {', '.join(self.available) or '(none)'}"
        super().__init__(f"unknown tool {tool!r}; {hint}")

    def __str__(self) -> str:
        return str(self.args[0])


class ImporterError(PromptComposerError):
    """An import failed: a bad tool list, an MCP server that failed, a bad ``.roomodes``. Nothing was written."""


class InputFileError(PromptComposerError):
    """An input file (a task, query, trace or event file, a server list …) that cannot be read, is not a regular
    file, is too large, or has a malformed line. ``path`` names the file and ``line`` the line, when known."""

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.line = line
        super().__init__(message)


class EmbeddingUnavailable(PromptComposerError):
    """The embedding model package is missing, or its model failed to load."""


class LocalModelError(PromptComposerError):
    """The local model could not be set up or started (offline, a hash mismatch, a missing runtime …)."""


class MissingExtraError(PromptComposerError, ImportError):
    """A feature needs an optional extra that is not installed; ``extra`` names it (``mcp``, ``redis`` …) and the
    message is one line that says how to install it. An ``ImportError`` too, so code that guarded the import with
    ``except ImportError`` still catches it."""

    def __init__(self, message: str, *, extra: str) -> None:
        super().__init__(message)
        self.extra = extra


class SessionStoreError(PromptComposerError):
    """A shared session store failed an operation: unreachable, too slow (its socket timeout), too contended, or
    holding data that is not a session. The task's stored state is never half-written: an update that raised was
    either applied whole or not at all (``applied`` is ``False`` when it surely was not, ``None`` when unknown).

    ``store`` names the store (its URL, without password), ``operation`` the session operation (``record_use``,
    ``history`` …), ``task_id`` the task."""

    def __init__(
        self, message: str, *, store: str, operation: str, task_id: str | None = None, applied: bool | None = False
    ) -> None:
        self.store = store
        self.operation = operation
        self.task_id = task_id
        self.applied = applied
        task = f" of task {task_id!r}" if task_id is not None else ""
        super().__init__(f"session store {store}: {operation}{task} failed: {message}")


class ExecutorError(PromptComposerError):
    """A tool call the executor refuses or cannot carry out; its message goes back to the model."""


class UpstreamError(ExecutorError):
    """An upstream MCP server could not answer a routed call: missing from the servers file, failed to start,
    died, or did not answer in time. ``server`` names it, ``tool`` the tool called (its upstream name)."""

    def __init__(self, message: str, *, server: str, tool: str | None = None) -> None:
        self.server = server
        self.tool = tool
        super().__init__(message)


class AuthConfigError(PromptComposerError):
    """The HTTP gateway's authorization settings are unusable: a token variable that is unset or empty, a JWKS
    file that cannot be read or holds no key, a mode list naming nothing, or a non-loopback address to be served
    without authorization. Nothing was started."""
