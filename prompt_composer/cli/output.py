"""What the command prints on stderr, made safe in one place: every line of every message, whoever wrote it.

The CLI runs in CI on pull requests, so a path, a tool or mode name or a value read from a checkout can be hostile.
While a command runs, ``sys.stderr`` is a :class:`MessageStream` over the real one:

- On a terminal (and in a plain CI log) each write is shown with :func:`~prompt_composer.shared.text.shown`:
  control characters and escape sequences as escapes (``\\x1b[31m``, ``\\n``), never raw, and nothing that a
  GitHub Actions runner would read as a workflow command (``::`` at a line's start, ``##[`` anywhere). A write's
  one trailing newline ends its line and newlines before its text are blank lines; any other newline in it is part
  of a message (a file name) and is shown as ``\\n``. So a message of several lines is printed a line at a time.
- Under ``--format github`` every line becomes an annotation the runner shows on its own terms, its text escaped
  as the workflow-command rules say (``%25``, ``%0D``, ``%0A``): ``error: …`` an ``::error::``, ``warning: …``
  a ``::warning::``, anything else a ``::notice::``. The errors :func:`report_error` prints carry the file and
  line they are about, so the annotation lands on that line of the pull request.

Only the command does this; the library never prints. What a command writes on stdout is its output (a prompt, a
doc, JSON, a report): the report writers escape what they put in it (:mod:`prompt_composer.shared.text`).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, NoReturn

from ..errors import InputFileError, LoadError, PromptComposerError
from ..shared.annotations import annotation_path, github_annotation
from ..shared.progress import CLEAR_LINE
from ..shared.text import shown

# The one prefix of an error line, as argparse writes its own (`prompt-composer: error: …`) and as every command
# does; warnings say `warning: `.
ERROR = "error: "
WARNING = "warning: "


class MessageStream:
    """A text stream over ``target`` that escapes what is written to it (see the module docstring)."""

    def __init__(self, target: IO[str], *, github: bool = False) -> None:
        self.target = target
        self.github = github
        self._lock = threading.Lock()
        self._pending = threading.local()  # github: the start of a line written without its newline yet

    # -- the stream -------------------------------------------------------------------------------------------

    def write(self, text: str) -> int:
        if self.github:
            self._write_annotated(text)
        else:
            self._write_shown(text)
        return len(text)

    def _write_shown(self, text: str) -> None:
        head = ""
        if text.startswith(CLEAR_LINE):  # a progress bar redrawing its line: its own control sequence
            head, text = CLEAR_LINE, text[len(CLEAR_LINE) :]
        # Blank lines before a message (``print(f"\\n# …")``) and its one trailing newline are the writer's layout;
        # a newline anywhere else is inside the message, from an outside string.
        body = text.lstrip("\n")
        head += text[: len(text) - len(body)]
        end = "\n" if body.endswith("\n") else ""
        body = body[: len(body) - len(end)]
        with self._lock:
            self.target.write(head + (shown(body) if body else "") + end)

    def _pending_text(self) -> str:
        text: str = getattr(self._pending, "text", "")
        return text

    def _write_annotated(self, text: str) -> None:
        pending = self._pending_text() + text
        if not pending.endswith("\n"):  # print() writes its message, then the newline: one line, one annotation
            self._pending.text = pending
            return
        self._pending.text = ""
        self.annotate(pending[:-1].removeprefix(CLEAR_LINE))

    def annotate(self, line: str, *, path: Path | None = None, number: int | None = None) -> None:
        """``line`` as one annotation (``error: …`` an error, ``warning: …`` a warning, else a notice), at
        ``path`` and line ``number`` when given."""
        if line.startswith(ERROR):
            command, message = "error", line.removeprefix(ERROR)
        elif line.startswith(WARNING):
            command, message = "warning", line.removeprefix(WARNING)
        else:
            command, message = "notice", line
        file = annotation_path(path) if path is not None else None
        with self._lock:
            self.target.write(github_annotation(command, message, file=file, line=number) + "\n")
            self.target.flush()

    def flush(self) -> None:
        if self.github and self._pending_text():
            self.write("\n")
        with self._lock:
            self.target.flush()

    def isatty(self) -> bool:
        return bool(self.target.isatty())

    def fileno(self) -> int:
        return self.target.fileno()

    def __getattr__(self, name: str) -> Any:  # encoding, errors, buffer …: the target's
        return getattr(self.target, name)


@contextlib.contextmanager
def messages(*, github: bool = False) -> Iterator[MessageStream]:
    """``sys.stderr`` as a :class:`MessageStream` for one run of the command; what it was before, afterwards (a
    caller running the CLI in-process keeps its own stream)."""
    before = sys.stderr
    stream = MessageStream(before, github=github)
    sys.stderr = stream
    try:
        yield stream
    finally:
        sys.stderr = before
        with contextlib.suppress(OSError, ValueError):  # a closed or broken stderr: nothing more can be said
            stream.flush()


def report_error(exc: PromptComposerError) -> None:
    """One line per problem of ``exc`` on stderr: ``path:line: message`` for each problem of a LoadError, else
    ``error: message``. Under ``--format github``, each an ``::error`` annotation at its file and line."""
    github = sys.stderr if isinstance(sys.stderr, MessageStream) and sys.stderr.github else None
    if isinstance(exc, LoadError):
        for problem in exc.problems:
            if github is not None:
                github.annotate(ERROR + problem.message, path=problem.path, number=problem.line)
            else:
                print(problem, file=sys.stderr)
        return
    if github is not None and isinstance(exc, InputFileError):
        github.annotate(f"{ERROR}{exc}", path=exc.path, number=exc.line if exc.path is not None else None)
        return
    print(f"{ERROR}{exc}", file=sys.stderr)


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, whose error line shows what the user typed visibly (an argument may hold a newline or
    an escape sequence: the list of unrecognized arguments is printed as typed)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: {ERROR}{shown(message)}\n")
