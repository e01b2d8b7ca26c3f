"""``tune``: fit a mode's permanent tools and ``recent_size`` to real tool-use sequences (prompt_composer.tune)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import InputFileError, LoadError
from ..learn.costs import COST_MODELS
from ._common import add_mode_option, registry_of

# learn.tune's defaults, here so that building the parser imports no learn module (tests/cli/test_startup.py
# holds them equal).
DEFAULT_HELDOUT_FRACTION = 0.3
DEFAULT_SEED = 0


def fraction(text: str) -> float:
    """An argparse type for the held-out fraction: a number strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError("must be between 0 and 1 (exclusive)")
    return value


def register(sub: Any) -> None:
    p = sub.add_parser(
        "tune",
        help="propose a mode's permanent tools and recent_size from real tool-use sequences (replayed cache cost, "
        "fitted on one part, reported on a held-out part)",
    )
    add_mode_option(p, "the mode to tune")
    source = p.add_mutually_exclusive_group()  # neither: the event-log setting (main fills --log)
    source.add_argument(
        "--log",
        metavar="FILE",
        help="an event log (run --log, serve --log): the mode's tool calls (default: the event-log setting)",
    )
    source.add_argument("--traces", metavar="FILE", help="JSONL traces (SWE-agent format, as replay --traces)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"seed of the fit/held-out split ({DEFAULT_SEED})")
    p.add_argument(
        "--heldout-fraction",
        type=fraction,
        default=DEFAULT_HELDOUT_FRACTION,
        metavar="F",
        help=f"share of the sequences held out to report on ({DEFAULT_HELDOUT_FRACTION})",
    )
    p.add_argument(
        "--provider", choices=tuple(COST_MODELS), default="anthropic", help="prompt-cache cost model, as in replay"
    )
    p.add_argument(
        "--write-overlay",
        metavar="FILE",
        default=None,
        help="write the proposal into this per-user overlay file (created if missing) instead of printing a diff "
        "of the mode file; load it with --overlay FILE or PROMPT_COMPOSER_OVERLAY",
    )
    p.set_defaults(handler=cmd_tune)


def cmd_tune(args: argparse.Namespace) -> int:
    from ..core.registry import load_registry
    from ..learn.mode_files import mode_file_diff, unified_diff
    from ..learn.mode_files import write_overlay as write_overlay_file
    from ..learn.replay import ReplayParams
    from ..learn.traces import load_traces
    from ..learn.tune import load_log_tasks, tune_mode
    from ..shared.files import read_text
    from ..shared.progress import Progress

    registry = registry_of(args)
    mode = registry.mode(args.mode)  # an unknown mode exits 2 before any input is read
    if not args.traces and not args.log:
        raise InputFileError("tune needs --log FILE (or the event-log setting) or --traces FILE")
    if args.traces:
        tasks = load_traces(args.traces)
        source = args.traces
    else:
        tasks = load_log_tasks(args.log, args.mode)
        source = args.log
    if not any(task.tools for task in tasks):
        where = f"in mode {args.mode!r} " if args.log else ""
        raise InputFileError(f"{source}: no tool calls {where}to tune on")
    params = ReplayParams(cost_model=COST_MODELS[args.provider])
    # Each fitting round beside a bar on a terminal; nothing off one.
    with Progress("tune", None, sys.stderr) as progress:
        result = tune_mode(
            registry,
            args.mode,
            tasks,
            heldout_fraction=args.heldout_fraction,
            seed=args.seed,
            params=params,
            progress=lambda note: progress.advance(note=note),
        )
    note = ""
    diff = ""
    if args.write_overlay and not result.already_best:
        target = Path(args.write_overlay)
        before = read_text(target, what="overlay file") if target.exists() else None
        root = registry.root

        def check(path: Path) -> None:  # the new overlay must load over the same docs, or it is not written
            try:
                load_registry(root, overlay=path, cache=getattr(args, "cache", True))
            except LoadError as exc:  # its problems, at the lines of the file the user will edit
                raise LoadError([replace(p, path=target) if p.path == path else p for p in exc.problems]) from None

        after = write_overlay_file(target, mode.slug, result.proposed, validate=check)
        diff = unified_diff(before or "", after, str(target))
        note = f"wrote the proposal for mode {mode.slug!r} to {target}"
    elif args.write_overlay:
        note = f"nothing written to {args.write_overlay}: the current setting is already best"
    elif not result.already_best:
        diff = mode_file_diff(mode, result.proposed)
    if args.format == "json":
        print(json.dumps(result.as_dict(), indent=2))
        if note:
            print(note, file=sys.stderr)
        return 0
    print(result.summary())
    if diff:
        print()
        print(diff, end="" if diff.endswith("\n") else "\n")
    if note:
        print()
        print(note)
    return 0
