"""``bench``: the agent-level A/B (static vs composed vs every_turn vs discovery) on a registry and a model."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any, cast

from ..errors import InputFileError
from ..shared.files import read_text
from ..shared.jsontext import JsonDataError, strict_json
from ._common import add_mode_option, checked_mode, positive_int, registry_of, warn_over_budget
from .agent import DEFAULT_MODELS, PROVIDER_HELP, sdk_client

if TYPE_CHECKING:
    from ..agent.bench import Variant

DEFAULT_MODEL = "local"  # llama.cpp's server ignores the name; pass --model for a hosted API
# What the parser offers, written here so that building it imports no agent module (tests/cli/test_startup.py
# holds them equal to agent.bench's VARIANTS and DEFAULT_CONTEXT_TOKENS).
VARIANTS = (
    "static", "composed", "every_turn", "discovery", "auto", "oracle", "native", "auto_native", "auto_stubs",
    "auto_shortlist_stubs", "auto_rewrite",
)  # fmt: skip
DEFAULT_VARIANTS = tuple(v for v in VARIANTS if v != "auto_rewrite")
DEFAULT_CONTEXT_TOKENS = 16_384


def register(sub: Any) -> None:
    p = sub.add_parser(
        "bench",
        help="A/B the prompt variants on tasks through the tool loop and a real model",
        description="Run each task once per variant (static: every tool in full, no fetch tool; composed: the mode "
        "as configured; every_turn; discovery; auto: preselection and tiers; oracle: the expected tools in full) "
        "through the tool loop against a model server, and report first-tool and argument accuracy, tokens, "
        "fetches, errors and time to first token (--format json adds every task's outcome). Exit 1 when every "
        "task of a variant failed (a server that is down, a wrong key or model name).",
    )
    p.add_argument("--tasks", metavar="FILE", help="JSONL tasks: id, task, expect, args, workspace")
    add_mode_option(p, "the mode to run the tasks in")
    p.add_argument("--base-url", help="the model server (e.g. `prompt-composer model serve`'s URL)")
    p.add_argument("--provider", choices=tuple(DEFAULT_MODELS), default="anthropic", help=PROVIDER_HELP)
    p.add_argument("--model", default=DEFAULT_MODEL, help="model name (default: local; a hosted API needs a real one)")
    p.add_argument(
        "--variants", default=",".join(DEFAULT_VARIANTS), help=f"comma-separated, of {','.join(VARIANTS)} (default: "
        f"all but auto_rewrite, which a single-slot local server pays for with each task's cached prefix)",
    )  # fmt: skip
    p.add_argument("--max-iterations", type=positive_int, default=4, help="requests per task at most (default: 4)")
    p.add_argument("--max-tokens", type=positive_int, default=512, help="per response (default: 512)")
    p.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default: 0)")
    p.add_argument(
        "--context",
        type=positive_int,
        default=DEFAULT_CONTEXT_TOKENS,
        metavar="TOKENS",
        help=f"the model's context, which auto sizes its tiers to (default: {DEFAULT_CONTEXT_TOKENS})",
    )
    p.add_argument(
        "--format",
        choices=("table", "json", "html"),
        default="table",
        help="html: one self-contained page, accuracy against tokens a request, one point a variant",
    )
    p.add_argument(
        "--results",
        metavar="FILE",
        default=None,
        help="report on a saved `bench --format json` output instead of running (no --tasks, --mode, --base-url)",
    )
    p.set_defaults(handler=cmd_bench)


def cmd_bench(args: argparse.Namespace) -> int:
    if args.results is not None:
        return _report(args.results, args.format)
    missing = [flag for flag, value in (("--tasks", args.tasks), ("--mode", args.mode), ("--base-url", args.base_url))
               if value is None]  # fmt: skip
    if missing:
        print(f"error: bench needs {', '.join(missing)} (or --results FILE to report on a saved run)", file=sys.stderr)
        return 2
    return _run(args)


def _report(path: str, fmt: str) -> int:
    if fmt != "html":
        print("error: --results makes a report: add --format html", file=sys.stderr)
        return 2
    from .reports import bench_html

    print(bench_html(_read_results(path), path))
    return 0


def _read_results(path: str) -> Any:
    """A saved results file, through the capped regular-file reader (a FIFO or ``/dev/zero`` is refused at once),
    decoded strictly: no NaN or Infinity, no number past 2**53, no nesting past 100 levels."""
    text = read_text(path, what="results file")
    try:
        return strict_json(text)
    except JsonDataError as exc:
        where = f"{path}:{exc.line}" if exc.line is not None else str(path)
        raise InputFileError(f"{where}: {exc}", path=path, line=exc.line) from None


def _run(args: argparse.Namespace) -> int:
    from ..agent.bench import load_tasks, render_table, run_bench
    from ..shared.progress import Progress

    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        print(f"error: unknown variant {unknown[0] if unknown else '(none)'}; choose from {', '.join(VARIANTS)}",
              file=sys.stderr)  # fmt: skip
        return 2
    registry = registry_of(args)
    warn_over_budget(registry, checked_mode(registry, args.mode))
    tasks = load_tasks(args.tasks)
    sdk = sdk_client(args.provider, args.base_url, timeout=900)  # a cold prompt on a CPU takes minutes
    if isinstance(sdk, str):
        print(f"error: {sdk} (a server on this machine needs none)", file=sys.stderr)
        return 2
    # A bar on a terminal; off one, a line a finished task (as before the bar).
    with sdk.client, Progress("bench", len(tasks) * len(variants), sys.stderr) as progress:
        report = run_bench(
            sdk.client,
            registry,
            args.mode,
            tasks,
            model=args.model,
            variants=cast("list[Variant]", variants),
            max_iterations=args.max_iterations,
            max_tokens=args.max_tokens,
            extra_body={"temperature": args.temperature},
            progress=progress.step,
            context_tokens=args.context,
        )
    if args.format == "json":
        print(json.dumps(report.as_dict(), indent=2))
    elif args.format == "html":
        from .reports import bench_html

        print(bench_html(report.as_dict(), f"{args.tasks} in mode {args.mode}"))
    else:
        print(render_table(report))
    failed = [name for name, r in report.variants.items() if r.tasks and r.errors == r.tasks]
    if failed:
        first = next(o.error for o in report.outcomes if o.variant == failed[0] and o.error)
        print(f"error: every task failed under {', '.join(failed)}; the first: {first}", file=sys.stderr)
        return 1
    return 0
