"""Soak: many tasks × many turns through the loop's composition path, from threads and from processes.

Each task runs in a mode of the shipped docs, half of them under ``inline`` (the prompt pinned at task start, the
default) and half under ``every_turn`` (recomposed from the FIFO each turn). Every turn does what the tool loop
does around a request: compose the prompt from the task's session, then record a tool use (a tool the mode
allows, drawn from the task's own seeded stream).

Reported: throughput; p50/p99 compose latency as ratios to a plain cached ``compose()`` of the same modes,
measured in the same run; RSS over time (sampled every 10% of the run: it must level off, since the store is
bounded); cross-task leaks: after the run, each task's history and the FIFO tools of its last prompt must hold
only tools that task recorded; anything else is a leak (must be 0).

    python3 benchmarks/bench_soak.py [--tasks 10000] [--turns 20] [--threads 8] [--processes 4] [--redis URL]

With ``--redis URL`` (the ``redis`` extra and a server) the processes share one RedisSessionStore.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import statistics
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from prompt_composer import Composer, InMemorySessionStore, SessionStore, load_registry
from prompt_composer.agent.state import TaskState
from prompt_composer.core.promotion import Policy

MODES = ("code", "architect", "ask", "debug", "orchestrator")


def rss_mb() -> float:
    """The process's resident set size now, in MiB (Linux /proc; 0 elsewhere)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def make_store(redis_url: str | None, max_tasks: int) -> SessionStore:
    if redis_url is None:
        return InMemorySessionStore(maxsize=max_tasks, ttl=3600)
    from prompt_composer.core.redis_store import RedisSessionStore

    return RedisSessionStore(redis_url, ttl=3600)


def run_tasks(
    task_ids: list[int], turns: int, threads: int, redis_url: str | None, max_tasks: int, label: str
) -> dict[str, Any]:
    """Run ``task_ids`` on ``threads`` threads sharing one store; return latencies, leaks and RSS samples."""
    registry = load_registry()
    composer = Composer(registry)
    store = make_store(redis_url, max_tasks)
    latencies: list[float] = []
    leaks: list[str] = []
    samples: list[tuple[int, float]] = []
    lock = threading.Lock()
    done = 0
    step = max(1, len(task_ids) // 10)

    def one(task_number: int) -> None:
        nonlocal done
        rng = random.Random(task_number)
        task_id = f"{label}-task-{task_number}"
        mode = MODES[task_number % len(MODES)]
        # Half the tasks recompose from the FIFO every turn (every_turn), half keep the prompt pinned (inline).
        policy: Policy = "every_turn" if task_number % 2 else "inline"
        state = TaskState(composer=composer, mode=mode, task_id=task_id, store=store, policy=policy)
        session = state.session
        allowed = [t for t in state.mode.allowed if t in registry.tools]
        used: set[str] = set()
        mine: list[float] = []
        prompt = None
        for _turn in range(turns):
            start = time.perf_counter()
            prompt = state.prompt(session)
            mine.append(time.perf_counter() - start)
            tool = rng.choice(allowed)
            session.record_use(tool)
            used.add(tool)
        history = set(session.history())
        problems = []
        if history - used:
            problems.append(f"{task_id} history holds {sorted(history - used)}")
        if prompt is not None and set(prompt.recent) - used:
            problems.append(f"{task_id} prompt holds {sorted(set(prompt.recent) - used)}")
        with lock:
            latencies.extend(mine)
            leaks.extend(problems)
            done += 1
            if done % step == 0:
                samples.append((done, round(rss_mb(), 1)))

    start = time.perf_counter()

    def many(part: list[int]) -> None:
        for number in part:
            one(number)

    workers = [threading.Thread(target=many, args=(part,)) for part in _split(task_ids, threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return {
        "seconds": time.perf_counter() - start,
        "latencies": latencies,
        "leaks": leaks,
        "rss": samples,
        "turns": len(task_ids) * turns,
    }


def _split(items: list[int], parts: int) -> list[list[int]]:
    return [items[i::parts] for i in range(parts)]


def baseline_compose(repeats: int = 2000) -> float:
    """Median seconds of a plain cached ``compose(mode)`` of the same modes: the reference for the ratios."""
    composer = Composer(load_registry())
    for mode in MODES:
        composer.compose(mode)
    samples = []
    for index in range(repeats):
        start = time.perf_counter()
        composer.compose(MODES[index % len(MODES)])
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def summarise(name: str, runs: list[dict[str, Any]], base: float) -> dict[str, Any]:
    latencies = sorted(x for run in runs for x in run["latencies"])
    seconds = max(run["seconds"] for run in runs)
    turns = sum(run["turns"] for run in runs)
    p50 = latencies[len(latencies) // 2]
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return {
        "setup": name,
        "turns": turns,
        "turns_per_s": round(turns / seconds),
        "p50_x_baseline": round(p50 / base, 2),
        "p99_x_baseline": round(p99 / base, 2),
        "p99_us": round(p99 * 1e6, 1),
        "leaks": sum(len(run["leaks"]) for run in runs),
        "leak_examples": [leak for run in runs for leak in run["leaks"]][:3],
        "rss_mb": [run["rss"] for run in runs],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--max-tasks", type=int, default=1024, help="in-memory store bound (default 1024)")
    parser.add_argument("--redis", metavar="URL", default=None, help="also run the processes on one Redis store")
    parser.add_argument("--format", choices=("markdown", "json"), default="markdown")
    args = parser.parse_args(argv)
    base = baseline_compose()
    ids = list(range(args.tasks))
    results = [summarise(f"{args.threads} threads, in-memory store",
                         [run_tasks(ids, args.turns, args.threads, None, args.max_tasks, "t")], base)]  # fmt: skip
    setups: list[tuple[str, str | None]] = [("in-memory store each", None)]
    if args.redis:
        setups.append(("one Redis store", args.redis))
    context = multiprocessing.get_context("spawn")
    for label, url in setups:
        with ProcessPoolExecutor(args.processes, mp_context=context) as pool:
            futures = [
                pool.submit(run_tasks, part, args.turns, 2, url, args.max_tasks, f"p{index}")
                for index, part in enumerate(_split(ids, args.processes))
            ]
            runs = [future.result() for future in futures]
        results.append(summarise(f"{args.processes} processes × 2 threads, {label}", runs, base))
    if args.format == "json":
        print(json.dumps({"baseline_compose_us": round(base * 1e6, 2), "results": results}, indent=2))
        return 0
    print(f"### Soak: {args.tasks:,} tasks × {args.turns} turns (baseline: cached compose() = {base * 1e6:.1f} µs)\n")
    print("| setup | turns/s | p50 × baseline | p99 × baseline | p99 µs | cross-task leaks | RSS MiB over the run |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for r in results:
        rss = "; ".join(" → ".join(str(mb) for _, mb in samples) for samples in r["rss_mb"])
        print(f"| {r['setup']} | {r['turns_per_s']:,} | {r['p50_x_baseline']} | {r['p99_x_baseline']} | "
              f"{r['p99_us']} | {r['leaks']} | {rss} |")  # fmt: skip
    return 1 if any(r["leaks"] for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
