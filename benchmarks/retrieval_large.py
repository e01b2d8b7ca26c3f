"""Offline retrieval figures on the large catalog (issues 32 and 38): what preselection puts in front of the model,
per split of ``benchmarks/agent/large/tasks.jsonl``, with no model run.

For each task: the tools :func:`~prompt_composer.discovery.preselect.preselect` loads at the mode's defaults
(``PreselectConfig()``, as the bench's ``auto`` variant), the shortlist it names beside them, and the full ranking
of the search. Reported per split (tasks that expect no tool are left out of the shares):

- *coverage*: tasks where a right tool is loaded or permanent;
- *+ shortlist*: tasks where a right tool is loaded, permanent or shortlisted (named in the note, callable);
- *@1 … @10*: rank coverage, tasks whose best-ranked right tool is within the top N of the full ranking;
- *precision*: loaded tools that are right / loaded tools; *loaded*: tools loaded a task, on average;
- *MRR*: mean reciprocal rank of the best-ranked right tool;
- *shortlist tokens*: the shortlist's part of the note (cl100k_base), mean and largest, over every task: what a
  request carries for it: its lines in the note, or with ``--shortlist-stubs`` its one line of names plus the stubs
  declared for it (the shortlisted tools that the ``auto`` variant's tiers leave out of the tool list).

With ``--rewrites FILE`` each task is searched as preselection searches it with a ``rewriter``
(:mod:`prompt_composer.discovery.rewrite`): the model's line for it, then its words. FILE is JSON, task id → the
model's answer; ``--rewrite-url URL`` (a server of the Anthropic Messages API, e.g. ``prompt-composer model serve``)
asks the model for the tasks FILE has no answer for, at temperature 0, and writes them to FILE.

Run: ``python3 benchmarks/retrieval_large.py [--tasks FILE] [--split tune|heldout] [--strategy keyword|hybrid]
[--misses] [--cards readme|drafted|none] [--shortlist N] [--min-confidence F] [--shortlist-stubs] [--card-weight W]
[--card-semantic-weight W] [--affordance-weight W] [--rewrites FILE [--rewrite-url URL]]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.large_catalog import CARD_CHOICES, LARGE_MODE, LARGE_TASKS, build_large
from prompt_composer import Composer, load_registry
from prompt_composer.agent.bench import BenchTask, load_tasks, variant_registry
from prompt_composer.agent.preselection import shortlist_text
from prompt_composer.core.modes import Mode, PreselectConfig
from prompt_composer.core.registry import Registry
from prompt_composer.core.tokens import default_counter
from prompt_composer.discovery.preselect import preselect
from prompt_composer.discovery.results import SearchStrategy
from prompt_composer.discovery.rewrite import searched_text
from prompt_composer.discovery.search import AFFORDANCE_WEIGHT, CARD_SEMANTIC_WEIGHT, CARD_WEIGHT, ToolSearch

__all__ = ["RANKS", "SplitFigures", "TaskOutcome", "measure", "outcome"]

RANKS = (1, 3, 5, 10)


@dataclass(frozen=True)
class TaskOutcome:
    task: BenchTask
    loaded: tuple[str, ...]
    shortlist: tuple[str, ...]
    covered: bool  # a right tool loaded or permanent
    listed: bool  # ... or shortlisted
    rank: int | None  # 1-based rank of the best-ranked right tool in the full ranking
    shortlist_tokens: int


@dataclass(frozen=True)
class SplitFigures:
    split: str
    tasks: int
    covered: int
    listed: int
    at: dict[int, int]
    precision: float
    loaded_per_task: float
    mrr: float
    shortlist_tokens: float
    shortlist_tokens_max: int

    def line(self) -> str:
        def share(n: int) -> str:
            return f"{n}/{self.tasks} ({n / self.tasks:.0%})" if self.tasks else "0/0"

        ranks = "  ".join(f"@{k} {self.at[k] / self.tasks:.2f}" for k in RANKS) if self.tasks else ""
        return (
            f"{self.split:8} coverage {share(self.covered)}  + shortlist {share(self.listed)}  {ranks}  "
            f"precision {self.precision:.2f}  loaded/task {self.loaded_per_task:.2f}  MRR {self.mrr:.3f}  "
            f"shortlist tokens {self.shortlist_tokens:.0f} (max {self.shortlist_tokens_max})"
        )


def outcome(
    search: ToolSearch,
    registry: Registry,
    mode: Mode,
    task: BenchTask,
    config: PreselectConfig,
    strategy: SearchStrategy | None,
    stub_cost: Callable[[str], int | None] | None = None,
    rewrite: str | None = None,
) -> TaskOutcome:
    """One task's outcome; ``rewrite``: the model's answer for it, searched before its words (as with a rewriter)."""
    text = searched_text(task.task, (lambda _text: rewrite) if rewrite is not None else None)[0]
    found = preselect(search, mode, text, config)
    ranking, _result = search.rank(text, mode, strategy)
    right = set(task.expect)
    covered = bool(right & (set(found.tools) | set(mode.permanent)))
    listed = covered or bool(right & set(found.shortlist))
    rank = next((i + 1 for i, name in enumerate(ranking) if name in right), None)
    text = shortlist_text(registry, mode, found.shortlist, declared=stub_cost is not None)
    tokens = default_counter().count(text) if text else 0
    if stub_cost is not None:
        tokens += sum(cost for name in found.shortlist if (cost := stub_cost(name)) is not None)
    return TaskOutcome(task, found.tools, found.shortlist, covered, listed, rank, tokens)


def measure(outcomes: Sequence[TaskOutcome], split: str) -> SplitFigures:
    scored = [o for o in outcomes if o.task.expect]
    loads = sum(len(o.loaded) for o in outcomes)
    right_loads = sum(1 for o in outcomes for name in o.loaded if name in o.task.expect)
    tokens = [o.shortlist_tokens for o in outcomes]
    return SplitFigures(
        split,
        len(scored),
        sum(1 for o in scored if o.covered),
        sum(1 for o in scored if o.listed),
        {k: sum(1 for o in scored if o.rank is not None and o.rank <= k) for k in RANKS},
        right_loads / loads if loads else 0.0,
        loads / len(outcomes) if outcomes else 0.0,
        sum(1.0 / o.rank for o in scored if o.rank) / len(scored) if scored else 0.0,
        sum(tokens) / len(tokens) if tokens else 0.0,
        max(tokens, default=0),
    )


def stub_costs(registry: Registry) -> Callable[[str], int | None]:
    """A tool's stub tokens when the bench's ``auto`` variant would declare it for a shortlist (a catalog or name
    tool of its tiers), else ``None`` (a brief tool is in the tool list already)."""
    composer = Composer(variant_registry(registry, LARGE_MODE, "auto"))
    tiers = composer.tiers(LARGE_MODE)
    assert tiers is not None

    def cost(name: str) -> int | None:
        return composer.definitions.stub(name, summarised=True)[1] if tiers.unlisted(name) else None

    return cost


def rewrite_answers(path: Path, url: str | None, tasks: Sequence[BenchTask]) -> dict[str, str]:
    """The model's answer per task id: those kept in ``path``, and with ``url`` the missing ones asked of the model
    there (then kept in ``path``). Without ``url`` every task must have one."""
    answers: dict[str, str] = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    missing = [t for t in tasks if t.id not in answers]
    if missing and url is None:
        raise SystemExit(f"{path}: no answer for {len(missing)} task(s), e.g. {missing[0].id}; give --rewrite-url")
    if missing:
        import anthropic

        from prompt_composer.agent.rewriting import model_rewriter

        with anthropic.Anthropic(base_url=url, api_key="local", timeout=300) as sdk:
            rewrite = model_rewriter(sdk, model="local", extra_body={"temperature": 0}, timeout=300)
            try:
                for task in missing:
                    answers[task.id] = rewrite(task.task) or ""
            finally:  # what was asked is kept, even when a later request fails
                path.write_text(json.dumps(answers, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return answers


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--tasks",
        type=Path,
        default=LARGE_TASKS,
        help="the task file (default: tasks.jsonl; see BLIND.md before giving blind-tasks.jsonl)",
    )
    parser.add_argument(
        "--split", default=None, help="tune or heldout (default: every split of the file, each reported)"
    )
    parser.add_argument("--strategy", default=None, help="keyword or hybrid (default: the search's own)")
    parser.add_argument("--misses", action="store_true", help="list every task not loaded or shortlisted")
    parser.add_argument("--docs", type=Path, default=None, help="a large-catalog docs folder built before (faster)")
    parser.add_argument("--cards", choices=CARD_CHOICES, default="readme", help="server cards, when building")
    parser.add_argument("--shortlist", type=int, default=None, help="the shortlist's size (default: the mode's)")
    parser.add_argument(
        "--min-confidence", type=float, default=None, help="preselection's similarity floor (default: the mode's)"
    )
    parser.add_argument(
        "--shortlist-stubs", action="store_true", help="the shortlist declared as stubs (shortlist_stubs: true)"
    )
    parser.add_argument("--card-weight", type=float, default=CARD_WEIGHT, help="the card field's BM25F weight")
    parser.add_argument(
        "--card-semantic-weight", type=float, default=CARD_SEMANTIC_WEIGHT, help="the card's share of a tool vector"
    )
    parser.add_argument(
        "--affordance-weight",
        type=float,
        default=AFFORDANCE_WEIGHT,
        help="the lift of a tool that takes the values a request names (a path, a commit, a line, an id)",
    )
    parser.add_argument(
        "--no-card-examples", action="store_true", help="search without the cards' example requests (an ablation)"
    )
    parser.add_argument("--rewrites", type=Path, help="JSON of task id -> the model's line: search it first")
    parser.add_argument("--rewrite-url", help="a Messages API server to ask for the lines --rewrites lacks")
    args = parser.parse_args()
    if args.rewrite_url and not args.rewrites:
        parser.error("--rewrite-url needs --rewrites FILE (where the answers are kept)")
    tasks = load_tasks(args.tasks)
    rewrites = rewrite_answers(args.rewrites, args.rewrite_url, tasks) if args.rewrites else {}
    splits = [args.split] if args.split else sorted({t.split for t in tasks}, reverse=True)
    with tempfile.TemporaryDirectory() as tmp:
        docs = args.docs or build_large(Path(tmp), cards=args.cards).docs
        registry = load_registry(docs)
        mode = registry.mode(LARGE_MODE)
        search = ToolSearch(
            registry,
            embedder=False if args.strategy == "keyword" else None,
            card_weight=args.card_weight,
            card_semantic_weight=args.card_semantic_weight,
            affordance_weight=args.affordance_weight,
            card_examples=not args.no_card_examples,
        )
        config = mode.config.preselect or PreselectConfig()
        given = {"shortlist": args.shortlist, "min_confidence": args.min_confidence}
        changes = {key: value for key, value in given.items() if value is not None}
        if args.shortlist_stubs:
            changes["shortlist_stubs"] = True
        config = PreselectConfig.model_validate({**config.model_dump(), **changes})  # validated, unlike model_copy
        stub_cost = stub_costs(registry) if config.shortlist_stubs else None
        for split in splits:
            outcomes = [
                outcome(search, registry, mode, t, config, args.strategy, stub_cost, rewrites.get(t.id))
                for t in tasks
                if t.split == split
            ]
            print(measure(outcomes, split).line())
            if args.misses:
                for o in outcomes:
                    if o.task.expect and not o.listed:
                        loaded = ", ".join(o.loaded) or "-"
                        print(f"  miss {o.task.id}: loaded {loaded}; shortlist {', '.join(o.shortlist) or '-'}; "
                              f"right rank {o.rank}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
