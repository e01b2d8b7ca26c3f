"""The ``prompt-composer`` command. Each feature module registers its subcommands here.

Errors are printed as one line each on stderr, never as a traceback: exit 2 for bad input (a registry that
does not load, an unknown mode or tool), 1 for a refusal or a failed check, 0 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..errors import LoadError, PromptComposerError
from ..shared.version import VERSION as __version__
from . import agent, bench, discovery, gateway, interop, local, registry, stats, tune

__all__ = ["main"]

# Subcommand modules: each has ``register(subparsers)``; handlers return an exit code.
COMMAND_MODULES = (registry, interop, agent, bench, discovery, gateway, local, stats, tune)

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
        help="folder with tool YAMLs and modes/ (default: the shipped tool_docs)",
    )
    parser.add_argument(
        "--overlay",
        metavar="FILE",
        default=default,
        help="per-user mode overlay, {mode: {permanent: [...], recent_size: N}} (default: $PROMPT_COMPOSER_OVERLAY)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="prompt-composer",
        description="Compose coding-agent system prompts from a registry of tool docs.",
    )
    parser.add_argument("--version", action="version", version=f"prompt-composer {__version__}")
    _add_docs_option(parser, default=None)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub)
    # `--docs DIR` (and `--overlay FILE`) are accepted before the subcommand and after it. The subcommand's copy
    # has no default (SUPPRESS), so it sets args.docs only when given, and then wins over the top-level value.
    missing = REGISTRY_COMMANDS - sub.choices.keys()
    if missing:
        raise RuntimeError(f"REGISTRY_COMMANDS names unregistered subcommands: {', '.join(sorted(missing))}")
    for name in sorted(REGISTRY_COMMANDS):
        _add_docs_option(sub.choices[name], default=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.handler(args)
    except LoadError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return 2
    except PromptComposerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `prompt-composer … | head` is fine
        return 0
    return code


if __name__ == "__main__":
    raise SystemExit(main())
