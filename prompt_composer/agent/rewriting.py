"""A :class:`~prompt_composer.discovery.rewrite.RequestRewriter` backed by a model, through a provider SDK client:
``wrap(client, ..., rewriter=model_rewriter(client, model=...))`` has each new user message put as the operation it
asks for before preselection searches it (docs/tool-choice.md, "The request as an operation").

The client is the plain SDK client (not a wrapped one: the rewrite is not a turn of the task, and is neither
composed nor logged as one): an ``anthropic.Anthropic`` or ``anthropic.AsyncAnthropic`` (Messages API), an
``openai.OpenAI`` or ``openai.AsyncOpenAI`` (Chat Completions, which every OpenAI-compatible server speaks). Over an
async client the rewriter is awaitable, awaited by the async loop and the wrapped async clients. Each rewriter counts
what its requests cost (``rewriter.usage``, ``rewriter.requests``): they are not turns of the task, so a loop's
``result.usage`` leaves them out. No SDK is imported here; the client's own methods are called.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Mapping
from typing import Any

from ..discovery.rewrite import (
    REWRITE_EXAMPLES,
    REWRITE_MAX_TOKENS,
    REWRITE_SYSTEM,
)
from .results import TokenUsage

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


def _anthropic_usage(response: Any) -> TokenUsage:
    return TokenUsage.of(getattr(response, "usage", None))


def _openai_text(response: Any) -> str:
    choices = getattr(response, "choices", None) or ()
    message = getattr(choices[0], "message", None) if choices else None
    return getattr(message, "content", None) or ""


class _Counted:
    """What a model rewriter's requests have cost so far (thread-safe: one rewriter may serve many tasks)."""

    def __init__(self, create: Any, request: Callable[[str], dict[str, Any]], provider: str) -> None:
        self._create = create
        self._request = request
        self._text_of = _anthropic_text if provider == "anthropic" else _openai_text
        self._usage_of = _anthropic_usage if provider == "anthropic" else TokenUsage.of_chat_completion
        self._lock = threading.Lock()
        self._usage = TokenUsage()
        self._requests = 0

    @property
    def usage(self) -> TokenUsage:
        """The tokens of every rewrite answered so far (a loop's ``result.usage`` counts only its own requests)."""
        with self._lock:
            return self._usage

    @property
    def requests(self) -> int:
        """How many rewrites were answered (a request that failed or timed out is not counted)."""
        with self._lock:
            return self._requests

    def _answer(self, response: Any) -> str | None:
        usage = self._usage_of(response)
        with self._lock:
            self._requests += 1
            self._usage += usage
        return self._text_of(response)


class ModelRewriter(_Counted):
    """A :class:`~prompt_composer.discovery.rewrite.RequestRewriter` over a synchronous client (:func:`model_rewriter`):
    call it with a request's text for its line; ``usage`` and ``requests`` say what it has cost."""

    def __call__(self, text: str, /) -> str | None:
        return self._answer(self._create(**self._request(text)))


class AsyncModelRewriter(_Counted):
    """An :class:`~prompt_composer.discovery.rewrite.AsyncRequestRewriter` over an async client
    (:func:`model_rewriter`): awaited by the async loop and the wrapped async clients; ``usage`` as
    :class:`ModelRewriter`'s."""

    async def __call__(self, text: str, /) -> str | None:
        return self._answer(await self._create(**self._request(text)))


def model_rewriter(
    client: Any,
    *,
    model: str,
    max_tokens: int = REWRITE_MAX_TOKENS,
    extra_body: Mapping[str, Any] | None = None,
    timeout: float = REWRITE_TIMEOUT_S,
) -> ModelRewriter | AsyncModelRewriter:
    """A rewriter asking ``model`` through ``client`` (see the module docstring), at most ``max_tokens`` tokens an
    answer, within ``timeout`` seconds and without retries (a rewrite that fails or times out leaves the request
    searched as written); ``extra_body`` goes with each request (e.g. ``{"temperature": 0}`` for a local server).
    Its ``usage`` is what its requests have cost (the tool loop's ``result.usage`` does not include it).

    Over an async client the rewriter is awaitable (an :class:`AsyncModelRewriter`): give it to a wrapped async
    client (any provider), whose loop and requests await it.

    A reasoning model spends tokens before it answers: give it a larger ``max_tokens``, or use a small model."""
    provider, create = _create(client, timeout)
    body = dict(extra_body or {})

    def request(text: str) -> dict[str, Any]:
        if provider == "anthropic":
            fields = {"model": model, "max_tokens": max_tokens, "system": REWRITE_SYSTEM, "messages": _turns(text)}
        else:
            messages = [{"role": "system", "content": REWRITE_SYSTEM}, *_turns(text)]
            # max_completion_tokens: OpenAI's name (its reasoning models refuse max_tokens); llama.cpp and vLLM
            # honour it.
            fields = {"model": model, "max_completion_tokens": max_tokens, "messages": messages}
        return {**fields, "extra_body": body}

    if inspect.iscoroutinefunction(inspect.unwrap(create)):
        return AsyncModelRewriter(create, request, provider)
    return ModelRewriter(create, request, provider)
