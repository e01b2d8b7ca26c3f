"""Cold start: how long a whole ``prompt-composer`` process takes, against importing its dependencies.

    python3 benchmarks/bench_startup.py [--runs 7] [--only WORD ...]

A hook, an editor or a CI step runs the command once per prompt build, so what counts is a fresh process: the
interpreter, the imports, reading the docs, composing, printing. Each case is a whole process, started the way
the installed ``prompt-composer`` script starts (``from prompt_composer.cli import run``), timed from outside,
``--runs`` times; the baseline, ``python -c 'import yaml, pydantic, jinja2'``, runs in the same rounds (baseline,
then every case, round after round), so load on the machine falls on both. The ratio of each case is the median
of its runs' ratios to the baseline run of the same round. Printed: median and spread (min–max) of the wall time,
its ratio, the target, the ratio of CPU time (user + system, the kernel's own accounting of the process, which
other jobs on the machine disturb less), and the machine's load average before and after.

The cases:

- ``--version`` and ``--help``;
- ``compose`` of the large catalog (benchmarks/large_catalog.py: the shipped docs and five real MCP catalogs from
  ../shared/corpora, one mode allowing every tool), with the user cache warm (its parsed docs and token counts
  kept by an earlier run), empty (a new cache folder each run: the first run after an install or an upgrade), and
  with ``--no-cache`` (parsing every file, as every run did before the cache);
- ``compose`` of a 1,000-tool folder (every tool of the shared corpora's catalogs, MetaTool's and the shipped
  docs', written as tool docs, one mode allowing all), warm;
- keyword ``search`` of the large catalog, warm.

Every process runs in an empty folder (no pyproject.toml settings) with its own user cache
(``$PROMPT_COMPOSER_CACHE``), the package from this checkout, byte-compiled first as ``pip install`` does (a
checkout run with ``PYTHONDONTWRITEBYTECODE`` would otherwise compile every module in every process). Exit 0; a
missed target is marked, not an error (a shared machine's load can miss one).
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.corpora import corpus_docs
from benchmarks.large_catalog import LARGE_MODE, build_large
from benchmarks.search_corpora import metatool_docs
from prompt_composer import ModeConfig, ToolDoc, load_registry
from prompt_composer.importers.yaml_out import doc_yaml, dump_yaml

ROOT = Path(__file__).resolve().parents[1]
BASELINE = [sys.executable, "-c", "import yaml, pydantic, jinja2"]
ENTRY = [sys.executable, "-c", "import sys; from prompt_composer.cli import run; sys.exit(run())"]
THOUSAND = 1_000
SEARCH_QUERY = "open a pull request on GitHub"


@dataclass
class Case:
    name: str
    args: list[str]
    target: float | None  # the most the ratio to the baseline may be; None: shown for reference
    cache: str  # "warm", "empty" or "none" (the command reads no docs)
    times: list[float] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)
    cpu_ratios: list[float] = field(default_factory=list)


def thousand_tools(out: Path) -> int:
    """Write a folder of 1,000 tool docs from the shared corpora (and the shipped docs), one mode ``all``."""
    docs: dict[str, ToolDoc] = {}
    for doc in [*load_registry().tools.values(), *corpus_docs(), *metatool_docs()]:
        docs.setdefault(doc.name, doc)
    chosen = list(docs.values())[:THOUSAND]
    (out / "modes").mkdir(parents=True)
    for doc in chosen:
        (out / f"{doc.name}.yaml").write_text(doc_yaml(doc), encoding="utf-8")
    mode = ModeConfig(
        slug="all",
        name="All",
        role="You are a coding agent with many MCP servers.",
        groups=tuple(sorted({doc.group for doc in chosen})),
        recent_size=5,
        budget_tokens=10_000_000,
    )
    (out / "modes" / "all.yaml").write_text(dump_yaml(mode.model_dump(mode="json", exclude_defaults=True)))
    return len(chosen)


def run(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """The wall time and the CPU time (user + system) of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {proc.returncode}: {proc.stderr.decode()[-2000:]}")
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def environment(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROMPT_COMPOSER_") and k != "PYTHONPATH"}
    return {**env, "PYTHONPATH": str(ROOT), "PROMPT_COMPOSER_CACHE": str(cache)}


def measure(cases: list[Case], runs: int, work: Path) -> list[float]:
    """Run the baseline and every case ``runs`` times, interleaved; the baseline's times."""
    idle = work / "idle"
    idle.mkdir()
    warm = work / "warm-cache"
    for case in cases:  # fill the warm cache (and check every command works) before anything is timed
        if case.cache == "warm":
            run(ENTRY + case.args, environment(warm), idle)
    baseline: list[float] = []
    for round_ in range(runs):
        base, base_cpu = run(BASELINE, environment(warm), idle)
        baseline.append(base)
        for case in cases:
            cache = warm
            if case.cache == "empty":
                cache = work / f"empty-cache-{round_}"  # new, so empty; made by the command itself
            took, cpu = run(ENTRY + case.args, environment(cache), idle)
            case.times.append(took)
            case.ratios.append(took / base)
            case.cpu_ratios.append(cpu / base_cpu)
    return baseline


def spread(times: Sequence[float]) -> str:
    return f"{min(times):.3f}–{max(times):.3f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=7, help="timed runs of each case (default 7)")
    parser.add_argument("--only", nargs="*", default=[], metavar="WORD", help="only the cases whose name has WORD")
    args = parser.parse_args(argv)
    compileall.compile_dir(ROOT / "prompt_composer", quiet=1)
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        work = Path(tmp)
        large = build_large(work).docs
        registry = load_registry(large, cache=False)
        thousand = work / "thousand"
        count = thousand_tools(thousand)
        big = ["--docs", str(large)]
        cases = [
            Case("`--version`", ["--version"], 1.5, "none"),
            Case("`--help`", ["--help"], 1.5, "none"),
            Case(f"`compose`, large catalog ({len(registry.tools)} tools), warm cache",
                 [*big, "compose", "--mode", LARGE_MODE], 2.0, "warm"),
            Case("`compose`, large catalog, empty cache", [*big, "compose", "--mode", LARGE_MODE], 4.0, "empty"),
            Case("`compose`, large catalog, `--no-cache`",
                 [*big, "compose", "--mode", LARGE_MODE, "--no-cache"], None, "none"),
            Case(f"`compose`, {count:,} tools, warm cache", ["--docs", str(thousand), "compose", "--mode", "all"],
                 3.0, "warm"),
            Case("keyword `search`, large catalog, warm cache",
                 [*big, "search", "--mode", LARGE_MODE, "--strategy", "keyword", "--limit", "3", SEARCH_QUERY],
                 2.5, "warm"),
        ]  # fmt: skip
        cases = [c for c in cases if not args.only or any(w in c.name for w in args.only)]
        before = os.getloadavg()
        started = time.monotonic()
        baseline = measure(cases, args.runs, work)
        took = time.monotonic() - started
        after = os.getloadavg()
        shutil.rmtree(work / "idle", ignore_errors=True)
    base = statistics.median(baseline)
    print(f"### Cold start: whole processes, {args.runs} runs each, interleaved with the baseline\n")
    print(
        f"Load average (1, 5, 15 min) before {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}, after "
        f"{after[0]:.2f} {after[1]:.2f} {after[2]:.2f}; {os.cpu_count()} CPUs; took {took:.0f} s.\n"
    )
    print("| process | median | spread (min–max) | × baseline | target | met | CPU × baseline |")
    print("|---|---:|---:|---:|---:|---|---:|")
    print(
        f"| baseline: `python -c 'import yaml, pydantic, jinja2'` | {base:.3f} s | {spread(baseline)} s | 1× | | | 1× |"
    )
    for case in cases:
        ratio = statistics.median(case.ratios)
        target = f"≤ {case.target:g}×" if case.target is not None else "(reference)"
        met = "" if case.target is None else ("yes" if ratio <= case.target else "**no**")
        print(
            f"| {case.name} | {statistics.median(case.times):.3f} s | {spread(case.times)} s | {ratio:.2f}× | "
            f"{target} | {met} | {statistics.median(case.cpu_ratios):.2f}× |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
