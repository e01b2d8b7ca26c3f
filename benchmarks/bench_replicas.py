"""Call latency through HAProxy against a direct call to one replica, for gateways sharing their tasks in Redis.

Run: python3 benchmarks/bench_replicas.py [--calls N] [--replicas N] [--json FILE]
Needs haproxy and redis-server (Debian packages) and the redis extra; without them it prints a note and exits 0.

Starts the cluster of benchmarks/replicas.py (``--replicas`` gateways of mode ``code`` behind HAProxy, tasks in
Redis, a bearer token), warms it, then sends ``--calls`` 2026-07-28 ``tools/call`` requests one at a time, each
in a task (``Prompt-Composer-Task``), alternating between the balancer and replica r0 directly, so both paths
see the same machine load. Each call is a ``list_files`` of a two-file workspace (a few Redis round trips: the
task is read and its FIFO updated). A third series calls r0 without a task header (no Redis), to show what the
shared store costs. Reported: p50 and p99 of each series in milliseconds, and the balancer's over the direct
call's as ratios, measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.replicas import Cluster, call, missing


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="calls per series (default 1000)")
    parser.add_argument("--replicas", type=int, default=4, help="gateways behind the balancer (default 4)")
    parser.add_argument("--json", metavar="FILE", default=None, help="also write the figures as JSON")
    args = parser.parse_args(argv)
    reason = missing()
    if reason is not None:  # benchmarks/run.py runs every bench_*.py: a missing package is a note, not a failure
        print(f"_skipped: bench_replicas needs haproxy, redis-server and the redis client: {reason}._")
        return 0
    series: dict[str, list[float]] = {"balancer": [], "direct": [], "direct, no task": []}
    with tempfile.TemporaryDirectory() as tmp, Cluster(Path(tmp), count=args.replicas) as cluster:
        headers = cluster.headers()
        targets = {"balancer": cluster.url, "direct": cluster.replica_url(0), "direct, no task": cluster.replica_url(0)}
        for i in range(50):  # warm-up: connections, imports, the first list of each replica
            call(cluster.url, f"warm-{i}", "list_files", {"path": "."}, headers)
            call(cluster.replica_url(0), f"warm-{i}", "list_files", {"path": "."}, headers)
        for i in range(args.calls):
            for name, url in targets.items():
                task = None if name == "direct, no task" else f"bench-{name[:3]}-{i % 100}"
                start = time.perf_counter()
                answer = call(url, task, "list_files", {"path": "."}, headers)
                elapsed = time.perf_counter() - start
                if not answer.ok:
                    print(f"error: a {name} call failed: HTTP {answer.status}", file=sys.stderr)
                    return 1
                series[name].append(elapsed * 1000)
    figures = {
        name: {
            "p50_ms": round(percentile(values, 0.50), 2),
            "p99_ms": round(percentile(values, 0.99), 2),
            "mean_ms": round(statistics.fmean(values), 2),
        }
        for name, values in series.items()
    }
    ratios = {
        "p50 balancer/direct": round(figures["balancer"]["p50_ms"] / figures["direct"]["p50_ms"], 2),
        "p99 balancer/direct": round(figures["balancer"]["p99_ms"] / figures["direct"]["p99_ms"], 2),
        "p50 direct/direct-no-task": round(figures["direct"]["p50_ms"] / figures["direct, no task"]["p50_ms"], 2),
    }
    print(f"{args.calls} calls per series, {args.replicas} replicas, one call at a time\n")
    print("| series | p50 ms | p99 ms | mean ms |\n|---|---:|---:|---:|")
    for name, row in figures.items():
        print(f"| {name} | {row['p50_ms']} | {row['p99_ms']} | {row['mean_ms']} |")
    print()
    for name, ratio in ratios.items():
        print(f"- {name}: {ratio}x")
    if args.json is not None:
        report = {"calls": args.calls, "replicas": args.replicas, "series": figures, "ratios": ratios}
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
