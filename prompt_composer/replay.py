"""Cost replay: what a task's input tokens cost under each promotion policy, with and without a prompt cache.

Pure: no SDK import, no network. Prompt sizes are real token counts of composed prompts (``Composer.compose``,
``Composer.baseline``, tiktoken); the conversation grows by stated amounts (:class:`ReplayParams`).

Cache model (the providers' documented rules, simplified), shared by both cost models:

- A request is a sequence of blocks in cache order: the tool list, the stable system part, the changing system
  part (text-style modes), the task message, then each assistant call and tool result.
- Every request writes its whole prompt to the cache; the next request shares the longest prefix, in whole
  blocks, identical to a prefix written earlier in the same task, and only up to the first changed block. The
  cache lives within one task; its TTL is ignored. Costs are in base input-token units (1 = one input token at
  the base input price; without a cache every input token costs 1). Output tokens are not priced.

How the shared prefix is billed is the :class:`CostModel` (``ReplayParams.cost_model``):

- :data:`ANTHROPIC` (default): explicit ``cache_control`` breakpoints (the middleware puts one on the newest
  message), so the shared prefix is read from the cache at 0.1× and the rest is written at 1.25×. The minimum
  cacheable length is ignored.
- :data:`OPENAI` (:func:`openai_cost_model`): an automatic prefix cache, no breakpoints and no write premium
  (uncached input at 1×). The shared prefix is a cache hit only from 1,024 tokens, counted in 128-token steps
  (rounded down), billed at the cached-input price (0.1× by default). Real OpenAI hits are token-exact; counting
  whole blocks understates them slightly (the common start of a changed block is not counted).

Requests: one per step; plus, when ``fetch_first_use`` is set, one ``fetch_tool_description`` round trip before
the first use in the task of a tool that is brief in the prompt at that moment (its result, the full text and
schema, joins the conversation). Per policy:

- ``static`` (the baseline: every allowed tool in full, no fetch tool): never fetches.
- ``every_turn``: fetches a tool brief in the current prompt; after it runs, the tool is in full in the prompt
  while it stays in the FIFO (the tool list, and the system prompt in text style, change).
- ``task_start``: the prompt is fixed for the task; fetches a tool brief in it.
- ``inline``: like ``task_start``; a brief tool's first successful result carries its full text unless the model
  fetched it already (so with ``fetch_first_use`` it costs exactly what ``task_start`` costs).

A step whose tool the mode does not allow is a refused call: a short error result, no FIFO record, no fetch.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .composer import ComposedPrompt, Composer
from .errors import InputFileError
from .fetch import fetch_tool_doc
from .modes import Mode
from .promotion import DEFAULT_POLICY, POLICIES, inline_text
from .session import TaskSession

__all__ = [
    "ANTHROPIC",
    "COST_MODELS",
    "OPENAI",
    "SWE_AGENT_TOOL_MAP",
    "CostModel",
    "PolicyCost",
    "ReplayParams",
    "ReplayReport",
    "Task",
    "load_traces",
    "openai_cost_model",
    "replay",
    "replay_task",
    "synthetic_tasks",
]

STATIC = "static"
POLICY_NAMES: tuple[str, ...] = (STATIC, *POLICIES)

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
class CostModel:
    """How a provider bills one request's input against its prompt cache, in base input-token units.

    The shared prefix (what an earlier request of the task already sent) is found the same way for every
    provider; the model says how much of it is billed as cached and what the rest costs.
    """

    name: str
    read_multiplier: float  # a cached input token (a cache hit), against the base input price
    write_multiplier: float  # an input token not served from the cache (and written to it)
    min_cached_tokens: int = 0  # a shared prefix shorter than this is no cache hit
    cache_increment: int = 1  # cached tokens are counted in steps of this (rounded down)

    def __post_init__(self) -> None:
        if self.read_multiplier < 0 or self.write_multiplier < 0:
            raise ValueError(f"cost model {self.name!r}: multipliers must not be negative")
        if self.min_cached_tokens < 0 or self.cache_increment < 1:
            raise ValueError(f"cost model {self.name!r}: min_cached_tokens >= 0 and cache_increment >= 1 required")

    def cached_tokens(self, shared: int) -> int:
        """The tokens billed as cached when a request shares ``shared`` prefix tokens with an earlier one."""
        cached = shared - shared % self.cache_increment
        return cached if cached >= self.min_cached_tokens else 0

    def price(self, tokens: int, shared: int) -> float:
        """The cost of a ``tokens``-token request that shares ``shared`` prefix tokens with an earlier one."""
        cached = self.cached_tokens(shared)
        return cached * self.read_multiplier + (tokens - cached) * self.write_multiplier

    def describe(self) -> str:
        text = f"{self.name} (cache reads {self.read_multiplier:g}×, writes {self.write_multiplier:g}× the input price"
        if self.min_cached_tokens or self.cache_increment > 1:
            text += f"; hits from {self.min_cached_tokens:,} tokens, in steps of {self.cache_increment:,}"
        return text + ")"


# Anthropic (prompt caching, pricing): a 5-minute cache write costs 1.25× the base input price, a cache read
# 0.1×. The minimum cacheable length (1,024 or more tokens by model) is not modelled.
ANTHROPIC_CACHE_WRITE_MULTIPLIER = 1.25
ANTHROPIC_CACHE_READ_MULTIPLIER = 0.1
ANTHROPIC = CostModel(
    "anthropic", read_multiplier=ANTHROPIC_CACHE_READ_MULTIPLIER, write_multiplier=ANTHROPIC_CACHE_WRITE_MULTIPLIER
)

# OpenAI (prompt caching guide): caching is automatic and free for prompts of 1,024 tokens or more; "cache hits
# are only possible for exact prefix matches", in increments of 128 tokens. Cached input is billed at the
# model's "cached input" price: 0.1× the input price for the GPT-5 family (e.g. gpt-5.1 $1.25 → $0.125 per
# million), 0.25× for gpt-4.1 and o3, 0.5× for gpt-4o and gpt-4o-mini. Default: 0.1× (the current models).
OPENAI_CACHED_INPUT_MULTIPLIER = 0.1
OPENAI_MIN_CACHED_TOKENS = 1024
OPENAI_CACHE_INCREMENT = 128


def openai_cost_model(cached_input_multiplier: float = OPENAI_CACHED_INPUT_MULTIPLIER) -> CostModel:
    """OpenAI's automatic prefix cache; ``cached_input_multiplier`` is the model's cached/uncached input price."""
    return CostModel(
        "openai",
        read_multiplier=cached_input_multiplier,
        write_multiplier=1.0,
        min_cached_tokens=OPENAI_MIN_CACHED_TOKENS,
        cache_increment=OPENAI_CACHE_INCREMENT,
    )


OPENAI = openai_cost_model()
COST_MODELS: Mapping[str, CostModel] = {"anthropic": ANTHROPIC, "openai": OPENAI}


@dataclass(frozen=True)
class ReplayParams:
    """The replay's assumptions, all stated and all adjustable."""

    task_tokens: int = 300  # the user's task message
    call_tokens: int = 80  # one assistant turn with a tool_use block
    result_tokens: int = 400  # one tool result
    error_result_tokens: int = 40  # a refused call's error result
    fetch_call_tokens: int = 30  # an assistant turn calling fetch_tool_description
    fetch_first_use: bool = True  # the model fetches a brief tool's doc before its first use in the task
    cost_model: CostModel = ANTHROPIC  # how the provider bills cache reads and writes


@dataclass(frozen=True)
class Task:
    """One tool-use sequence (tool names of the registry), e.g. a mapped SWE-agent trajectory."""

    id: str
    tools: tuple[str, ...]
    model: str = ""


@dataclass
class PolicyCost:
    name: str
    input_tokens: int = 0
    cost: float = 0.0
    cost_no_cache: float = 0.0
    requests: int = 0
    fetches: int = 0
    inline_expansions: int = 0

    def add(self, other: PolicyCost) -> None:
        self.input_tokens += other.input_tokens
        self.cost += other.cost
        self.cost_no_cache += other.cost_no_cache
        self.requests += other.requests
        self.fetches += other.fetches
        self.inline_expansions += other.inline_expansions


@dataclass
class ReplayReport:
    """Totals per policy over a set of tasks, replayed in one or more modes."""

    label: str
    modes: list[str]
    tasks: int = 0
    steps: int = 0
    refused_steps: int = 0
    policies: dict[str, PolicyCost] = field(default_factory=lambda: {n: PolicyCost(n) for n in POLICY_NAMES})
    per_mode: dict[str, ReplayReport] = field(default_factory=dict)
    params: ReplayParams = field(default_factory=ReplayParams)
    recommended: str = DEFAULT_POLICY

    def merge(self, other: ReplayReport) -> None:
        self.tasks += other.tasks
        self.steps += other.steps
        self.refused_steps += other.refused_steps
        for name, cost in other.policies.items():
            self.policies[name].add(cost)

    def saving(self, name: str, *, cache: bool = True) -> float:
        """The fraction saved against the static baseline (cache-weighted, or without a cache)."""
        base = self.policies[STATIC]
        mine = self.policies[name]
        if cache:
            return 1 - mine.cost / base.cost if base.cost else 0.0
        return 1 - mine.cost_no_cache / base.cost_no_cache if base.cost_no_cache else 0.0

    def policy_rows(self) -> list[dict[str, Any]]:
        return [
            {
                "name": name,
                "input_tokens": cost.input_tokens,
                "cost": round(cost.cost, 1),
                "cost_no_cache": round(cost.cost_no_cache, 1),
                "saving": round(self.saving(name), 4),
                "saving_no_cache": round(self.saving(name, cache=False), 4),
                "requests": cost.requests,
                "fetches": cost.fetches,
                "inline_expansions": cost.inline_expansions,
            }
            for name, cost in self.policies.items()
        ]

    def as_dict(self) -> dict[str, Any]:
        params = asdict(self.params)
        return {
            "label": self.label,
            "cost_model": params.pop("cost_model"),
            "modes": self.modes,
            "tasks": self.tasks,
            "steps": self.steps,
            "refused_steps": self.refused_steps,
            "policies": self.policy_rows(),
            "recommended": self.recommended,
            "per_mode": {slug: sub.as_dict() for slug, sub in self.per_mode.items()},
            "params": params,
        }

    def to_table(self) -> str:
        lines = [
            f"{self.label}: {self.tasks} tasks, {self.steps} steps ({self.refused_steps} refused in the mode), "
            f"modes {', '.join(self.modes)}",
            f"cost model: {self.params.cost_model.describe()}",
            f"{'policy':<12}{'input tokens':>15}{'cost (cache)':>15}{'saving':>9}{'no cache':>15}{'saving':>9}"
            f"{'fetches':>9}",
        ]
        for row in self.policy_rows():
            lines.append(
                f"{row['name']:<12}{row['input_tokens']:>15,}{row['cost']:>15,.0f}{row['saving']:>9.1%}"
                f"{row['cost_no_cache']:>15,.0f}{row['saving_no_cache']:>9.1%}{row['fetches']:>9,}"
            )
        lines.append(f"recommended: {self.recommended}")
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- replay


class _Cache:
    """Prefix hashes written so far in one task; a request shares its longest written prefix."""

    def __init__(self) -> None:
        self.written: set[int] = set()

    def request(self, blocks: Sequence[tuple[object, int]], params: ReplayParams) -> tuple[int, float]:
        """(input tokens, cache-weighted cost) of a request made of ``(block key, tokens)``."""
        chain = 0
        total = 0
        shared = 0
        prefix_hit = True
        for key, tokens in blocks:
            chain = hash((chain, key))
            total += tokens
            if prefix_hit and chain in self.written:
                shared = total
            else:
                prefix_hit = False
                self.written.add(chain)
        return total, params.cost_model.price(total, shared)


def _head(prompt: ComposedPrompt, composer: Composer) -> list[tuple[object, int]]:
    """The prompt's blocks in cache order: tools, stable system, changing system."""
    tools_key = ("tools", prompt.mode, prompt.full, len(prompt.tools))
    stable = composer.counter.count(prompt.system_stable)
    head: list[tuple[object, int]] = [(tools_key, prompt.tokens.tools), (("system", prompt.system_stable), stable)]
    if prompt.system_recent:
        head.append((("recent", prompt.system_recent), prompt.tokens.system - stable))
    return head


def replay_task(
    composer: Composer, mode: Mode, task: Task, policy: str, params: ReplayParams | None = None
) -> tuple[PolicyCost, int]:
    """One task under one policy (or ``"static"``): its cost, and how many of its steps the mode refused."""
    params = params or ReplayParams()
    registry = composer.registry
    counter = composer.counter
    cost = PolicyCost(policy)
    cache = _Cache()
    session = TaskSession(task.id, history_limit=max(64, len(task.tools)))
    static = composer.baseline(mode) if policy == STATIC else None
    pinned = composer.compose(mode, session) if policy in ("task_start", "inline") else None
    messages: list[tuple[object, int]] = [(("task",), params.task_tokens)]
    known: set[str] = set()  # tools whose full text the model has seen in this task (fetched, or used in full)
    refused = 0

    def prompt_now() -> ComposedPrompt:
        if static is not None:
            return static
        if pinned is not None:
            return pinned
        return composer.compose(mode, session)

    def send(prompt: ComposedPrompt) -> None:
        tokens, weighted = cache.request([*_head(prompt, composer), *messages], params)
        cost.input_tokens += tokens
        cost.cost += weighted
        cost.cost_no_cache += tokens
        cost.requests += 1

    for step, tool in enumerate(task.tools):
        prompt = prompt_now()
        if not mode.allows(tool):
            send(prompt)
            messages.append((("call", step), params.call_tokens))
            messages.append((("refused", step), params.error_result_tokens))
            refused += 1
            continue
        brief = tool in prompt.brief
        if brief and params.fetch_first_use and tool not in known:
            send(prompt)
            messages.append((("fetch-call", step), params.fetch_call_tokens))
            messages.append((("fetch", tool), counter.count(fetch_tool_doc(registry.tools[tool]))))
            known.add(tool)
            cost.fetches += 1
        send(prompt)
        messages.append((("call", step), params.call_tokens))
        result = params.result_tokens
        if policy == "inline" and brief and tool not in known:
            result += counter.count(inline_text(registry, tool))
            cost.inline_expansions += 1
        known.add(tool)
        messages.append((("result", step), result))
        session.record_use(tool)
    return cost, refused


def replay(
    composer: Composer,
    tasks: Iterable[Task],
    modes: Sequence[str] | None = None,
    *,
    params: ReplayParams | None = None,
    label: str = "replay",
) -> ReplayReport:
    """Replay every task in every mode (default: all of the registry's) under static and each policy."""
    params = params or ReplayParams()
    slugs = list(modes) if modes else list(composer.registry.modes)
    task_list = list(tasks)
    report = ReplayReport(label, slugs, params=params)
    for slug in slugs:
        mode = composer.registry.mode(slug)
        sub = ReplayReport(f"{label} [{slug}]", [slug], params=params)
        for task in task_list:
            sub.tasks += 1
            sub.steps += len(task.tools)
            for name in POLICY_NAMES:
                cost, refused = replay_task(composer, mode, task, name, params)
                sub.policies[name].add(cost)
            sub.refused_steps += refused
        report.per_mode[slug] = sub
        report.merge(sub)
    return report


# ------------------------------------------------------------------------------------------- sequences


def load_traces(path: str | Path, *, tool_map: Mapping[str, str] = SWE_AGENT_TOOL_MAP) -> list[Task]:
    """Tasks from a traces JSONL file (``{"id", "model", "steps": [{"tool"}]}``), tools mapped onto the docs.

    ``<malformed>`` steps are skipped; a tool missing from ``tool_map`` is kept under its own name (and is then
    refused by every mode that does not allow it).
    """
    tasks: list[Task] = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(f"{path}: cannot read traces: {exc}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            steps = [s["tool"] for s in record["steps"]]
        except (ValueError, KeyError, TypeError) as exc:
            raise InputFileError(f"{path}:{number}: not a trace record: {exc}") from None
        tools = tuple(tool_map.get(t, t) for t in steps if t != MALFORMED)
        tasks.append(Task(str(record.get("id", number)), tools, str(record.get("model", ""))))
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


def synthetic_replay(
    composer: Composer, modes: Sequence[str] | None = None, *, params: ReplayParams | None = None
) -> ReplayReport:
    """Each mode replays its own synthetic sequences; the report sums them."""
    slugs = list(modes) if modes else list(composer.registry.modes)
    params = params or ReplayParams()
    report = ReplayReport("own sequences (non-permanent tools)", slugs, params=params)
    for slug in slugs:
        sub = replay(composer, synthetic_tasks(composer, slug), [slug], params=params, label="own sequences")
        report.per_mode[slug] = sub.per_mode[slug]
        report.merge(sub)
    return report


def split_by_model(tasks: Iterable[Task], model: str) -> tuple[list[Task], list[Task]]:
    """(tasks of other models, tasks of ``model``): doubao loops and is reported separately."""
    rest: list[Task] = []
    picked: list[Task] = []
    for task in tasks:
        (picked if model in task.model else rest).append(task)
    return rest, picked
