"""A request put as the operation it asks for, searched beside the user's own words (opt-in; see
:func:`searched_text`).

Users state a situation or a need ("hop this repo back over to main", "what have you got on billing-api? I gave you
both last sprint"); tool docs state an operation ("switch branches", "open nodes of the knowledge graph"). Few
words are shared, so a lexical search misses and a small sentence encoder ranks by topic. A language model asked
to say, in a line of generic words, which operation a message asks for ("switch the git branch", "look up saved
notes about two services") bridges the two: Re-Invoke's intent extraction and Toolshed's query rewriting, at query
time, by the agent's own model. The line is searched *before* the request's own text, as one more step of it
(:mod:`.needs`), so the user's names and values still count.

This module holds what is provider-neutral: the prompt (:data:`REWRITE_SYSTEM`, :data:`REWRITE_EXAMPLES`, which
name no tool or server of the shipped docs or the benchmark catalogs, and came from no benchmark task), the
:class:`RequestRewriter` protocol a caller injects, and the guard on what comes back (:func:`usable_rewrite`). A
client-backed rewriter is :func:`prompt_composer.agent.rewriting.model_rewriter`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable
from typing import Protocol, TypeGuard

logger = logging.getLogger(__name__)

REWRITE_SYSTEM = (
    "You turn a user's message to a software assistant into a short plain description of the operation it asks "
    "for. Answer with one line: a verb, what it acts on, and the system or place it happens in. Use generic "
    "words, not the user's slang. Do not answer the message itself."
)
# Worked examples, sent as earlier turns: messages of domains no shipped or benchmark catalog has (calendar, weather,
# chat). Offering "none" for a message that asks nothing was tried and dropped: the small local model then answered
# "none" for more than half of the requests that need a tool (docs/benchmarks.md, "The request as an operation").
REWRITE_EXAMPLES: tuple[tuple[str, str], ...] = (
    (
        "ugh the 3pm with finance got moved again, can you push it to thursday same time",
        "reschedule a calendar event to another day",
    ),
    (
        "whats the weather gonna be like in oslo tmrw, need to know if i bring an umbrella",
        "get the weather forecast for a city",
    ),
    ("ping the on-call channel in slack that the deploy is rolling back", "send a message to a chat channel"),
)
# A longer answer is the model answering the message (a question it knows the answer to), not naming an operation:
# it is not searched. Neither is an answer of "none".
MAX_REWRITE_WORDS = 16
REWRITE_MAX_TOKENS = 40  # generous for a line of at most MAX_REWRITE_WORDS words
NO_OPERATION = "none"


class RequestRewriter(Protocol):
    """Puts a user's request as the operation it asks for, in one line (``None`` or ``"none"``: no operation).

    Called once per new user message of a task, before preselection searches it; an exception it raises is logged
    and the request is searched as written. The async loop and the wrapped async clients run it in a worker thread,
    so their event loop goes on meanwhile; an :class:`AsyncRequestRewriter` is awaited there instead."""

    def __call__(self, text: str, /) -> str | None: ...


class AsyncRequestRewriter(Protocol):
    """A :class:`RequestRewriter` to await (``async def``): asked by the async tool loop and by the wrapped async
    clients without blocking their event loop."""

    def __call__(self, text: str, /) -> Awaitable[str | None]: ...


def usable_rewrite(answer: str | None) -> str | None:
    """The line of ``answer`` worth searching: its first line, trimmed of quotes and a final full stop; ``None``
    when there is none, when it is :data:`NO_OPERATION`, or when it runs past :data:`MAX_REWRITE_WORDS` words."""
    if not answer:
        return None
    line = next((part for part in answer.strip().splitlines() if part.strip()), "")
    line = line.strip().strip("\"'`").strip().rstrip(".").strip()
    if not line or line.lower().rstrip(".!") == NO_OPERATION:
        return None
    if len(line.split()) > MAX_REWRITE_WORDS:
        return None
    return line


def rewrite_line(text: str, rewriter: RequestRewriter | AsyncRequestRewriter | None) -> str | None:
    """The line ``rewriter`` puts ``text`` as, worth searching (:func:`usable_rewrite`); ``None`` without a
    rewriter, for a blank text, or when the rewriter fails or answers with no text (logged, never raised: a request
    is never lost to it). An async rewriter's coroutine cannot be awaited here: it is closed and logged (the async
    loop and async clients await it, see :func:`rewrite_line_async`)."""
    if rewriter is None or not text.strip():
        return None
    try:
        answer: object = rewriter(text)
    except Exception as exc:  # any failure of an injected model call: search the words as written
        _failed(exc)
        return None
    return _line(answer)


async def rewrite_line_async(text: str, rewriter: RequestRewriter | AsyncRequestRewriter | None) -> str | None:
    """:func:`rewrite_line` without blocking the event loop: an async rewriter is awaited, a synchronous one runs in
    a worker thread (``asyncio.to_thread``), so other tasks of the loop go on while the model answers."""
    if rewriter is None or not text.strip():
        return None
    try:
        answer: object
        if is_async_rewriter(rewriter):
            answer = await rewriter(text)
        else:
            answer = await asyncio.to_thread(rewriter, text)
            if inspect.isawaitable(answer):  # e.g. a lambda returning a coroutine: it is awaited all the same
                answer = await answer
    except Exception as exc:  # as in rewrite_line
        _failed(exc)
        return None
    return _line(answer)


def is_async_rewriter(rewriter: object) -> TypeGuard[AsyncRequestRewriter]:
    """Whether calling ``rewriter`` returns a coroutine (an ``async def`` function, or an object whose
    ``__call__`` is one)."""
    call = getattr(rewriter, "__call__", None)  # noqa: B004 (the attribute itself is inspected, not callability)
    return inspect.iscoroutinefunction(rewriter) or inspect.iscoroutinefunction(call)


def searched_with(text: str, line: str | None) -> str:
    """What preselection searches for ``text`` given the rewriter's ``line``: the line, then the request itself
    (each a step of the search); ``text`` alone without a line."""
    return f"{line}. {text}" if line else text


def searched_text(text: str, rewriter: RequestRewriter | None) -> tuple[str, str | None]:
    """What preselection searches for ``text`` (:func:`searched_with`), asking ``rewriter`` for the line
    (:func:`rewrite_line`), and the line (``None``: ``text`` alone, as without a rewriter)."""
    line = rewrite_line(text, rewriter)
    return searched_with(text, line), line


def _failed(exc: Exception) -> None:
    logger.warning("request rewriter failed (%s: %s); searching the request as written", type(exc).__name__, exc)


def _line(answer: object) -> str | None:
    if inspect.iscoroutine(answer):  # an async rewriter where nothing awaits (a synchronous client or loop)
        answer.close()  # never awaited: closed, so it does not warn at collection
        logger.warning(
            "request rewriter is async, and a synchronous client cannot await it (use the async client); "
            "searching the request as written"
        )
        return None
    if answer is not None and not isinstance(answer, str):  # e.g. an SDK response object
        logger.warning(
            "request rewriter returned %s, not text; searching the request as written", type(answer).__name__
        )
        return None
    return usable_rewrite(answer)
