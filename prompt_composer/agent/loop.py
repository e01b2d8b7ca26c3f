"""The tool loop, whatever the provider: every decision it makes, written once for sync and async.

This module imports no provider SDK. What the loop decides lives here: composing each request under the promotion
policy, answering ``fetch_tool_description`` / ``tool_search`` / ``call_tool`` itself, refusing tools outside
the mode and paths outside its file restrictions, asking ``approve``, running executors, recording executed
calls into the task's recent-use FIFO, inline promotion, text-style calls (``prompt_composer.textcalls``),
usage totals and ``max_iterations``. How a provider spells requests, replies, tool results, streaming and usage
lives in its adapter: ``prompt_composer.anthropic`` (Messages API) and ``prompt_composer.openai`` (Chat
Completions; ``responses.create`` is composed too).

The loop is one generator (:meth:`Loop.steps`) that *yields* what it needs done: send a request, ask
``approve``, run an executor, show ``on_iteration`` an iteration. :func:`drive` and :func:`drive_async` perform
those effects, synchronously or with ``await``, and hold no decision of their own; so the sync and async loops
cannot drift apart.

Promotion policies (per mode, ``ModeConfig.promotion``; the wrapper's ``policy`` overrides it):

- ``every_turn``: recompose every request from the task's recent-use FIFO.
- ``task_start``: compose once per task and mode (pinned in the :class:`TaskSession`); a brief tool is
  expanded only by ``fetch_tool_description``.
- ``inline``: like ``task_start``; besides, the first *executed* call of a tool that is brief in the pinned
  prompt gets the tool's full description appended once, as a text block after the tool's output in the same
  tool_result. A tool whose description was already fetched (or appended) in the task is not appended again.

Text-style modes (``tool_style: text``) send no composed tools: every doc is in the system prompt and the model
calls a tool by answering with a fenced block (see ``templates/tool_use.j2``)::

    ```tool_call
    {"name": "read_file", "input": {"path": "README.md"}}
    ```

The loop reads every such block of the assistant's text (several in one message, prose around them, trailing
spaces after the fence are fine; see :func:`~prompt_composer.textcalls.parse_tool_call_blocks`) and answers each
through the same path as a native tool call: access check, file restrictions, approval, executor, FIFO, inline
promotion. A block it cannot read (bad JSON, no ``name``, an ``input`` that is not an object) gets an error
result and the loop goes on.
The results go back in one user message, one labelled text per call, in order, each starting with a label line
``tool_result name=<tool> ok`` (or ``error``). The loop ends at an assistant message without a tool_call block,
unless that message imitates a result (a line starting like the label, or a fenced ``tool_result`` block, as a
small model writes after an error): then the loop tells the model so in a user message and asks again (bounded
by ``max_iterations``; the iteration's ``correction`` holds what was said). A reply with no tool_call block that
writes a call in another shape (a ```json block naming a tool, or holding only the arguments of the one tool its
prose names; see :func:`~prompt_composer.textcalls.read_loose_call`) is answered as that call, through the same
checks and approval.

Discovery modes (``discovery: true``): the loop answers ``tool_search`` itself, like ``fetch_tool_description``,
through :func:`~prompt_composer.discovery.handle_tool_search` with the wrapper's
:class:`~prompt_composer.search.ToolSearch` (``wrap(..., search=...)``; by default one is built from the registry
on the first search, loading the default embedder lazily). The tools found join the task session, so the *next*
request lists them after the permanent tools and before ``tool_search`` / ``fetch_tool_description``, in
discovery order. Outside a discovery mode ``tool_search`` is an unknown tool (an error result). Discovery only
ever appends to the tool list, so a discovery mode's prompt is recomposed from the discovered set under every
policy (``task_start`` / ``inline`` do not pin it, or the pinned prompt would hide what was found); since the
FIFO plays no part in it, the recomposed prompt changes only when a search adds tools.

``call_tool`` (``wrap(..., call_tool=True)``): the wrapper appends
:func:`~prompt_composer.discovery.call_tool_definition` to the composed tools (native-style modes) and the loop
answers ``call_tool`` calls in either style: :func:`~prompt_composer.discovery.check_call` (the mode allows the
tool, the arguments match its schema, file restrictions), then the inner call takes the same path as a direct
call of that tool: approval (which sees the inner name and arguments, ``via="call_tool"``), executor, FIFO,
inline promotion. Its record names the inner tool (``via="call_tool"``); a call_tool call refused before that
keeps the name ``call_tool``. Without ``call_tool=True`` it is an unknown tool; a ``call_tool`` the caller
defines in ``tools=`` is the caller's, like any caller tool.

Most users never import this module: ``wrap(client, mode=..., task_id=...)`` (here, or in an adapter module)
returns a composed client whose ``run(...)`` is this loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import inspect
import json
import time
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import Any, ClassVar, Literal, Protocol, Required, Self, TypedDict, Unpack

from ..core.builtins import CALL_TOOL_NAME, FETCH_TOOL_NAME, TOOL_SEARCH_NAME, call_tool_definition
from ..core.composer import ComposedPrompt, Composer, SystemInfo
from ..core.fetch import FetchResult, closest_names, handle_fetch
from ..core.live import LiveRegistry
from ..core.modes import Mode
from ..core.promotion import DEFAULT_POLICY, POLICIES, Policy, inline_text
from ..core.registry import Registry, load_registry
from ..core.session import InMemorySessionStore, SessionStore, TaskSession
from ..discovery.search import LazySearch, ToolSearch
from ..discovery.tools import CallResult, SearchToolResult, check_call, handle_tool_search, search_fields
from ..errors import ExecutorError, PromptComposerError
from ..learn.events import EventLog
from ..safety.executors import ToolExecutor
from .textcalls import CALL_SHAPE, IMITATION, imitated_result, parse_tool_call_blocks, read_loose_call, result_label

# ---------------------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class TokenUsage:
    """Token counts with the Anthropic API's names, whatever the provider; ``None`` from the API counts as 0.

    ``input_tokens`` is the *uncached* input. An OpenAI-compatible usage (``prompt_tokens`` including
    ``prompt_tokens_details.cached_tokens``) maps to ``input_tokens = prompt - cached`` and
    ``cache_read_input_tokens = cached``; such caches have no writes, so ``cache_creation_input_tokens`` is 0."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    @classmethod
    def of(cls, usage: Any) -> TokenUsage:
        """From an Anthropic response's ``usage`` (an SDK object or a mapping)."""

        def get(name: str) -> int:
            value = usage.get(name) if isinstance(usage, Mapping) else getattr(usage, name, None)
            return int(value or 0)

        return cls(
            get("input_tokens"),
            get("output_tokens"),
            get("cache_creation_input_tokens"),
            get("cache_read_input_tokens"),
        )

    @property
    def prompt_tokens(self) -> int:
        """The whole input: uncached, written to the cache and read from it."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
        }


@dataclass(frozen=True)
class PendingCall:
    """A tool call the model asked for, as the approval callback sees it. A text-style call has no id from the
    API: it gets ``text_<iteration>_<n>`` (its position among the message's tool_call blocks, from 1)."""

    id: str
    name: str
    input: Mapping[str, Any]
    iteration: int
    via: str | None = None  # "call_tool" when the model called this tool through call_tool


@dataclass(frozen=True)
class ToolCallRecord:
    """One answered tool call (a native tool call, or a ``tool_call`` block in text style). ``output`` is what
    the model got back (an error message starting with ``Error:`` when ``is_error``); ``error`` says why it failed
    (``None`` on success); ``expanded`` is true when the inline policy appended the tool's full description to
    this result; ``via`` is ``"call_tool"`` when the model called the tool through ``call_tool`` (``name`` and
    ``input`` are then the inner tool's)."""

    id: str
    name: str
    input: Mapping[str, Any]
    output: str
    is_error: bool
    error: str | None
    duration: float
    iteration: int
    executed: bool = False
    expanded: bool = False
    via: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "input": dict(self.input),
            "output": self.output,
            "is_error": self.is_error,
            "error": self.error,
            "duration": self.duration,
            "iteration": self.iteration,
            "executed": self.executed,
            "expanded": self.expanded,
            "via": self.via,
        }


@dataclass(frozen=True)
class Iteration:
    """One request → response step of the loop, and the tool calls answered after it. ``message`` is the
    provider SDK's own response object (an Anthropic ``Message``, an OpenAI ``ChatCompletion``)."""

    index: int
    message: Any
    usage: TokenUsage
    tool_calls: tuple[ToolCallRecord, ...]
    prompt: ComposedPrompt
    latency: float = 0.0  # seconds from sending the request to the whole response
    first_token: float | None = None  # seconds to the first content (streamed requests only)
    correction: str | None = None  # what the loop told the model instead of taking its reply as final


@dataclass
class LoopResult:
    """What a tool loop produced (also the partial result attached to its errors). ``messages`` is the
    conversation in the provider's own format; ``stop_reason`` is the provider's (``end_turn``, ``stop``…)."""

    text: str = ""
    iterations: list[Iteration] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None
    final_message: Any = None

    @property
    def tool_calls(self) -> list[ToolCallRecord]:
        return [call for it in self.iterations for call in it.tool_calls]

    @property
    def usage(self) -> TokenUsage:
        total = TokenUsage()
        for it in self.iterations:
            total += it.usage
        return total

    def as_dict(self) -> dict[str, Any]:
        """The ``run --format json`` shape: ``text``, ``iterations``, ``tool_calls``, ``usage`` (the total),
        ``requests`` (each request's usage, in order: where the cache hit shows), ``stop_reason``."""
        return {
            "text": self.text,
            "iterations": len(self.iterations),
            "tool_calls": [{"name": c.name, "input": dict(c.input), "is_error": c.is_error} for c in self.tool_calls],
            "usage": self.usage.as_dict(),
            "requests": [it.usage.as_dict() for it in self.iterations],
            "stop_reason": self.stop_reason,
        }


class ToolLoopError(PromptComposerError):
    """The tool loop stopped without a final answer; ``result`` holds everything done until then."""

    def __init__(self, message: str, result: LoopResult) -> None:
        super().__init__(message)
        self.result = result


class MaxIterationsError(ToolLoopError):
    """The model still asked for tools after ``max_iterations`` requests."""


class StopLoop(Exception):
    """Raise from ``on_iteration`` to end the tool loop after that iteration: ``run`` returns the result so far
    (the answers to that iteration's calls are already in ``messages``, ready for a request of your own)."""


def partial_result(exc: BaseException) -> LoopResult | None:
    """The loop's partial result attached to an error it raised: a :class:`ToolLoopError`, or any error raised by
    sending a request (an SDK's ``APIError`` — 429, 5xx, timeouts … after the SDK's own retries — or a bad
    argument), which carries it as ``exc.loop_result``."""
    if isinstance(exc, ToolLoopError):
        return exc.result
    result = getattr(exc, "loop_result", None)
    return result if isinstance(result, LoopResult) else None


# ------------------------------------------------------------------------------------- the task state


def tool_name(tool: Any) -> str | None:
    """A tool definition's name in either wire format (a mapping, or an SDK object)."""
    if isinstance(tool, Mapping):
        function = tool.get("function")
        if isinstance(function, Mapping):  # OpenAI Chat Completions: {"type": "function", "function": {...}}
            return function.get("name")
        return tool.get("name")
    return getattr(tool, "name", None)


class WrapOptions(TypedDict, total=False):
    """The options of every ``wrap()`` (and composed client constructor), whatever the provider.

    ``mode`` and ``task_id`` say what to compose for. ``composer`` (or ``registry``, default: the shipped docs)
    decides what is composed; ``store`` keeps the task sessions (default: a fresh
    :class:`~prompt_composer.session.InMemorySessionStore`); ``policy`` overrides the mode's promotion policy.
    ``search`` answers ``tool_search`` in discovery modes (default: ``ToolSearch(registry)``, built on the first
    search); ``call_tool=True`` adds the ``call_tool`` tool and lets the loop answer it. ``system_info`` (e.g.
    ``SystemInfo.detect(root)``) fills the system information section; without it there is none.
    ``baseline=True`` sends what an agent without prompt-composer sends (every allowed tool in full, no fetch
    tool) on every request, for A/B runs such as ``prompt-composer bench``. ``registry`` may be a
    :class:`~prompt_composer.live.LiveRegistry`: each request then composes from its current version, except that
    a task whose prompt is pinned (``task_start`` / ``inline``) keeps the version it was pinned on while the
    live registry keeps it (the last ``keep`` versions); the tool calls of a response are checked against the
    version its request was composed from. ``events`` (an :class:`~prompt_composer.events.EventLog`) receives one
    event per request, tool call, fetch, search, refusal and promotion of the loop; it never slows the loop down.
    """

    mode: Required[str]
    task_id: Required[str]
    composer: Composer | None
    registry: Registry | LiveRegistry | None
    store: SessionStore | None
    policy: Policy | None
    search: ToolSearch | None
    call_tool: bool
    system_info: SystemInfo | None
    baseline: bool
    events: EventLog | None


class TaskState:
    """What a wrapped client is bound to: registry, composer, session store, mode, task and policy."""

    def __init__(
        self,
        *,
        mode: str,
        task_id: str,
        composer: Composer | None = None,
        registry: Registry | LiveRegistry | None = None,
        store: SessionStore | None = None,
        policy: Policy | None = None,
        search: ToolSearch | LazySearch | None = None,
        call_tool: bool = False,
        system_info: SystemInfo | None = None,
        baseline: bool = False,
        events: EventLog | None = None,
    ) -> None:
        self.live = registry if isinstance(registry, LiveRegistry) else None
        if isinstance(registry, LiveRegistry):
            if composer is not None:
                raise ValueError("give a LiveRegistry or a composer, not both")
            composer, registry = registry.composer, None
        if composer is None:
            composer = Composer(registry if registry is not None else load_registry())
        elif registry is not None and registry is not composer.registry:
            raise ValueError("give either a composer or a registry, or the composer's own registry")
        if system_info is not None:  # an input of composition like any context value: composing stays pure
            composer = composer.with_context(system_info=system_info)
        if policy is not None and policy not in POLICIES:
            raise ValueError(f"unknown promotion policy {policy!r}; choose one of {', '.join(POLICIES)}")
        self.system_info = system_info
        self.composer = composer
        self.registry = composer.registry
        self.mode: Mode = self.registry.mode(mode)
        self.task_id = task_id
        self.store: SessionStore = store if store is not None else InMemorySessionStore()
        self.explicit_policy = policy
        self.searcher = search if isinstance(search, LazySearch) else LazySearch(self.registry, search)
        self.call_tool = call_tool
        self.baseline = baseline
        if events is not None and not isinstance(events, EventLog):  # a bare sink would fail mid-loop: say so now
            raise TypeError(
                f"events takes an EventLog (EventLog(sink) in front of a sink), not {type(events).__name__}"
            )
        self.events = events
        # Per registry version (a LiveRegistry's): its composer with this state's context, and its search.
        self._versions: dict[str, tuple[Composer, LazySearch]] = {self.registry.fingerprint: (composer, self.searcher)}

    def derive(self, *, task_id: str | None, mode: str | None, policy: Policy | None) -> TaskState:
        other = copy.copy(self)
        other.task_id = task_id if task_id is not None else self.task_id
        other.explicit_policy = policy if policy is not None else self.explicit_policy
        other.mode = self.registry.mode(mode or self.mode.slug)
        return other

    def bound(self, session: TaskSession | None = None) -> TaskState:
        """The state one request runs on. With a LiveRegistry: the registry version the task's pinned prompt was
        composed from (``task_start`` / ``inline``) while the live registry keeps it, else its current version.
        Without one: this state."""
        if self.live is None:
            return self
        version = self.live.composer
        if self.pins:
            pin = (session or self.session).pinned(self._pin_key)
            kept = self.live.version(pin.fingerprint) if pin is not None else None
            version = kept or version
        if version.registry is self.registry:
            return self
        if version.registry.fingerprint not in self._versions:
            contextual = version.with_context(system_info=self.system_info) if self.system_info else version
            self._versions[version.registry.fingerprint] = (contextual, LazySearch(version.registry, None))
        other = copy.copy(self)
        other.composer, other.searcher = self._versions[version.registry.fingerprint]
        other.registry = version.registry
        other.mode = version.registry.mode(self.mode.slug)
        return other

    @property
    def discovery(self) -> bool:
        return self.mode.config.discovery

    @property
    def policy(self) -> Policy:
        return self.explicit_policy or self.mode.config.promotion or DEFAULT_POLICY

    @property
    def session(self) -> TaskSession:
        return self.store.get(self.task_id)

    @property
    def pins(self) -> bool:
        """Whether the task's prompt is pinned at task start (``task_start`` / ``inline``, not discovery)."""
        return not self.baseline and not self.discovery and self.policy != "every_turn"

    @property
    def _pin_key(self) -> str:
        # A live registry's versions share one pin per mode (the pin records its version's fingerprint); a fixed
        # registry pins per fingerprint, so another registry over the same store composes its own.
        return f"live/{self.mode.slug}" if self.live is not None else f"{self.registry.fingerprint}/{self.mode.slug}"

    @property
    def stable(self) -> bool:
        """Whether the composed system text and tool list stay the same for the whole task (a discovery mode's
        tool list only grows after its permanent tools): then a provider may cache them."""
        return self.baseline or self.discovery or self.policy != "every_turn" or self.mode.recent_size == 0

    def prompt(self, session: TaskSession | None = None) -> ComposedPrompt:
        """This request's composed prompt under the policy."""
        session = session or self.session
        if self.baseline:
            return self.composer.baseline(self.mode)
        # A discovery mode's prompt depends only on the tools tool_search found in this task (not on the FIFO),
        # and discovery only appends to its tool list. Pinning it (task_start / inline) would hide the tools
        # found, so it is recomposed under every policy: it changes only when a search adds tools, and then only
        # at the end of the composed tools (before tool_search / fetch) and of the system prompt; the prefix
        # before the discovered tools stays byte-identical (composing is pure and cached per discovered set).
        if not self.pins:
            return self.composer.compose(self.mode, session)
        pin = session.pin(self._pin_key, fingerprint=self.registry.fingerprint, mode=self.mode)
        if pin.fingerprint != self.registry.fingerprint:  # its live version is no longer kept: same views, new docs
            pin = replace(pin, fingerprint=self.registry.fingerprint)
        return self.composer.compose_pinned(pin, self.mode)

    def composed_tools(self, prompt: ComposedPrompt, taken: Iterable[str | None]) -> list[dict[str, Any]]:
        """The composed tool definitions to send after the caller's (``taken`` names win), in the composer's
        (Anthropic) format, as fresh copies an adapter may mark or convert."""
        taken = set(taken)
        composed = [dict(t) for t in prompt.tools if t["name"] not in taken]
        if self.call_tool and prompt.style != "text" and CALL_TOOL_NAME not in taken:
            composed.append(call_tool_definition(self.mode))  # fixed per mode: last, after fetch
        return composed


# --------------------------------------------------------------------------------------- adapters


@dataclass(frozen=True)
class Call:
    """A call to answer: a native tool call or a text-style ``tool_call`` block (``problem`` set when it could not
    be read); ``via`` is ``"call_tool"`` for the inner call a ``call_tool`` call unwrapped to (same id, style)."""

    id: str
    name: str
    input: Mapping[str, Any]
    style: Literal["native", "text"] = "native"
    problem: str | None = None
    via: str | None = None


@dataclass(frozen=True)
class Reply:
    """A provider's response as the loop reads it (built by an adapter)."""

    message: dict[str, Any]  # the assistant message to append to the conversation, in the provider's format
    content: tuple[str | Call, ...]  # its text parts and the native calls the loop must answer, in order
    stop_reason: str | None
    usage: TokenUsage

    @property
    def texts(self) -> list[str]:
        return [part for part in self.content if isinstance(part, str)]


@dataclass(frozen=True)
class Answer:
    """The result of one native call, for an adapter to spell (``texts`` one or more parts, in order)."""

    call_id: str
    name: str
    texts: tuple[str, ...]
    is_error: bool


class Clock:
    """Times one request: the whole response and, when streaming, the first content (the adapter says when)."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.first: float | None = None

    def first_content(self) -> None:
        if self.first is None:
            self.first = time.perf_counter() - self.start

    def elapsed(self) -> float:
        return time.perf_counter() - self.start


class Adapter(Protocol):
    """How one provider's API spells the loop's requests and replies. Pure translation: no decisions."""

    def loop_request(
        self, state: TaskState, params: Mapping[str, Any], *, model: str, max_tokens: int, session: TaskSession
    ) -> tuple[dict[str, Any], ComposedPrompt]:
        """The request of one loop step (``params`` holds the caller's arguments and ``messages``)."""

    def read(self, response: Any) -> Reply: ...

    def answers(self, native: Sequence[Answer], text: Sequence[str]) -> list[dict[str, Any]]:
        """The message(s) answering one response: native results, then text-style results (labelled texts)."""

    def user_message(self, text: str) -> dict[str, Any]: ...

    def send(self, client: Any, request: dict[str, Any], *, stream: bool, clock: Clock) -> Any:
        """Send one request with the sync SDK client; the SDK's response object."""

    async def send_async(self, client: Any, request: dict[str, Any], *, stream: bool, clock: Clock) -> Any: ...


# ------------------------------------------------------------------------------------------- the loop


@dataclass(frozen=True)
class _Send:
    request: dict[str, Any]
    stream: bool
    clock: Clock


@dataclass(frozen=True)
class _Approve:
    call: PendingCall


@dataclass(frozen=True)
class _Execute:
    executor: ToolExecutor
    input: Mapping[str, Any]


@dataclass(frozen=True)
class _Observe:
    iteration: Iteration


_Effect = _Send | _Approve | _Execute | _Observe
Steps = Generator[_Effect, Any, LoopResult]


def answer_fetch(state: TaskState, session: TaskSession, tool_input: Mapping[str, Any] | Any) -> FetchResult:
    """A ``fetch_tool_description`` call in the state's mode (under ``inline``, the tool is then expanded)."""
    result = handle_fetch(state.registry, state.mode, tool_input, session=session)
    if not result.is_error and state.policy == "inline":
        session.mark_expanded(result.tool)  # its full text is in the conversation now: no inline append
    return result


class Loop:
    """One run of the tool loop: its state, and :meth:`steps`, the generator that makes every decision."""

    def __init__(
        self,
        adapter: Adapter,
        state: TaskState,
        task: str | Sequence[Mapping[str, Any]],
        *,
        executors: Mapping[str, ToolExecutor] | None,
        max_iterations: int,
        params: Mapping[str, Any],
        approving: bool,
        observing: bool,
    ) -> None:
        if max_iterations < 1:
            raise ValueError("max_iterations must be at least 1")
        self.adapter = adapter
        self.base = state
        self.state = state  # this iteration's: bound to one registry version from its request to its answers
        self.session = state.session  # composed from and recorded into, even if the store evicts the task
        self.executors = dict(executors or {})
        self.max_iterations = max_iterations
        self.params = dict(params)
        self.approving = approving
        self.observing = observing
        self.caller_tools = {tool_name(t) for t in self.params.get("tools") or []}
        self.events = state.events
        # Events name the wire format; the adapter's module is it (prompt_composer.anthropic / .openai).
        self.provider = type(adapter).__module__.rpartition(".")[2]
        self.prompt: ComposedPrompt | None = None  # this iteration's: how each called tool was listed
        initial: list[dict[str, Any]] = (
            [{"role": "user", "content": task}] if isinstance(task, str) else [dict(m) for m in task]
        )
        self.result = LoopResult(messages=initial)

    @property
    def text_style(self) -> bool:
        return self.state.mode.config.tool_style == "text"

    # The tools the loop answers itself (a caller's tool of the same name is the caller's).
    @property
    def searching(self) -> bool:
        return self.state.discovery and TOOL_SEARCH_NAME not in self.caller_tools

    @property
    def unwrapping(self) -> bool:
        return self.state.call_tool and CALL_TOOL_NAME not in self.caller_tools

    def steps(self, *, model: str, max_tokens: int, stream: bool) -> Steps:
        """The loop: request → tool calls → results, until the model answers without a call."""
        for index in range(1, self.max_iterations + 1):
            self.state = self.base.bound(self.session)
            params = {**self.params, "messages": self.result.messages}
            request, prompt = self.adapter.loop_request(
                self.state, params, model=model, max_tokens=max_tokens, session=self.session
            )
            self.prompt = prompt
            clock = Clock()
            try:
                response = yield _Send(request, stream, clock)
            except Exception as exc:  # the SDK's error (after its own retries): carry what was done so far
                self._request_event(index, model, stream, clock.elapsed(), None, None, error=type(exc).__name__)
                with contextlib.suppress(AttributeError):
                    exc.loop_result = self.result  # type: ignore[attr-defined]
                raise
            latency = clock.elapsed()  # the request alone, not the approvals and executors that follow
            try:
                reply = self.adapter.read(response)
            except ValueError as exc:  # e.g. an OpenAI-compatible response without a choice
                self._request_event(index, model, stream, latency, clock.first, None, error=type(exc).__name__)
                raise ToolLoopError(f"the model's response could not be read: {exc}", self.result) from exc
            self._request_event(index, model, stream, latency, clock.first, reply)
            calls = self.receive(response, reply, index)
            answered: list[tuple[Call, ToolCallRecord]] = []
            for call in calls:
                answered.append((call, (yield from self.answer(call, index))))
            iteration = self.close(index, response, reply, prompt, answered, latency, clock.first)
            if self.observing:
                try:
                    yield _Observe(iteration)
                except StopLoop:
                    return self.result
            if iteration.correction is None and not calls:
                return self.result
        raise self.exhausted()

    def receive(self, response: Any, reply: Reply, iteration: int) -> list[Call]:
        """Record the assistant's message; the calls it asks for, in order: its native calls and, in a
        text-style mode, the ``tool_call`` blocks of its text (or, when it has none, the one call it wrote in another
        shape, if any)."""
        self.result.messages.append(reply.message)
        self.result.final_message = response
        self.result.stop_reason = reply.stop_reason
        self.result.text = "".join(reply.texts)
        calls: list[Call] = []
        written = 0  # text-style calls so far: their ids are text_<iteration>_<n>
        for part in reply.content:
            if isinstance(part, Call):
                calls.append(part)
            elif self.text_style:
                for parsed in parse_tool_call_blocks(part):
                    written += 1
                    calls.append(Call(f"text_{iteration}_{written}", parsed.name, parsed.input, "text", parsed.error))
        if self.text_style and not calls:
            tools = self.state.registry.tools
            schemas = {name: tools[name].input_schema for name in self.state.mode.allowed if name in tools}
            loose = read_loose_call(self.result.text, schemas)
            if loose is not None:
                calls.append(Call(f"text_{iteration}_1", loose.name, loose.input, "text"))
        return calls

    # -- answering one call ------------------------------------------------------------------------

    def answer(self, call: Call, iteration: int) -> Generator[_Effect, Any, ToolCallRecord]:
        """Answer one call, whatever its style: checks, then approval, then the executor."""
        resolved = self.resolve(call, iteration)
        if isinstance(resolved, ToolCallRecord):
            return resolved
        if self.approving:
            approved = yield _Approve(PendingCall(resolved.id, resolved.name, resolved.input, iteration, resolved.via))
            if not approved:
                reason = f"the call to {resolved.name!r} was denied by the user; it was not run"
                return self._record(resolved, iteration, f"Error: {reason}.", reason, 0.0, "denied")
        start = time.perf_counter()
        try:
            value = yield _Execute(self.executors[resolved.name], resolved.input)
        except Exception as exc:
            detail = str(exc) if isinstance(exc, ExecutorError) else f"{type(exc).__name__}: {exc}"
            text = f"Error: {resolved.name} failed: {detail}"
            return self._record(resolved, iteration, text, detail, time.perf_counter() - start, "error")
        return self._executed(resolved, iteration, value, time.perf_counter() - start)

    def resolve(self, call: Call, iteration: int) -> Call | ToolCallRecord:
        """The call to approve and run (a ``call_tool`` call unwrapped to its inner call), or the record of a
        call answered here without an executor."""
        if call.problem is None and call.name == CALL_TOOL_NAME and self.unwrapping:
            checked = check_call(self.state.registry, self.state.mode, call.input)
            if isinstance(checked, CallResult):  # no name, not in the mode, bad arguments, a refused path
                inner = call.input.get("name")
                refused = inner if isinstance(inner, str) and inner else CALL_TOOL_NAME
                reason = checked.content.removeprefix("Error: ")
                return self._refused(call, iteration, checked.content, reason, tool=refused, via=CALL_TOOL_NAME)
            name, arguments = checked
            call = replace(call, name=name, input=arguments, via=CALL_TOOL_NAME)
        record = self.precheck(call, iteration)
        return call if record is None else record

    def precheck(self, call: Call, iteration: int) -> ToolCallRecord | None:
        """The record of a call answered without running an executor (unreadable call, fetch, refusal), or None
        to run it."""
        mode = self.state.mode
        if call.problem is not None:
            shape = CALL_SHAPE if call.style == "text" else "Call the tool again with a JSON object as its arguments."
            text = f"Error: {call.problem}; nothing was run. {shape}"
            return self._record(call, iteration, text, call.problem, 0.0, "error")
        if call.name == FETCH_TOOL_NAME and call.name not in self.caller_tools:
            fetched = answer_fetch(self.state, self.session, call.input)
            outcome = "refused" if fetched.is_error else "ok"
            self._emit("fetch", iteration=iteration, call_id=call.id, tool=fetched.tool, outcome=outcome)
            if fetched.is_error:
                reason = fetched.content.removeprefix("Error: ")
                self._emit(
                    "refusal", iteration=iteration, call_id=call.id, tool=fetched.tool, via="fetch", reason=reason
                )
            error = "fetch refused" if fetched.is_error else None
            return self._record(call, iteration, fetched.content, error, 0.0, outcome)
        if call.name == TOOL_SEARCH_NAME and self.searching and call.via is None:
            # The tools found join the session; the next request's prompt lists them (see TaskState.prompt).
            found = handle_tool_search(self.state.searcher.get(), mode, call.input, session=self.session)
            self._search_events(call, iteration, found)
            error = found.content if found.is_error else None
            return self._record(call, iteration, found.content, error, 0.0, "error" if found.is_error else "ok")
        if call.name not in self.caller_tools and not mode.allows(call.name):
            if call.name in self.state.registry.tools:
                hint = ", ".join(closest_names(call.name, mode.allowed))
                reason = f"tool {call.name!r} is not available in mode {mode.slug!r}; it was not run"
                text = f"Error: {reason}. Tools of this mode, closest first: {hint}."
            else:
                reason = f"there is no tool named {call.name!r}; nothing was run"
                text = f"Error: {reason}. Tools of this mode: {', '.join(mode.allowed)}."
            return self._refused(call, iteration, text, reason)
        doc = self.state.registry.tools.get(call.name)
        if doc is not None and call.name not in self.caller_tools:
            refusal = mode.check_paths(doc, call.input)
            if refusal is not None:
                return self._refused(call, iteration, refusal, refusal.removeprefix("Error: "))
        if call.name not in self.executors:
            reason = f"tool {call.name!r} has no executor here; it was not run"
            return self._refused(call, iteration, f"Error: {reason}.", reason)
        return None

    def _executed(self, call: Call, iteration: int, value: Any, duration: float) -> ToolCallRecord:
        """A successful call: recorded in the FIFO; under ``inline`` maybe expanded once."""
        output = value if isinstance(value, str) else _json(value)
        # The FIFO view before the use, read only for the event log (a store round trip in Redis).
        before = self.session.recent(self.state.mode) if self.events is not None else ()
        self.session.record_use(call.name)
        if self.events is not None and call.name not in before and call.name in self.session.recent(self.state.mode):
            self._emit("promotion", iteration=iteration, tool=call.name, kind="fifo")
        expanded = (
            self.state.policy == "inline"
            and call.name in self.state.registry.tools
            and call.name in self.state.prompt(self.session).brief
            and self.session.mark_expanded(call.name)
        )
        if expanded:
            self._emit("promotion", iteration=iteration, tool=call.name, kind="inline")
        record = ToolCallRecord(
            call.id,
            call.name,
            call.input,
            output,
            False,
            None,
            duration,
            iteration,
            executed=True,
            expanded=expanded,
            via=call.via,
        )
        self._call_event(record, "ok")
        return record

    def _record(
        self, call: Call, iteration: int, text: str, error: str | None, duration: float, outcome: str
    ) -> ToolCallRecord:
        """The record of a call that ran no executor, or whose executor failed (``outcome`` is for the log)."""
        record = ToolCallRecord(
            call.id, call.name, call.input, text, error is not None, error, duration, iteration, via=call.via
        )
        self._call_event(record, outcome)
        return record

    def _refused(
        self, call: Call, iteration: int, text: str, reason: str, *, tool: str | None = None, via: str | None = None
    ) -> ToolCallRecord:
        """A refused call (or fetch): a ``refusal`` event naming the tool refused, then its record."""
        refused = call.name if tool is None else tool
        self._emit("refusal", iteration=iteration, call_id=call.id, tool=refused, via=via or call.via, reason=reason)
        return self._record(call, iteration, text, reason, 0.0, "refused")

    # -- the event log -----------------------------------------------------------------------------

    def _emit(self, kind: str, /, **fields: Any) -> None:
        """Hand one event to the wrapper's log, if any (it never blocks and never raises)."""
        if self.events is not None:
            self.events.emit(
                kind,
                task=self.base.task_id,
                mode=self.state.mode.slug,
                fingerprint=self.state.registry.fingerprint,
                provider=self.provider,
                **fields,
            )

    def _request_event(
        self,
        index: int,
        model: str,
        stream: bool,
        latency: float,
        first_token: float | None,
        reply: Reply | None,
        *,
        error: str | None = None,
    ) -> None:
        if self.events is None:
            return
        prompt = self.prompt
        self._emit(
            "request",
            iteration=index,
            model=model,
            stream=stream,
            policy=self.state.policy,
            outcome="ok" if error is None else "error",
            **({} if error is None else {"error": error}),
            latency_s=latency,
            first_token_s=first_token,
            usage=(reply.usage if reply is not None else TokenUsage()).as_dict(),
            stop_reason=reply.stop_reason if reply is not None else None,
            composed_tokens=prompt.tokens.total if prompt is not None else 0,
            full=len(prompt.full) if prompt is not None else 0,
            brief=len(prompt.brief) if prompt is not None else 0,
        )

    def _call_event(self, record: ToolCallRecord, outcome: str) -> None:
        if self.events is None:
            return
        prompt = self.prompt
        listed = None
        if prompt is not None and record.name in prompt.full:
            listed = "full"
        elif prompt is not None and record.name in prompt.brief:
            listed = "brief"
        content = {"input": record.input, "output": record.output} if self.events.include_content else {}
        self._emit(
            "tool_call",
            iteration=record.iteration,
            call_id=record.id,
            tool=record.name,
            via=record.via,
            outcome=outcome,
            duration_s=record.duration,
            listed=listed,
            expanded=record.expanded,
            **content,
        )

    def _search_events(self, call: Call, iteration: int, found: SearchToolResult) -> None:
        if self.events is None or found.result is None:
            return
        fields = search_fields(found, include_content=self.events.include_content)
        self._emit("search", iteration=iteration, call_id=call.id, **fields)
        for tool in found.activated:
            self._emit("promotion", iteration=iteration, tool=tool, kind="discovered")

    # -- closing one iteration ---------------------------------------------------------------------

    def close(
        self,
        index: int,
        response: Any,
        reply: Reply,
        prompt: ComposedPrompt,
        answered: Sequence[tuple[Call, ToolCallRecord]],
        latency: float,
        first_token: float | None,
    ) -> Iteration:
        """Send the answers back: native results first (as the APIs want them), then a labelled text per
        text-style call. A text-style reply with no call that imitates a tool result is not final: the loop says
        so in a user message (see :func:`~prompt_composer.textcalls.imitated_result`)."""
        correction = None
        if not answered and self.text_style and imitated_result(self.result.text):
            correction = IMITATION
            self.result.messages.append(self.adapter.user_message(correction))
        if answered:
            native: list[Answer] = []
            text: list[str] = []
            for call, record in answered:
                texts = [record.output]
                if record.expanded:
                    texts.append(inline_text(self.state.registry, record.name))
                if call.style == "text":  # labelled with the name the model called (call_tool, not its inner tool)
                    text.append(result_label(call.name, texts, is_error=record.is_error))
                else:
                    native.append(Answer(record.id, call.name, tuple(texts), record.is_error))
            self.result.messages.extend(self.adapter.answers(native, text))
        records = tuple(record for _, record in answered)
        iteration = Iteration(index, response, reply.usage, records, prompt, latency, first_token, correction)
        self.result.iterations.append(iteration)
        return iteration

    def exhausted(self) -> MaxIterationsError:
        last = self.result.iterations[-1] if self.result.iterations else None
        if last is not None and last.correction is not None:
            what = "still imitated tool results instead of answering"
        else:
            what = "still asked for tools"
        calls = len(self.result.tool_calls)
        return MaxIterationsError(
            f"the model {what} after max_iterations={self.max_iterations} requests "
            f"({calls} tool call{'' if calls == 1 else 's'} answered); the partial result is on .result",
            self.result,
        )


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


# ------------------------------------------------------------------------------------------ drivers

Send = Callable[[dict[str, Any], bool, Clock], Any]


def _perform(
    effect: _Effect, send: Send, approve: Callable[..., Any] | None, observe: Callable[..., Any] | None
) -> Any:
    """Start one effect; its value may be awaitable (an async SDK call, an async executor or callback)."""
    if isinstance(effect, _Send):
        return send(effect.request, effect.stream, effect.clock)
    if isinstance(effect, _Approve):
        assert approve is not None  # the loop asks only when there is an approve callback
        return approve(effect.call)
    if isinstance(effect, _Execute):
        return effect.executor(effect.input)
    assert observe is not None
    return observe(effect.iteration)


async def _run(steps: Steps, perform: Callable[[_Effect], Any], *, awaiting: bool) -> LoopResult:
    """Perform each effect the loop yields and hand back its value, or the exception it raised (the loop decides:
    an error result, or re-raised). With ``awaiting``, an effect whose value is awaitable is awaited."""
    value: Any = None
    error: Exception | None = None
    while True:
        try:
            effect = steps.send(value) if error is None else steps.throw(error)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        try:
            value, error = perform(effect), None
            if awaiting and inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            value, error = None, exc


async def drive_async(
    steps: Steps, send: Send, approve: Callable[..., Any] | None, observe: Callable[..., Any] | None
) -> LoopResult:
    """Run the loop in an event loop: the SDK call, executors and callbacks may be coroutines."""
    return await _run(steps, lambda effect: _perform(effect, send, approve, observe), awaiting=True)


def drive(
    steps: Steps, send: Send, approve: Callable[..., Any] | None, observe: Callable[..., Any] | None
) -> LoopResult:
    """Run the loop synchronously, with no event loop of its own.

    The same driver as :func:`drive_async`, stepped by hand: it awaits nothing here (an async executor or callback
    is run to completion with ``asyncio.run`` first, which needs no running event loop: inside one, use the async
    client), so one ``send(None)`` runs the coroutine to its end."""

    def perform(effect: _Effect) -> Any:
        value = _perform(effect, send, approve, observe)
        if not inspect.isawaitable(value):
            return value
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(_awaited(value))
        if inspect.iscoroutine(value):
            value.close()  # never awaited: say why instead of a "never awaited" warning
        raise TypeError(
            "an async executor or callback cannot run in the sync tool loop inside a running event loop; "
            "use the async client (AsyncAnthropic / AsyncOpenAI) and await run()"
        )

    coroutine = _run(steps, perform, awaiting=False)
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coroutine.close()
    raise RuntimeError("the sync tool loop suspended")  # unreachable: it awaits nothing


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value


# ------------------------------------------------------------------------------------------ clients


Prepare = Callable[[TaskState, Mapping[str, Any]], tuple[dict[str, Any], ComposedPrompt]]


class ComposedNamespace:
    """An SDK namespace (``messages``, ``chat.completions``, ``responses``) whose ``create`` / ``stream`` /
    ``parse`` send the composed prompt (``prepare`` merges it into the caller's parameters); every other attribute
    is the SDK's. Sync and async alike: the SDK's own return value (a coroutine, for an async client) is returned."""

    def __init__(self, inner: Any, state: TaskState, prepare: Prepare) -> None:
        self._inner = inner
        self._state = state
        self._prepare = prepare

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def create(self, **params: Any) -> Any:
        """The SDK's ``create`` with the composed system prompt and tools (``stream=True`` works too)."""
        return self._inner.create(**self._prepare(self._state.bound(), params)[0])

    def stream(self, **params: Any) -> Any:
        """The SDK's ``stream`` helper (a context manager) with the composed system prompt and tools."""
        return self._inner.stream(**self._prepare(self._state.bound(), params)[0])

    def parse(self, **params: Any) -> Any:
        return self._inner.parse(**self._prepare(self._state.bound(), params)[0])


class ComposedClientBase:
    """What every composed client has, whatever the provider: the task it is bound to, and the loop's helpers.

    A subclass sets ``_adapter`` and ``_bind`` (which composes the SDK's namespaces, e.g. ``messages``); every
    other attribute is the wrapped SDK client's."""

    _adapter: ClassVar[Adapter]
    _client: Any
    _state: TaskState

    def __init__(self, client: Any, **options: Unpack[WrapOptions]) -> None:
        self._attach(client, TaskState(**options))

    def _attach(self, client: Any, state: TaskState) -> None:
        self._client = client
        self._state = state
        self._bind()

    def _bind(self) -> None:
        raise NotImplementedError

    def _loop(
        self,
        task: str | Sequence[Mapping[str, Any]],
        executors: Mapping[str, ToolExecutor] | None,
        max_iterations: int,
        params: Mapping[str, Any],
        *,
        approving: bool,
        observing: bool,
    ) -> Loop:
        return Loop(
            self._adapter,
            self._state,
            task,
            executors=executors,
            max_iterations=max_iterations,
            params=params,
            approving=approving,
            observing=observing,
        )

    def for_task(self, task_id: str, *, mode: str | None = None, policy: Policy | None = None) -> Self:
        """The same client, composer and session store for another task (or mode, or policy)."""
        other = object.__new__(type(self))
        other._attach(self._client, self._state.derive(task_id=task_id, mode=mode, policy=policy))
        return other

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    @property
    def client(self) -> Any:
        """The wrapped SDK client."""
        return self._client

    @property
    def composer(self) -> Composer:
        return self._state.composer

    @property
    def mode(self) -> Mode:
        """The mode as the next request will see it (a LiveRegistry's version, see :meth:`TaskState.bound`)."""
        return self._state.bound().mode

    @property
    def task_id(self) -> str:
        return self._state.task_id

    @property
    def policy(self) -> Policy:
        """The promotion policy in force: the wrapper's, else the mode's ``promotion``, else the default."""
        return self._state.policy

    @property
    def session(self) -> TaskSession:
        return self._state.session

    def prompt(self) -> ComposedPrompt:
        """The composed prompt the next request will carry."""
        return self._state.bound().prompt()

    def reset_task(self) -> TaskSession:
        """Start this task afresh: empty FIFO, no pinned prompt, nothing expanded."""
        return self._state.store.reset(self._state.task_id)

    def record_use(self, tool: str) -> None:
        """Record an executed tool call (for callers running their own loop over the SDK)."""
        self._state.session.record_use(tool)

    def answer_fetch(self, tool_input: Mapping[str, Any] | Any) -> FetchResult:
        """Answer a ``fetch_tool_description`` call in this mode (same access check as everything else)."""
        return answer_fetch(self._state.bound(), self._state.session, tool_input)

    def answer_tool_search(self, tool_input: Mapping[str, Any] | Any) -> SearchToolResult:
        """Answer a ``tool_search`` call (discovery modes): the tools found join this task's tool list from the
        next request on. Outside a discovery mode the result is an error."""
        state = self._state.bound()
        if not state.discovery:
            return SearchToolResult(f"Error: mode {state.mode.slug!r} has no {TOOL_SEARCH_NAME}.", True)
        return handle_tool_search(state.searcher.get(), state.mode, tool_input, session=state.session)


class SyncComposedClient(ComposedClientBase):
    """A composed client over a sync SDK client: :meth:`run` is the tool loop."""

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def run(
        self,
        task: str | Sequence[Mapping[str, Any]],
        *,
        model: str,
        max_tokens: int = 4096,
        executors: Mapping[str, ToolExecutor] | None = None,
        approve: Callable[[PendingCall], bool | Awaitable[bool]] | None = None,
        on_iteration: Callable[[Iteration], Awaitable[None] | None] | None = None,
        max_iterations: int = 25,
        stream: bool = False,
        **params: Any,
    ) -> LoopResult:
        """Run the tool loop: request → tool calls → tool results until the model answers without a call.

        In a text-style mode the calls are the assistant's ``tool_call`` blocks and their results go back as
        labelled text (see ``prompt_composer.textcalls``); everything else is the same.

        ``task`` is the user's message (or a whole initial message list, in the provider's format).
        ``executors`` maps tool names to callables ``(input) -> output``; ``fetch_tool_description`` (and
        ``tool_search`` in a discovery mode) is answered here, and a ``call_tool`` call (``call_tool=True``) runs
        its inner tool's executor. ``approve`` runs before each tool (``False`` denies it); ``on_iteration`` sees
        each step (raising :class:`StopLoop` there ends the loop and returns the result so far). Other keyword
        arguments (``system`` on Anthropic, ``tools``, ``temperature`` …) go to every request. Raises
        :class:`MaxIterationsError` when the model still asks for tools after ``max_iterations`` requests, and
        lets SDK errors through with the partial result attached (see :func:`partial_result`).
        """
        loop = self._loop(
            task, executors, max_iterations, params, approving=approve is not None, observing=on_iteration is not None
        )

        def send(request: dict[str, Any], streaming: bool, clock: Clock) -> Any:
            return self._adapter.send(self._client, request, stream=streaming, clock=clock)

        return drive(loop.steps(model=model, max_tokens=max_tokens, stream=stream), send, approve, on_iteration)


class AsyncComposedClientBase(ComposedClientBase):
    """A composed client over an async SDK client: :meth:`run` is the tool loop, awaited."""

    async def close(self) -> None:
        await self._client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def run(
        self,
        task: str | Sequence[Mapping[str, Any]],
        *,
        model: str,
        max_tokens: int = 4096,
        executors: Mapping[str, ToolExecutor] | None = None,
        approve: Callable[[PendingCall], bool | Awaitable[bool]] | None = None,
        on_iteration: Callable[[Iteration], Awaitable[None] | None] | None = None,
        max_iterations: int = 25,
        stream: bool = False,
        **params: Any,
    ) -> LoopResult:
        """The async tool loop (see :meth:`SyncComposedClient.run`). Executors, ``approve`` and ``on_iteration``
        may be sync or async; calls of one response are answered one after another, in order. Sync executors run
        in the event loop's thread: wrap blocking work in ``asyncio.to_thread`` yourself."""
        loop = self._loop(
            task, executors, max_iterations, params, approving=approve is not None, observing=on_iteration is not None
        )

        def send(request: dict[str, Any], streaming: bool, clock: Clock) -> Any:
            return self._adapter.send_async(self._client, request, stream=streaming, clock=clock)

        return await drive_async(
            loop.steps(model=model, max_tokens=max_tokens, stream=stream), send, approve, on_iteration
        )


def wrap(client: Any, **options: Unpack[WrapOptions]) -> Any:
    """Wrap an SDK client for one task and mode, whichever provider it is: ``anthropic.Anthropic`` /
    ``AsyncAnthropic`` (see :func:`prompt_composer.anthropic.wrap`) or ``openai.OpenAI`` / ``AsyncOpenAI``
    (see :func:`prompt_composer.openai.wrap`); the options are :class:`WrapOptions`."""
    packages = {cls.__module__.partition(".")[0] for cls in type(client).__mro__}
    if "anthropic" in packages:
        from . import anthropic

        return anthropic.wrap(client, **options)
    if "openai" in packages:
        from . import openai

        return openai.wrap(client, **options)
    raise TypeError(
        f"wrap() takes an anthropic.Anthropic / AsyncAnthropic or openai.OpenAI / AsyncOpenAI client, "
        f"not {type(client).__name__}"
    )
