"""``prompt-composer stats``: per-tool and per-mode counts from an event log or from tool-use traces (see
:mod:`prompt_composer.stats`)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ._common import positive_int, registry_of
from .project import settings_of

DEFAULT_TRACE_MODE = "code"  # the SWE-agent traces are coding tasks
DEFAULT_TOP = 5  # learn.stats.DEFAULT_TOP, here so that building the parser imports no learn module


def register(sub: Any) -> None:
    p = sub.add_parser(
        "stats",
        help="per tool: uses, first uses, fetches, refusals, errors; per mode: requests, tokens, cache hit rate, "
        "unused permanent tools, most used brief tools; from an event log (run/serve --log) or traces",
    )
    p.add_argument(
        "logs",
        nargs="*",
        metavar="LOG",
        help="event logs written by run --log / serve --log (JSONL); default: the event-log setting",
    )
    source = p.add_mutually_exclusive_group()
    source.add_argument(
        "--log",
        metavar="FILE",
        action="append",
        default=[],
        help="an event log, as LOG (repeatable)",
    )
    source.add_argument(
        "--traces",
        metavar="FILE",
        help="SWE-agent traces (JSONL, as replay reads them): each step is a call of its mapped tool in --mode",
    )
    p.add_argument(
        "--mode",
        default=None,
        help=f"with --traces: the mode the steps are called in (default: {DEFAULT_TRACE_MODE}); with --log: only "
        "this mode's events",
    )
    p.add_argument(
        "--top", type=positive_int, default=DEFAULT_TOP, help=f"brief tools listed per mode (default {DEFAULT_TOP})"
    )
    p.add_argument(
        "--format",
        choices=("table", "json", "markdown", "html"),
        default="table",
        help="html: one self-contained page with charts (tool use, preselection, fetches and cache reads over time)",
    )
    p.set_defaults(handler=cmd_stats)


def cmd_stats(args: argparse.Namespace) -> int:
    from ..learn.events import read_events
    from ..learn.stats import compute_stats, trace_events
    from ..learn.traces import load_traces

    registry = registry_of(args)  # the modes' permanent and allowed tools
    if args.traces is not None:
        if args.logs:
            print("error: stats reads event logs or --traces, not both", file=sys.stderr)
            return 2
        mode = registry.mode(args.mode or DEFAULT_TRACE_MODE).slug  # an unknown mode exits 2
        tasks = load_traces(args.traces)
        events = trace_events(tasks, registry, mode)
        report = compute_stats(events, registry, source=f"{args.traces} in mode {mode}", top=args.top)
        empty = sum(1 for task in tasks if not task.tools)
        report.notes.insert(
            0,
            f"{len(tasks)} sequences, {empty} of them without a tool step (only malformed ones); each step counts "
            "as one request; traces carry no token usage",
        )
    else:
        logs = [*args.logs, *args.log] or [settings_of(args).event_log.value or ""]
        if not logs[0]:
            print(
                "error: stats needs an event log (LOG, --log FILE, or the event-log setting) or --traces FILE",
                file=sys.stderr,
            )
            return 2
        events, skipped = read_events(logs)
        if args.mode is not None:  # a mode the registry no longer has may still be in an old log
            events = [event for event in events if event.get("mode") == args.mode]
        report = compute_stats(events, registry, source=", ".join(logs), top=args.top, skipped_lines=skipped)
    if args.format == "json":
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
    elif args.format == "html":
        from .reports import stats_html

        print(stats_html(report, events))
    else:
        print(report.render(markdown=args.format == "markdown"))
    return 0
