"""Cost replay of the promotion policies: the README figures, and how long the replay takes.

Run: python3 benchmarks/bench_replay.py [--json]. Replays the SWE-agent traces (../shared/traces, doubao
reported separately) and the project's own sequences through static, every_turn, task_start and inline in every
shipped mode, under both fetch assumptions and both providers' cache models (Anthropic's breakpoints with their
20-block lookback and 1,024-token minimum; OpenAI's automatic prefix cache). Savings are against the static
baseline of the same run. Prints the README's summary table, its per-mode line, what `replay` recommends per
mode, then every row.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.search_corpora import shared_dir
from prompt_composer import Composer, load_registry
from prompt_composer.core.promotion import POLICIES
from prompt_composer.learn.costs import COST_MODELS
from prompt_composer.learn.replay import ReplayParams, ReplayReport, replay, synthetic_replay
from prompt_composer.learn.traces import load_traces, split_by_model

TRACES = shared_dir() / "traces" / "traces.jsonl"
PROVIDERS = ("anthropic", "openai")
SETS = ("SWE-agent (no doubao)", "SWE-agent doubao", "own sequences")


def rows(report: ReplayReport, fetch: bool, provider: str) -> list[str]:
    out = []
    for slug, sub in [("all modes", report), *report.per_mode.items()]:
        static = sub.policies["static"]
        for name, cost in sub.policies.items():
            out.append(
                f"| {report.label} | {provider} | {'yes' if fetch else 'no'} | {slug} | {name} | "
                f"{cost.input_tokens:,} | {cost.cost:,.0f} | {sub.saving(name):+.1%} | {cost.cost_no_cache:,.0f} | "
                f"{sub.saving(name, cache=False):+.1%} | {cost.fetches:,} | {sub.recommended} |"
            )
        assert static.cost > 0
    return out


def signed(value: float) -> str:
    """A README percentage: +27.2%, −54.4% (a true minus sign)."""
    return f"{value:+.1%}".replace("-", "−")


def readme_label(report: ReplayReport, fetch: bool) -> str:
    """The README's name for a set of sequences: with its size on the first (fetch) rows, short on the others."""
    modes = len(report.modes)
    per_mode = report.tasks // modes if modes else 0
    if report.label == SETS[0]:
        return (
            f"SWE-agent, {per_mode} tasks × {modes} modes (without doubao)" if fetch else "SWE-agent (without doubao)"
        )
    if report.label == SETS[1]:
        return f"SWE-agent, doubao, {per_mode} tasks × {modes} modes" if fetch else "SWE-agent, doubao"
    return f"own sequences, {per_mode} per mode × {modes} modes" if fetch else "own sequences"


def summary(reports: dict[tuple[str, bool, str], ReplayReport]) -> list[str]:
    """The README's table: per set of sequences and fetch assumption, each policy's saving under both caches."""
    out = [
        "| sequences | fetch before first use | Anthropic every_turn | task_start | inline (default) "
        "| OpenAI every_turn | task_start | inline (default) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for fetch in (True, False):
        for label in SETS:
            if (label, fetch, "anthropic") not in reports:
                continue
            cells = []
            for provider in PROVIDERS:
                report = reports[(label, fetch, provider)]
                for name in POLICIES:
                    cell = signed(report.saving(name))
                    if provider == "anthropic":  # the no-cache saving is the same for both providers
                        cell += f" ({signed(report.saving(name, cache=False))})"
                    cells.append(cell)
            out.append(
                f"| {readme_label(reports[(label, fetch, 'anthropic')], fetch)} | {'yes' if fetch else 'no'} | "
                f"{' | '.join(cells)} |"
            )
    return out


def per_mode(reports: dict[tuple[str, bool, str], ReplayReport]) -> list[str]:
    out = []
    for (label, fetch, provider), report in reports.items():
        parts = []
        for slug, sub in report.per_mode.items():
            parts.append(
                f"{slug} {signed(sub.saving('every_turn'))} / {signed(sub.saving('inline'))} "
                f"(recommended: {sub.recommended})"
            )
        out.append(f"{label}, fetch {'yes' if fetch else 'no'}, {provider}, every_turn / inline: {'; '.join(parts)}")
    return out


def main() -> None:
    composer = Composer(load_registry())
    reports: dict[tuple[str, bool, str], ReplayReport] = {}
    start = time.perf_counter()
    steps = 0
    tasks = load_traces(TRACES) if TRACES.exists() else []
    rest, doubao = split_by_model(tasks, "doubao")
    for fetch in (True, False):
        for provider in PROVIDERS:
            params = ReplayParams(fetch_first_use=fetch, cost_model=COST_MODELS[provider])
            if tasks:
                reports[(SETS[0], fetch, provider)] = replay(composer, rest, params=params, label=SETS[0])
                reports[(SETS[1], fetch, provider)] = replay(composer, doubao, params=params, label=SETS[1])
            own = synthetic_replay(composer, params=params)
            own.label = SETS[2]
            reports[(SETS[2], fetch, provider)] = own
    elapsed = time.perf_counter() - start
    for report in reports.values():
        steps += report.steps * 4
    if "--json" in sys.argv:
        print(
            json.dumps(
                [{"fetch_first_use": f, "provider": p, **r.as_dict()} for (_, f, p), r in reports.items()], indent=2
            )
        )
        return
    print("\n".join(summary(reports)))
    print()
    print("\n".join(per_mode(reports)))
    print()
    print(
        "| sequences | provider | fetch | mode | policy | input tokens | cost (cache) | saving | cost (no cache) "
        "| saving | fetches | recommended |"
    )
    print("|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---|")
    for (_, fetch, provider), report in reports.items():
        for line in rows(report, fetch, provider):
            print(line)
    print(f"\nreplayed {steps:,} task-steps (4 policies) in {elapsed:.1f} s ({elapsed / steps * 1e6:.1f} µs a step)")


if __name__ == "__main__":
    main()
