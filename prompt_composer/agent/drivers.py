"""The effects the tool loop yields, and the two drivers that perform them.

The loop (:meth:`prompt_composer.agent.engine.Loop.steps`) is a generator that makes every decision and *yields*
what it needs done: send a request, ask ``approve``, run an executor, show ``on_iteration`` an iteration, ask the
request rewriter for a new user message's line.
:func:`drive` and :func:`drive_async` perform those effects, synchronously or with ``await``, and hold no decision
of their own; so the sync and async loops cannot drift apart.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any

from ..discovery.rewrite import AsyncRequestRewriter, RequestRewriter, rewrite_line, rewrite_line_async
from ..safety.executors import ToolExecutor
from .adapter import Clock
from .results import Iteration, LoopResult, PendingCall


@dataclass(frozen=True)
class SendRequest:
    """Send one request (the adapter's ``send`` / ``send_async``), timed by ``clock``."""

    request: dict[str, Any]
    stream: bool
    clock: Clock


@dataclass(frozen=True)
class AskApproval:
    """Ask the ``approve`` callback about one call."""

    call: PendingCall


@dataclass(frozen=True)
class RunExecutor:
    """Run one tool's executor on the call's input."""

    executor: ToolExecutor
    input: Mapping[str, Any]


@dataclass(frozen=True)
class ShowIteration:
    """Show the ``on_iteration`` callback one iteration."""

    iteration: Iteration


@dataclass(frozen=True)
class AskRewriter:
    """Ask the request rewriter for the line of a new user message (its value: the line, or ``None``)."""

    rewriter: RequestRewriter | AsyncRequestRewriter
    text: str


Effect = SendRequest | AskApproval | RunExecutor | ShowIteration | AskRewriter
Steps = Generator[Effect, Any, LoopResult]  # what Loop.steps returns: effects out, their values in, the result last
Send = Callable[[dict[str, Any], bool, Clock], Any]  # (request, stream, clock) -> the SDK's response, or an awaitable


def _perform(
    effect: Effect,
    send: Send,
    approve: Callable[..., Any] | None,
    observe: Callable[..., Any] | None,
    *,
    awaiting: bool,
) -> Any:
    """Start one effect; its value may be awaitable (an async SDK call, an async executor or callback, and with
    ``awaiting`` the rewriter's line, asked in a worker thread or awaited)."""
    if isinstance(effect, AskRewriter):
        if awaiting:
            return rewrite_line_async(effect.text, effect.rewriter)
        return rewrite_line(effect.text, effect.rewriter)
    if isinstance(effect, SendRequest):
        return send(effect.request, effect.stream, effect.clock)
    if isinstance(effect, AskApproval):
        assert approve is not None  # the loop asks only when there is an approve callback
        return approve(effect.call)
    if isinstance(effect, RunExecutor):
        return effect.executor(effect.input)
    assert observe is not None
    return observe(effect.iteration)


async def _run(steps: Steps, perform: Callable[[Effect], Any], *, awaiting: bool) -> LoopResult:
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
    return await _run(steps, lambda effect: _perform(effect, send, approve, observe, awaiting=True), awaiting=True)


def drive(
    steps: Steps, send: Send, approve: Callable[..., Any] | None, observe: Callable[..., Any] | None
) -> LoopResult:
    """Run the loop synchronously, with no event loop of its own.

    The same driver as :func:`drive_async`, stepped by hand: it awaits nothing here (an async executor or callback
    is run to completion with ``asyncio.run`` first, which needs no running event loop: inside one, use the async
    client), so one ``send(None)`` runs the coroutine to its end."""

    def perform(effect: Effect) -> Any:
        value = _perform(effect, send, approve, observe, awaiting=False)
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
