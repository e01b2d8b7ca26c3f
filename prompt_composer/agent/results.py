"""What the tool loop produces, whatever the provider: token usage, the calls it answered, each iteration, the
whole result, and the errors that carry the partial result."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.prompt import ComposedPrompt
from ..errors import PromptComposerError


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

    @classmethod
    def of_chat_completion(cls, response: Any) -> TokenUsage:
        """From a Chat Completions response: cached input from ``prompt_tokens_details.cached_tokens``, else from
        llama.cpp's ``timings.cache_n``; ``input_tokens`` is the rest of ``prompt_tokens``."""
        usage = getattr(response, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        output = int(getattr(usage, "completion_tokens", 0) or 0)
        details = getattr(usage, "prompt_tokens_details", None)
        cached = getattr(details, "cached_tokens", None)
        if cached is None:
            timings = (getattr(response, "model_extra", None) or {}).get("timings")
            cached = timings.get("cache_n") if isinstance(timings, Mapping) else None
        cached = min(int(cached or 0), prompt)
        return cls(input_tokens=prompt - cached, output_tokens=output, cache_read_input_tokens=cached)

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
    references: tuple[str, ...] = ()  # deferred tools this answer loads (native deferral)

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
            "references": list(self.references),
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
    # After repeated fetches (Loop.force): the tool this request asked for, or "" when it offered no fetch tool;
    # "(answer)" when, after the same calls twice with the same results, it asked for an answer (tool choice none).
    forced: str | None = None


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
