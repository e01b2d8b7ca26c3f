"""Agent-level A/B: the same tasks through the tool loop under several prompt variants, on a real model.

A task file is JSONL, one task a line::

    {"id": "t1", "task": "Where is parse_args defined?", "expect": ["search_files", "list_code_definitions"],
     "args": {"regex": "parse_args"}, "workspace": "repo"}

``expect`` lists the tools any of which is a right first call (an empty list: the right answer calls no tool);
``args`` (optional) is a subset of that call's input that must match; ``workspace`` (optional, relative to the
task file) is the folder the read-only executors may read; every other tool of the mode gets a placeholder result
(it is not run, but the call is recorded in the recent-use FIFO as in a real agent). The *choice* of a task is
its first call that is not ``fetch_tool_description`` or ``tool_search``.

Variants (each a way to send the same registry and mode):

- ``static``: every allowed tool in full and no fetch tool: the agent without prompt-composer.
- ``composed``: the mode as configured, under its own promotion policy.
- ``every_turn``: the mode, recomposed every request from the recent-use FIFO.
- ``discovery``: the mode with discovery on (permanent tools, ``tool_search`` and fetch; found tools join).
- ``auto``: the mode with preselection and tiers (its own ``preselect`` and ``tiers`` if it has them, else the
  defaults, the tiers sized to the model's context): the tools a task calls for are loaded before the model asks.
- ``oracle``: the task's expected tools in full, plus the permanent ones, and nothing else: the ceiling a perfect
  retriever would give.
- ``native``: the mode compiled to tool deferral, emulated by the loop (a local server cannot defer): the
  permanent tools eager, every other tool listed by its brief and loaded by ``tool_search`` or a fetch.
- ``auto_native``: ``auto``'s mode (preselection, tiers) compiled to deferral the same way: the deferred tools
  listed by their tier (brief, catalog line or name), so a catalog too large for ``native`` fits.
- ``auto_stubs``: ``auto`` with ``stubs: true``: the catalog and name tools declared as stubs in the tool list,
  what loads sent as text in the conversation.
- ``auto_rewrite``: ``auto`` with the model itself putting each task as the operation it asks for before
  preselection searches it (:func:`~prompt_composer.agent.rewriting.model_rewriter`, one short request a task).

Tasks run variant by variant, so a variant's stable prefix stays in a single-slot server's cache from one task
to the next, as it would in a real agent's session. The loop stops at the task's choice (or a final answer, or
``max_iterations``); after a choice, the request the agent would send next (the choice's result appended) is
sent with ``max_tokens=1``: its time to first token shows whether the prefix survived the choice (the real cache
effect), without generating an answer nobody scores.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from ..core.builtins import FETCH_TOOL_NAME, TOOL_SEARCH_NAME
from ..core.modes import PreselectConfig, TierConfig
from ..core.registry import Registry
from ..errors import InputFileError, PromptComposerError
from ..shared.files import json_lines, line_error

if TYPE_CHECKING:
    from ..discovery.rewrite import RequestRewriter
    from .results import Iteration

Variant = Literal[
    "static",
    "composed",
    "every_turn",
    "discovery",
    "auto",
    "oracle",
    "native",
    "auto_native",
    "auto_stubs",
    "auto_shortlist_stubs",
    "auto_rewrite",
]
VARIANTS: tuple[Variant, ...] = get_args(Variant)
# The variants that add preselection and tiers to the mode (``auto`` and its A/Bs of one setting).
_PRESELECTING: tuple[Variant, ...] = ("auto", "auto_native", "auto_stubs", "auto_shortlist_stubs", "auto_rewrite")
DEFAULT_CONTEXT_TOKENS = 16_384  # the local model's context in `model serve` and bench_agent.py
_NOT_A_CHOICE = frozenset({FETCH_TOOL_NAME, TOOL_SEARCH_NAME})
_TASK_KEYS = frozenset({"id", "task", "expect", "args", "workspace", "split"})


@dataclass(frozen=True)
class BenchTask:
    id: str
    task: str
    expect: tuple[str, ...]
    args: Mapping[str, Any] = field(default_factory=dict)
    workspace: Path | None = None
    where: str = ""  # FILE:LINE of the task, for errors found after loading
    split: str = ""  # which part of an honest protocol the task is in ("tune", "heldout"); "" when unsplit


def load_tasks(path: str | Path) -> list[BenchTask]:
    """Read a task file; a bad line is an :class:`InputFileError` naming ``path:line`` and the field."""
    path = Path(path)
    tasks: list[BenchTask] = []
    seen: set[str] = set()
    for line in json_lines(path, what="task file"):
        row, where = line.value, f"{path}:{line.number}"
        if not isinstance(row, dict):
            raise line_error(path, line.number, f"a task is a JSON object, not {type(row).__name__}")
        unknown = sorted(set(row) - _TASK_KEYS)
        if unknown:
            raise line_error(path, line.number, f"unknown key {unknown[0]!r} (keys: {', '.join(sorted(_TASK_KEYS))})")
        task_id, task, expect = row.get("id"), row.get("task"), row.get("expect")
        if not isinstance(task_id, str) or not task_id.strip():
            raise line_error(path, line.number, '"id" must be a non-empty string')
        if task_id in seen:
            raise line_error(path, line.number, f"duplicate id {task_id!r}")
        seen.add(task_id)
        if not isinstance(task, str) or not task.strip():
            raise line_error(path, line.number, '"task" must be a non-empty string')
        if not isinstance(expect, list) or not all(isinstance(name, str) and name for name in expect):
            raise line_error(path, line.number, '"expect" must be a list of tool names ([] when no tool is right)')
        args = row.get("args", {})
        if not isinstance(args, dict):
            raise line_error(path, line.number, '"args" must be an object')
        if args and not expect:
            raise line_error(path, line.number, '"args" needs an expected tool')
        split = row.get("split", "")
        if not isinstance(split, str):
            raise line_error(path, line.number, '"split" must be a string (e.g. "tune" or "heldout")')
        tasks.append(BenchTask(task_id, task, tuple(expect), args, _workspace(row, path, where), where, split))
    if not tasks:
        raise InputFileError(f"{path}: no tasks", path=path)
    return tasks


def _workspace(row: Mapping[str, Any], path: Path, where: str) -> Path | None:
    """The task's folder: relative to the task file and inside its folder (the model may read all of it, and
    what it reads goes to the model server)."""
    workspace = row.get("workspace")
    if workspace is None:
        return None
    if not isinstance(workspace, str) or not workspace:
        raise InputFileError(f'{where}: "workspace" must be a folder path relative to the task file')
    base = path.parent.resolve()
    # Checked as written (a symlink placed there on purpose is the folder's owner's choice, not the file's).
    folder = Path(os.path.normpath(base / workspace))
    if Path(workspace).is_absolute() or not folder.is_relative_to(base):
        raise InputFileError(f'{where}: "workspace" {workspace!r} must be inside the folder of {path.name}')
    if not folder.is_dir():
        raise InputFileError(f'{where}: "workspace" {workspace!r} is not a folder next to {path.name}')
    return folder


def check_tasks(tasks: Sequence[BenchTask], registry: Registry, mode: str) -> None:
    """Every expected tool must be one the mode allows (else no variant could ever be right)."""
    resolved = registry.mode(mode)
    for task in tasks:
        for name in task.expect:
            if not resolved.allows(name):
                where = task.where or f"task {task.id!r}"
                raise InputFileError(f"{where}: expected tool {name!r} is not in mode {mode!r}")


def variant_registry(
    registry: Registry,
    mode: str,
    variant: Variant,
    *,
    expect: Sequence[str] = (),
    context_tokens: int = DEFAULT_CONTEXT_TOKENS,
) -> Registry:
    """The registry a variant runs on: the same, except in ``mode``: ``discovery`` turns discovery on, ``auto``
    and ``auto_native`` add preselection and tiers (unless the mode has its own), ``oracle`` keeps only the
    permanent tools and the task's ``expect``, all in full."""
    config = registry.mode(mode).config
    if variant == "discovery":
        changed = config.model_copy(update={"discovery": True})
    elif variant in _PRESELECTING:
        tiers = config.tiers or TierConfig(context_tokens=context_tokens)
        if variant == "auto_stubs":
            tiers = tiers.model_copy(update={"stubs": True})
        chosen = config.preselect or PreselectConfig()
        if variant == "auto_shortlist_stubs":
            chosen = chosen.model_copy(update={"shortlist_stubs": True})
        changed = config.model_copy(update={"discovery": False, "preselect": chosen, "tiers": tiers})
    elif variant == "oracle":
        keep = tuple(dict.fromkeys((*config.permanent, *expect)))
        changed = config.model_copy(
            update={"groups": (), "include": keep, "exclude": (), "permanent": keep, "discovery": False, "tiers": None}
        )
    else:
        return registry
    configs = [m.config for m in registry.modes.values() if m.slug != mode]
    groups, servers = registry.groups.values(), registry.servers.values()
    return Registry.from_docs(
        registry.tools.values(), [*configs, changed], root=registry.root, groups=groups, servers=servers
    )


@dataclass
class TaskOutcome:
    """One task under one variant."""

    task: str
    variant: str
    choice: str | None = None  # the first call that is not a fetch or a search (None: no call)
    correct: bool = False
    args_ok: bool | None = None  # None: the task has no args to check; False unless the right call matched
    input_tokens: int = 0
    cache_read_tokens: int = 0
    fetch_calls: int = 0
    requests: int = 0
    error: str | None = None  # an API error, or the loop's own, that ended the task
    overflow: bool = False
    wall_s: float = 0.0
    first_token_s: list[float] = field(default_factory=list)  # per request, in order
    expected: tuple[str, ...] = ()
    # The composed prompt (system and tools, tiktoken) of each request; for a task that failed before its first
    # answer (a context overflow), of the request it could not send.
    prompt_tokens: list[int] = field(default_factory=list)
    ended: str = ""  # choice, answer, max_iterations, max_iterations_fetching, overflow or error

    def as_dict(self) -> dict[str, Any]:
        """One row of ``per_task``: enough to read a miss without running it again."""
        return {
            "id": self.task,
            "variant": self.variant,
            "expected": list(self.expected),
            "choice": self.choice,
            "right": self.correct,
            "arguments_right": self.args_ok,
            "requests": self.requests,
            "tokens": self.input_tokens + self.cache_read_tokens,
            "prompt_tokens": list(self.prompt_tokens),
            "fetches": self.fetch_calls,
            "ended": self.ended,
            **({"error": self.error} if self.error else {}),
        }


@dataclass
class VariantReport:
    tasks: int
    first_tool_accuracy: float
    args_accuracy: float | None
    input_tokens: int
    cache_read_tokens: int
    fetch_calls: int
    errors: int
    overflows: int
    wall_s: float
    ttft_first_median_s: float | None  # the first request of each task
    ttft_later_median_s: float | None  # every request after a task's first: the cache effect
    requests: int = 0
    prompt_tokens_per_request: float = 0.0  # the composed prompt (tiktoken), overflowing requests included

    @classmethod
    def of(cls, outcomes: Sequence[TaskOutcome]) -> VariantReport:
        with_args = [o for o in outcomes if o.args_ok is not None]
        firsts = [o.first_token_s[0] for o in outcomes if o.first_token_s]
        later = [t for o in outcomes for t in o.first_token_s[1:]]
        return cls(
            tasks=len(outcomes),
            first_tool_accuracy=_ratio(sum(o.correct for o in outcomes), len(outcomes)),
            args_accuracy=_ratio(sum(bool(o.args_ok) for o in with_args), len(with_args)) if with_args else None,
            input_tokens=sum(o.input_tokens for o in outcomes),
            cache_read_tokens=sum(o.cache_read_tokens for o in outcomes),
            fetch_calls=sum(o.fetch_calls for o in outcomes),
            errors=sum(o.error is not None and not o.overflow for o in outcomes),
            overflows=sum(o.overflow for o in outcomes),
            wall_s=round(sum(o.wall_s for o in outcomes), 2),
            ttft_first_median_s=round(statistics.median(firsts), 3) if firsts else None,
            ttft_later_median_s=round(statistics.median(later), 3) if later else None,
            requests=sum(o.requests for o in outcomes),
            prompt_tokens_per_request=round(statistics.mean(sent), 1) if (sent := _sent(outcomes)) else 0.0,
        )


def _sent(outcomes: Sequence[TaskOutcome]) -> list[int]:
    return [tokens for o in outcomes for tokens in o.prompt_tokens]


def _ratio(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


@dataclass
class BenchReport:
    variants: dict[str, VariantReport]
    outcomes: list[TaskOutcome]

    def as_dict(self) -> dict[str, Any]:
        return {
            "variants": {name: vars(report) for name, report in self.variants.items()},
            "per_task": [o.as_dict() for o in self.outcomes],
        }


def _is_overflow(exc: Exception) -> bool:
    """llama.cpp: "… exceeds the available context size"; Anthropic: "prompt is too long: N tokens > M maximum"."""
    text = str(exc).lower()
    if "prompt is too long" in text:
        return True
    return "context" in text and any(word in text for word in ("exceed", "too long", "overflow", "size"))


def run_bench(
    client: Any,
    registry: Registry,
    mode: str,
    tasks: Sequence[BenchTask],
    *,
    model: str,
    variants: Sequence[Variant] = VARIANTS,
    max_iterations: int = 4,
    max_tokens: int = 512,
    extra_body: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
    context_tokens: int = DEFAULT_CONTEXT_TOKENS,
    rewriter: RequestRewriter | None = None,
) -> BenchReport:
    """Run every task once per variant through the tool loop over ``client`` (an ``anthropic.Anthropic`` or an
    ``openai.OpenAI``). ``context_tokens`` is the model's context: ``auto`` sizes its tiers to it. ``auto_rewrite``
    asks ``rewriter`` (default: ``model`` over ``client``; a single-slot local server then loses the task's cached
    prefix to each rewrite, which a rewriter of its own avoids)."""
    from ..core.composer import Composer
    from ..discovery.search import ToolSearch
    from .results import StopLoop
    from .rewriting import model_rewriter
    from .wrapping import wrap

    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or len(set(variants)) != len(variants):
        raise ValueError(f"variants must be distinct names of {', '.join(VARIANTS)}; got {', '.join(variants)}")
    check_tasks(tasks, registry, mode)
    say = progress or (lambda _msg: None)
    outcomes: list[TaskOutcome] = []
    reports: dict[str, VariantReport] = {}
    for variant in variants:
        shared = (
            None
            if variant == "oracle"
            else Composer(variant_registry(registry, mode, variant, context_tokens=context_tokens))
        )
        # One search index per variant, shared by its tasks (built on the first search, as in an agent).
        searching = ("discovery", "native", *_PRESELECTING)
        search = ToolSearch(shared.registry) if shared is not None and variant in searching else None
        done: list[TaskOutcome] = []
        for number, task in enumerate(tasks, 1):
            composer = shared or Composer(
                variant_registry(registry, mode, variant, expect=task.expect, context_tokens=context_tokens)
            )
            outcome = TaskOutcome(task.id, variant, args_ok=False if task.args else None, expected=task.expect)
            wrapped = wrap(
                client,
                composer=composer,
                mode=mode,
                task_id=f"bench-{variant}-{task.id}",
                policy="every_turn" if variant == "every_turn" else None,
                baseline=variant == "static",
                search=search,
                native="emulate" if variant in ("native", "auto_native") else False,
                rewriter=(rewriter or model_rewriter(client, model=model, extra_body=extra_body))
                if variant == "auto_rewrite"
                else None,
            )
            executors = _executors(registry.mode(mode).allowed, task.workspace)
            start = time.perf_counter()
            watch = _Watch(outcome, task, StopLoop)
            _run_task(
                wrapped,
                watch,
                executors,
                model=model,
                max_iterations=max_iterations,
                max_tokens=max_tokens,
                extra_body=extra_body,
            )
            if not outcome.prompt_tokens:  # nothing answered: count what the first request would have sent
                outcome.prompt_tokens.append(wrapped.prompt().tokens.total)
            outcome.wall_s = round(time.perf_counter() - start, 3)
            done.append(outcome)
            say(_progress_line(variant, number, len(tasks), outcome))
        reports[variant] = VariantReport.of(done)
        outcomes += done
    return BenchReport(reports, outcomes)


def _run_task(
    wrapped: Any,
    watch: _Watch,
    executors: Mapping[str, Any],
    *,
    model: str,
    max_iterations: int,
    max_tokens: int,
    extra_body: Mapping[str, Any] | None,
) -> None:
    """One task through ``wrapped``'s loop up to its choice, then the request the agent would send next; the
    outcome (``watch.outcome``) is scored as it goes, and an error that ends the task is recorded on it."""
    outcome, task = watch.outcome, watch.task
    try:
        result = wrapped.run(
            task.task,
            model=model,
            max_tokens=max_tokens,
            executors=executors,
            max_iterations=max_iterations,
            on_iteration=watch,
            stream=True,
            extra_body=dict(extra_body or {}),
        )
        if watch.chosen_at is not None:
            # The request the agent sends next (the choice's result appended), through the same loop and
            # watcher: one token is enough to time its first token (the cache effect) without
            # generating an answer nobody scores.
            wrapped.run(
                result.messages,
                model=model,
                max_tokens=1,
                max_iterations=1,
                on_iteration=watch,
                stream=True,
                extra_body=dict(extra_body or {}),
            )
    except PromptComposerError as exc:  # MaxIterationsError: a choice made before it still counts
        if outcome.choice is None:
            outcome.error = str(exc)
    except Exception as exc:  # an API error: a context overflow counts as a wrong choice
        outcome.error = f"{type(exc).__name__}: {exc}"
        outcome.overflow = _is_overflow(exc)
    if outcome.choice is None and not task.expect and outcome.error is None:
        outcome.correct = True  # no call, and none was right
    outcome.ended = _ending(outcome)


def _ending(outcome: TaskOutcome) -> str:
    """How the task ended: at its choice, at a final answer, out of iterations (on fetches or not), on an overflow
    or another error."""
    if outcome.choice is not None:
        return "choice"
    if outcome.overflow:
        return "overflow"
    if outcome.error is not None and "max_iterations" in outcome.error:
        return "max_iterations_fetching" if outcome.fetch_calls >= outcome.requests - 1 else "max_iterations"
    return "error" if outcome.error is not None else "answer"


def _progress_line(variant: str, number: int, total: int, outcome: TaskOutcome) -> str:
    """One finished task, for ``progress``."""
    mark = "ok" if outcome.correct else "overflow" if outcome.overflow else "x"
    if outcome.error is not None and not outcome.overflow:
        mark = f"error: {outcome.error[:200]}"
    return f"[{variant} {number}/{total}] {outcome.task}: {outcome.choice or '-'} {mark} ({outcome.wall_s:.1f} s)"


def _executors(allowed: Sequence[str], workspace: Path | None) -> dict[str, Any]:
    """The read-only workspace executors, and a placeholder for every other tool of the mode: the call is
    answered (and enters the recent-use FIFO, as it would in an agent whose tools run) without running."""
    from ..safety.executors import workspace_executors

    real = dict(workspace_executors(workspace)) if workspace is not None else {}

    def placeholder(name: str) -> Any:
        return lambda _input: f"[bench] {name} was not run: this benchmark measures which tool is chosen."

    return {name: real.get(name) or placeholder(name) for name in allowed}


class _Watch:
    """The loop's ``on_iteration`` for one task: counts tokens, fetches and first-token times, scores the choice,
    and stops the loop at the choice (``stop``: the loop's StopLoop)."""

    def __init__(self, outcome: TaskOutcome, task: BenchTask, stop: type[Exception]) -> None:
        self.outcome = outcome
        self.task = task
        self.stop = stop
        self.chosen_at: int | None = None

    def __call__(self, iteration: Iteration) -> None:
        outcome = self.outcome
        outcome.requests += 1
        outcome.prompt_tokens.append(iteration.prompt.tokens.total)
        outcome.input_tokens += iteration.usage.input_tokens
        outcome.cache_read_tokens += iteration.usage.cache_read_input_tokens
        if iteration.first_token is not None:
            outcome.first_token_s.append(round(iteration.first_token, 3))
        for call in iteration.tool_calls:
            if call.name == FETCH_TOOL_NAME:
                outcome.fetch_calls += 1
            elif call.name not in _NOT_A_CHOICE and self.chosen_at is None:
                self.chosen_at = iteration.index
                outcome.choice = call.name
                outcome.correct = call.name in self.task.expect
                if self.task.args:
                    args = self.task.args.items()
                    outcome.args_ok = outcome.correct and all(call.input.get(k) == v for k, v in args)
        if self.chosen_at is not None:
            raise self.stop


def render_table(report: BenchReport) -> str:
    """A fixed-width table, one row per variant."""
    header = ["variant", "tasks", "first-tool", "args", "input tok", "cache read", "fetches", "errors", "overflows"]
    header += ["wall s", "ttft 1st", "ttft later"]
    rows = [header]
    for name, r in report.variants.items():
        rows.append(
            [
                name,
                str(r.tasks),
                f"{r.first_tool_accuracy:.1%}",
                "-" if r.args_accuracy is None else f"{r.args_accuracy:.1%}",
                str(r.input_tokens),
                str(r.cache_read_tokens),
                str(r.fetch_calls),
                str(r.errors),
                str(r.overflows),
                f"{r.wall_s:.1f}",
                "-" if r.ttft_first_median_s is None else f"{r.ttft_first_median_s:.2f}",
                "-" if r.ttft_later_median_s is None else f"{r.ttft_later_median_s:.2f}",
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows)
