"""Each task of a real-model run on the large catalog, and why a miss missed (issue 38).

Reads the JSON that ``bench_agent.py --sets large --json FILE`` wrote and recomputes, with no model, what
preselection put in front of the model for each task (the same search and defaults as the run's ``auto`` variant:
:func:`benchmarks.retrieval_large.outcome`). A miss is then one of:

- *not loaded*: no right tool was loaded, permanent or shortlisted (retrieval's miss; ``auto`` and ``auto_rewrite``
  only, the latter recomputed with the rewrites of ``--rewrites FILE``, as ``retrieval_large.py`` reads them);
- *shortlisted, not called*: a right tool was only named in the shortlist, and the model called something else;
- *sibling called*: a right tool was in front of the model (loaded in ``auto``; handed over in ``oracle``; in
  ``discovery`` the model searches itself) and the model called another tool of the same server;
- *other*: another tool called, no call at all, or the run ended in an error or an overflow.

Run: ``python3 benchmarks/large_misses.py RESULTS.json [--docs DIR] [--tasks FILE] [--rewrites FILE] [--markdown]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.large_catalog import LARGE_MODE, LARGE_TASKS, build_large
from benchmarks.retrieval_large import TaskOutcome, outcome
from prompt_composer import load_registry
from prompt_composer.agent.bench import load_tasks
from prompt_composer.core.modes import PreselectConfig
from prompt_composer.core.registry import Registry
from prompt_composer.discovery.search import ToolSearch

__all__ = ["classify"]

PRESELECTING = ("auto", "auto_rewrite")  # the variants whose preselection is recomputed here


def server_of(registry: Registry, name: str | None) -> str | None:
    doc = registry.tools.get(name or "")
    return doc.origin.server if doc is not None and doc.origin is not None else None


def classify(run: dict[str, Any], offline: TaskOutcome | None, registry: Registry) -> str:
    """The class of one outcome (``hit`` when the first call was right)."""
    if run["correct"]:
        return "hit"
    if run.get("error") or run.get("overflow"):
        return "other"
    expected = tuple(run.get("expected") or ())
    choice = run.get("choice")
    if run["variant"] in PRESELECTING and offline is not None and not offline.covered:
        if not offline.listed:
            return "not loaded"
        return "shortlisted, not called"
    servers = {server_of(registry, name) for name in expected} - {None}
    if choice is not None and server_of(registry, choice) in servers:
        return "sibling called"
    return "other"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("results", type=Path, help="the JSON of bench_agent.py --sets large --json")
    parser.add_argument("--docs", type=Path, default=None, help="a large-catalog docs folder built before")
    parser.add_argument("--markdown", action="store_true", help="print the per-task table as Markdown")
    parser.add_argument("--tasks", type=Path, default=LARGE_TASKS, help="the run's task file (default: tasks.jsonl)")
    parser.add_argument("--rewrites", type=Path, help="auto_rewrite's answers (JSON, task id -> line)")
    args = parser.parse_args()
    rewrites: dict[str, str] = json.loads(args.rewrites.read_text(encoding="utf-8")) if args.rewrites else {}
    outcomes = json.loads(args.results.read_text(encoding="utf-8"))["large"]["outcomes"]
    if not rewrites and any(o["variant"] == "auto_rewrite" for o in outcomes):
        parser.error("the run has auto_rewrite: give its answers with --rewrites FILE (retrieval_large.py's)")
    tasks = {t.id: t for t in load_tasks(args.tasks)}
    with tempfile.TemporaryDirectory() as tmp:
        docs = args.docs or build_large(Path(tmp)).docs
        registry = load_registry(docs)
        mode = registry.mode(LARGE_MODE)
        search = ToolSearch(registry)
        config = mode.config.preselect or PreselectConfig()
        ids = {o["task"] for o in outcomes}
        offline = {i: outcome(search, registry, mode, tasks[i], config, None) for i in ids}
        rewritten = {i: outcome(search, registry, mode, tasks[i], config, None, None, rewrites.get(i)) for i in ids}
    variants = list(dict.fromkeys(o["variant"] for o in outcomes))
    by = {(o["task"], o["variant"]): o for o in outcomes}
    found_for = {"auto_rewrite": rewritten}
    classes = {key: classify(o, found_for.get(key[1], offline)[key[0]], registry) for key, o in by.items()}
    for variant in variants:
        counts = Counter(c for (_, v), c in classes.items() if v == variant)
        n = sum(counts.values())
        parts = ", ".join(f"{c} {k}" for k, c in counts.most_common() if k != "hit")
        print(f"{variant:10} {counts['hit']}/{n} right ({counts['hit'] / n:.0%}); misses: {parts or 'none'}")
    if args.markdown:
        print()
        both = "auto_rewrite" in variants
        heads = "preselection | with the rewrite" if both else "preselection"
        print(f"| task | right tool | {heads} | " + " | ".join(variants) + " |")
        print("|---|---|---|" + "---|" * (len(variants) + both))
        for task_id in dict.fromkeys(o["task"] for o in outcomes):
            seen = " | ".join(
                "loaded" if found.covered else "shortlisted" if found.listed else f"rank {found.rank}"
                for found in ((offline[task_id], rewritten[task_id]) if both else (offline[task_id],))
            )
            cells = []
            for variant in variants:
                o = by.get((task_id, variant))
                if o is None:
                    cells.append("")
                    continue
                called = f"`{o['choice']}`" if o["choice"] else "no call"
                kind = classes[(task_id, variant)]
                cells.append("✓" if kind == "hit" else f"{called}: {kind}")
            right = ", ".join(f"`{n}`" for n in tasks[task_id].expect) or "none"
            print(f"| {task_id} | {right} | {seen} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
