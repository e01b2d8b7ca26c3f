"""What a script says: the scripted replies the test server plays, and the helpers that build them.

A :class:`Reply` is a Messages API message (``status == 200``) or an API error, with its :class:`Usage` (both
from :mod:`.scripted`);
:func:`text_reply`, :func:`tool_use_reply` and :func:`error_reply` build the common ones, :func:`tool_search_reply`
and :func:`hosted_search_reply` the Responses API's tool searches. A reply renders itself as an Anthropic Messages
body; its OpenAI forms are built by :mod:`.wire` and :mod:`.responses_api`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .responses_api import response_body
from .scripted import ScriptedReply, Usage
from .wire import chat_completion_body

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
class Reply(ScriptedReply):
    """One scripted answer: a message (``status == 200``) or an API error, in every wire format the server
    speaks."""

    def chat_completion(self, *, completion_id: str, model: str) -> dict[str, Any]:
        """The full Chat Completions response body for this reply."""
        return chat_completion_body(self, completion_id=completion_id, model=model)

    def response(self, *, response_id: str, model: str, request: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The full Responses API body for this reply; ``request`` supplies the
        echoed settings (``tools``, ``tool_choice``, ``instructions``, ...).  Item
        ids share ``response_id``'s suffix: ``msg_<suffix>``, ``fc_<suffix>_<n>``."""
        return response_body(self, response_id=response_id, model=model, request=request)


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
