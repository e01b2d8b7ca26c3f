"""Cold compose, cached compose and audit, against a naive render of every tool in full (same run).

Run: python3 benchmarks/run.py  (or this file alone). Figures are ratios to the naive render measured here.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.corpora import corpus_registry
from prompt_composer import Composer, Registry, load_registry, run_audit


def per_call(fn: Callable[[], object], *, min_time: float = 0.3, repeats: int = 5) -> float:
    """Median seconds per call over ``repeats`` batches sized to run about ``min_time`` each."""
    n, elapsed = 1, 0.0
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= min_time / repeats or n >= 1 << 20:
            break
        n *= 2
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - start) / n)
    return statistics.median(samples)


def naive_render(registry: Registry, slug: str) -> Callable[[], str]:
    """What an agent without prompt-composer does each turn: every allowed tool's full text and schema."""
    mode = registry.mode(slug)

    def render() -> str:
        parts = [mode.config.role]
        for name in mode.allowed:
            doc = registry.tools[name]
            parts.append(doc.full)
            parts.append(json.dumps(doc.input_schema))
        return "\n\n".join(parts)

    return render


def bench(label: str, registry: Registry, slug: str) -> dict[str, object]:
    mode = registry.mode(slug)
    candidates = [n for n in mode.allowed if n not in mode.permanent]
    composer = Composer(registry, cache_size=1 << 16)
    composer.compose(slug)  # load templates and the token counter once
    naive = per_call(naive_render(registry, slug))

    states = iter(range(1 << 30))

    # A copy of the mode is not the registry's own, so the composer renders it without its cache: every call
    # renders and counts tokens afresh, as for a FIFO state never seen before.
    uncached = dataclasses.replace(mode)

    def cold() -> None:
        i = next(states)
        recent = [candidates[(i + k * 7) % len(candidates)] for k in range(mode.recent_size)]
        composer.compose(uncached, recent=recent)

    cold_t = per_call(cold)
    warm_recent = candidates[: mode.recent_size]
    composer.compose(slug, recent=warm_recent)
    cached_t = per_call(lambda: composer.compose(slug, recent=warm_recent))
    audit_t = per_call(lambda: run_audit(Composer(registry)), min_time=1.0, repeats=3)

    tracemalloc.start()
    naive_render(registry, slug)()
    naive_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    tracemalloc.start()
    fresh = Composer(registry)
    fresh.compose(slug, recent=warm_recent)
    compose_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {
        "registry": label,
        "tools_in_mode": len(mode.allowed),
        "naive_us": naive * 1e6,
        "cold_compose_us": cold_t * 1e6,
        "cached_compose_us": cached_t * 1e6,
        "audit_ms": audit_t * 1e3,
        "cold_ratio": cold_t / naive,
        "cached_ratio": cached_t / naive,
        "audit_ratio": audit_t / naive,
        "naive_peak_kib": naive_peak / 1024,
        "compose_peak_kib": compose_peak / 1024,
    }


def main() -> int:
    rows = [
        bench("shipped (code mode)", load_registry(), "code"),
        bench("500 corpus tools", corpus_registry(500), "all"),
    ]
    print("## Composition (ratios to a naive full render measured in the same run)\n")
    print("| registry | tools | naive render | cold compose | cached compose | audit | peak memory compose / naive |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['registry']} | {r['tools_in_mode']} | {r['naive_us']:.1f} µs (1×) "
            f"| {r['cold_compose_us']:.0f} µs ({r['cold_ratio']:.1f}×) "
            f"| {r['cached_compose_us']:.2f} µs ({r['cached_ratio']:.3f}×) "
            f"| {r['audit_ms']:.1f} ms ({r['audit_ratio']:.0f}×) "
            f"| {r['compose_peak_kib']:.0f} KiB / {r['naive_peak_kib']:.0f} KiB |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
