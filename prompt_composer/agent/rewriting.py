"""A :class:`~prompt_composer.discovery.rewrite.RequestRewriter` backed by a model, through a provider SDK client:
``wrap(client, ..., rewriter=model_rewriter(client, model=...))`` has each new user message put as the operation it
asks for before preselection searches it (docs/tool-choice.md, "The request as an operation").

The client is the plain SDK client (not a wrapped one: the rewrite is not a turn of the task, and is neither
composed nor logged as one): an ``anthropic.Anthropic`` or ``anthropic.AsyncAnthropic`` (Messages API), an
``openai.OpenAI`` or ``openai.AsyncOpenAI`` (Chat Completions, which every OpenAI-compatible server speaks). Over an
async client the rewriter is an ``async def``, awaited by the async loop and the wrapped async clients. No SDK is
imported here; the client's own methods are called.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from ..discovery.rewrite import (
    REWRITE_EXAMPLES,
    REWRITE_MAX_TOKENS,
    REWRITE_SYSTEM,
    AsyncRequestRewriter,
    RequestRewriter,
)

REWRITE_TIMEOUT_S = 30.0  # a cold local model takes a few seconds; a hosted one well under one


def _create(client: Any, timeout: float) -> tuple[str, Any]:
    """The provider of ``client`` and the method that sends a request (within ``timeout`` seconds, no retries; a
    coroutine function for an async client)."""
    packages = {cls.__module__.partition(".")[0] for cls in type(client).__mro__}
    if "anthropic" not in packages and "openai" not in packages:
        raise TypeError(
            f"model_rewriter() takes an anthropic.Anthropic or openai.OpenAI client, not {type(client).__name__}"
        )
    provider = "anthropic" if "anthropic" in packages else "openai"
    # A rewrite that does not come back soon is not worth waiting for: the request is then searched as written.
    quick = client.with_options(timeout=timeout, max_retries=0)
    create = quick.messages.create if provider == "anthropic" else quick.chat.completions.create
    return provider, create


def _turns(text: str) -> list[dict[str, str]]:
    turns: list[dict[str, str]] = []
    for request, operation in REWRITE_EXAMPLES:
        turns += [{"role": "user", "content": request}, {"role": "assistant", "content": operation}]
    return [*turns, {"role": "user", "content": text}]


def _anthropic_text(response: Any) -> str:
    return "".join(getattr(block, "text", "") for block in getattr(response, "content", None) or ())


def _openai_text(response: Any) -> str:
    choices = getattr(response, "choices", None) or ()
    message = getattr(choices[0], "message", None) if choices else None
    return getattr(message, "content", None) or ""


def model_rewriter(
    client: Any,
    *,
    model: str,
    max_tokens: int = REWRITE_MAX_TOKENS,
    extra_body: Mapping[str, Any] | None = None,
    timeout: float = REWRITE_TIMEOUT_S,
) -> RequestRewriter | AsyncRequestRewriter:
    """A rewriter asking ``model`` through ``client`` (see the module docstring), at most ``max_tokens`` tokens an
    answer, within ``timeout`` seconds and without retries (a rewrite that fails or times out leaves the request
    searched as written); ``extra_body`` goes with each request (e.g. ``{"temperature": 0}`` for a local server).

    Over an async client the rewriter is an ``async def`` (an :class:`AsyncRequestRewriter`): give it to the wrapped
    async client of the same provider family, whose loop and requests await it.

    A reasoning model spends tokens before it answers: give it a larger ``max_tokens``, or use a small model."""
    provider, create = _create(client, timeout)
    body = dict(extra_body or {})

    def request(text: str) -> dict[str, Any]:
        if provider == "anthropic":
            return {"model": model, "max_tokens": max_tokens, "system": REWRITE_SYSTEM, "messages": _turns(text)}
        messages = [{"role": "system", "content": REWRITE_SYSTEM}, *_turns(text)]
        # max_completion_tokens: OpenAI's name (its reasoning models refuse max_tokens); llama.cpp and vLLM honour it.
        return {"model": model, "max_completion_tokens": max_tokens, "messages": messages}

    text_of = _anthropic_text if provider == "anthropic" else _openai_text
    if inspect.iscoroutinefunction(inspect.unwrap(create)):

        async def rewrite_async(text: str, /) -> str | None:
            return text_of(await create(**request(text), extra_body=body))

        return rewrite_async

    def rewrite(text: str, /) -> str | None:
        return text_of(create(**request(text), extra_body=body))

    return rewrite
