"""GitHub Actions workflow commands (``::error file=a.yaml,line=3::message``): one annotation line, escaped.

The runner reads a workflow command from any line a step prints, on stdout or stderr: a line that starts with
``::`` after leading whitespace (and, in its older syntax, ``##[`` anywhere). It undoes exactly these escapes
(actions/runner, ``ActionCommand.cs``): in a message ``%25``, ``%0D``, ``%0A``; in a property also ``%3A`` and
``%2C``. So a message or a file name holding a line break cannot end the command and start a line of its own.
"""

from __future__ import annotations

import os
from pathlib import Path

from .text import visible


def escape_data(text: str) -> str:
    """A command's message, escaped: line breaks as ``%0A`` (``\\r\\n`` as one), ``%`` as ``%25``; any other
    control character (an escape sequence the log viewer would render, a lone ``\\r``) shown as an escape."""
    text = "\n".join(visible(part) for part in text.replace("\r\n", "\n").split("\n"))
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotation(
    command: str, message: str, *, file: str | None = None, line: int | None = None, title: str = ""
) -> str:
    """One workflow command line: ``::error file=a.yaml,line=3,title=…::message``."""
    props = []
    if file is not None:
        props.append(f"file={escape_property(file)}")
        if line is not None:
            props.append(f"line={line}")
    if title:
        props.append(f"title={escape_property(title)}")
    head = f"::{command} {','.join(props)}" if props else f"::{command}"
    return f"{head}::{escape_data(message)}"


def relative_uri(path: Path, base: Path | None = None) -> str:
    """``path`` as a URI reference relative to ``base`` (the working directory) when it lies under it: code
    scanning and annotations match files by their path in the repository. Elsewhere, an absolute ``file:`` URI.
    A path that cannot be resolved (a symlink loop) is given as it is."""
    try:
        base = (base or Path.cwd()).resolve()
        # The parent is resolved, the last part is not: a symlink in the repository is named by its own path
        # (that is the file a reviewer sees), not by wherever it points.
        absolute = Path(os.path.abspath(path))
        resolved = absolute.parent.resolve() / absolute.name if absolute.name else absolute.resolve()
    except (OSError, RuntimeError):
        return path.as_posix()
    try:
        return resolved.relative_to(base).as_posix()
    except ValueError:
        return resolved.as_uri()


def annotation_path(path: Path, base: Path | None = None) -> str:
    """A path relative to the working directory (the repository root in a workflow), else the absolute path."""
    uri = relative_uri(path, base)
    if not uri.startswith("file:"):
        return uri
    try:
        return str(path.resolve())
    except (OSError, RuntimeError):
        return str(path)
