"""What the subcommands share: reading the registry (``--docs``, ``--overlay``), ``--learn-from``, and argument
types."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..core.registry import Registry, load_registry
from ..discovery.search import ToolSearch
from ..learn.phrasings import load_phrasings

OVERLAY_ENV = "PROMPT_COMPOSER_OVERLAY"  # the per-user mode overlay the CLI applies when --overlay is not given


def positive_int(text: str) -> int:
    """An argparse type for counts and limits: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def registry_of(args: argparse.Namespace) -> Registry:
    """The registry of ``--docs`` (given before or after the subcommand), else the shipped one; with the per-user
    overlay of ``--overlay`` or ``$PROMPT_COMPOSER_OVERLAY`` applied, when either names one."""
    overlay = getattr(args, "overlay", None) or os.environ.get(OVERLAY_ENV) or None
    return load_registry(args.docs, overlay=overlay)


def add_learn_from(parser: Any) -> None:
    """``--learn-from LOG`` (repeatable): what :func:`search_for` reads."""
    parser.add_argument(
        "--learn-from",
        action="append",
        default=[],
        metavar="LOG",
        help="an event log written with --log-content: the searches that led to a tool's use become its phrasings "
        "(repeatable)",
    )


def search_for(args: argparse.Namespace, registry: Registry) -> ToolSearch | None:
    """The tool search of ``--learn-from``'s logs (their phrasings learned), or ``None`` when none was given: the
    caller's default then applies (the loop and the gateway build a plain one on their first search)."""
    if not args.learn_from:
        return None
    return ToolSearch(registry, phrasings=load_phrasings(args.learn_from))
