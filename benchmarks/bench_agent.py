"""Agent-level A/B on the real local model: static, composed, every_turn, discovery, auto and oracle, per task set.

Run: python3 benchmarks/bench_agent.py [--per-set N] [--sets coding,bfcl,metatool,large] [--large-tasks N]
     [--split tune|heldout] [--large-file FILE]
     [--variants ...] [--rewrite-url URL] [--json FILE]
Needs `prompt-composer model setup` and `pip install --no-deps bfcl-eval==2026.3.23` (its data only). The
`large` set (benchmarks/large_catalog.py: 300+ real MCP tools from ../shared/corpora) is opt-in: `--sets large`.
Takes about an hour on 2 cores (most of it the cold 12k-token static prompt of the coding set and every_turn's
recomputed prefixes). Starts one server (16k context) for the whole run; every task runs through the tool loop
(`prompt_composer.agent.run_bench`), variant by variant. Token figures are ratios against the static
variant of the same set and run (prompt tokens a request, counted with tiktoken, overflowing requests included);
"ttft later (FIFO)" is the median time to first token of the requests after a
task's first, over the tasks whose choice changed the recent-use FIFO (a tool the mode does not hold in full).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar, cast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anthropic

from benchmarks.agent_tasks import TaskSet, build_bfcl, build_metatool, coding_set
from benchmarks.large_catalog import LARGE_TASKS, build_large
from prompt_composer import load_registry
from prompt_composer.agent.bench import VARIANTS, BenchReport, Variant, load_tasks, run_bench
from prompt_composer.agent.rewriting import model_rewriter
from prompt_composer.local.server import LocalModelServer

# Six of the sixteen coding tasks (a run of all of them takes hours on 2 cores): three whose right tool is brief
# in the code mode (glob/list_files, list_code_definitions, ask_followup_question) and three permanent ones.
CODING = (
    "coding-find-definition",
    "coding-read-range",
    "coding-find-files-by-pattern",
    "coding-outline-file",
    "coding-run-tests",
    "coding-ask-currency",
)


SETS = ("coding", "bfcl", "metatool", "large")
DEFAULT_SETS = "coding,bfcl,metatool"

T = TypeVar("T")


def set_names(text: str) -> list[str]:
    """The set names of ``--sets`` (an unknown one ends the run before the server starts)."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = sorted(set(names) - set(SETS))
    if unknown or not names:
        raise SystemExit(f"--sets: unknown set(s) {', '.join(unknown) or '(none given)'}; sets: {', '.join(SETS)}")
    return names


def build_sets(workdir: Path, names: Sequence[str], *, per_set: int, large: Path = LARGE_TASKS) -> list[TaskSet]:
    """The sets named, in :data:`SETS` order, generated under ``workdir`` (as ``build_task_sets`` builds the first
    three), the large set's tasks read from ``large``; only those named are built, so ``--sets large`` needs
    neither the BFCL data nor MetaTool."""
    builders: dict[str, Callable[[], TaskSet]] = {
        "coding": coding_set,
        "bfcl": lambda: build_bfcl(workdir / "bfcl", per_set=per_set),
        "metatool": lambda: build_metatool(workdir / "metatool", per_set=per_set),
        "large": lambda: build_large(workdir, tasks=large),
    }
    return [builders[name]() for name in SETS if name in names]


def fifo_ttft(report: BenchReport, variant: str, permanent: set[str]) -> float | None:
    """Median first-token time after a task's first request, over tasks whose choice entered the FIFO."""
    times = [
        t
        for o in report.outcomes
        if o.variant == variant and o.choice is not None and o.choice not in permanent
        for t in o.first_token_s[1:]
    ]
    return round(statistics.median(times), 2) if times else None


def table(name: str, report: BenchReport, permanent: set[str]) -> list[str]:
    static = report.variants.get("static")
    per_static = static.prompt_tokens_per_request if static else 0.0
    lines = [
        f"**{name}**",
        "",
        "| variant | tasks | first-tool acc. | args acc. | requests | prompt tokens / request | vs static | "
        "tokens sent | uncached input | fetches | errors | overflows | wall s | ttft 1st | ttft later | "
        "ttft later (FIFO) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for variant, r in report.variants.items():
        sent = r.input_tokens + r.cache_read_tokens
        ratio = f"{r.prompt_tokens_per_request / per_static:.2f}" if per_static else "-"
        args = "-" if r.args_accuracy is None else f"{r.args_accuracy:.0%}"
        first = "-" if r.ttft_first_median_s is None else f"{r.ttft_first_median_s:.2f}"
        later = "-" if r.ttft_later_median_s is None else f"{r.ttft_later_median_s:.2f}"
        fifo = fifo_ttft(report, variant, permanent)
        fifo_text = "-" if fifo is None else f"{fifo:.2f}"
        lines.append(
            f"| {variant} | {r.tasks} | {r.first_tool_accuracy:.0%} | {args} | {r.requests} | "
            f"{r.prompt_tokens_per_request:,.0f} | {ratio} | {sent:,} | {r.input_tokens:,} | {r.fetch_calls} | "
            f"{r.errors} | {r.overflows} | {r.wall_s:.0f} | {first} | {later} | {fifo_text} |"
        )
    return lines


def spread(items: Sequence[T], n: int) -> list[T]:
    """``n`` of ``items`` at even steps, first one included, order kept (every item when ``n`` covers them)."""
    if n >= len(items):
        return list(items)
    return [items[i * len(items) // n] for i in range(max(n, 0))]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-set", type=int, default=6, help="tasks per generated set (default: 6)")
    parser.add_argument("--sets", default=DEFAULT_SETS, help=f"comma-separated, of {', '.join(SETS)}")
    parser.add_argument("--coding", default=",".join(CODING), help="coding task ids (default: 6 of the 16), or all")
    parser.add_argument(
        "--variants", default=None, help="comma-separated (default: all on coding; every_turn left out elsewhere)"
    )
    parser.add_argument(
        "--large-tasks", type=int, default=None, help="run N of the large set's tasks, spread evenly (default: all)"
    )
    parser.add_argument(
        "--split",
        default=None,
        help="run only the large set's tasks of this split (tune or heldout; default: all), before --large-tasks",
    )
    parser.add_argument(
        "--large-file",
        type=Path,
        default=LARGE_TASKS,
        help="the large set's task file (default: tasks.jsonl; benchmarks/agent/large/BLIND.md before the blind one)",
    )
    parser.add_argument(
        "--rewrite-url",
        help="a Messages API server of its own for auto_rewrite's rewrites (e.g. a second `prompt-composer model "
        "serve`; default: the bench's server, whose one slot then loses each task's cached prefix to the rewrite)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write every outcome as JSON")
    args = parser.parse_args()
    wanted = set_names(args.sets)
    out: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp, LocalModelServer(ctx=16384, timeout=300) as server:
        sets = build_sets(Path(tmp), wanted, per_set=args.per_set, large=args.large_file)
        sdk = anthropic.Anthropic(base_url=server.base_url, api_key="local", timeout=1800)
        rewriting = (
            anthropic.Anthropic(base_url=args.rewrite_url, api_key="local", timeout=300) if args.rewrite_url else None
        )
        rewriter = (
            model_rewriter(rewriting, model="local", extra_body={"temperature": 0}, timeout=300) if rewriting else None
        )
        for task_set in sets:
            registry = load_registry(task_set.docs)
            tasks = load_tasks(task_set.tasks)
            if task_set.name == "coding" and args.coding != "all":
                tasks = [t for t in tasks if t.id in args.coding.split(",")]
            if task_set.name == "large" and args.split is not None:
                tasks = [t for t in tasks if t.split == args.split]
                if not tasks:
                    raise SystemExit(f"--split {args.split}: no task of the large set is in that split")
            if task_set.name == "large" and args.large_tasks is not None:
                tasks = spread(tasks, args.large_tasks)
            # every_turn differs from composed only after a FIFO change: the coding set (real tools, real
            # results) shows it; elsewhere it would double the run time for the same first choice. auto_native
            # is for the large set, where native's list of briefs does not fit the context. auto_stubs is asked for
            # by name (--variants): stubs are for long conversations, which these one-message tasks are not;
            # so are auto_shortlist_stubs and auto_rewrite, A/Bs of one setting against auto.
            by_name = {"auto_stubs", "auto_shortlist_stubs", "auto_rewrite"}
            skips = {"coding": {"auto_native", *by_name}, "large": {"every_turn", *by_name}}
            skip = skips.get(task_set.name, {"every_turn", "auto_native", *by_name})
            default = tuple(v for v in VARIANTS if v not in skip)
            variants = args.variants.split(",") if args.variants else list(default)
            start = time.perf_counter()
            report = run_bench(
                sdk,
                registry,
                task_set.mode,
                tasks,
                model="local",
                variants=[cast(Variant, v) for v in variants],
                extra_body={"temperature": 0},
                progress=lambda line: print(line, file=sys.stderr, flush=True),
                rewriter=rewriter,
            )
            permanent = set(registry.mode(task_set.mode).permanent)
            print("\n".join(table(f"{task_set.name} ({len(tasks)} tasks, mode {task_set.mode})", report, permanent)))
            print(f"\n({time.perf_counter() - start:.0f} s)\n", flush=True)
            out[task_set.name] = {
                **report.as_dict(),
                "outcomes": [vars(o) for o in report.outcomes],
            }
        sdk.close()
        if rewriting is not None:
            rewriting.close()
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
