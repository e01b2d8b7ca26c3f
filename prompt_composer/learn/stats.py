"""``prompt-composer stats``: what an event log (or a file of real tool-use traces) says about tools and modes.

Per tool: uses (executed calls), first uses in a task, fetches, fetches not followed by a use of the tool later in
the same task, refusals, errors and denials. Per mode: tasks, requests, input / cache write / cache read / output
tokens and the cache hit rate (cache read ÷ all input), the permanent tools the log never used in that mode, and
the brief tools (allowed, not permanent) used most: the candidates for a permanent slot.

The input is the event log of :mod:`.events` (JSONL, version 1), or SWE-agent traces read with
:func:`~.traces.load_traces` and turned into the same events: each step one request (without usage: traces carry
estimates only) and one call of the mapped tool in the given mode, refused when the mode does not allow it.
Permanent sets come from the registry given (the log's fingerprint may differ: then a note says so).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..core.registry import Registry
from ..shared.text import md_cell, plural, shown, table
from .events import SCHEMA_VERSION
from .traces import Task

DEFAULT_TOP = 5
UNREADABLE = "(unreadable call)"


@dataclass
class ToolStats:
    tool: str
    uses: int = 0
    first_uses: int = 0
    fetches: int = 0
    fetches_unused: int = 0
    refusals: int = 0
    errors: int = 0
    denied: int = 0

    def cells(self) -> list[str]:
        """The table row: the tool, then its counts in field order (the table's column order)."""
        return [str(value) for value in self.as_dict().values()]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ModeStats:
    """One mode's requests and tokens. ``usage_requests`` counts the requests that reported usage (traces: 0);
    ``permanent_unused`` is ``None`` when the registry has no such mode."""

    mode: str
    tasks: int = 0
    requests: int = 0
    usage_requests: int = 0
    input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    output_tokens: int = 0
    lists: int = 0  # tools/list answered by the gateway
    permanent_unused: tuple[str, ...] | None = None
    brief_used: tuple[tuple[str, int, int], ...] = ()  # (tool, uses, tasks), most used first
    # Preselection, over the tasks that had one: tools preselected, of those the ones the task then used; tools
    # used, of those the ones preselected or permanent.
    preselected: int = 0
    preselected_used: int = 0
    used_in_preselected_tasks: int = 0
    used_covered: int = 0
    # The request rewriter, over the preselections that asked it: how often its line was searched, how long it took.
    rewrites: int = 0
    rewrites_searched: int = 0
    rewrite_seconds: list[float] = field(default_factory=list)

    @property
    def rewrite_p50(self) -> float | None:
        """The median seconds a rewrite took (``None`` without rewrites)."""
        return statistics.median(self.rewrite_seconds) if self.rewrite_seconds else None

    @property
    def preselection_precision(self) -> float | None:
        """Preselected tools the task then used ÷ preselected tools (``None`` without preselection)."""
        return self.preselected_used / self.preselected if self.preselected else None

    @property
    def preselection_recall(self) -> float | None:
        """Used tools that were preselected or permanent ÷ used tools, in tasks with a preselection."""
        return self.used_covered / self.used_in_preselected_tasks if self.used_in_preselected_tasks else None

    @property
    def cache_hit_rate(self) -> float | None:
        """Cached input over all input (uncached + written + read); ``None`` without usage."""
        total = self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens
        return self.cache_read_input_tokens / total if self.usage_requests and total else None

    def as_dict(self) -> dict[str, Any]:
        known = self.usage_requests > 0
        return {
            "mode": self.mode,
            "tasks": self.tasks,
            "requests": self.requests,
            "input_tokens": self.input_tokens if known else None,
            "cache_creation_input_tokens": self.cache_creation_input_tokens if known else None,
            "cache_read_input_tokens": self.cache_read_input_tokens if known else None,
            "output_tokens": self.output_tokens if known else None,
            "cache_hit_rate": self.cache_hit_rate,
            "lists": self.lists,
            "permanent_unused": None if self.permanent_unused is None else list(self.permanent_unused),
            "brief_used": [{"tool": t, "uses": u, "tasks": n} for t, u, n in self.brief_used],
            "preselection": {
                "preselected": self.preselected,
                "preselected_used": self.preselected_used,
                "precision": self.preselection_precision,
                "recall": self.preselection_recall,
            },
            "rewriter": {
                "asked": self.rewrites,
                "searched": self.rewrites_searched,
                "p50_s": self.rewrite_p50,
                "max_s": max(self.rewrite_seconds) if self.rewrite_seconds else None,
            },
        }


@dataclass
class StatsReport:
    source: str
    events: int
    tasks: int
    tools: list[ToolStats]
    modes: list[ModeStats]
    skipped_lines: int = 0
    dropped: int = 0
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The ``stats --format json`` shape."""
        return {
            "source": self.source,
            "events": self.events,
            "tasks": self.tasks,
            "skipped_lines": self.skipped_lines,
            "dropped": self.dropped,
            "tools": [t.as_dict() for t in self.tools],
            "modes": [m.as_dict() for m in self.modes],
            "notes": list(self.notes),
        }

    def render(self, *, markdown: bool = False) -> str:
        """Plain-text tables (``markdown=True``: Markdown ones). The log's strings (tool and mode names, paths,
        fingerprints) are outside strings: shown escaped, and literal in Markdown (:func:`md_cell`)."""
        heading = "## " if markdown else ""
        text = md_cell if markdown else shown
        counts = f"{plural(self.events, 'event')}, {plural(self.tasks, 'task')}"
        lines = [f"{heading}Tools ({text(self.source)}: {counts})", ""]
        lines += table(
            ["tool", "uses", "first uses", "fetches", "fetched, unused", "refusals", "errors", "denied"],
            [t.cells() for t in self.tools],
            markdown=markdown,
        )
        lines += ["", f"{heading}Modes", ""]
        mode_rows = []
        for m in self.modes:
            known = m.usage_requests > 0
            tokens = [
                f"{v:,}" if known else "n/a"
                for v in (m.input_tokens, m.cache_creation_input_tokens, m.cache_read_input_tokens, m.output_tokens)
            ]
            rate = m.cache_hit_rate
            mode_rows.append([m.mode, str(m.tasks), str(m.requests), *tokens, "n/a" if rate is None else f"{rate:.1%}"])
        lines += table(
            ["mode", "tasks", "requests", "input", "cache write", "cache read", "output", "cache hit rate"],
            mode_rows,
            markdown=markdown,
        )
        lines += ["", f"{heading}Permanent tools never used, brief tools used most (uses in tasks)", ""]
        rows = []
        for m in self.modes:
            unused = "(mode not in the registry)" if m.permanent_unused is None else ", ".join(m.permanent_unused)
            brief = ", ".join(f"{t} {u} in {n}" for t, u, n in m.brief_used)
            rows.append([m.mode, unused or "-", brief or "-"])
        lines += table(["mode", "permanent, never used", "brief, used most"], rows, markdown=markdown, left=3)
        preselecting = [m for m in self.modes if m.preselected or m.used_in_preselected_tasks]
        if preselecting:
            lines += ["", f"{heading}Preselection", ""]
            rows = [
                [
                    m.mode,
                    str(m.preselected),
                    str(m.preselected_used),
                    _share(m.preselection_precision),
                    _share(m.preselection_recall),
                ]
                for m in preselecting
            ]
            lines += table(["mode", "preselected", "then used", "precision", "recall"], rows, markdown=markdown)
        rewriting = [m for m in self.modes if m.rewrites]
        if rewriting:
            lines += ["", f"{heading}Request rewriter", ""]
            rows = [
                [
                    m.mode,
                    str(m.rewrites),
                    str(m.rewrites_searched),
                    f"{m.rewrite_p50:.2f}" if m.rewrite_p50 is not None else "n/a",
                    f"{max(m.rewrite_seconds):.2f}",
                ]
                for m in rewriting
            ]
            lines += table(["mode", "asked", "line searched", "p50 s", "max s"], rows, markdown=markdown)
        if self.notes:
            lines += ["", f"{heading}Notes", ""]
            lines += [f"- {text(note)}" for note in self.notes]
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------ reading


def trace_events(tasks: Sequence[Task], registry: Registry, mode: str) -> list[dict[str, Any]]:
    """Traces as events in ``mode``: per step one request (no usage) and one call, ``ok`` when the mode allows the
    tool and ``refused`` (with a ``refusal``) when it does not."""
    resolved = registry.mode(mode)
    permanent = set(resolved.permanent)
    common = {"v": SCHEMA_VERSION, "mode": resolved.slug, "fingerprint": registry.fingerprint, "provider": "trace"}
    events: list[dict[str, Any]] = []
    for task in tasks:
        for step, tool in enumerate(task.tools, 1):
            here = {**common, "task": task.id, "iteration": step}
            events.append({**here, "event": "request"})
            if not resolved.allows(tool):
                reason = f"tool {tool!r} is not available in mode {resolved.slug!r}"
                events.append({**here, "event": "refusal", "tool": tool, "via": None, "reason": reason})
                events.append({**here, "event": "tool_call", "tool": tool, "outcome": "refused", "listed": None})
                continue
            listed = "full" if tool in permanent else "brief"
            events.append({**here, "event": "tool_call", "tool": tool, "outcome": "ok", "listed": listed})
    return events


# ------------------------------------------------------------------------------------------ counting


def compute_stats(
    events: Iterable[Mapping[str, Any]],
    registry: Registry | None,
    *,
    source: str,
    top: int = DEFAULT_TOP,
    skipped_lines: int = 0,
) -> StatsReport:
    """Count ``events`` (in emitted order) per tool and per mode; ``registry`` gives the modes' permanent sets."""
    tally = _Tally()
    for event in events:
        tally.add(event)
    tally.count_unused_fetches()
    tally.count_preselection(registry)
    notes = tally.rank_modes(registry, top)
    notes += _log_notes(tally, registry, skipped_lines)
    ordered_tools = sorted(tally.tools.values(), key=lambda t: (-t.uses, -t.refusals, t.tool))
    all_tasks = set().union(*tally.mode_tasks.values()) if tally.mode_tasks else set()
    return StatsReport(
        source=source,
        events=tally.events,
        tasks=len(all_tasks),
        tools=ordered_tools,
        modes=[tally.modes[slug] for slug in sorted(tally.modes)],
        skipped_lines=skipped_lines,
        dropped=tally.dropped,
        notes=notes,
    )


class _Tally:
    """The running counts of :func:`compute_stats`: per tool, per mode, and what each task used and fetched."""

    def __init__(self) -> None:
        self.tools: dict[str, ToolStats] = {}
        self.modes: dict[str, ModeStats] = {}
        self.mode_tasks: dict[str, set[str]] = defaultdict(set)
        self.used: dict[str, set[str]] = defaultdict(set)  # task → tools used so far
        # task → fetches of a tool not (yet) followed by a use
        self.pending: dict[str, Counter[str]] = defaultdict(Counter)
        self.mode_uses: dict[str, Counter[str]] = defaultdict(Counter)  # mode → tool → uses
        self.mode_use_tasks: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
        self.listed_brief: dict[str, set[str]] = defaultdict(set)  # mode → tools used while listed brief
        self.fingerprints: Counter[str] = Counter()
        self.preselected: dict[str, set[str]] = {}  # task → tools preselected (tasks with a preselect event)
        self.task_mode: dict[str, str] = {}
        self.events = 0
        self.dropped = 0

    def tool(self, name: str) -> ToolStats:
        return self.tools.setdefault(name, ToolStats(name))

    def add(self, event: Mapping[str, Any]) -> None:
        """Count one event."""
        self.events += 1
        kind = event.get("event")
        if kind == "dropped":
            self.dropped += int(event.get("dropped") or 0)
            return
        task, slug = str(event.get("task", "")), str(event.get("mode", ""))
        name = str(event.get("tool") or UNREADABLE)  # a text-style call the loop could not read names no tool
        stats = self.modes.setdefault(slug, ModeStats(slug))
        self.mode_tasks[slug].add(task)
        if event.get("fingerprint"):
            self.fingerprints[str(event["fingerprint"])] += 1
        if kind == "request":
            _add_request(stats, event)
        elif kind == "list":
            stats.lists += 1
        elif kind == "tool_call":
            self._tool_call(event, task, slug, name)
        elif kind == "fetch" and event.get("outcome") == "ok":
            self.tool(name).fetches += 1
            self.pending[task][name] += 1
        elif kind == "refusal":
            self.tool(name).refusals += 1
        elif kind == "preselect":
            tools = event.get("tools")
            chosen = {t for t in tools if isinstance(t, str)} if isinstance(tools, list) else set()
            self.preselected.setdefault(task, set()).update(chosen)
            self.task_mode[task] = slug
            seconds = _seconds(event.get("rewrite_s"))
            if seconds is not None:  # the rewriter was asked for this message
                stats.rewrites += 1
                stats.rewrites_searched += event.get("rewritten") is True
                stats.rewrite_seconds.append(seconds)

    def _tool_call(self, event: Mapping[str, Any], task: str, slug: str, name: str) -> None:
        outcome = event.get("outcome")
        if outcome == "ok":
            self.tool(name).uses += 1
            if name not in self.used[task]:
                self.used[task].add(name)
                self.tool(name).first_uses += 1
            self.pending[task].pop(name, None)  # the fetches before this use were followed by it
            self.mode_uses[slug][name] += 1
            self.mode_use_tasks[slug][name].add(task)
            if event.get("listed") == "brief":
                self.listed_brief[slug].add(name)
        elif outcome == "error":
            self.tool(name).errors += 1
        elif outcome == "denied":
            self.tool(name).denied += 1
        else:
            self.tool(name)  # refused: counted through its refusal event

    def count_preselection(self, registry: Registry | None) -> None:
        """After the last event: each preselecting task's preselected and used tools, into its mode's counts."""
        for task, chosen in self.preselected.items():
            slug = self.task_mode[task]
            stats = self.modes[slug]
            resolved = registry.modes.get(slug) if registry is not None else None
            permanent = set(resolved.permanent) if resolved is not None else set()
            used = self.used[task]
            stats.preselected += len(chosen)
            stats.preselected_used += len(chosen & used)
            stats.used_in_preselected_tasks += len(used)
            stats.used_covered += len(used & (chosen | permanent))

    def count_unused_fetches(self) -> None:
        """After the last event: the fetches still pending were never followed by a use in their task."""
        for fetched in self.pending.values():
            for name, unused in fetched.items():
                self.tool(name).fetches_unused += unused

    def rank_modes(self, registry: Registry | None, top: int) -> list[str]:
        """Fill in each mode's tasks, unused permanent tools and most used brief tools; the notes this raises."""
        notes: list[str] = []
        for slug, stats in self.modes.items():
            stats.tasks = len(self.mode_tasks[slug])
            resolved = registry.modes.get(slug) if registry is not None else None
            uses = self.mode_uses[slug]
            if resolved is not None:
                stats.permanent_unused = tuple(t for t in resolved.permanent if not uses[t])
                candidates = [t for t in uses if t in resolved.allowed and t not in set(resolved.permanent)]
            else:
                candidates = [t for t in uses if t in self.listed_brief[slug]]
                if registry is not None:
                    notes.append(f"mode {slug!r} is not in the registry: its brief tools are those the log saw brief")
            ranked = sorted(candidates, key=lambda t: (-uses[t], t))[:top]
            stats.brief_used = tuple((t, uses[t], len(self.mode_use_tasks[slug][t])) for t in ranked)
        return notes


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _add_request(stats: ModeStats, event: Mapping[str, Any]) -> None:
    stats.requests += 1
    usage = event.get("usage")
    if isinstance(usage, Mapping):
        stats.usage_requests += 1
        stats.input_tokens += int(usage.get("input_tokens") or 0)
        stats.cache_creation_input_tokens += int(usage.get("cache_creation_input_tokens") or 0)
        stats.cache_read_input_tokens += int(usage.get("cache_read_input_tokens") or 0)
        stats.output_tokens += int(usage.get("output_tokens") or 0)


def _log_notes(tally: _Tally, registry: Registry | None, skipped_lines: int) -> list[str]:
    """The notes about the log as a whole: another registry, lost events, skipped lines."""
    notes: list[str] = []
    fingerprints = tally.fingerprints
    if registry is not None and fingerprints and set(fingerprints) != {registry.fingerprint}:
        notes.append(
            f"the log was written with registry {', '.join(sorted(fingerprints))}; permanent sets are from "
            f"{registry.fingerprint}"
        )
    if tally.dropped:
        notes.append(f"the log lost {tally.dropped} events (its 'dropped' lines): every count is a lower bound")
    if skipped_lines:
        notes.append(f"{skipped_lines} lines skipped: not an event of a known version (e.g. a torn last line)")
    return notes


def _seconds(value: Any) -> float | None:
    """A duration a log holds, as seconds; ``None`` for anything else (a string, a flag, NaN, a negative or huge
    number: a log is outside input)."""
    if type(value) not in (int, float) or not 0 <= value <= 2**53:
        return None
    seconds = float(value)
    return seconds if math.isfinite(seconds) else None
