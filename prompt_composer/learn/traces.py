"""Tool-use sequences to replay and tune on: real ones from SWE-agent trace files (mapped onto the shipped
docs), the project's own synthetic ones, and a split of a set by model.

A :class:`Task` is one sequence of tool names of the registry; nothing here composes or prices a prompt (that is
:mod:`.replay`).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..core.composer import Composer
from ..shared.files import json_lines, line_error

# SWE-agent 0.x's 11 tools onto the shipped docs.
SWE_AGENT_TOOL_MAP: Mapping[str, str] = {
    "open": "read_file",
    "goto": "read_file",
    "scroll_down": "read_file",
    "scroll_up": "read_file",
    "edit": "apply_diff",
    "create": "write_to_file",
    "search_dir": "search_files",
    "search_file": "search_files",
    "find_file": "glob",
    "bash": "execute_command",
    "submit": "attempt_completion",
}
MALFORMED = "<malformed>"


@dataclass(frozen=True)
class Task:
    """One tool-use sequence (tool names of the registry), e.g. a mapped SWE-agent trajectory."""

    id: str
    tools: tuple[str, ...]
    model: str = ""


def load_traces(path: str | Path, *, tool_map: Mapping[str, str] = SWE_AGENT_TOOL_MAP) -> list[Task]:
    """Tasks from a traces JSONL file (``{"id", "model", "steps": [{"tool"}]}``), tools mapped onto the docs.

    ``<malformed>`` steps are skipped; a tool missing from ``tool_map`` is kept under its own name (and is then
    refused by every mode that does not allow it).
    """
    tasks: list[Task] = []
    for line in json_lines(path, what="trace file"):
        record = line.value
        try:
            steps = [s["tool"] for s in record["steps"]]
        except (KeyError, TypeError) as exc:
            raise line_error(path, line.number, f"not a trace record: {exc}") from None
        tools = tuple(tool_map.get(t, t) for t in steps if t != MALFORMED)
        tasks.append(Task(str(record.get("id", line.number)), tools, str(record.get("model", ""))))
    return tasks


def synthetic_tasks(composer: Composer, mode: str, *, count: int = 40, seed: int = 7) -> list[Task]:
    """Tool-use sequences of the project's own for ``mode``, which use its non-permanent tools.

    Each task is 12–30 steps; each step is a permanent tool (55%) or one of 3 non-permanent tools the task
    picked at random (45%), with re-use, which is how real tasks use a few tools repeatedly (deterministic seed).
    """
    resolved = composer.registry.mode(mode)
    rng = random.Random(f"{seed}/{mode}")
    permanent = [t for t in resolved.permanent if resolved.allows(t)]
    others = [t for t in resolved.allowed if t not in set(permanent)]
    tasks = []
    for index in range(count):
        chosen = rng.sample(others, k=min(3, len(others)))
        length = rng.randint(12, 30)
        steps: list[str] = []
        for _ in range(length):
            if chosen and (not permanent or rng.random() < 0.45):
                steps.append(rng.choice(chosen))
            else:
                steps.append(rng.choice(permanent))
        tasks.append(Task(f"synthetic/{mode}/{index}", tuple(steps)))
    return tasks


def split_by_model(tasks: Iterable[Task], model: str) -> tuple[list[Task], list[Task]]:
    """(tasks of other models, tasks of ``model``): doubao loops and is reported separately."""
    rest: list[Task] = []
    picked: list[Task] = []
    for task in tasks:
        (picked if model in task.model else rest).append(task)
    return rest, picked
