"""Cost replay of the promotion policies: the README figures, and how long the replay takes.

Run: python3 benchmarks/bench_replay.py [--json]. Replays the SWE-agent traces (../shared/traces, doubao
reported separately) and the project's own sequences through static, every_turn, task_start and inline in every
shipped mode, under both fetch assumptions. Savings are against the static baseline of the same run.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.search_corpora import shared_dir
from prompt_composer import Composer, load_registry
from prompt_composer.replay import ReplayParams, ReplayReport, load_traces, replay, split_by_model, synthetic_replay

TRACES = shared_dir() / "traces" / "traces.jsonl"


def rows(report: ReplayReport, fetch: bool) -> list[str]:
    out = []
    for slug, sub in [("all modes", report), *report.per_mode.items()]:
        static = sub.policies["static"]
        for name, cost in sub.policies.items():
            out.append(
                f"| {report.label} | {'yes' if fetch else 'no'} | {slug} | {name} | {cost.input_tokens:,} | "
                f"{cost.cost:,.0f} | {sub.saving(name):+.1%} | {cost.cost_no_cache:,.0f} | "
                f"{sub.saving(name, cache=False):+.1%} | {cost.fetches:,} |"
            )
        assert static.cost > 0
    return out


def main() -> None:
    composer = Composer(load_registry())
    reports: list[tuple[ReplayReport, bool]] = []
    start = time.perf_counter()
    steps = 0
    for fetch in (True, False):
        params = ReplayParams(fetch_first_use=fetch)
        if TRACES.exists():
            rest, doubao = split_by_model(load_traces(TRACES), "doubao")
            reports.append((replay(composer, rest, params=params, label="SWE-agent (no doubao)"), fetch))
            reports.append((replay(composer, doubao, params=params, label="SWE-agent doubao"), fetch))
        reports.append((synthetic_replay(composer, params=params), fetch))
    elapsed = time.perf_counter() - start
    for report, _ in reports:
        steps += report.steps * 4
    if "--json" in sys.argv:
        print(json.dumps([{"fetch_first_use": f, **r.as_dict()} for r, f in reports], indent=2))
        return
    print(
        "| sequences | fetch | mode | policy | input tokens | cost (cache) | saving | cost (no cache) "
        "| saving | fetches |"
    )
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|")
    for report, fetch in reports:
        for line in rows(report, fetch):
            print(line)
    print(f"\nreplayed {steps:,} task-steps (4 policies) in {elapsed:.1f} s ({elapsed / steps * 1e6:.1f} µs a step)")


if __name__ == "__main__":
    main()
