"""The ``prompt-composer`` command. Each feature module registers its subcommands here.

Errors are printed as one line each on stderr, never as a traceback: exit 2 for bad input (a registry that
does not load, an unknown mode or tool), 1 for a refusal or a failed check, 0 otherwise. An error line starts
with ``error: `` (as argparse's own do), a warning with ``warning: ``; a problem of a file is ``path:line:
message``. Whatever a command writes on stderr goes through :mod:`.output`, which escapes it (and makes every
line an annotation under ``--format github``).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import PromptComposerError
from ..shared.version import VERSION as __version__
from . import agent, bench, discovery, gateway, help_text, interop, local, project, registry, stats, tune
from .output import ERROR, ArgumentParser, messages, report_error

__all__ = ["main"]

# Subcommand modules: each has ``register(subparsers)``; handlers return an exit code.
COMMAND_MODULES = (project, registry, interop, agent, bench, discovery, gateway, local, stats, tune)

# The subcommands that load a registry (through ``args.docs``): each also takes ``--docs`` after its name.
REGISTRY_COMMANDS = frozenset(
    {
        "validate",
        "modes",
        "tools",
        "compose",
        "fetch",
        "audit",
        "run",
        "replay",
        "bench",
        "search",
        "eval",
        "serve",
        "stats",
        "tune",
    }
)


def _add_docs_option(parser: argparse.ArgumentParser, *, default: object) -> None:
    parser.add_argument(
        "--docs",
        metavar="DIR",
        default=default,
        help="folder with tool YAMLs and modes/ (default: $PROMPT_COMPOSER_DOCS, else docs in [tool.prompt-composer] "
        "of the nearest pyproject.toml, else the shipped tool_docs)",
    )
    parser.add_argument(
        "--overlay",
        metavar="FILE",
        default=default,
        help="per-user mode overlay, {mode: {permanent: [...], recent_size: N}} (default: $PROMPT_COMPOSER_OVERLAY, "
        "else overlay in [tool.prompt-composer])",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        default=default,
        help="parse every doc file, neither reading nor writing the parsed-docs cache in the user cache folder "
        "(default: the cache is on, unless $PROMPT_COMPOSER_REGISTRY_CACHE or registry-cache in "
        "[tool.prompt-composer] is off)",
    )


def _add_verbosity(parser: argparse.ArgumentParser, *, default: object) -> None:
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=default,
        help="log more on stderr: -v info, -vv debug (the prompt_composer logger)",
    )
    parser.add_argument(
        "-q", "--quiet", action="count", default=default, help="log less on stderr: -q errors only, -qq nothing"
    )


def _leaves(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """Every subcommand parser that runs a command (``import json``, not ``import``)."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found.extend(_leaves(sub) or [sub])
    return found


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="prompt-composer")  # description and examples: help_text.py
    parser.add_argument("--version", action="version", version=f"prompt-composer {__version__}")
    _add_docs_option(parser, default=None)
    _add_verbosity(parser, default=0)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub)
    # `--docs DIR` (and `--overlay FILE`, `--no-cache`) are accepted before the subcommand and after it. The
    # subcommand's copy has no default (SUPPRESS), so it sets args.docs only when given, and then wins over the
    # top-level value.
    missing = REGISTRY_COMMANDS - sub.choices.keys()
    if missing:
        raise RuntimeError(f"REGISTRY_COMMANDS names unregistered subcommands: {', '.join(sorted(missing))}")
    for name in sorted(REGISTRY_COMMANDS):
        _add_docs_option(sub.choices[name], default=argparse.SUPPRESS)
    # -v and -q after the subcommand too, as pytest takes them (`prompt-composer audit -q`).
    for leaf in _leaves(parser):
        _add_verbosity(leaf, default=argparse.SUPPRESS)
    help_text.apply(parser)
    return parser


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a record comes, as ``print(..., file=sys.stderr)`` does."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


class _Levelled(logging.Formatter):
    """``error: …`` and ``warning: …`` as the command's own lines say it, so ``--format github`` makes them error
    and warning annotations; below warning, ``INFO name: …``."""

    def format(self, record: logging.LogRecord) -> str:
        message = super().format(record)
        if record.levelno >= logging.ERROR:
            return f"error: {message}"
        if record.levelno >= logging.WARNING:
            return f"warning: {message}"
        return f"{record.levelname} {record.name}: {message}"


@contextlib.contextmanager
def cli_logging(verbose: int, quiet: int, *, github: bool = False) -> Iterator[None]:
    """The ``prompt_composer`` logger at the level -v/-q ask for, written to stderr, for one run of the command.
    Without either, logging is left as it is (warnings reach stderr through Python's last-resort handler), except
    under ``--format github``, where records are written as the command's own lines (:class:`_Levelled`). Only the
    command does this: the library only logs. Scoped, so a caller running the CLI in-process keeps its own
    logging afterwards."""
    if not verbose and not quiet and not github:
        yield
        return
    levels = (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL + 1)
    logger = logging.getLogger("prompt_composer")
    before = logger.level
    handler = _Stderr()
    handler.setFormatter(_Levelled() if github else logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    if verbose or quiet:
        logger.setLevel(levels[min(max(2 + quiet - verbose, 0), len(levels) - 1)])
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(before)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    github = getattr(args, "format", None) == "github"
    with messages(github=github):
        try:
            with cli_logging(args.verbose, args.quiet, github=github):
                if args.command in REGISTRY_COMMANDS:
                    project.apply_settings(args)
                code: int = args.handler(args)
        except PromptComposerError as exc:
            report_error(exc)
            return 2
        except BrokenPipeError:  # `prompt-composer … | head` is fine
            return 0
        except ModuleNotFoundError as exc:  # an optional extra's module that no check above caught: still one line
            from ..shared.extras import extra_of, needs_extra

            extra = extra_of(exc)
            if extra is None:
                raise
            print(f"{ERROR}{needs_extra(args.command, extra)}", file=sys.stderr)
            return 2
    return code


if __name__ == "__main__":
    raise SystemExit(main())
