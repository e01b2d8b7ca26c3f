"""Anthropic middleware: a wrapped client that composes each request, and the tool loop.

This is the only module that imports the ``anthropic`` SDK. Wrap a client, instructor-style::

    client = wrap(anthropic.Anthropic(), composer=Composer(load_registry()), mode="code", task_id="t-1")
    reply = client.messages.create(model=..., max_tokens=1024, messages=[{"role": "user", "content": "..."}])
    result = client.run("Fix the failing test", model=..., executors=workspace_executors("."))

``messages.create`` / ``stream`` / ``parse`` / ``count_tokens`` get the composed system prompt and tools;
every other attribute (``models``, ``beta``, ``messages.batches``, ``close`` ...) is the real client's.

Request layout (Anthropic caches the prefix tools → system → messages, so the most stable parts go first):

- ``tools``: the caller's tools, unchanged and first (they are the same in every mode and task), then the
  composed tools of the mode (a composed tool whose name the caller also defines is dropped: the caller's wins).
- ``system``: a list of text blocks: the composed stable part, then the caller's own ``system`` (a string
  becomes one text block; a list of blocks comes through as is), then the composed part that changes within a
  task (text-style modes only).
- ``cache_control`` breakpoints (``{"type": "ephemeral"}``), at most 4 counting the caller's own, in this
  priority: the newest message's last block; the stable system block; the last tool. The system and tool
  breakpoints are set only when that part cannot change within the task: always under ``task_start`` and
  ``inline``, under ``every_turn`` only when the mode's ``recent_size`` is 0.

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
spaces after the fence are fine; see :func:`parse_tool_call_blocks`) and answers each through the same path as a
native ``tool_use`` block: access check, file restrictions, approval, executor, FIFO, inline promotion. A block it
cannot read (bad JSON, no ``name``, an ``input`` that is not an object) gets an error result and the loop goes on.
The results go back as one user message with one text block per call, in order, each starting with a label line
``tool_result name=<tool> ok`` (or ``error``). The loop ends at an assistant message without a tool_call block,
unless that message imitates a result (a line starting like the label, or a fenced ``tool_result`` block, as a
small model writes after an error): then the loop tells the model so in a user message and asks again (bounded
by ``max_iterations``; the iteration's ``correction`` holds what was said).

Discovery modes (``discovery: true``): the loop answers ``tool_search`` itself, like ``fetch_tool_description``,
through :func:`~prompt_composer.discovery.handle_tool_search` with the wrapper's
:class:`~prompt_composer.search.ToolSearch` (``wrap(..., search=...)``; by default one is built from the registry
on the first search, loading the default embedder lazily). The tools found join the task session, so the *next*
request lists them after the permanent tools and before ``tool_search`` / ``fetch_tool_description``, in
discovery order. Outside a discovery mode ``tool_search`` is an unknown tool (an error result). Discovery only
ever appends to the tool list, so a discovery mode's prompt is recomposed from the discovered set under every
policy (``task_start`` / ``inline`` do not pin it, or the pinned prompt would hide what was found); since the
FIFO plays no part in it, the recomposed prompt changes only when a search adds tools. Breakpoints in a
discovery mode: the system block (its text never changes; its cached prefix is rewritten only when a search
adds tools), and on the tool list the last *permanent* tool, the end of the part that never changes.

``call_tool`` (``wrap(..., call_tool=True)``): the wrapper appends
:func:`~prompt_composer.discovery.call_tool_definition` to the composed tools (native-style modes) and the loop
answers ``call_tool`` calls in either style: :func:`~prompt_composer.discovery.check_call` (the mode allows the
tool, the arguments match its schema, file restrictions), then the inner call takes the same path as a direct
call of that tool: approval (which sees the inner name and arguments, ``via="call_tool"``), executor, FIFO,
inline promotion. Its record names the inner tool (``via="call_tool"``); a call_tool call refused before that
keeps the name ``call_tool``. Without ``call_tool=True`` it is an unknown tool; a ``call_tool`` the caller
defines in ``tools=`` is the caller's, like any caller tool.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import Any, Literal, Self, TypeVar, cast

import anthropic
from anthropic.types import Message

from .composer import ComposedPrompt, Composer, SystemInfo
from .discovery import (
    CALL_TOOL_NAME,
    TOOL_SEARCH_NAME,
    CallResult,
    SearchToolResult,
    call_tool_definition,
    check_call,
    handle_tool_search,
)
from .errors import PromptComposerError
from .executors import ExecutorError, ToolExecutor
from .fetch import FETCH_TOOL_NAME, FetchResult, closest_names, handle_fetch
from .modes import Mode
from .promotion import DEFAULT_POLICY, POLICIES, Policy, inline_text
from .registry import Registry, load_registry
from .search import ToolSearch
from .session import InMemorySessionStore, SessionStore, TaskSession

__all__ = [
    "DEFAULT_POLICY",
    "MAX_BREAKPOINTS",
    "AsyncComposedClient",
    "ComposedClient",
    "Iteration",
    "LoopResult",
    "MaxIterationsError",
    "PendingCall",
    "Policy",
    "StopLoop",
    "TextToolCall",
    "TokenUsage",
    "ToolCallRecord",
    "ToolLoopError",
    "imitated_result",
    "inline_text",
    "parse_tool_call_blocks",
    "partial_result",
    "text_tool_result",
    "wrap",
]

MAX_BREAKPOINTS = 4  # the Messages API allows at most four cache_control breakpoints per request
EPHEMERAL: dict[str, str] = {"type": "ephemeral"}

_ClientT = TypeVar("_ClientT", anthropic.Anthropic, anthropic.AsyncAnthropic)


# ---------------------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class TokenUsage:
    """Token counts with the API's own names; ``None`` from the API counts as 0."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    @classmethod
    def of(cls, usage: Any) -> TokenUsage:
        """From a response's ``usage`` (an SDK object or a mapping)."""

        def get(name: str) -> int:
            value = usage.get(name) if isinstance(usage, Mapping) else getattr(usage, name, None)
            return int(value or 0)

        return cls(
            get("input_tokens"),
            get("output_tokens"),
            get("cache_creation_input_tokens"),
            get("cache_read_input_tokens"),
        )

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
    """One answered tool call (a ``tool_use`` block, or a ``tool_call`` block in text style). ``output`` is what
    the model got back (an error message when ``is_error``); ``error`` says why it failed (``None`` on success);
    ``expanded`` is true when the inline policy appended the tool's full description to this result; ``via`` is
    ``"call_tool"`` when the model called the tool through ``call_tool`` (``name`` and ``input`` are then the
    inner tool's)."""

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
    """One request → response step of the loop, and the tool calls answered after it."""

    index: int
    message: Message
    usage: TokenUsage
    tool_calls: tuple[ToolCallRecord, ...]
    prompt: ComposedPrompt
    latency: float = 0.0  # seconds from sending the request to the whole response
    first_token: float | None = None  # seconds to the first content block (streamed requests only)
    correction: str | None = None  # what the loop told the model instead of taking its reply as final


@dataclass
class LoopResult:
    """What a tool loop produced (also the partial result attached to its errors)."""

    text: str = ""
    iterations: list[Iteration] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None
    final_message: Message | None = None

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
        """The ``run --format json`` shape: ``text``, ``iterations``, ``tool_calls``, ``usage``, ``stop_reason``."""
        return {
            "text": self.text,
            "iterations": len(self.iterations),
            "tool_calls": [{"name": c.name, "input": dict(c.input), "is_error": c.is_error} for c in self.tool_calls],
            "usage": self.usage.as_dict(),
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
    """The loop's partial result attached to an error it raised: a :class:`ToolLoopError`, or an SDK
    ``anthropic.APIError`` (429, 5xx, timeouts … after the SDK's own retries), which carries it as
    ``exc.loop_result``."""
    if isinstance(exc, ToolLoopError):
        return exc.result
    result = getattr(exc, "loop_result", None)
    return result if isinstance(result, LoopResult) else None


# ------------------------------------------------------------------------------------ request shaping


def _count_breakpoints(value: Any) -> int:
    """``cache_control`` markers already in a (nested) request part."""
    if isinstance(value, Mapping):
        own = 1 if value.get("cache_control") else 0
        return own + sum(_count_breakpoints(v) for k, v in value.items() if k != "cache_control")
    if isinstance(value, list | tuple):
        return sum(_count_breakpoints(v) for v in value)
    return 0


def _system_blocks(system: Any) -> list[Any]:
    if system is None or isinstance(system, anthropic.Omit | anthropic.NotGiven):
        return []
    if isinstance(system, str):
        return [{"type": "text", "text": system}] if system else []
    return list(system)


def _with_breakpoint(message: Any) -> Any | None:
    """A copy of ``message`` with a breakpoint on its last content block, or None when it cannot take one."""
    if not isinstance(message, Mapping):
        return None
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            return None
        return {**message, "content": [{"type": "text", "text": content, "cache_control": dict(EPHEMERAL)}]}
    if isinstance(content, list | tuple) and content and isinstance(content[-1], Mapping):
        last = {**content[-1], "cache_control": dict(EPHEMERAL)}
        return {**message, "content": [*content[:-1], last]}
    return None


class _LazySearch:
    """The wrapper's :class:`ToolSearch`: the one given, or one built from the registry on first use (shared by
    every client :meth:`~ComposedClient.for_task` derives)."""

    def __init__(self, registry: Registry, search: ToolSearch | None) -> None:
        if search is not None and search.registry.fingerprint != registry.fingerprint:
            raise ValueError("the ToolSearch was built for another registry than the composer's")
        self._registry = registry
        self._search = search
        self._lock = threading.Lock()

    def get(self) -> ToolSearch:
        with self._lock:
            if self._search is None:
                self._search = ToolSearch(self._registry)
            return self._search


class _State:
    """What both wrappers share: which registry, composer, session store, mode, task and policy."""

    def __init__(
        self,
        *,
        composer: Composer | None,
        registry: Registry | None,
        mode: str,
        task_id: str,
        store: SessionStore | None,
        policy: Policy | None,
        search: ToolSearch | _LazySearch | None = None,
        call_tool: bool = False,
        system_info: SystemInfo | None = None,
        baseline: bool = False,
    ) -> None:
        if composer is None:
            composer = Composer(registry if registry is not None else load_registry())
        elif registry is not None and registry is not composer.registry:
            raise ValueError("give either a composer or a registry, or the composer's own registry")
        if system_info is not None:  # an input of composition like any context value: composing stays pure
            composer = composer.with_context(system_info=system_info)
        if policy is not None and policy not in POLICIES:
            raise ValueError(f"unknown promotion policy {policy!r}; choose one of {', '.join(POLICIES)}")
        self.composer = composer
        self.registry = composer.registry
        self.mode: Mode = self.registry.mode(mode)
        self.task_id = task_id
        self.store: SessionStore = store if store is not None else InMemorySessionStore()
        self.explicit_policy = policy
        self.searcher = search if isinstance(search, _LazySearch) else _LazySearch(self.registry, search)
        self.call_tool = call_tool
        self.baseline = baseline

    def derive(self, *, task_id: str | None, mode: str | None, policy: Policy | None) -> _State:
        return _State(
            composer=self.composer,
            registry=None,
            mode=mode or self.mode.slug,
            task_id=task_id if task_id is not None else self.task_id,
            store=self.store,
            policy=policy if policy is not None else self.explicit_policy,
            search=self.searcher,
            call_tool=self.call_tool,
            baseline=self.baseline,
        )

    @property
    def discovery(self) -> bool:
        return self.mode.config.discovery

    @property
    def policy(self) -> Policy:
        return self.explicit_policy or self.mode.config.promotion or DEFAULT_POLICY

    @property
    def session(self) -> TaskSession:
        return self.store.get(self.task_id)

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
        if self.policy == "every_turn" or self.discovery:
            return self.composer.compose(self.mode, session)
        key = f"{self.registry.fingerprint}/{self.mode.slug}"
        return session.pinned_prompt(key, lambda: self.composer.compose(self.mode, session))

    def prepare(
        self, params: Mapping[str, Any], *, breakpoints: bool = True, session: TaskSession | None = None
    ) -> tuple[dict[str, Any], ComposedPrompt]:
        """The request parameters with the composed system prompt and tools merged in.

        The tool loop passes its own ``session``: it must compose from the session it records into, even if
        the store has meanwhile expired or evicted that task."""
        out = dict(params)
        prompt = self.prompt(session)
        # A discovery mode ignores the FIFO: its system text is fixed for the task, and its tool list only grows
        # after the permanent tools (see prompt()), so the tool breakpoint goes on the last permanent tool.
        stable = self.baseline or self.discovery or self.policy != "every_turn" or self.mode.recent_size == 0
        caller_system = _system_blocks(out.pop("system", None))
        raw_tools = out.pop("tools", None)
        caller_tools = [] if raw_tools is None or isinstance(raw_tools, anthropic.Omit) else list(raw_tools)
        messages = list(out.get("messages") or [])
        budget = MAX_BREAKPOINTS - _count_breakpoints([caller_system, caller_tools, messages]) if breakpoints else 0

        if budget > 0 and messages:
            marked = _with_breakpoint(messages[-1])
            if marked is not None and not _count_breakpoints(messages[-1]):
                messages[-1] = marked
                budget -= 1
        out["messages"] = messages

        system: list[Any] = []
        if prompt.system_stable:
            block: dict[str, Any] = {"type": "text", "text": prompt.system_stable}
            if stable and budget > 0:
                block["cache_control"] = dict(EPHEMERAL)
                budget -= 1
            system.append(block)
        system += caller_system
        if prompt.system_recent:
            system.append({"type": "text", "text": prompt.system_recent})
        if system:
            out["system"] = system

        taken = {t.get("name") if isinstance(t, Mapping) else getattr(t, "name", None) for t in caller_tools}
        composed = [dict(t) for t in prompt.tools if t["name"] not in taken]
        if self.call_tool and prompt.style != "text" and CALL_TOOL_NAME not in taken:
            composed.append(call_tool_definition(self.mode))  # fixed per mode: last, after fetch
        if self.discovery:
            permanent = set(self.mode.permanent)
            fixed = [i for i, t in enumerate(composed) if t["name"] in permanent]
            mark = fixed[-1] if fixed else None
        else:
            mark = len(composed) - 1 if composed else None
        if mark is not None and stable and budget > 0:
            composed[mark]["cache_control"] = dict(EPHEMERAL)
        tools = [*caller_tools, *composed]
        if tools:
            out["tools"] = tools
        return out, prompt


# -------------------------------------------------------------------------------------------- wrappers


class _MessagesBase:
    def __init__(self, messages: Any, state: _State) -> None:
        self._messages = messages
        self._state = state

    def __getattr__(self, name: str) -> Any:
        return getattr(self._messages, name)


class ComposedMessages(_MessagesBase):
    """``client.messages`` of a :class:`ComposedClient`."""

    def create(self, **params: Any) -> Any:
        """``Messages.create`` with the composed system prompt and tools (``stream=True`` works too)."""
        return self._messages.create(**self._state.prepare(params)[0])

    def stream(self, **params: Any) -> Any:
        """``Messages.stream`` (a ``MessageStreamManager``) with the composed system prompt and tools."""
        return self._messages.stream(**self._state.prepare(params)[0])

    def parse(self, **params: Any) -> Any:
        return self._messages.parse(**self._state.prepare(params)[0])

    def count_tokens(self, **params: Any) -> Any:
        """``Messages.count_tokens`` for the request as it would be sent (no breakpoints added)."""
        return self._messages.count_tokens(**self._state.prepare(params, breakpoints=False)[0])


class AsyncComposedMessages(_MessagesBase):
    """``client.messages`` of an :class:`AsyncComposedClient`."""

    async def create(self, **params: Any) -> Any:
        return await self._messages.create(**self._state.prepare(params)[0])

    def stream(self, **params: Any) -> Any:
        """An ``AsyncMessageStreamManager``: use ``async with client.messages.stream(...) as s``."""
        return self._messages.stream(**self._state.prepare(params)[0])

    async def parse(self, **params: Any) -> Any:
        return await self._messages.parse(**self._state.prepare(params)[0])

    async def count_tokens(self, **params: Any) -> Any:
        return await self._messages.count_tokens(**self._state.prepare(params, breakpoints=False)[0])


class _ClientBase:
    _client: Any
    _state: _State
    _messages_class: type[_MessagesBase]
    messages: Any

    def _attach(self, client: Any, state: _State) -> None:
        self._client = client
        self._state = state
        self.messages = self._messages_class(client.messages, state)

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
        return self._state.mode

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
        return self._state.prompt()

    def reset_task(self) -> TaskSession:
        """Start this task afresh: empty FIFO, no pinned prompt, nothing expanded."""
        return self._state.store.reset(self._state.task_id)

    def record_use(self, tool: str) -> None:
        """Record an executed tool call (for callers running their own loop over ``messages.create``)."""
        self._state.session.record_use(tool)

    def answer_fetch(self, tool_input: Mapping[str, Any] | Any) -> FetchResult:
        """Answer a ``fetch_tool_description`` call in this mode (same access check as everything else)."""
        return _Loop.fetch(self._state, self._state.session, tool_input)

    def answer_tool_search(self, tool_input: Mapping[str, Any] | Any) -> SearchToolResult:
        """Answer a ``tool_search`` call (discovery modes): the tools found join this task's tool list from the
        next request on. Outside a discovery mode the result is an error."""
        if not self._state.discovery:
            return SearchToolResult(f"Error: mode {self._state.mode.slug!r} has no {TOOL_SEARCH_NAME}.", True)
        return handle_tool_search(self._state.searcher.get(), self._state.mode, tool_input, session=self._state.session)


class ComposedClient(_ClientBase):
    """An ``anthropic.Anthropic`` whose ``messages`` are composed for one task and mode. See :func:`wrap`."""

    _messages_class = ComposedMessages
    messages: ComposedMessages

    def __init__(
        self,
        client: anthropic.Anthropic,
        *,
        composer: Composer | None = None,
        registry: Registry | None = None,
        mode: str,
        task_id: str,
        store: SessionStore | None = None,
        policy: Policy | None = None,
        search: ToolSearch | None = None,
        call_tool: bool = False,
        system_info: SystemInfo | None = None,
        baseline: bool = False,
    ) -> None:
        self._attach(
            client,
            _State(
                composer=composer,
                registry=registry,
                mode=mode,
                task_id=task_id,
                store=store,
                policy=policy,
                search=search,
                call_tool=call_tool,
                system_info=system_info,
                baseline=baseline,
            ),
        )

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> ComposedClient:
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
        approve: Callable[[PendingCall], bool] | None = None,
        on_iteration: Callable[[Iteration], None] | None = None,
        max_iterations: int = 25,
        stream: bool = False,
        **params: Any,
    ) -> LoopResult:
        """Run the tool loop: request → tool_use → tool_result until the model stops.

        In a text-style mode the calls are the assistant's ``tool_call`` blocks and their results go back as
        labelled text blocks (see the module docstring); everything else is the same.

        ``task`` is the user's message (or a whole initial message list). ``executors`` maps tool names to
        callables ``(input) -> output``; ``fetch_tool_description`` (and ``tool_search`` in a discovery mode) is
        answered here, and a ``call_tool`` call (``call_tool=True``) runs its inner tool's executor. ``approve``
        runs before each tool (``False`` denies it); ``on_iteration`` sees each step (raising :class:`StopLoop`
        there ends the loop and returns the result so far). Other keyword arguments
        (``system``, ``tools``, ``temperature`` …) go to every request. Raises :class:`MaxIterationsError`
        when the model still asks for tools after ``max_iterations`` requests, and lets SDK errors through with the
        partial result attached (see :func:`partial_result`).
        """
        loop = _Loop(self._state, task, executors, max_iterations, params)
        for index in range(1, max_iterations + 1):
            request, prompt = loop.request(model=model, max_tokens=max_tokens)
            clock = _Clock()
            try:
                if stream:
                    with self._client.messages.stream(**request) as events:
                        for event in events:
                            clock.saw(event)
                        message = events.get_final_message()
                else:
                    message = self._client.messages.create(**request)
            except anthropic.APIError as exc:
                exc.loop_result = loop.result  # type: ignore[attr-defined]
                raise
            calls = loop.receive(message, index)
            answered = [(call, loop.call_sync(call, index, approve)) for call in calls]
            iteration = loop.answer(index, message, prompt, answered, clock)
            if on_iteration is not None:
                try:
                    on_iteration(iteration)
                except StopLoop:
                    return loop.result
            if iteration.correction is None and not calls:
                return loop.result
        raise loop.exhausted()


class AsyncComposedClient(_ClientBase):
    """An ``anthropic.AsyncAnthropic`` whose ``messages`` are composed for one task and mode."""

    _messages_class = AsyncComposedMessages
    messages: AsyncComposedMessages

    def __init__(
        self,
        client: anthropic.AsyncAnthropic,
        *,
        composer: Composer | None = None,
        registry: Registry | None = None,
        mode: str,
        task_id: str,
        store: SessionStore | None = None,
        policy: Policy | None = None,
        search: ToolSearch | None = None,
        call_tool: bool = False,
        system_info: SystemInfo | None = None,
        baseline: bool = False,
    ) -> None:
        self._attach(
            client,
            _State(
                composer=composer,
                registry=registry,
                mode=mode,
                task_id=task_id,
                store=store,
                policy=policy,
                search=search,
                call_tool=call_tool,
                system_info=system_info,
                baseline=baseline,
            ),
        )

    async def close(self) -> None:
        await self._client.close()

    async def __aenter__(self) -> AsyncComposedClient:
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
        """The async tool loop (see :meth:`ComposedClient.run`). Executors, ``approve`` and ``on_iteration`` may
        be sync or async; calls of one response are answered one after another, in order. Sync executors run
        in the event loop's thread: wrap blocking work in ``asyncio.to_thread`` yourself."""
        loop = _Loop(self._state, task, executors, max_iterations, params)
        for index in range(1, max_iterations + 1):
            request, prompt = loop.request(model=model, max_tokens=max_tokens)
            clock = _Clock()
            try:
                if stream:
                    async with self._client.messages.stream(**request) as events:
                        async for event in events:
                            clock.saw(event)
                        message = await events.get_final_message()
                else:
                    message = await self._client.messages.create(**request)
            except anthropic.APIError as exc:
                exc.loop_result = loop.result  # type: ignore[attr-defined]
                raise
            calls = loop.receive(message, index)
            answered = [(call, await loop.call_async(call, index, approve)) for call in calls]
            iteration = loop.answer(index, message, prompt, answered, clock)
            if on_iteration is not None:
                try:
                    seen = on_iteration(iteration)
                    if inspect.isawaitable(seen):
                        await seen
                except StopLoop:
                    return loop.result
            if iteration.correction is None and not calls:
                return loop.result
        raise loop.exhausted()


def wrap(
    client: _ClientT,
    *,
    composer: Composer | None = None,
    registry: Registry | None = None,
    mode: str,
    task_id: str,
    store: SessionStore | None = None,
    policy: Policy | None = None,
    search: ToolSearch | None = None,
    call_tool: bool = False,
    system_info: SystemInfo | None = None,
    baseline: bool = False,
) -> Any:
    """Wrap ``anthropic.Anthropic`` (→ :class:`ComposedClient`) or ``AsyncAnthropic`` (→ :class:`AsyncComposedClient`).

    ``composer`` (or ``registry``, default: the shipped docs) decides what is composed; ``store`` keeps the task
    sessions (default: a fresh :class:`InMemorySessionStore`); ``policy`` overrides the mode's promotion policy.
    ``search`` answers ``tool_search`` in discovery modes (default: ``ToolSearch(registry)``, built on the first
    search); ``call_tool=True`` adds the ``call_tool`` tool and lets the loop answer it (see the module docstring).
    ``system_info`` (e.g. ``SystemInfo.detect(root)``) fills the system information section; without it there is none.
    ``baseline=True`` sends what an agent without prompt-composer sends (every allowed tool in full, no fetch tool)
    on every request, for A/B runs such as ``prompt-composer bench``.
    """
    kwargs: dict[str, Any] = {
        "composer": composer,
        "registry": registry,
        "mode": mode,
        "task_id": task_id,
        "store": store,
        "policy": policy,
        "search": search,
        "call_tool": call_tool,
        "system_info": system_info,
        "baseline": baseline,
    }
    if isinstance(client, anthropic.AsyncAnthropic):
        return AsyncComposedClient(client, **kwargs)
    if isinstance(client, anthropic.Anthropic):
        return ComposedClient(client, **kwargs)
    raise TypeError(f"wrap() takes an anthropic.Anthropic or anthropic.AsyncAnthropic, not {type(client).__name__}")


# ------------------------------------------------------------------------------------------- the loop


@dataclass(frozen=True)
class TextToolCall:
    """One ``tool_call`` block read from an assistant's text. ``error`` says why the block could not be read
    (``name`` and ``input`` are then whatever could be salvaged: ``""`` and ``{}`` at worst)."""

    name: str
    input: Mapping[str, Any]
    error: str | None = None


# The opening fence starts a line (indentation allowed) and may carry trailing spaces; the block runs to the
# next line that is only a fence, or to the end of the text when the model never closed it.
_OPEN_FENCE = re.compile(r"^[ \t]*```tool_call[ \t]*(?:\r?\n|\Z)", re.MULTILINE)
_CLOSE_FENCE = re.compile(r"^[ \t]*```[ \t]*$", re.MULTILINE)
_CALL_KEYS = frozenset({"name", "input"})
_CALL_SHAPE = 'A ```tool_call block holds one JSON object: {"name": "<tool name>", "input": {<parameters>}}.'


def parse_tool_call_blocks(text: str) -> list[TextToolCall]:
    """Every ``tool_call`` fenced block of ``text``, in order (prose around them is ignored).

    A block must hold ``{"name": "<tool>", "input": {...}}``; ``input`` may be left out (no parameters). Bad
    JSON, another JSON type, a missing or empty ``name``, a non-object ``input`` or any other key give a
    :class:`TextToolCall` with ``error`` set, so the model can be told what to fix."""
    calls: list[TextToolCall] = []
    pos = 0
    while (opening := _OPEN_FENCE.search(text, pos)) is not None:
        closing = _CLOSE_FENCE.search(text, opening.end())
        body = text[opening.end() : closing.start() if closing else len(text)]
        pos = closing.end() if closing else len(text)
        calls.append(_read_call_block(body))
    return calls


def _read_call_block(body: str) -> TextToolCall:
    source = body.strip()
    if source.endswith("```"):  # the closing fence glued to the JSON's last line
        source = source[:-3].rstrip()
    if not source:
        return TextToolCall("", {}, "the tool_call block is empty")
    try:
        value = json.loads(source)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        return TextToolCall("", {}, f"the tool_call block is not valid JSON: {exc.msg} at {where}")
    if not isinstance(value, dict):
        return TextToolCall("", {}, f"the tool_call block holds a JSON {type(value).__name__}, not an object")
    name = value.get("name")
    if not isinstance(name, str) or not name.strip():
        return TextToolCall("", {}, 'the tool_call block has no "name" string')
    name = name.strip()
    tool_input = value.get("input", {})
    if not isinstance(tool_input, dict):
        kind = type(tool_input).__name__
        return TextToolCall(name, {}, f'the "input" of the tool_call block is a JSON {kind}, not an object')
    extra = sorted(set(value) - _CALL_KEYS)
    if extra:
        keys = ", ".join(json.dumps(k) for k in extra)
        return TextToolCall(name, tool_input, f"the tool_call block has unexpected keys {keys}")
    return TextToolCall(name, tool_input)


# A line the loop itself writes to start a text-style result, or a fence around one: a reply holding such a line
# wrote its own "result" (small models do, after an error) instead of waiting for a real one.
_RESULT_LABEL = re.compile(r"^[ \t]*(?:```[ \t]*tool_result\b|tool_result[ \t]+name=)", re.MULTILINE)
_IMITATION = (
    "Your last reply imitated a tool result; only the system writes those, and nothing was run. Do not write "
    "tool_result. Either call a tool with a ```tool_call block, or answer my question now in plain sentences "
    "from what the real results above showed."
)


def imitated_result(text: str) -> bool:
    """Whether an assistant's text imitates a tool result: a line that starts like the label the loop puts on
    results (``tool_result name=…``) or a fenced ``tool_result`` block."""
    return _RESULT_LABEL.search(text) is not None


def text_tool_result(name: str, texts: Iterable[str], *, is_error: bool = False) -> dict[str, Any]:
    """The text block answering one text-style call: a label line ``tool_result name=<name> ok|error``, then the
    output (and any text appended after it, one blank line apart)."""
    status = "error" if is_error else "ok"
    body = "\n\n".join(text or "(no output)" for text in texts)
    return {"type": "text", "text": f"tool_result name={name or '?'} {status}\n{body}"}


@dataclass(frozen=True)
class _Call:
    """A call to answer: a native ``tool_use`` block or a text-style ``tool_call`` block (``problem`` set when
    the block could not be read); ``via`` is ``"call_tool"`` for the inner call a ``call_tool`` call unwrapped to
    (same id and style)."""

    id: str
    name: str
    input: Mapping[str, Any]
    style: Literal["native", "text"] = "native"
    problem: str | None = None
    via: str | None = None


def _output_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _tool_result(call_id: str, texts: Iterable[str], *, is_error: bool = False) -> dict[str, Any]:
    content = [{"type": "text", "text": text or "(no output)"} for text in texts]
    result: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": content}
    if is_error:
        result["is_error"] = True
    return result


class _Loop:
    """The state of one tool-loop run, shared by the sync and async drivers."""

    def __init__(
        self,
        state: _State,
        task: str | Sequence[Mapping[str, Any]],
        executors: Mapping[str, ToolExecutor] | None,
        max_iterations: int,
        params: Mapping[str, Any],
    ) -> None:
        if max_iterations < 1:
            raise ValueError("max_iterations must be at least 1")
        self.state = state
        self.text_style = state.mode.config.tool_style == "text"
        self.session = state.session
        self.executors = dict(executors or {})
        self.max_iterations = max_iterations
        self.params = dict(params)
        tools = self.params.get("tools") or []
        self.caller_tools = {t.get("name") if isinstance(t, Mapping) else getattr(t, "name", None) for t in tools}
        # The tools the loop answers itself (a caller's tool of the same name is the caller's).
        self.searching = state.discovery and TOOL_SEARCH_NAME not in self.caller_tools
        self.unwrapping = state.call_tool and CALL_TOOL_NAME not in self.caller_tools
        initial: list[dict[str, Any]] = (
            [{"role": "user", "content": task}] if isinstance(task, str) else [dict(m) for m in task]
        )
        self.result = LoopResult(messages=initial)

    def request(self, *, model: str, max_tokens: int) -> tuple[dict[str, Any], ComposedPrompt]:
        return self.state.prepare({**self.params, "model": model, "max_tokens": max_tokens,
                                   "messages": self.result.messages}, session=self.session)  # fmt: skip

    def receive(self, message: Message, iteration: int) -> list[_Call]:
        """Record the assistant's message; the calls it asks for, in order: its ``tool_use`` blocks (when it
        stopped for them) and, in a text-style mode, the ``tool_call`` blocks of its text."""
        content = [block.to_dict(mode="json") for block in message.content]
        self.result.messages.append({"role": "assistant", "content": content})
        self.result.final_message = message
        self.result.stop_reason = message.stop_reason
        self.result.text = "".join(block.text for block in message.content if block.type == "text")
        calls: list[_Call] = []
        written = 0  # text-style calls so far: their ids are text_<iteration>_<n>
        for block in message.content:
            if block.type == "tool_use" and message.stop_reason == "tool_use":
                tool_input = cast(Mapping[str, Any], block.input) if isinstance(block.input, dict) else {}
                calls.append(_Call(block.id, block.name, tool_input))
            elif block.type == "text" and self.text_style:
                for parsed in parse_tool_call_blocks(block.text):
                    written += 1
                    calls.append(_Call(f"text_{iteration}_{written}", parsed.name, parsed.input, "text", parsed.error))
        return calls

    # -- answering one call ------------------------------------------------------------------------

    @staticmethod
    def fetch(state: _State, session: TaskSession, tool_input: Mapping[str, Any] | Any) -> FetchResult:
        result = handle_fetch(state.registry, state.mode, tool_input, session=session)
        if not result.is_error and state.policy == "inline":
            session.mark_expanded(result.tool)  # its full text is in the conversation now: no inline append
        return result

    def call_sync(self, call: _Call, iteration: int, approve: Callable[[PendingCall], bool] | None) -> ToolCallRecord:
        """Answer one call, whatever its style: checks, then approval, then the executor."""
        resolved = self.resolve(call, iteration)
        if isinstance(resolved, ToolCallRecord):
            return resolved
        if approve is not None and not approve(self.pending(resolved, iteration)):
            return self.denied(resolved, iteration)
        return self.execute_sync(resolved, iteration)

    async def call_async(
        self, call: _Call, iteration: int, approve: Callable[[PendingCall], bool | Awaitable[bool]] | None
    ) -> ToolCallRecord:
        """:meth:`call_sync` for the async loop: ``approve`` and the executor may be coroutines."""
        resolved = self.resolve(call, iteration)
        if isinstance(resolved, ToolCallRecord):
            return resolved
        if approve is not None:
            verdict = approve(self.pending(resolved, iteration))
            if not (await verdict if inspect.isawaitable(verdict) else verdict):
                return self.denied(resolved, iteration)
        return await self.execute_async(resolved, iteration)

    @staticmethod
    def pending(call: _Call, iteration: int) -> PendingCall:
        return PendingCall(call.id, call.name, call.input, iteration, call.via)

    def resolve(self, call: _Call, iteration: int) -> _Call | ToolCallRecord:
        """The call to approve and run (a ``call_tool`` call unwrapped to its inner call), or the record of a
        call answered here without an executor."""
        if call.problem is None and call.name == CALL_TOOL_NAME and self.unwrapping:
            checked = check_call(self.state.registry, self.state.mode, call.input)
            if isinstance(checked, CallResult):  # no name, not in the mode, bad arguments, a refused path
                reason = checked.content.removeprefix("Error: ")
                return self._record(call, iteration, checked.content, reason, 0.0)
            name, arguments = checked
            call = replace(call, name=name, input=arguments, via=CALL_TOOL_NAME)
        record = self.precheck(call, iteration)
        return call if record is None else record

    def precheck(self, call: _Call, iteration: int) -> ToolCallRecord | None:
        """The record of a call answered without running an executor (unreadable block, fetch, refusal), or
        None to run it."""
        mode = self.state.mode
        if call.problem is not None:
            text = f"Error: {call.problem}; nothing was run. {_CALL_SHAPE}"
            return self._record(call, iteration, text, call.problem, 0.0)
        if call.name == FETCH_TOOL_NAME and call.name not in self.caller_tools:
            fetched = self.fetch(self.state, self.session, call.input)
            error = "fetch refused" if fetched.is_error else None
            return self._record(call, iteration, fetched.content, error, 0.0)
        if call.name == TOOL_SEARCH_NAME and self.searching and call.via is None:
            # The tools found join the session; the next request's prompt lists them (see _State.prompt).
            found = handle_tool_search(self.state.searcher.get(), mode, call.input, session=self.session)
            return self._record(call, iteration, found.content, found.content if found.is_error else None, 0.0)
        if call.name not in self.caller_tools and not mode.allows(call.name):
            if call.name in self.state.registry.tools:
                hint = ", ".join(closest_names(call.name, mode.allowed))
                reason = f"tool {call.name!r} is not available in mode {mode.slug!r}; it was not run"
                text = f"Error: {reason}. Tools of this mode, closest first: {hint}."
            else:
                reason = f"there is no tool named {call.name!r}; nothing was run"
                text = f"Error: {reason}. Tools of this mode: {', '.join(mode.allowed)}."
            return self._record(call, iteration, text, reason, 0.0)
        doc = self.state.registry.tools.get(call.name)
        if doc is not None and call.name not in self.caller_tools:
            refusal = mode.check_paths(doc, call.input)
            if refusal is not None:
                return self._record(call, iteration, refusal, refusal.removeprefix("Error: "), 0.0)
        if call.name not in self.executors:
            reason = f"tool {call.name!r} has no executor here; it was not run"
            return self._record(call, iteration, f"Error: {reason}.", reason, 0.0)
        return None

    def denied(self, call: _Call, iteration: int) -> ToolCallRecord:
        reason = f"the call to {call.name!r} was denied by the user; it was not run"
        return self._record(call, iteration, f"Error: {reason}.", reason, 0.0)

    def execute_sync(self, call: _Call, iteration: int) -> ToolCallRecord:
        start = time.perf_counter()
        try:
            value = self.executors[call.name](call.input)
            if inspect.isawaitable(value):
                value = asyncio.run(_awaited(value))
        except Exception as exc:
            return self._failed(call, iteration, exc, time.perf_counter() - start)
        return self._executed(call, iteration, value, time.perf_counter() - start)

    async def execute_async(self, call: _Call, iteration: int) -> ToolCallRecord:
        start = time.perf_counter()
        try:
            value = self.executors[call.name](call.input)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            return self._failed(call, iteration, exc, time.perf_counter() - start)
        return self._executed(call, iteration, value, time.perf_counter() - start)

    def _failed(self, call: _Call, iteration: int, exc: Exception, duration: float) -> ToolCallRecord:
        detail = str(exc) if isinstance(exc, ExecutorError) else f"{type(exc).__name__}: {exc}"
        return self._record(call, iteration, f"Error: {call.name} failed: {detail}", detail, duration)

    def _executed(self, call: _Call, iteration: int, value: Any, duration: float) -> ToolCallRecord:
        """A successful call: recorded in the FIFO; under ``inline`` maybe expanded once."""
        output = _output_text(value)
        self.session.record_use(call.name)
        expanded = False
        if (
            self.state.policy == "inline"
            and call.name in self.state.registry.tools
            and call.name in self.state.prompt(self.session).brief
            and self.session.mark_expanded(call.name)
        ):
            expanded = True
        return ToolCallRecord(
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

    @staticmethod
    def _record(call: _Call, iteration: int, text: str, error: str | None, duration: float) -> ToolCallRecord:
        return ToolCallRecord(
            call.id, call.name, call.input, text, error is not None, error, duration, iteration, via=call.via
        )

    # -- closing one iteration ---------------------------------------------------------------------

    def answer(
        self,
        index: int,
        message: Message,
        prompt: ComposedPrompt,
        answered: Sequence[tuple[_Call, ToolCallRecord]],
        clock: _Clock,
    ) -> Iteration:
        """Send the answers back as one user message: a tool_result block per native call (first, as the API
        wants them), then a labelled text block per text-style call. A text-style reply with no call that
        imitates a tool result is not final: the loop says so in a user message (see :func:`imitated_result`)."""
        correction = None
        if not answered and self.text_style and imitated_result(self.result.text):
            correction = _IMITATION
            self.result.messages.append({"role": "user", "content": [{"type": "text", "text": correction}]})
        if answered:
            native: list[dict[str, Any]] = []
            text: list[dict[str, Any]] = []
            for call, record in answered:
                texts = [record.output]
                if record.expanded:
                    texts.append(inline_text(self.state.registry, record.name))
                if call.style == "text":  # labelled with the name the model called (call_tool, not its inner tool)
                    text.append(text_tool_result(call.name, texts, is_error=record.is_error))
                else:
                    native.append(_tool_result(record.id, texts, is_error=record.is_error))
            self.result.messages.append({"role": "user", "content": [*native, *text]})
        records = tuple(record for _, record in answered)
        usage = TokenUsage.of(message.usage)
        iteration = Iteration(index, message, usage, records, prompt, clock.elapsed(), clock.first, correction)
        self.result.iterations.append(iteration)
        return iteration

    def exhausted(self) -> MaxIterationsError:
        last = self.result.iterations[-1] if self.result.iterations else None
        if last is not None and last.correction is not None:
            what = "still imitated tool results instead of answering"
        else:
            what = "still asked for tools"
        return MaxIterationsError(
            f"the model {what} after max_iterations={self.max_iterations} requests "
            f"({len(self.result.tool_calls)} tool calls answered); the partial result is on .result",
            self.result,
        )


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value


class _Clock:
    """Times one request: the whole response, and (streaming) the first content block."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.first: float | None = None

    def saw(self, event: Any) -> None:
        if self.first is None and getattr(event, "type", "") in ("content_block_start", "content_block_delta"):
            self.first = time.perf_counter() - self.start

    def elapsed(self) -> float:
        return time.perf_counter() - self.start
