"""What a script says: the scripted replies the test server plays, and the helpers that build them.

A :class:`Reply` is a Messages API message (``status == 200``) or an API error, with its :class:`Usage`;
:func:`text_reply`, :func:`tool_use_reply` and :func:`error_reply` build the common ones, :func:`tool_search_reply`
and :func:`hosted_search_reply` the Responses API's tool searches. A reply renders itself as an Anthropic Messages
body; its OpenAI forms are built by :mod:`.wire` and :mod:`.responses_api`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .responses_api import response_body
from .wire import chat_completion_body, chat_finish_reason, chat_tool_calls, openai_error

ToolCall = tuple[str, Mapping[str, Any]] | tuple[str, str, Mapping[str, Any]]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass(frozen=True)
class Usage:
    """Token counts, echoed exactly in a Messages response's ``usage`` (OpenAI
    formats fold the cache counts in, see :meth:`chat_usage`)."""

    input_tokens: int = 10
    output_tokens: int = 5
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def to_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "output_tokens": self.output_tokens,
        }

    @property
    def prompt_tokens(self) -> int:
        """Every input token, cached or not (OpenAI counts cache hits inside the prompt)."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens

    def chat_usage(self) -> dict[str, Any]:
        """The Chat Completions ``usage``: ``prompt_tokens`` is :attr:`prompt_tokens`,
        ``prompt_tokens_details.cached_tokens`` the cache reads."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.output_tokens,
            "total_tokens": self.prompt_tokens + self.output_tokens,
            "prompt_tokens_details": {"cached_tokens": self.cache_read_input_tokens},
        }

    def responses_usage(self) -> dict[str, Any]:
        """The Responses API ``usage``, counted like :meth:`chat_usage`; also
        ``input_tokens_details.cache_write_tokens`` (cache creation), which the
        ``openai`` SDK's model requires."""
        return {
            "input_tokens": self.prompt_tokens,
            "input_tokens_details": {
                "cached_tokens": self.cache_read_input_tokens,
                "cache_write_tokens": self.cache_creation_input_tokens,
            },
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": self.prompt_tokens + self.output_tokens,
        }


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a message (``status == 200``) or an API error."""

    content: tuple[dict[str, Any], ...] = ()
    stop_reason: str | None = "end_turn"
    usage: Usage = field(default_factory=Usage)
    status: int = 200
    error_type: str = "api_error"
    error_message: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_error(self) -> bool:
        return self.status >= 400

    def message(self, *, msg_id: str, model: str) -> dict[str, Any]:
        """The full Messages API response body for this reply."""
        return {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [dict(block) for block in self.content],
            "stop_reason": self.stop_reason,
            "stop_sequence": None,
            "usage": self.usage.to_dict(),
        }

    def error_body(self) -> dict[str, Any]:
        return {"type": "error", "error": {"type": self.error_type, "message": self.error_message}}

    # -- OpenAI wire formats (built in wire.py)
    @property
    def text(self) -> str | None:
        """The text blocks joined with ``""``; ``None`` when there are none."""
        texts = [str(block.get("text", "")) for block in self.content if block.get("type") == "text"]
        return "".join(texts) if texts else None

    @property
    def finish_reason(self) -> str:
        """``stop_reason`` as a Chat Completions ``finish_reason``."""
        return chat_finish_reason(self.stop_reason)

    def tool_calls(self) -> list[dict[str, Any]]:
        """The ``tool_use`` blocks as Chat Completions ``tool_calls``."""
        return chat_tool_calls(self.content)

    def chat_completion(self, *, completion_id: str, model: str) -> dict[str, Any]:
        """The full Chat Completions response body for this reply."""
        return chat_completion_body(self, completion_id=completion_id, model=model)

    def response(self, *, response_id: str, model: str, request: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The full Responses API body for this reply; ``request`` supplies the
        echoed settings (``tools``, ``tool_choice``, ``instructions``, ...).  Item
        ids share ``response_id``'s suffix: ``msg_<suffix>``, ``fc_<suffix>_<n>``."""
        return response_body(self, response_id=response_id, model=model, request=request)

    def openai_error_body(self) -> dict[str, Any]:
        """This error in OpenAI's shape (``error_type`` and message kept as scripted)."""
        return openai_error(self.error_type, self.error_message)


def text_reply(text: str, *, stop_reason: str = "end_turn", usage: Usage | None = None) -> Reply:
    """A message with a single text block (``stop_reason`` ``"end_turn"`` by default)."""
    return Reply(
        content=({"type": "text", "text": text},),
        stop_reason=stop_reason,
        usage=usage or Usage(),
    )


def _tool_id(index: int, name: str, tool_input: Mapping[str, Any]) -> str:
    seed = json.dumps([index, name, tool_input], sort_keys=True, default=str)
    return "toolu_" + hashlib.sha256(seed.encode()).hexdigest()[:24]


def tool_use_reply(*calls: ToolCall, text: str | None = None, usage: Usage | None = None) -> Reply:
    """A ``stop_reason: "tool_use"`` message: optional text block, then one
    ``tool_use`` block per call.

    A call is ``(name, input)`` or ``(id, name, input)``.  Missing ids are
    ``toolu_`` + 24 hex digits derived from (position, name, input): deterministic,
    so identical calls in two replies get the same id; pass ids to avoid that.
    """
    if not calls:
        raise ValueError("tool_use_reply needs at least one call")
    blocks: list[dict[str, Any]] = []
    if text is not None:
        blocks.append({"type": "text", "text": text})
    for index, call in enumerate(calls):
        if len(call) == 2:
            name, tool_input = call
            tool_id = _tool_id(index, name, tool_input)
        elif len(call) == 3:
            tool_id, name, tool_input = call
        else:  # pragma: no cover - guarded by the type
            raise ValueError(f"a tool call is (name, input) or (id, name, input), got {call!r}")
        blocks.append({"type": "tool_use", "id": tool_id, "name": name, "input": dict(tool_input)})
    return Reply(content=tuple(blocks), stop_reason="tool_use", usage=usage or Usage())


def _calls(calls: tuple[ToolCall, ...]) -> list[dict[str, Any]]:
    return list(tool_use_reply(*calls).content) if calls else []


def tool_search_reply(
    arguments: str | Mapping[str, Any], *, call_id: str | None = None, text: str | None = None,
    usage: Usage | None = None,
) -> Reply:  # fmt: skip
    """A Responses API reply that asks the client to search its deferred tools: a ``tool_search_call`` item with
    ``"execution": "client"`` (after a message when ``text`` is given). ``arguments`` is the tool's input, or a
    query string (``{"query": ...}``). ``call_id`` defaults to ``ts_`` + 24 hex digits derived from the arguments.
    The other wire formats carry only its text."""
    args = {"query": arguments} if isinstance(arguments, str) else dict(arguments)
    call_id = call_id or "ts_" + hashlib.sha256(json.dumps(args, sort_keys=True).encode()).hexdigest()[:24]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text is not None else []
    blocks.append({"type": "tool_search_call", "id": call_id, "execution": "client", "arguments": args})
    return Reply(content=tuple(blocks), stop_reason="tool_use", usage=usage or Usage())


def hosted_search_reply(
    query: str, loaded: Sequence[str], *calls: ToolCall, text: str | None = None, usage: Usage | None = None
) -> Reply:
    """A Responses API reply in which OpenAI's hosted tool search ran: a ``tool_search_call`` and a
    ``tool_search_output`` (``"execution": "server"``) loading the deferred functions ``loaded`` (the server copies
    the request's declarations), then a ``function_call`` per call, as in :func:`tool_use_reply`."""
    search_id = "ts_" + hashlib.sha256(query.encode()).hexdigest()[:24]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text is not None else []
    blocks.append({"type": "tool_search_call", "id": search_id, "execution": "server", "arguments": {"query": query}})
    blocks.append({"type": "tool_search_output", "id": search_id, "execution": "server", "load": list(loaded)})
    blocks += _calls(calls)
    return Reply(content=tuple(blocks), stop_reason="tool_use" if calls else "end_turn", usage=usage or Usage())


def error_reply(status: int, error_type: str | None = None, message: str | None = None) -> Reply:
    """An API error: ``{"type": "error", "error": {"type": ..., "message": ...}}``
    with HTTP ``status``.

    ``error_type`` defaults to the API's type for the status (429
    ``rate_limit_error``, 500 ``api_error``, 529 ``overloaded_error``, ...;
    ``overloaded_error`` for anything unlisted).  The response carries
    ``retry-after: 0`` and ``retry-after-ms: 1`` so SDK retries are immediate.
    """
    if status < 400:
        raise ValueError(f"error_reply needs an error status, got {status}")
    etype = error_type or _ERROR_TYPES.get(status, "overloaded_error")
    return Reply(
        status=status,
        stop_reason=None,
        error_type=etype,
        error_message=message if message is not None else f"scripted {etype} ({status})",
        headers={"retry-after": "0", "retry-after-ms": "1"},
    )
