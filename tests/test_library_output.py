"""The library never writes to the terminal, and every module logs under its own name.

The rule:

- **Commands** are the modules that are a program's command line: everything under ``prompt_composer/cli/``,
  ``prompt_composer/__main__.py``, and the scripted model server's own command (``prompt_composer/testing/cli.py``
  and ``prompt_composer/testing/__main__.py``, run as ``python -m prompt_composer.testing``). Only they may call
  ``print`` or name ``sys.stdout`` / ``sys.stderr``.
- **Everything else is library**: it returns values, raises, warns (``warnings``) or logs, and writes only to a
  stream its caller handed it (``serve(out=...)``, ``serve_http(ready=...)``). A library function that announces
  something (a server's ``READY`` line) takes a callback or a stream; the command passes the terminal.
- **Logging.** A module logs through ``logging.getLogger(__name__)``, never through another module's name or the
  root logger (``logging.warning(...)``, ``getLogger()``). Two uses of another name are configuration, not
  logging, and are allowed: a third-party library's logger (``getLogger("mcp")``, to quiet the SDK while a
  server is listed), and, in a command only, the package's own loggers (to show or quiet them).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "prompt_composer"
COMMANDS = ("prompt_composer/cli/", "prompt_composer/__main__.py", "prompt_composer/testing/cli.py")
COMMANDS_EXACT = {"prompt_composer/testing/__main__.py"}
DEFERRED_LOGGERS = "prompt_composer/shared/logs.py"
ROOT_LOGGING = {"debug", "info", "warning", "warn", "error", "exception", "critical", "log"}


def _is_command(where: str) -> bool:
    return where.startswith(COMMANDS) or where in COMMANDS_EXACT


def breaches(source: str, where: str) -> list[str]:
    """The rule's breaches in one module's ``source``, as ``where:line: what`` lines."""
    command = _is_command(where)
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        line = f"{where}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print" and not command:
            found.append(f"{line}: print() in library code")
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
            and node.attr in ("stdout", "stderr", "__stdout__", "__stderr__")
            and not command
        ):
            found.append(f"{line}: sys.{node.attr} in library code")
        elif isinstance(node, ast.Call) and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == "getLogger")
            or (isinstance(node.func, ast.Name) and node.func.id == "get_logger")  # shared/logs.py's deferred one
        ):
            args = node.args
            if where == DEFERRED_LOGGERS and ast.unparse(node) == "logging.getLogger(self._name)":
                continue  # the deferred logger of get_logger(__name__): the name it was given
            if len(args) == 1 and isinstance(args[0], ast.Name) and args[0].id == "__name__":
                continue
            literal = args[0].value if len(args) == 1 and isinstance(args[0], ast.Constant) else None
            if isinstance(literal, str) and literal and not literal.startswith("prompt_composer"):
                continue  # configuring a third-party library's logger
            if command and isinstance(literal, str) and literal.startswith("prompt_composer"):
                continue  # a command showing or quieting the package's loggers
            found.append(f"{line}: {ast.unparse(node)} (log through getLogger(__name__))")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "logging"
            and node.func.attr in ROOT_LOGGING
        ):
            found.append(f"{line}: {ast.unparse(node.func)}() logs through the root logger")
    return found


def test_the_library_never_prints_and_logs_under_its_own_name() -> None:
    found: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        found += breaches(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert found == [], "\n".join(found)


def test_the_scan_catches_what_it_should_and_allows_the_rest() -> None:
    library = (
        "import logging, sys\n"
        "log = logging.getLogger(__name__)\n"
        "other = logging.getLogger('prompt_composer.discovery.search')\n"
        "root = logging.getLogger()\n"
        "quiet = logging.getLogger('mcp')\n"
        "def f(out):\n"
        "    print('hi')\n"
        "    sys.stderr.write('x')\n"
        "    logging.warning('y')\n"
        "    out.write('READY')\n"
    )
    assert sorted(b.split(": ", 1)[1] for b in breaches(library, "prompt_composer/mcp/x.py")) == [
        "logging.getLogger('prompt_composer.discovery.search') (log through getLogger(__name__))",
        "logging.getLogger() (log through getLogger(__name__))",
        "logging.warning() logs through the root logger",
        "print() in library code",
        "sys.stderr in library code",
    ]
    deferred = "from .logs import get_logger\nlog = get_logger(__name__)\nbad = get_logger('prompt_composer.x')\n"
    assert [b.split(": ", 1)[1] for b in breaches(deferred, "prompt_composer/core/x.py")] == [
        "get_logger('prompt_composer.x') (log through getLogger(__name__))"
    ]
    command = "import logging, sys\nlogging.getLogger('prompt_composer')\nprint('x', file=sys.stderr)\n"
    assert breaches(command, "prompt_composer/cli/x.py") == []
    assert breaches(command, "prompt_composer/testing/__main__.py") == []
    assert len(breaches(command, "prompt_composer/testing/server.py")) == 3
