"""Cost replay: what a task's input tokens cost under each promotion policy, with and without a prompt cache.

Pure: no SDK import, no network. Prompt sizes are real token counts of composed prompts (``Composer.compose``,
``Composer.baseline``, tiktoken); the conversation grows by stated amounts (:class:`ReplayParams`).

Cache model (the providers' documented rules, simplified), shared by both cost models:

- A request is a sequence of blocks in cache order: the tool list (one block; none when it is empty, as in
  text-style modes), the stable system part, the changing system part (text-style modes), the task message, then
  each assistant call and tool result (one block each).
- A request reads the longest prefix, in whole blocks, that an earlier request of the same task wrote to the
  cache and that the provider's lookup can reach, and writes prefixes of its own for the requests after it. A
  prefix shorter than the minimum cacheable length is never written, so never read. The cache lives within one
  task; its TTL is ignored. Costs are in base input-token units (1 = one input token at the base input price;
  without a cache every input token costs 1). Output tokens are not priced.

How prefixes are written and found, and how they are billed, is the :class:`~.costs.CostModel`
(``ReplayParams.cost_model``; :mod:`.costs`): Anthropic's explicit breakpoints (the default) or OpenAI's automatic
prefix cache.

Where Anthropic's rules change a cost: each request of a replayed task is two blocks after the one before (a
call and its result), so under a policy whose head (tools and system) never changes, the newest message's
breakpoint always finds the previous request's entry. Under ``every_turn`` nothing before the newest message is
marked, so a changed head re-bills the whole conversation even where its start is unchanged (the stable system
part of a text-style mode), and a head that comes back to what it was more than ten steps earlier misses the
entry written then (beyond the lookback). The minimum matters for prompts that start under it.

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

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..core.composer import Composer
from ..core.fetch import fetch_tool_doc
from ..core.modes import Mode
from ..core.promotion import DEFAULT_POLICY, POLICIES, inline_text
from ..core.prompt import ComposedPrompt
from ..core.session import TaskSession
from .costs import ANTHROPIC, CostModel
from .traces import Task, synthetic_tasks

STATIC = "static"
POLICY_NAMES: tuple[str, ...] = (STATIC, *POLICIES)


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

    @property
    def recommended(self) -> str:
        """The cheapest policy under the report's cost model (cache-weighted), or ``static`` when none costs less.

        Ties go to the default policy, then to the order of :data:`POLICIES`: with a fetch before each first use
        ``inline`` costs exactly what ``task_start`` costs and also shows the full text when the model does not
        fetch. A report without requests has nothing to compare: the default policy.
        """
        if not self.policies[STATIC].requests:
            return DEFAULT_POLICY
        cheapest = min(self.policies[name].cost for name in POLICIES)
        tied = [name for name in POLICIES if _same_cost(self.policies[name].cost, cheapest)]
        if cheapest > self.policies[STATIC].cost or _same_cost(cheapest, self.policies[STATIC].cost):
            return STATIC
        return DEFAULT_POLICY if DEFAULT_POLICY in tied else tied[0]

    def recommendation(self) -> str:
        """The ``recommended:`` line of the table, with the evidence for it."""
        best = self.recommended
        if best == STATIC:
            return f"recommended: {STATIC} (no policy costs less than every tool in full here)"
        if not self.policies[STATIC].requests:
            return f"recommended: {best} (the default; nothing replayed)"
        return f"recommended: {best} (cheapest: {self.saving(best):.1%} below static)"

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
        lines.append(self.recommendation())
        return "\n".join(lines)


def _same_cost(a: float, b: float) -> bool:
    """Equal up to float noise: two policies that send the same requests sum the same steps, maybe reordered."""
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1.0)


# ---------------------------------------------------------------------------------------------- replay


class _Blocks:
    """A request's blocks as the cache sees them: the hash and the token length of each prefix.

    The conversation only grows, so its prefixes are hashed once each as they are appended, not again for every
    request (that made the replay quadratic in a task's length); a changed head rehashes what follows it.
    """

    def __init__(self, head: Iterable[tuple[object, int]] = ()) -> None:
        self.head: list[tuple[object, int]] = list(head)
        self.messages: list[tuple[object, int]] = []
        self.chains: list[int] = []  # chains[i]: the hash of the prefix that ends with block i
        self.ends: list[int] = []  # ends[i]: that prefix's length in tokens
        for key, tokens in self.head:
            self._extend(key, tokens)

    def set_head(self, head: Sequence[tuple[object, int]]) -> None:
        if list(head) == self.head:
            return
        self.head = list(head)
        self.chains.clear()
        self.ends.clear()
        for key, tokens in [*self.head, *self.messages]:
            self._extend(key, tokens)

    def append(self, key: object, tokens: int) -> None:
        self.messages.append((key, tokens))
        self._extend(key, tokens)

    def _extend(self, key: object, tokens: int) -> None:
        self.chains.append(hash((self.chains[-1] if self.chains else 0, key)))
        self.ends.append((self.ends[-1] if self.ends else 0) + tokens)


class _Cache:
    """The cache entries (prefix hashes) written so far in one task, and the requests priced against them."""

    def __init__(self) -> None:
        self.written: set[int] = set()

    def request(
        self, blocks: Sequence[tuple[object, int]], params: ReplayParams, breakpoints: Iterable[int] = ()
    ) -> tuple[int, float]:
        """(input tokens, cache-weighted cost) of a request made of ``(block key, tokens)``.

        ``breakpoints`` are the indexes of blocks that carry a ``cache_control`` breakpoint besides the last one
        (the middleware always marks the newest message); an automatic cache ignores them.
        """
        return self.send(_Blocks(blocks), params, breakpoints)

    def send(self, blocks: _Blocks, params: ReplayParams, breakpoints: Iterable[int] = ()) -> tuple[int, float]:
        """:meth:`request` for blocks whose prefixes are already hashed."""
        model = params.cost_model
        chains, ends = blocks.chains, blocks.ends
        if not chains:
            return 0, 0.0
        total = ends[-1]
        if not model.explicit_breakpoints:
            # Automatic: a request writes every prefix, so the first written prefix found walking back is the
            # longest one, and every shorter prefix was written with it: only the prefixes after it are new.
            shared = 0
            for i in reversed(range(len(chains))):
                if chains[i] in self.written:
                    shared = ends[i]
                    break
                if ends[i] >= model.min_cached_tokens:
                    self.written.add(chains[i])
            return total, model.price(total, shared)
        marks = sorted({*breakpoints, len(chains) - 1})
        reach = len(chains) if model.lookback_blocks is None else model.lookback_blocks
        shared = 0
        for mark in marks:
            # A breakpoint checks its own prefix, then each shorter one, at most ``reach`` blocks back.
            for i in range(mark, max(mark - reach, 0) - 1, -1):
                if chains[i] in self.written:
                    shared = max(shared, ends[i])
                    break
        written = 0
        for mark in marks:
            if ends[mark] >= model.min_cached_tokens:  # a shorter prefix "cannot be cached": no entry
                self.written.add(chains[mark])
                written = ends[mark]
        return total, model.price(total, shared, written)


def _head(prompt: ComposedPrompt, composer: Composer) -> tuple[list[tuple[object, int]], list[int]]:
    """The prompt's blocks in cache order (tools, stable system, changing system), and the indexes of the ones
    the middleware can mark with a breakpoint (the tool list and the stable system, when they cannot change)."""
    tools_key = ("tools", prompt.mode, prompt.full, len(prompt.tools))
    stable = composer.counter.count(prompt.system_stable)
    head: list[tuple[object, int]] = []
    marks: list[int] = []
    # An empty tool list (text-style modes) is no block: its key would change with the full set the system
    # text shows, as if the tools before the system prompt had changed.
    if prompt.tools:
        marks.append(len(head))
        head.append((tools_key, prompt.tokens.tools))
    marks.append(len(head))
    head.append((("system", prompt.system_stable), stable))
    if prompt.system_recent:
        head.append((("recent", prompt.system_recent), prompt.tokens.system - stable))
    return head, marks


def replay_task(
    composer: Composer,
    mode: Mode,
    task: Task,
    policy: str,
    params: ReplayParams | None = None,
    sizes: PromptSizes | None = None,
) -> tuple[PolicyCost, int]:
    """One task under one policy (or ``"static"``): its cost, and how many of its steps the mode refused.

    Pass one ``sizes`` for every task of a mode to compute its static prompt and fetch/inline sizes once."""
    return _replay_task(composer, mode, task, policy, params or ReplayParams(), sizes or PromptSizes(composer, mode))


class PromptSizes:
    """What every task of a mode would recompute: the static prompt and the token counts of fetched and inline
    texts (rendering and serialising them again for each task was most of the replay's time)."""

    def __init__(self, composer: Composer, mode: Mode) -> None:
        self.composer = composer
        self.mode = mode
        self._baseline: ComposedPrompt | None = None
        self._fetch: dict[str, int] = {}
        self._inline: dict[str, int] = {}

    def baseline(self) -> ComposedPrompt:
        if self._baseline is None:
            self._baseline = self.composer.baseline(self.mode)
        return self._baseline

    def fetch(self, tool: str) -> int:
        if tool not in self._fetch:
            self._fetch[tool] = self.composer.counter.count(fetch_tool_doc(self.composer.registry.tools[tool]))
        return self._fetch[tool]

    def inline(self, tool: str) -> int:
        if tool not in self._inline:
            self._inline[tool] = self.composer.counter.count(inline_text(self.composer.registry, tool))
        return self._inline[tool]


def _replay_task(
    composer: Composer, mode: Mode, task: Task, policy: str, params: ReplayParams, sizes: PromptSizes
) -> tuple[PolicyCost, int]:
    cost = PolicyCost(policy)
    cache = _Cache()
    session = TaskSession(task.id, history_limit=max(64, len(task.tools)))
    static = sizes.baseline() if policy == STATIC else None
    pinned = composer.compose(mode, session) if policy in ("task_start", "inline") else None
    blocks = _Blocks()
    blocks.append(("task",), params.task_tokens)
    known: set[str] = set()  # tools whose full text the model has seen in this task (fetched, or used in full)
    refused = 0

    def prompt_now() -> ComposedPrompt:
        if static is not None:
            return static
        if pinned is not None:
            return pinned
        return composer.compose(mode, session)

    # The middleware marks the tool list and the stable system block only when they cannot change in the task.
    stable_head = policy != "every_turn" or mode.recent_size == 0

    sent: ComposedPrompt | None = None  # the previous request's prompt
    marks: list[int] = []  # its head's breakpoints

    def send(prompt: ComposedPrompt) -> None:
        nonlocal sent, marks
        if prompt is not sent:
            head, head_marks = _head(prompt, composer)
            blocks.set_head(head)
            sent, marks = prompt, head_marks if stable_head else []
        tokens, weighted = cache.send(blocks, params, marks)
        cost.input_tokens += tokens
        cost.cost += weighted
        cost.cost_no_cache += tokens
        cost.requests += 1

    for step, tool in enumerate(task.tools):
        prompt = prompt_now()
        if not mode.allows(tool):
            send(prompt)
            blocks.append(("call", step), params.call_tokens)
            blocks.append(("refused", step), params.error_result_tokens)
            refused += 1
            continue
        brief = tool in prompt.brief
        if brief and params.fetch_first_use and tool not in known:
            send(prompt)
            blocks.append(("fetch-call", step), params.fetch_call_tokens)
            blocks.append(("fetch", tool), sizes.fetch(tool))
            known.add(tool)
            cost.fetches += 1
        send(prompt)
        blocks.append(("call", step), params.call_tokens)
        result = params.result_tokens
        if policy == "inline" and brief and tool not in known:
            result += sizes.inline(tool)
            cost.inline_expansions += 1
        known.add(tool)
        blocks.append(("result", step), result)
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
        sizes = PromptSizes(composer, mode)
        for task in task_list:
            sub.tasks += 1
            sub.steps += len(task.tools)
            for name in POLICY_NAMES:
                cost, refused = _replay_task(composer, mode, task, name, params, sizes)
                sub.policies[name].add(cost)
            sub.refused_steps += refused
        report.per_mode[slug] = sub
        report.merge(sub)
    return report


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
