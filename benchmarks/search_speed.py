"""Search latency on the large catalog: ``ToolSearch.search`` over the task texts of
``benchmarks/agent/large/tasks.jsonl``, warm (index and vectors built first), in one process.

Run it twice in the same session, once per checkout (``PYTHONPATH``), alternating, and compare the p50s: the
machine's load moves absolute times more than any change does. ``--docs`` is a built large catalog
(``python3 benchmarks/large_catalog.py --out DIR``); an older checkout ignores the ``servers/`` folder it has.

Run: ``python3 benchmarks/search_speed.py --docs DIR [--rounds N]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from prompt_composer import load_registry
from prompt_composer.discovery.search import ToolSearch

TASKS = Path(__file__).resolve().parent / "agent" / "large" / "tasks.jsonl"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    texts = [json.loads(line)["task"] for line in TASKS.read_text(encoding="utf-8").splitlines() if line.strip()]
    registry = load_registry(args.docs)
    mode = registry.mode("large")
    out: dict[str, float] = {"servers": float(len(getattr(registry, "servers", {})))}
    for strategy, embedder in (("keyword", False), ("hybrid", None)):
        search = ToolSearch(registry, embedder=embedder)
        search.search(texts[0], mode, strategy=strategy)  # build the index and the vectors
        times = []
        for _ in range(args.rounds):
            for text in texts:
                start = time.perf_counter()
                search.search(text, mode, strategy=strategy)
                times.append((time.perf_counter() - start) * 1000)
        out[f"{strategy}_p50_ms"] = round(statistics.median(times), 3)
        out[f"{strategy}_p95_ms"] = round(percentile(times, 0.95), 3)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
