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
import importlib
import sys
from collections.abc import Mapping, Sequence
from types import ModuleType

from ..errors import PromptComposerError
from ..shared.version import VERSION as __version__
from . import help_text, project
from .output import ERROR, ArgumentParser, messages, report_error

__all__ = ["main", "run"]

# Subcommand modules, in the order --help lists them: each has ``register(subparsers)``; handlers return an exit
# code.
COMMAND_MODULES = ("project", "registry", "interop", "agent", "bench", "discovery", "gateway", "local", "stats", "tune")
# The module that registers each subcommand. A command line that names one builds that module's parsers alone:
# importing every command module and building every parser was a tenth of a warm `compose`. tests/cli/test_help.py
# holds this equal to what the modules register, and each subcommand's parser equal to the one the whole parser has.
COMMANDS: Mapping[str, str] = {
    "config": "project",
    "init": "project",
    "validate": "registry",
    "modes": "registry",
    "tools": "registry",
    "compose": "registry",
    "fetch": "registry",
    "audit": "registry",
    "import": "interop",
    "run": "agent",
    "replay": "agent",
    "bench": "bench",
    "search": "discovery",
    "eval": "discovery",
    "serve": "gateway",
    "model": "local",
    "stats": "stats",
    "tune": "tune",
}

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
        help="parse and validate every doc file, neither reading nor writing the parsed-docs cache (nor search's "
        "kept keyword index) in the user cache folder (default: the cache is on, unless "
        "$PROMPT_COMPOSER_REGISTRY_CACHE or registry-cache in [tool.prompt-composer] is off)",
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


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{name}")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command's parser: every subcommand's, or with ``command`` (a key of :data:`COMMANDS`) only the parsers
    of the module that registers it, the same as the whole parser holds."""
    parser = ArgumentParser(prog="prompt-composer")  # description and examples: help_text.py
    parser.add_argument("--version", action="version", version=f"prompt-composer {__version__}")
    _add_docs_option(parser, default=None)
    _add_verbosity(parser, default=0)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES if command is None else (COMMANDS[command],):
        _module(name).register(sub)
    # `--docs DIR` (and `--overlay FILE`, `--no-cache`) are accepted before the subcommand and after it. The
    # subcommand's copy has no default (SUPPRESS), so it sets args.docs only when given, and then wins over the
    # top-level value.
    missing = REGISTRY_COMMANDS - sub.choices.keys()
    if missing and command is None:
        raise RuntimeError(f"REGISTRY_COMMANDS names unregistered subcommands: {', '.join(sorted(missing))}")
    for name in sorted(REGISTRY_COMMANDS - missing):
        _add_docs_option(sub.choices[name], default=argparse.SUPPRESS)
    # -v and -q after the subcommand too, as pytest takes them (`prompt-composer audit -q`).
    for leaf in _leaves(parser):
        _add_verbosity(leaf, default=argparse.SUPPRESS)
    help_text.apply(parser)
    return parser


def cli_logging(verbose: int, quiet: int, *, github: bool = False) -> contextlib.AbstractContextManager[None]:
    """The ``prompt_composer`` logger at the level -v/-q ask for, written to stderr, for one run of the command
    (:func:`.logs.logging_to_stderr`). Without either, logging is left as it is (warnings reach stderr through
    Python's last-resort handler) and not even imported, except under ``--format github``, where records are
    written as the command's own lines. Only the command does this: the library only logs."""
    if not verbose and not quiet and not github:
        return contextlib.nullcontext()
    from .logs import logging_to_stderr

    return logging_to_stderr(verbose, quiet, github=github)


# The options before the subcommand: those that take a value (as the next word, or after "="), and those that do not.
_VALUED = ("--docs", "--overlay")
_FLAGS = frozenset({"--no-cache", "--verbose", "--quiet"})


def command_in(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names, when what comes before it are options of the command spelled in full (so
    the parser would read it there too); else ``None``: ``--help``, ``--version``, an abbreviated or unknown
    option, no subcommand or a mistyped one, which the whole parser answers."""
    index = 0
    while index < len(argv):
        word = argv[index]
        if word in _VALUED:
            index += 2
        elif word in _FLAGS or word.startswith(tuple(f"{option}=" for option in _VALUED)):
            index += 1
        elif len(word) > 1 and word.startswith("-") and not word.startswith("--") and set(word[1:]) <= {"v", "q"}:
            index += 1  # -v, -vv, -q, -vq
        else:
            return word if word in COMMANDS else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(command_in(argv))
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
        except OSError as exc:
            # A path the system refuses (a name too long, a NUL, no permission) that no check above named: one
            # line naming it, as every other bad input gets; -v still shows where it came from.
            if exc.filename is None or args.verbose:
                raise
            print(f"{ERROR}{exc.filename}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    return code


# The young generation's threshold of the console script (CPython's default is 700): a cold command builds a few
# hundred thousand objects that live until it exits (parsed docs, models, the tokenizer's 100k ranks), and with
# the default every few hundred of them started a collection that walked them again, about a twentieth of a
# `compose` with an empty cache (docs/benchmarks.md). mypy's command sets the same. Garbage that holds itself is
# still collected, later; a long-running `serve` keeps collecting too.
GC_THRESHOLD = (200_000, 30, 30)


def run() -> int:
    """The ``prompt-composer`` console script and ``python -m prompt_composer``: :func:`main` on ``sys.argv``, the
    collector tuned for a process that builds much and frees little (see :data:`GC_THRESHOLD`). A program calling
    :func:`main` itself keeps its own collector settings."""
    import gc

    gc.set_threshold(*GC_THRESHOLD)
    return main()


if __name__ == "__main__":
    raise SystemExit(run())
