"""Offline retrieval figures on the large catalog (issue 32): what preselection puts in front of the model, per split
of ``benchmarks/agent/large/tasks.jsonl``, with no model run.

For each task: the tools :func:`~prompt_composer.discovery.preselect.preselect` loads at the mode's defaults
(``PreselectConfig()``, as the bench's ``auto`` variant), and the full ranking of the search. Reported per split:

- *coverage*: tasks where a right tool is loaded or permanent (tasks that expect no tool are left out);
- *precision*: loaded tools that are right / loaded tools, over every task with loads;
- *loaded*: tools loaded a task, on average; *MRR*: mean reciprocal rank of the best-ranked right tool.

Run: ``python3 benchmarks/retrieval_large.py [--split tune|heldout] [--strategy keyword|hybrid] [--misses]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.large_catalog import LARGE_MODE, LARGE_TASKS, build_large
from prompt_composer import load_registry
from prompt_composer.agent.bench import BenchTask, load_tasks
from prompt_composer.core.modes import Mode, PreselectConfig
from prompt_composer.discovery.preselect import preselect
from prompt_composer.discovery.results import SearchStrategy
from prompt_composer.discovery.search import ToolSearch

__all__ = ["SplitFigures", "TaskOutcome", "measure", "outcome"]


@dataclass(frozen=True)
class TaskOutcome:
    task: BenchTask
    loaded: tuple[str, ...]
    covered: bool
    rank: int | None  # 1-based rank of the best-ranked right tool in the full ranking


@dataclass(frozen=True)
class SplitFigures:
    split: str
    tasks: int
    covered: int
    precision: float
    loaded_per_task: float
    mrr: float

    def line(self) -> str:
        share = self.covered / self.tasks if self.tasks else 0.0
        return (
            f"{self.split:8} coverage {self.covered}/{self.tasks} ({share:.0%})  precision {self.precision:.2f}  "
            f"loaded/task {self.loaded_per_task:.2f}  MRR {self.mrr:.3f}"
        )


def outcome(
    search: ToolSearch, mode: Mode, task: BenchTask, config: PreselectConfig, strategy: SearchStrategy | None
) -> TaskOutcome:
    found = preselect(search, mode, task.task, config)
    ranking, _result = search.rank(task.task, mode, strategy)
    right = set(task.expect)
    covered = bool(right & (set(found.tools) | set(mode.permanent)))
    rank = next((i + 1 for i, name in enumerate(ranking) if name in right), None)
    return TaskOutcome(task, found.tools, covered, rank)


def measure(outcomes: Sequence[TaskOutcome], split: str) -> SplitFigures:
    scored = [o for o in outcomes if o.task.expect]
    loads = sum(len(o.loaded) for o in outcomes)
    right_loads = sum(1 for o in outcomes for name in o.loaded if name in o.task.expect)
    return SplitFigures(
        split,
        len(scored),
        sum(1 for o in scored if o.covered),
        right_loads / loads if loads else 0.0,
        loads / len(outcomes) if outcomes else 0.0,
        sum(1.0 / o.rank for o in scored if o.rank) / len(scored) if scored else 0.0,
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--split", default=None, help="tune or heldout (default: both, each reported)")
    parser.add_argument("--strategy", default=None, help="keyword or hybrid (default: the search's own)")
    parser.add_argument("--misses", action="store_true", help="list every uncovered task")
    parser.add_argument("--docs", type=Path, default=None, help="a large-catalog docs folder built before (faster)")
    args = parser.parse_args()
    tasks = load_tasks(LARGE_TASKS)
    splits = [args.split] if args.split else sorted({t.split for t in tasks}, reverse=True)
    with tempfile.TemporaryDirectory() as tmp:
        docs = args.docs or build_large(Path(tmp)).docs
        registry = load_registry(docs)
        mode = registry.mode(LARGE_MODE)
        search = ToolSearch(registry, embedder=False if args.strategy == "keyword" else None)
        config = mode.config.preselect or PreselectConfig()
        for split in splits:
            outcomes = [outcome(search, mode, t, config, args.strategy) for t in tasks if t.split == split]
            print(measure(outcomes, split).line())
            if args.misses:
                for o in outcomes:
                    if o.task.expect and not o.covered:
                        print(f"  miss {o.task.id}: loaded {', '.join(o.loaded) or '-'}; right rank {o.rank}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
