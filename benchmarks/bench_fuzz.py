"""Fuzz: the registry loader on ten thousand mutated copies of the shipped tool docs, modes and group docs.

    python3 benchmarks/bench_fuzz.py [--docs 10000] [--seed 2026] [--timeout 30] [--memory-mb 1024] [--jobs 1]
                                     [--parser libyaml|python]

Each sample is one shipped YAML file after one to three mutations (:mod:`benchmarks.doc_mutations`: bytes
inserted, deleted or flipped, control characters and invalid UTF-8, random tags with bad values, other types,
deep nesting, huge scalars up to 5 MB, 100,000-value lists, billion laughs and other alias tricks, duplicate and
non-string keys, markers, directives, tabs, truncation), written into a folder of its own: a tool doc or a group
doc alone, a mode with the shipped tool docs beside it. Each folder is loaded in a child process (forked from this
one, so the package is imported once) under an address-space limit (``RLIMIT_AS``: this process's size plus
``--memory-mb``) and a timeout. Outcomes:

- valid: a registry holding every doc of the folder;
- clean error: a ``LoadError`` whose every problem names a file of the folder and a line;
- bad error: a ``LoadError`` with a problem that does not (or a registry missing a doc: a partial registry);
- traceback: any other exception;
- hang: no answer within ``--timeout`` seconds (the child is killed);
- memory error: ``MemoryError`` under the limit, or the child killed by a signal (a crash).

``--parser`` picks the YAML parser (default: libyaml's, where PyYAML has it; ``python`` is the fallback), so
both can be fuzzed. Zero tracebacks, hangs, memory errors and bad errors is the target. The peak memory of each child
(``ru_maxrss``) is compared with that of the unmutated folders loaded the same way in the same run: the ratio of
the largest mutated peak to the median unmutated one, and the largest peak growth over the forking process.
Prints Markdown tables; the exit code is 1 when any sample missed the target. Linux only (fork, RLIMIT_AS).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import resource
import select
import shutil
import signal
import statistics
import sys
import tempfile
import time
import traceback
from collections import Counter, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.doc_mutations import SHIPPED, mutate, shipped_files
from prompt_composer.core.registry import Registry, load_registry
from prompt_composer.errors import LoadError
from prompt_composer.shared import yamlfile, yamlparse

GOOD = ("valid", "clean error")
OUTCOMES = ("valid", "clean error", "bad error", "traceback", "hang", "memory error")

DEFAULT_PARSER = "libyaml" if yamlparse.CParser is not None else "python"


@dataclass(frozen=True)
class Sample:
    number: int
    source: Path  # the shipped file it was made from
    mutations: tuple[str, ...]
    data: bytes | None  # None: the file unmutated


@dataclass(frozen=True)
class Result:
    sample: Sample
    outcome: str
    detail: str
    peak_kib: int
    seconds: float


def folder_for(sample: Sample, root: Path) -> Path:
    """A folder holding the sample: its file where it belongs, and for a mode the shipped tool docs it names."""
    relative = sample.source.relative_to(SHIPPED)
    if relative.parts[0] == "modes":
        for tool in _named_tools(sample.source):
            shutil.copy(SHIPPED / f"{tool}.yaml", root / f"{tool}.yaml")
    (root / relative).parent.mkdir(parents=True, exist_ok=True)
    (root / relative).write_bytes(sample.data if sample.data is not None else sample.source.read_bytes())
    return root


@functools.cache
def _named_tools(mode_file: Path) -> tuple[str, ...]:
    """The shipped tools an (unmutated) shipped mode names: its permanent, include and exclude lists."""
    config = yaml.safe_load(mode_file.read_text(encoding="utf-8"))
    names = {n for key in ("permanent", "include", "exclude") for n in config.get(key) or ()}
    return tuple(sorted(n for n in names if (SHIPPED / f"{n}.yaml").is_file()))


def judge(root: Path) -> tuple[str, str]:
    """Load ``root`` and say how it went (run in the child)."""
    try:
        registry = load_registry(root)
    except LoadError as exc:
        files = {p.resolve() for p in root.rglob("*")} | {root.resolve()}
        bad = [p for p in exc.problems if not (isinstance(p.line, int) and p.line >= 1 and p.path.resolve() in files)]
        if bad or not exc.problems:
            return "bad error", str(bad[0]) if bad else "no problems"
        return "clean error", exc.problems[0].message[:120]
    except MemoryError:
        return "memory error", "MemoryError"
    except BaseException as exc:  # what the loader must never raise
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        where = f"{Path(frame.filename).name}:{frame.lineno}"
        return "traceback", f"{type(exc).__name__} at {where}: {str(exc)[:100]}"
    return ("valid", "") if complete(registry, root) else ("bad error", "a partial registry")


def complete(registry: Registry, root: Path) -> bool:
    return (
        set(registry.tools) == {p.stem for p in root.glob("*.y*ml")}
        and set(registry.modes) == {p.stem for p in (root / "modes").glob("*.y*ml")}
        and set(registry.groups) == {p.stem for p in (root / "groups").glob("*.y*ml")}
    )


def run_child(sample: Sample, limit: int, timeout: float) -> Result:
    """Load the sample's folder in a forked child under ``limit`` bytes of address space, within ``timeout``."""
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        root = folder_for(sample, Path(tmp))
        read, write = os.pipe()
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:  # the child: limit itself, load, report one JSON line, exit without cleanup
            os.close(read)
            code = 0
            try:
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
                outcome, detail = judge(root)
                os.write(write, json.dumps([outcome, detail]).encode())
            except BaseException:
                code = 3
            finally:
                os._exit(code)
        os.close(write)
        return _collect(sample, pid, read, start, timeout)


def _collect(sample: Sample, pid: int, read: int, start: float, timeout: float) -> Result:
    chunks: list[bytes] = []
    deadline = start + timeout
    hung = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            hung = True
            os.kill(pid, signal.SIGKILL)
            break
        ready, _, _ = select.select([read], [], [], left)
        if ready:
            chunk = os.read(read, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    os.close(read)
    _, status, usage = os.wait4(pid, 0)
    seconds = time.monotonic() - start
    peak = int(usage.ru_maxrss)
    if hung:
        return Result(sample, "hang", f"no answer within {timeout:g} s", peak, seconds)
    if os.WIFSIGNALED(status):
        return Result(sample, "memory error", f"killed by signal {os.WTERMSIG(status)}", peak, seconds)
    try:
        outcome, detail = json.loads(b"".join(chunks))
    except ValueError:
        return Result(sample, "memory error", f"no report (exit {os.WEXITSTATUS(status)})", peak, seconds)
    return Result(sample, outcome, detail, peak, seconds)


def samples(count: int, seed: int) -> Iterator[Sample]:
    """The mutated samples, made one at a time (a run holds one, never ten thousand, in memory)."""
    rng = random.Random(seed)
    files = shipped_files()
    originals = {f: f.read_bytes() for f in files}
    for number in range(count):
        source = rng.choice(files)
        names, data = mutate(originals[source], rng, heavy=True, count=rng.choice((1, 1, 2, 3)))
        yield Sample(number, source, tuple(names), data)


def own_size() -> int:
    """This process's address space (VmSize), in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def run_all(
    items: Iterator[Sample], limit: int, timeout: float, jobs: int, progress: Callable[[int], None]
) -> list[Result]:
    """Every sample's result, ``jobs`` children at a time (threads only wait on them); a result keeps no data."""
    results: list[Result] = []
    if jobs <= 1:  # no threads: the children are forked from a process that runs nothing else
        for sample in items:
            results.append(_light(run_child(sample, limit, timeout)))
            progress(len(results))
        return results
    with ThreadPoolExecutor(jobs) as pool:
        pending: deque[Future[Result]] = deque()
        for sample in items:
            pending.append(pool.submit(run_child, sample, limit, timeout))
            while len(pending) >= jobs:
                results.append(_light(pending.popleft().result()))
                progress(len(results))
        while pending:
            results.append(_light(pending.popleft().result()))
            progress(len(results))
    return results


def _light(result: Result) -> Result:
    return replace(result, sample=replace(result.sample, data=None))


def report(results: list[Result], baseline: list[Result], base_rss: int, args: argparse.Namespace, took: float) -> int:
    counts = Counter(r.outcome for r in results)
    print(
        f"### Fuzz: {len(results):,} mutated docs (seed {args.seed}, {yamlfile.PARSER} parser), each loaded in a "
        "child process\n"
    )
    print(
        f"Limits per child: {args.memory_mb:,} MiB of address space over the forking process, {args.timeout:g} s. "
        f"Took {took:.0f} s.\n"
    )
    print("| outcome | docs | share |")
    print("|---|---:|---:|")
    for outcome in OUTCOMES:
        print(f"| {outcome} | {counts[outcome]:,} | {counts[outcome] / len(results):.1%} |")
    base_peak = statistics.median(r.peak_kib for r in baseline)
    worst = max(results, key=lambda r: r.peak_kib)
    slowest = max(results, key=lambda r: r.seconds)
    print("\n| memory and time | value |")
    print("|---|---:|")
    print(f"| peak RSS, unmutated folders (median of {len(baseline)}) | {base_peak / 1024:.1f} MiB |")
    print(f"| peak RSS, mutated: median | {statistics.median(r.peak_kib for r in results) / 1024:.1f} MiB |")
    print(f"| peak RSS, mutated: largest | {worst.peak_kib / 1024:.1f} MiB |")
    print(f"| **peak memory ratio** (largest mutated / median unmutated) | **{worst.peak_kib / base_peak:.2f}×** |")
    print(f"| largest growth over the forking process ({base_rss / 1024:.0f} MiB) | "
          f"{(worst.peak_kib - base_rss) / 1024:.1f} MiB |")  # fmt: skip
    print(f"| largest: {worst.sample.source.name} after {', '.join(worst.sample.mutations)} | {worst.outcome} |")
    print(f"| slowest load | {slowest.seconds:.2f} s ({slowest.sample.source.name}: "
          f"{', '.join(slowest.sample.mutations)}) |")  # fmt: skip
    by_mutation: dict[str, Counter[str]] = {}
    for result in results:
        by_mutation.setdefault(result.sample.mutations[0], Counter())[result.outcome] += 1
    print("\n| first mutation | docs | valid | clean error | other |")
    print("|---|---:|---:|---:|---:|")
    for name, seen in sorted(by_mutation.items()):
        other = sum(n for outcome, n in seen.items() if outcome not in GOOD)
        print(f"| {name} | {sum(seen.values()):,} | {seen['valid']:,} | {seen['clean error']:,} | {other:,} |")
    missed = [r for r in results if r.outcome not in GOOD]
    if missed:
        print("\n| missed the target | outcome | detail |")
        print("|---|---|---|")
        for result in missed[:40]:
            sample = result.sample
            print(f"| #{sample.number} {sample.source.name} ({', '.join(sample.mutations)}) | {result.outcome} | "
                  f"{result.detail.replace('|', '/')} |")  # fmt: skip
    return 1 if missed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--docs", type=int, default=10_000, help="mutated docs to load (default 10,000)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds a load may take (default 30)")
    parser.add_argument("--memory-mb", type=int, default=1024, help="address space over this process (1024 MiB)")
    parser.add_argument("--jobs", type=int, default=1, help="children at a time (default 1)")
    parser.add_argument(
        "--parser",
        choices=("libyaml", "python"),
        default=DEFAULT_PARSER,
        help=f"the YAML parser the children use (default here: {DEFAULT_PARSER})",
    )
    args = parser.parse_args(argv)
    if args.parser == "libyaml" and yamlparse.CParser is None:
        parser.error("this PyYAML has no libyaml: --parser python")
    yamlfile.PARSER = args.parser  # the forked children inherit it
    if not hasattr(os, "fork") or not Path("/proc/self/status").is_file():
        print("_skipped: bench_fuzz needs Linux (fork, /proc, RLIMIT_AS)._")
        return 0
    limit = own_size() + args.memory_mb * 1024 * 1024
    base_rss = rss_kib()
    start = time.monotonic()
    baseline = [run_child(Sample(-1, f, (), None), limit, args.timeout) for f in shipped_files()]
    unmet = [r for r in baseline if r.outcome != "valid"]
    if unmet:
        print(f"the unmutated {unmet[0].sample.source} does not load: {unmet[0].outcome} {unmet[0].detail}")
        return 1
    items = samples(args.docs, args.seed)
    step = max(1, args.docs // 10)

    def progress(done: int) -> None:
        if done % step == 0:
            print(f"  {done:,} / {args.docs:,} loaded", file=sys.stderr, flush=True)

    results = run_all(items, limit, args.timeout, args.jobs, progress)
    return report(results, baseline, base_rss, args, time.monotonic() - start)


if __name__ == "__main__":
    raise SystemExit(main())
