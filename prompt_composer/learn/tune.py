"""Tuning a mode from use: the permanent list and ``recent_size`` that minimise the replayed cost.

:func:`tune_mode` replays real tool-use sequences (SWE-agent traces, or the ``tool_call`` events of an event log,
:func:`load_log_tasks`) through the mode's own promotion policy and prices every request with the replay's cache
model (:mod:`.replay`: the same blocks, breakpoints, lookback, minimum cacheable length and
multipliers as ``prompt-composer replay``). It fits on one part of the sequences and reports on the rest:

- **Split.** Each sequence goes to the held-out part or the fit part by a seeded hash of its task id (and its
  position among sequences with the same id), the ``round(n × fraction)`` lowest hashes held out. The split does
  not depend on the file's order, and a sequence stays on its side when the log grows by other tasks.
- **Search.** Local search from the mode as it is. A move removes one permanent tool, adds one of the mode's
  allowed tools that the fit part uses (the 8 most used, by the number of sequences that use them; a tool
  nobody uses can only add tokens), or sets ``recent_size`` to another value within 2 of the current one. The
  cheapest move on the fit part is taken while it lowers the fit cost; every setting is replayed at most once.
  Under ``task_start`` and ``inline`` (the default) the prompt is fixed when a task starts, so ``recent_size``
  changes no replayed cost and stays as it is: only the permanent list moves.
- **Constraints.** A setting is tried only if the mode allows every permanent tool (they are drawn from
  ``Mode.allowed``) and its worst case, measured exactly as ``audit --check`` measures it (the composed prompt
  with the FIFO full of the mode's largest non-permanent tools), is within the mode's ``budget_tokens``.
  A mode whose current setting is already over its budget moves to the cheapest setting within it.
- **Verdict.** The best setting on the fit part is proposed only if it also costs less on the held-out part than
  the mode as it is; otherwise the current setting is already best and nothing changes.

What it does not see: the cost model prices tokens, not choices. A tool that is brief costs a fetch round trip in
the replay, not a wrong or missed call, so a proposal that drops, say, ``attempt_completion`` from the permanent
list is cheaper in tokens and says nothing about how a model behaves without its full text.

The proposal is shown as a unified diff of the mode file or written to a per-user overlay file
(:mod:`.mode_files`).
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.audit import mode_audit, tool_audit
from ..core.builtins import LOOP_TOOLS
from ..core.composer import Composer
from ..core.modes import Mode
from ..core.promotion import DEFAULT_POLICY
from ..core.registry import Registry
from ..core.tokens import TokenCounter, default_counter
from ..errors import InputFileError
from .events import read_events
from .replay import PromptSizes, ReplayParams, replay_task
from .traces import Task

DEFAULT_HELDOUT_FRACTION = 0.3
DEFAULT_SEED = 0
MAX_ADDS = 8  # add moves per round: the most used allowed tools that are not permanent yet
RECENT_SPAN = 2  # recent_size moves: within this distance of the mode's current value
MAX_ROUNDS = 50  # a bound, never reached in practice: each round must lower the fit cost
_REL_EPS = 1e-9  # equal costs (sums of the same steps in another order) are not an improvement


@dataclass(frozen=True)
class Setting:
    """The two values tune chooses for a mode."""

    permanent: tuple[str, ...]
    recent_size: int

    def as_dict(self) -> dict[str, Any]:
        return {"permanent": list(self.permanent), "recent_size": self.recent_size}


@dataclass(frozen=True)
class TuneResult:
    """What :func:`tune_mode` found. ``proposed == current`` when the current setting is already best."""

    mode: str
    policy: str
    cost_model: str
    current: Setting
    proposed: Setting
    fitted: Setting  # the cheapest setting on the fit part (proposed only if it also wins on the held-out part)
    current_fit_cost: float
    fitted_fit_cost: float
    current_heldout_cost: float
    fitted_heldout_cost: float
    fit_sequences: int
    heldout_sequences: int
    settings_tried: int  # settings replayed (within the budget)
    over_budget: int  # settings skipped because their worst case was over the budget
    worst_tokens: int  # the proposed setting's worst case, as audit --check measures it
    budget_tokens: int
    current_within_budget: bool
    seconds: float = 0.0
    overlap: bool = False  # too few sequences to split: the held-out part is the fit part
    empty_sequences: int = 0  # sequences without a tool call (no replayed request), left out

    @property
    def already_best(self) -> bool:
        return self.proposed == self.current

    @property
    def proposed_heldout_cost(self) -> float:
        return self.current_heldout_cost if self.already_best else self.fitted_heldout_cost

    @property
    def heldout_change(self) -> float:
        """The proposal's held-out cost against the current one's, as a fraction (negative: cheaper)."""
        base = self.current_heldout_cost
        return self.proposed_heldout_cost / base - 1 if base else 0.0

    def as_dict(self) -> dict[str, Any]:
        """The ``--format json`` shape, exactly."""
        return {
            "mode": self.mode,
            "current": {**self.current.as_dict(), "heldout_cost": round(self.current_heldout_cost, 2)},
            "proposed": {**self.proposed.as_dict(), "heldout_cost": round(self.proposed_heldout_cost, 2)},
            "fit_sequences": self.fit_sequences,
            "heldout_sequences": self.heldout_sequences,
        }

    def summary(self) -> str:
        """The text report, without the diff."""
        part = "held-out part is the fit part" if self.overlap else f"{self.heldout_sequences} held out"
        used = self.fit_sequences + (0 if self.overlap else self.heldout_sequences)
        empty = f" ({self.empty_sequences} more without a tool call left out)" if self.empty_sequences else ""
        lines = [
            f"tune {self.mode}: policy {self.policy}, cost model {self.cost_model}",
            f"{used} sequences{empty}: {self.fit_sequences} fit, {part}",
            f"searched {self.settings_tried} settings in {self.seconds:.1f} s"
            + (f" ({self.over_budget} more skipped: over the budget)" if self.over_budget else ""),
            "",
            f"{'':<10}{'recent':>7}{'fit cost':>16}{'held-out cost':>16}  permanent",
            _row("current", self.current, self.current_fit_cost, self.current_heldout_cost),
        ]
        if self.fitted != self.current:
            label = "proposed" if not self.already_best else "fitted"
            lines.append(_row(label, self.fitted, self.fitted_fit_cost, self.fitted_heldout_cost))
        lines.append("")
        if not self.current_within_budget:
            lines.append(
                f"note: the current setting's worst case is over the mode's budget of {self.budget_tokens:,} tokens"
            )
        if self.already_best and not self.current_within_budget:
            lines.append("no setting one move at a time from the current one is within the budget; no change proposed")
        elif self.already_best:
            why = (
                "no other setting costs less on the fit part"
                if self.fitted == self.current
                else "the setting fitted on the fit part does not cost less on the held-out part"
            )
            lines.append(f"the current setting is already best: {why}; no change proposed")
        else:
            lines.append(
                f"proposed: held-out cost {self.heldout_change:+.1%} against the current setting; worst case "
                f"{self.worst_tokens:,} of {self.budget_tokens:,} budget tokens (audit --check: ok)"
            )
        if self.overlap:
            lines.append("warning: fewer than 2 sequences, so nothing is held out: the estimate is optimistic")
        return "\n".join(lines)


def _row(label: str, setting: Setting, fit: float, heldout: float) -> str:
    return f"{label:<10}{setting.recent_size:>7}{fit:>16,.0f}{heldout:>16,.0f}  {', '.join(setting.permanent)}"


# ------------------------------------------------------------------------------------------- sequences


def split_tasks(
    tasks: Sequence[Task], heldout_fraction: float = DEFAULT_HELDOUT_FRACTION, seed: int = DEFAULT_SEED
) -> tuple[list[Task], list[Task]]:
    """(fit, held-out): the ``round(len(tasks) × heldout_fraction)`` tasks with the lowest seeded hash held out,
    at least one on each side when there are two or more. Both parts keep the input order."""
    if not 0 < heldout_fraction < 1:
        raise ValueError("heldout_fraction must be between 0 and 1 (exclusive)")
    seen: Counter[str] = Counter()
    keys = []
    for index, task in enumerate(tasks):
        # A task id may repeat (a log of several runs): its occurrence number keeps the keys distinct.
        digest = hashlib.sha256(f"{seed}\0{task.id}\0{seen[task.id]}".encode()).hexdigest()
        seen[task.id] += 1
        keys.append((digest, index))
    count = round(len(tasks) * heldout_fraction)
    if len(tasks) >= 2:
        count = min(max(count, 1), len(tasks) - 1)
    held = {index for _, index in sorted(keys)[:count]}
    fit = [t for i, t in enumerate(tasks) if i not in held]
    heldout = [t for i, t in enumerate(tasks) if i in held]
    return fit, heldout


def load_log_tasks(path: str | Path, mode: str | None = None) -> list[Task]:
    """Tool-use sequences from an event log (:mod:`.events`, JSONL version 1).

    One :class:`~.traces.Task` per logged task id, in the order of its first event: the ``tool``
    of each of its ``tool_call`` events, in log order, whatever the outcome (a refused or denied call is still a
    tool the model chose; the replay refuses what the mode does not allow). The loop's own tools
    (``fetch_tool_description``, ``tool_search``) are left out: the replay models fetches itself; a call through
    ``call_tool`` counts as its inner tool, as the log records it. With ``mode``, only events of that mode.
    Lines that do not parse and later versions are skipped (:func:`~.events.read_events`).
    """
    events, _ = read_events([path])  # the same reader as `stats`: torn lines and later versions skipped
    steps: dict[str, list[str]] = {}
    models: dict[str, str] = {}
    for event in events:
        task = event.get("task")
        if not isinstance(task, str) or (mode is not None and event.get("mode") != mode):
            continue
        kind = event["event"]
        if kind == "request" and isinstance(event.get("model"), str):
            models.setdefault(task, event["model"])
        elif kind == "tool_call":
            tool = event.get("tool")
            if isinstance(tool, str) and tool and tool not in LOOP_TOOLS:
                steps.setdefault(task, []).append(tool)
    return [Task(task, tuple(tools), models.get(task, "")) for task, tools in steps.items()]


# ------------------------------------------------------------------------------------------- the search


class _Evaluator:
    """Replays settings of one mode, each once: a candidate registry and composer per setting, so the
    composer's own cache (keyed on the registry fingerprint) serves every task's prompts."""

    def __init__(self, registry: Registry, mode: Mode, params: ReplayParams, counter: TokenCounter) -> None:
        self.registry = registry
        self.mode = mode
        self.params = params
        self.counter = counter
        self.policy = mode.config.promotion or DEFAULT_POLICY
        base = Composer(registry, counter=counter)
        self._base = base
        # Per-tool token counts do not depend on the mode: computed once, passed to the audit's own measure.
        self.tool_audits = {name: tool_audit(base, registry.tools[name]) for name in mode.allowed}
        self._candidates: dict[Setting, tuple[Composer, Mode, int]] = {}
        self._costs: dict[tuple[Setting, int], float] = {}
        self.tried = 0
        self.over_budget = 0

    def candidate(self, setting: Setting) -> tuple[Composer, Mode, int]:
        """(composer, mode, worst-case tokens as ``audit --check`` measures them) for ``setting``."""
        if setting not in self._candidates:
            config = self.mode.config.model_copy(
                update={"permanent": setting.permanent, "recent_size": setting.recent_size}
            )
            configs = [config if m.slug == self.mode.slug else m.config for m in self.registry.modes.values()]
            registry = Registry.from_docs(
                self.registry.tools.values(),
                configs,
                root=self.registry.root,
                groups=self.registry.groups.values(),
                servers=self.registry.servers.values(),
            )
            # A candidate differs from the base in one mode's two values, never in docs or templates: it shares
            # the base composer's compiled templates and tool definitions, the costly part of a new composer.
            composer = self._base.for_registry(registry)
            mode = registry.mode(self.mode.slug)
            audit = mode_audit(composer, mode, self.tool_audits)  # the measure `audit --check` applies
            self._candidates[setting] = (composer, mode, audit.worst_tokens)
            if not audit.within_budget:
                self.over_budget += 1
        return self._candidates[setting]

    def within_budget(self, setting: Setting) -> bool:
        return self.candidate(setting)[2] <= self.mode.config.budget_tokens

    def cost(self, setting: Setting, tasks: Sequence[Task], part: int) -> float:
        """The replayed cost of ``tasks`` (part 0: fit, 1: held-out) under ``setting``, each computed once."""
        key = (setting, part)
        if key not in self._costs:
            composer, mode, _ = self.candidate(setting)
            sizes = PromptSizes(composer, mode)
            total = 0.0
            for task in tasks:
                cost, _ = replay_task(composer, mode, task, self.policy, self.params, sizes)
                total += cost.cost
            self._costs[key] = total
            if part == 0:
                self.tried += 1
        return self._costs[key]


def _cheaper(a: float, b: float) -> bool:
    return a < b - _REL_EPS * max(abs(a), abs(b), 1.0)


def _moves(setting: Setting, adds: Sequence[str], recent: Iterable[int]) -> list[Setting]:
    """Every setting one move away, in a fixed order (ties go to the earlier move): removals, additions (most
    used first, appended at the end of the list), then recent_size values nearest the current one first."""
    out = [Setting(tuple(t for t in setting.permanent if t != tool), setting.recent_size) for tool in setting.permanent]
    out += [Setting((*setting.permanent, tool), setting.recent_size) for tool in adds if tool not in setting.permanent]
    out += [Setting(setting.permanent, r) for r in recent if r != setting.recent_size]
    return out


def tune_mode(
    registry: Registry,
    mode: str,
    tasks: Sequence[Task],
    *,
    heldout_fraction: float = DEFAULT_HELDOUT_FRACTION,
    seed: int = DEFAULT_SEED,
    params: ReplayParams | None = None,
    counter: TokenCounter | None = None,
    progress: Callable[[str], None] | None = None,
) -> TuneResult:
    """Fit ``mode``'s permanent list and ``recent_size`` to ``tasks`` (see the module docstring)."""
    started = time.perf_counter()
    resolved = registry.mode(mode)
    params = params or ReplayParams()
    given = len(tasks)
    tasks = [t for t in tasks if t.tools]  # a task without tool calls sends no replayed request
    if not tasks:
        raise InputFileError(f"no tool-use sequences to tune mode {mode!r} on")
    overlap = len(tasks) < 2
    fit, heldout = (list(tasks), list(tasks)) if overlap else split_tasks(tasks, heldout_fraction, seed)
    ev = _Evaluator(registry, resolved, params, counter or default_counter())

    current = Setting(resolved.permanent, resolved.recent_size)
    uses = Counter(tool for task in fit for tool in set(task.tools) if resolved.allows(tool))
    ranked = sorted(uses, key=lambda t: (-uses[t], resolved.allowed.index(t)))
    low = max(0, current.recent_size - RECENT_SPAN)
    recent = sorted(range(low, current.recent_size + RECENT_SPAN + 1), key=lambda r: (abs(r - current.recent_size), r))

    best, best_cost = current, ev.cost(current, fit, 0)
    best_fits = ev.within_budget(current)
    for round_ in range(MAX_ROUNDS):
        adds = [t for t in ranked if t not in best.permanent][:MAX_ADDS]
        # Over-budget settings are never replayed, never proposed, and never a step on the way.
        moves = [m for m in _moves(best, adds, recent) if ev.within_budget(m)]
        if not moves:
            break
        cost, _, pick = min((ev.cost(m, fit, 0), i, m) for i, m in enumerate(moves))
        # A current setting over its budget gives way to the cheapest one within it, whatever that costs.
        if best_fits and not _cheaper(cost, best_cost):
            break
        best, best_cost, best_fits = pick, cost, True
        if progress is not None:
            tools = ", ".join(pick.permanent)
            progress(f"round {round_ + 1}: fit cost {cost:,.0f}, recent {pick.recent_size}, permanent {tools}")

    current_heldout = ev.cost(current, heldout, 1)
    fitted_heldout = ev.cost(best, heldout, 1)
    current_fits = ev.within_budget(current)
    wins = best != current and (not current_fits or _cheaper(fitted_heldout, current_heldout))
    proposed = best if wins else current
    return TuneResult(
        mode=resolved.slug,
        policy=ev.policy,
        cost_model=params.cost_model.describe(),
        current=current,
        proposed=proposed,
        fitted=best,
        current_fit_cost=ev.cost(current, fit, 0),
        fitted_fit_cost=best_cost,
        current_heldout_cost=current_heldout,
        fitted_heldout_cost=fitted_heldout,
        fit_sequences=len(fit),
        heldout_sequences=len(heldout),
        settings_tried=ev.tried,
        over_budget=ev.over_budget,
        worst_tokens=ev.candidate(proposed)[2],
        budget_tokens=resolved.config.budget_tokens,
        current_within_budget=current_fits,
        seconds=time.perf_counter() - started,
        overlap=overlap,
        empty_sequences=given - len(tasks),
    )
