"""A scripted, local stand-in for the Anthropic Messages API and OpenAI's
Chat Completions and Responses APIs.

``ScriptedMessagesServer`` listens on ``127.0.0.1`` (an ephemeral port by default)
and speaks enough of both wire formats for the real ``anthropic`` and ``openai``
SDKs to work against it; the request's path picks the format.  Every
``POST /v1/messages``, ``/v1/chat/completions`` or ``/v1/responses`` plays the
next scripted :class:`Reply` from one shared queue; every request (whatever its
path) is recorded.  Standard library only.

Example::

    with ScriptedMessagesServer([tool_use_reply(("list_files", {"path": "."})),
                                 text_reply("done")]) as server:
        client = anthropic.Anthropic(base_url=server.base_url, api_key="k", max_retries=0)
        # or: openai.OpenAI(base_url=server.base_url + "/v1", api_key="k", max_retries=0)
        ...
        client.close()
    server.requests[0].body["messages"]

Behaviour (Anthropic Messages API):

* ``POST /v1/messages`` (any query string, e.g. ``?beta=true``): plays the next
  reply.  Queued replies (the list given to the constructor plus everything
  passed to :meth:`ScriptedMessagesServer.add`) are played first, in order; when
  the queue is empty a callable script, if one was given, is asked for the reply.
  The response's ``model`` echoes the request's ``model`` (the constructor's
  ``model`` is only the fallback when a request has none); message ids are
  ``msg_test_0001``, ``msg_test_0002``, ... in request order.  With
  ``"stream": true`` the reply is sent as server-sent events in the same event
  sequence as the real API (see :func:`sse_events`).  Request bodies are not
  validated.
* When nothing is left to play the server answers **500** with
  ``{"type": "error", "error": {"type": "api_error", "message": "... script
  exhausted ..."}}`` and the header ``x-should-retry: false``, which the SDK
  obeys, so it never retries it (whatever ``max_retries`` is) and raises
  ``anthropic.InternalServerError`` at once.  A callable script that raises is
  reported the same way (message ``"script callable raised ..."``).
* Scripted errors (:func:`error_reply`) are answered as plain JSON errors (also
  for streaming requests) with ``retry-after: 0`` and ``retry-after-ms: 1``:
  the SDK ignores a zero ``retry-after`` and would back off ~0.5 s, but honours
  ``retry-after-ms``, so its retries are immediate.
* ``POST /v1/messages/count_tokens``: ``{"input_tokens": N}`` with
  ``N = max(1, len(json.dumps(body, sort_keys=True, separators=(",", ":"))) // 4)``;
  it does not consume a scripted reply.
* Any other path: 404 ``not_found_error``; a known path with a method other than
  POST: 405.  Headers such as ``anthropic-version`` or ``anthropic-beta`` are
  ignored (but recorded); the key is not checked.

Behaviour (OpenAI; each route is also served without the ``/v1`` prefix, for
clients given a ``base_url`` without it; any query string is ignored):

* The same queue, callable script, numbering and request recording as above;
  the request's ``model`` is echoed the same way.  Only ``text`` and
  ``tool_use`` blocks are carried over; the text blocks are joined with ``""``.
  ``usage`` folds the cache counts in the way OpenAI-compatible caches report
  them: prompt / input tokens = ``input_tokens + cache_read_input_tokens +
  cache_creation_input_tokens`` and ``cached_tokens`` =
  ``cache_read_input_tokens`` (see :meth:`Usage.chat_usage`; the Responses
  usage adds ``cache_write_tokens`` = ``cache_creation_input_tokens``, a field
  the ``openai`` SDK requires).  Every answer on these routes carries
  ``x-request-id: req_test_NNNN`` (the header the ``openai`` SDK reads).
* ``POST /v1/chat/completions``: a ``chat.completion`` with id
  ``chatcmpl_test_0001``, ... and one choice whose message has ``content``
  (``null`` without text) and one ``tool_calls`` entry per ``tool_use`` block
  (``id`` = the block's id, ``function.arguments`` = ``json.dumps(input)``; the
  key is omitted when there are none).  ``finish_reason`` maps ``stop_reason``:
  ``tool_use`` -> ``tool_calls``, ``max_tokens`` -> ``length``, anything else ->
  ``stop``.  With ``"stream": true``: ``data:`` lines (no ``event:`` lines) in the
  real chunk sequence (see :func:`chat_completion_chunks`), then
  ``data: [DONE]``; the usage chunk only comes with
  ``"stream_options": {"include_usage": true}``.
* ``POST /v1/responses`` (not streamed): a ``response`` with id
  ``resp_test_0001``, ...; ``output`` holds a ``message`` item (one
  ``output_text`` part) when there is text, then one ``function_call`` item per
  ``tool_use`` block (``call_id`` = the block's id).  ``status`` is
  ``"completed"`` (``"incomplete"`` with ``incomplete_details.reason``
  ``"max_output_tokens"`` for ``stop_reason`` ``max_tokens``); ``tools``,
  ``tool_choice``, ``instructions``, ... echo the request.  ``"stream": true`` is
  answered **400** (``param`` ``"stream"``) without consuming a reply or a number.
* Errors use OpenAI's shape ``{"error": {"message", "type", "param": null,
  "code": null}}`` with the same statuses and headers as above: scripted errors
  keep their ``error_type`` and message (and ``retry-after-ms: 1``, which the
  ``openai`` SDK honours too, so its retries are immediate); an exhausted or
  failing script is a 500 ``server_error`` with ``x-should-retry: false``, so
  ``openai.InternalServerError`` is raised at once; a method other than POST is
  a 405 and a body that is not a JSON object a 400 (``invalid_request_error``).
  Unknown paths keep the Anthropic-shaped 404 above; there is no OpenAI
  counterpart of ``count_tokens``.

:attr:`ScriptedMessagesServer.requests` holds **every** request received
(messages, chat completions, responses, count_tokens, 404s, ...) in arrival
order, each recorded before its response is sent; filter on ``path`` when you
only want some calls.

Command line (used by the README example)::

    python -m prompt_composer.testserver --script FILE.json [--port N] [--linger S]
    python -m prompt_composer.testserver --demo

prints ``READY http://127.0.0.1:PORT`` and serves until killed, or until the
script has been played out and ``--linger`` seconds (default 1) have passed.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import itertools
import json
import socket
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

ToolCall = tuple[str, Mapping[str, Any]] | tuple[str, str, Mapping[str, Any]]
Script = Sequence["Reply"] | Callable[[dict[str, Any]], "Reply"]

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

# Stop reasons without a Chat Completions counterpart (pause_turn, refusal, ...) become "stop".
_FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length"}
# A fixed ``created`` / ``created_at`` keeps OpenAI-format responses reproducible.
_CREATED = 1_700_000_000


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

    # -- OpenAI wire formats
    @property
    def text(self) -> str | None:
        """The text blocks joined with ``""``; ``None`` when there are none."""
        texts = [str(block.get("text", "")) for block in self.content if block.get("type") == "text"]
        return "".join(texts) if texts else None

    @property
    def finish_reason(self) -> str:
        """``stop_reason`` as a Chat Completions ``finish_reason``."""
        return _FINISH_REASONS.get(self.stop_reason or "", "stop")

    def tool_calls(self) -> list[dict[str, Any]]:
        """The ``tool_use`` blocks as Chat Completions ``tool_calls``."""
        return [
            {
                "id": str(block["id"]),
                "type": "function",
                "function": {"name": str(block["name"]), "arguments": json.dumps(block.get("input", {}))},
            }
            for block in self.content
            if block.get("type") == "tool_use"
        ]

    def chat_completion(self, *, completion_id: str, model: str) -> dict[str, Any]:
        """The full Chat Completions response body for this reply."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text, "refusal": None, "annotations": []}
        calls = self.tool_calls()
        if calls:
            message["tool_calls"] = calls
        return {
            "id": completion_id,
            "object": "chat.completion",
            "created": _CREATED,
            "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": self.finish_reason}],
            "usage": self.usage.chat_usage(),
            "system_fingerprint": None,
        }

    def response(self, *, response_id: str, model: str, request: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The full Responses API body for this reply; ``request`` supplies the
        echoed settings (``tools``, ``tool_choice``, ``instructions``, ...).  Item
        ids share ``response_id``'s suffix: ``msg_<suffix>``, ``fc_<suffix>_<n>``."""
        request = request or {}
        suffix = response_id.removeprefix("resp_")
        incomplete = self.stop_reason == "max_tokens"
        status = "incomplete" if incomplete else "completed"
        output: list[dict[str, Any]] = []
        text = self.text
        if text is not None:
            part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
            output.append(
                {"type": "message", "id": f"msg_{suffix}", "role": "assistant", "status": status, "content": [part]}
            )
        for number, call in enumerate(self.tool_calls(), start=1):
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_{suffix}_{number}",
                    "call_id": call["id"],
                    "name": call["function"]["name"],
                    "arguments": call["function"]["arguments"],
                    "status": "completed",
                }
            )
        return {
            "id": response_id,
            "object": "response",
            "created_at": _CREATED,
            "status": status,
            "completed_at": None if incomplete else _CREATED,
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
            "instructions": request.get("instructions"),
            "max_output_tokens": request.get("max_output_tokens"),
            "model": model,
            "output": output,
            "parallel_tool_calls": request.get("parallel_tool_calls") is not False,
            "previous_response_id": request.get("previous_response_id"),
            "reasoning": {"effort": None, "summary": None},
            "temperature": request.get("temperature", 1.0),
            "text": {"format": {"type": "text"}},
            "tool_choice": request.get("tool_choice") or "auto",
            "tools": request.get("tools") or [],
            "top_p": request.get("top_p", 1.0),
            "truncation": "disabled",
            "usage": self.usage.responses_usage(),
            "user": None,
            "metadata": request.get("metadata") or {},
        }

    def openai_error_body(self) -> dict[str, Any]:
        """This error in OpenAI's shape (``error_type`` and message kept as scripted)."""
        return _openai_error(self.error_type, self.error_message)


def _openai_error(etype: str, message: str, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": etype, "param": param, "code": None}}


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


@dataclass
class RecordedRequest:
    """A request as received: ``headers`` keys are lower-cased; ``path`` keeps
    the query string; ``body`` is the parsed JSON object (``{}`` when empty,
    ``{"_raw": text}`` when not a JSON object)."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


# --------------------------------------------------------------------------- SSE


def _chunks(text: str, parts: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


def sse_events(reply: Reply, *, msg_id: str, model: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The ``(event, data)`` pairs the real API streams for ``reply``.

    ``message_start`` carries the message with empty content and the scripted
    input/cache token counts with ``output_tokens`` ``min(1, N)``; then a
    ``ping``; per block ``content_block_start`` (text ``""`` / tool ``input: {}``),
    ``text_delta`` chunks or ``input_json_delta`` pieces (the first one ``""``,
    as the API does), ``content_block_stop``; then ``message_delta`` whose
    ``usage`` holds the cumulative totals (all four counts, so the SDK's
    accumulator ends with exactly the scripted usage) and ``message_stop``.
    """
    usage = reply.usage.to_dict()
    start = reply.message(msg_id=msg_id, model=model)
    start.update(content=[], stop_reason=None, usage={**usage, "output_tokens": min(1, reply.usage.output_tokens)})
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(reply.content):
        btype = block.get("type")
        if btype == "text":
            first: dict[str, Any] = {**block, "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in _chunks(str(block["text"]), 2)]
        elif btype == "tool_use":
            first = {**block, "input": {}}
            pieces = ["", *_chunks(json.dumps(block.get("input", {})), 3)]
            deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]
        else:
            first, deltas = dict(block), []
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": first}
        for delta in deltas:
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
            "usage": usage,
        },
    )
    yield "message_stop", {"type": "message_stop"}


def chat_completion_chunks(
    reply: Reply, *, completion_id: str, model: str, include_usage: bool = False
) -> Iterator[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects the real API streams for ``reply``
    (each sent as a ``data:`` line; ``data: [DONE]`` follows them).

    First a chunk whose delta is ``{"role": "assistant", "content": ""}``
    (``content`` ``null`` when the reply has no text, so the accumulated message
    matches the non-streamed one); then the text in content deltas (two pieces
    when it is at least two characters long); per tool call a delta carrying
    ``index``, ``id``, ``type``, ``function.name`` and ``arguments`` ``""``, then
    argument pieces carrying only ``index`` and ``function.arguments``; then an
    empty delta with the ``finish_reason``.  With ``include_usage`` every chunk
    has ``"usage": null`` and a last chunk with ``choices: []`` holds the usage.
    """
    head: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": _CREATED,
        "model": model,
        "system_fingerprint": None,
    }
    if include_usage:
        head["usage"] = None

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return {**head, "choices": [choice]}

    text = reply.text
    yield chunk({"role": "assistant", "content": None if text is None else "", "refusal": None})
    for piece in _chunks(text or "", 2):
        yield chunk({"content": piece})
    for index, call in enumerate(reply.tool_calls()):
        function = call["function"]
        start = {"index": index, "id": call["id"], "type": "function"}
        yield chunk({"tool_calls": [{**start, "function": {"name": function["name"], "arguments": ""}}]})
        for piece in _chunks(function["arguments"], 3):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, reply.finish_reason)
    if include_usage:
        yield {**head, "choices": [], "usage": reply.usage.chat_usage()}


# ------------------------------------------------------------------------ server


# OpenAI clients are often given a base_url without /v1, so both spellings are served.
_OPENAI_ROUTES = {
    "/v1/chat/completions": "chat",
    "/chat/completions": "chat",
    "/v1/responses": "responses",
    "/responses": "responses",
}


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, owner: ScriptedMessagesServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", port), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up (a timeout, a cancelled stream, a closed SDK client) is routine here, not a
        # server error: socketserver would print its traceback to stderr. Anything else still is printed.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ScriptedMessagesServer/1"
    timeout = 60  # idle keep-alive connections are dropped after this
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, threading.current_thread(), add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._track(self.connection, threading.current_thread(), add=False)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_PATCH(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _dispatch(self) -> None:
        raw = self._read_body()
        body: dict[str, Any]
        valid = True
        try:
            parsed = json.loads(raw) if raw.strip() else {}
        except ValueError:
            parsed, valid = None, False
        if isinstance(parsed, dict):
            body = parsed
        else:
            body, valid = {"_raw": raw.decode("utf-8", "replace")}, False
        headers = {key.lower(): value for key, value in self.headers.items()}
        owner = self.server.owner
        owner._record(RecordedRequest(self.command, self.path, headers, body))

        route = urlsplit(self.path).path.rstrip("/")
        if route in _OPENAI_ROUTES:
            self._dispatch_openai(_OPENAI_ROUTES[route], route, body, valid)
        elif route not in ("/v1/messages", "/v1/messages/count_tokens"):
            self._send_error(404, "not_found_error", f"{self.command} {route}: not found (scripted test server)")
        elif self.command != "POST":
            self._send_error(405, "invalid_request_error", f"{self.command} not allowed on {route}")
        elif not valid:
            self._send_error(400, "invalid_request_error", "request body is not a JSON object")
        elif route == "/v1/messages/count_tokens":
            count = len(json.dumps(body, sort_keys=True, separators=(",", ":"))) // 4
            self._send_json(200, {"input_tokens": max(1, count)})
        else:
            try:
                self._play(body)
            finally:
                self.server.owner._replied()

    def _play(self, body: dict[str, Any]) -> None:
        owner = self.server.owner
        number, reply, problem = owner._next_reply(body)
        request_id = f"req_test_{number:04d}"
        if reply is None:
            self._send_error(500, "api_error", problem, {"x-should-retry": "false", "request-id": request_id})
            return
        if reply.is_error:
            self._send_json(reply.status, reply.error_body(), {**reply.headers, "request-id": request_id})
            return
        msg_id = f"msg_test_{number:04d}"
        model = str(body.get("model") or owner.model)
        headers = {**reply.headers, "request-id": request_id}
        if body.get("stream") is True:
            self._send_sse(sse_events(reply, msg_id=msg_id, model=model), headers)
        else:
            self._send_json(200, reply.message(msg_id=msg_id, model=model), headers)

    def _dispatch_openai(self, api: str, route: str, body: dict[str, Any], valid: bool) -> None:
        if self.command != "POST":
            self._send_openai_error(405, "invalid_request_error", f"{self.command} not allowed on {route}")
        elif not valid:
            self._send_openai_error(400, "invalid_request_error", "request body is not a JSON object")
        elif api == "responses" and body.get("stream") is True:
            message = "scripted test server: streaming is not scripted for the Responses API; send stream=false"
            self._send_openai_error(400, "invalid_request_error", message, param="stream")
        else:
            try:
                self._play_openai(api, body)
            finally:
                self.server.owner._replied()

    def _play_openai(self, api: str, body: dict[str, Any]) -> None:
        owner = self.server.owner
        number, reply, problem = owner._next_reply(body)
        # x-request-id is the header the openai SDK exposes as `_request_id`.
        request_id = {"x-request-id": f"req_test_{number:04d}"}
        if reply is None:
            self._send_openai_error(500, "server_error", problem, {"x-should-retry": "false", **request_id})
            return
        headers = {**reply.headers, **request_id}
        if reply.is_error:
            self._send_json(reply.status, reply.openai_error_body(), headers)
            return
        model = str(body.get("model") or owner.model)
        if api == "responses":
            self._send_json(
                200, reply.response(response_id=f"resp_test_{number:04d}", model=model, request=body), headers
            )
            return
        completion_id = f"chatcmpl_test_{number:04d}"
        if body.get("stream") is True:
            options = body.get("stream_options")
            include_usage = isinstance(options, dict) and options.get("include_usage") is True
            chunks = chat_completion_chunks(
                reply, completion_id=completion_id, model=model, include_usage=include_usage
            )
            frames = (f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks)
            self._send_stream(itertools.chain(frames, [b"data: [DONE]\n\n"]), headers)
        else:
            self._send_json(200, reply.chat_completion(completion_id=completion_id, model=model), headers)

    def _send_openai_error(
        self,
        status: int,
        etype: str,
        message: str,
        headers: Mapping[str, str] | None = None,
        *,
        param: str | None = None,
    ) -> None:
        self._send_json(status, _openai_error(etype, message, param), headers)

    def _send_error(self, status: int, etype: str, message: str, headers: Mapping[str, str] | None = None) -> None:
        self._send_json(status, {"type": "error", "error": {"type": etype, "message": message}}, headers)

    def _send_json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _send_sse(self, events: Iterator[tuple[str, dict[str, Any]]], headers: Mapping[str, str]) -> None:
        self._send_stream((f"event: {event}\ndata: {json.dumps(data)}\n\n".encode() for event, data in events), headers)

    def _send_stream(self, frames: Iterator[bytes], headers: Mapping[str, str]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        try:
            for frame in frames:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:  # the client went away mid-stream
            self.close_connection = True


class ScriptedMessagesServer:
    """An Anthropic Messages and OpenAI Chat Completions / Responses API stand-in
    on ``127.0.0.1`` playing scripted replies.

    The request's path picks the wire format (``/v1/messages`` Anthropic,
    ``/v1/chat/completions`` and ``/v1/responses`` OpenAI, see the module
    docstring); all of them play from the same queue and share the numbering and
    :attr:`requests`, so one script can drive either SDK.

    Starts serving (in a daemon thread) on construction; use it as a context
    manager or call :meth:`close`.  ``script`` is a sequence of replies played in
    order, or a callable ``(request_body) -> Reply`` asked for every reply once
    the queue (filled by :meth:`add`) is empty.  A callable may be invoked
    concurrently when requests overlap.  ``port=0`` picks a free port.
    """

    def __init__(self, script: Script = (), *, model: str = "claude-test", port: int = 0) -> None:
        self.model = model
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self._callable: Callable[[dict[str, Any]], Reply] | None = None
        if callable(script):
            self._callable = script
        else:
            self._queue.extend(script)
        self._requests: list[RecordedRequest] = []
        self._played = 0
        self._count = 0
        self._drained = threading.Event()
        self._writing = 0  # requests that took a reply (or a refusal) and have not written it yet
        self._connections: dict[socket.socket, threading.Thread] = {}
        self._closed = False
        self._httpd = _HTTPServer(port, self)
        self.port: int = self._httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="scripted-messages-server",
            daemon=True,
        )
        self._thread.start()

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def pending(self) -> int:
        """How many queued replies have not been played yet."""
        with self._lock:
            return len(self._queue)

    def add(self, *replies: Reply) -> None:
        """Queue more replies (played before a callable script is consulted)."""
        with self._lock:
            self._queue.extend(replies)
            if replies:
                self._drained.clear()

    def close(self) -> None:
        """Stop serving, drop open connections and release the port (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._httpd.shutdown()
        self._thread.join()
        with self._lock:
            connections = list(self._connections.items())
        for conn, _ in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        for _, thread in connections:
            thread.join(timeout=10)
        self._httpd.server_close()

    def __enter__(self) -> ScriptedMessagesServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- used by the handler threads
    def _track(self, conn: socket.socket, thread: threading.Thread, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections[conn] = thread
            else:
                self._connections.pop(conn, None)

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _replied(self) -> None:
        # Set only once the response is written: the CLI stops serving when this is set, and setting it when the
        # last reply was dequeued let it close the connection under a response still being written (a flaky
        # "Server disconnected without sending a response" in tests/test_testserver.py).
        with self._lock:
            self._writing -= 1
            if not self._writing and self._played and not self._queue and self._callable is None:
                self._drained.set()

    def _next_reply(self, body: dict[str, Any]) -> tuple[int, Reply | None, str]:
        """(request number, reply or None, problem message when None)."""
        with self._lock:
            self._count += 1
            self._writing += 1  # until _replied(), which the handler calls once its response is written
            number = self._count
            if self._queue:
                reply = self._queue.popleft()
                self._played += 1
                return number, reply, ""
            script = self._callable
            played = self._played
        if script is None:
            return (
                number,
                None,
                f"scripted test server: script exhausted ({played} replies played; this is request #{number})",
            )
        try:
            reply = script(body)
        except Exception as exc:
            return number, None, f"scripted test server: script callable raised {type(exc).__name__}: {exc}"
        if not isinstance(reply, Reply):
            return number, None, f"scripted test server: script callable returned {reply!r}, not a Reply"
        with self._lock:
            self._played += 1
        return number, reply, ""


# --------------------------------------------------------------------------- CLI


def _demo_script() -> list[Reply]:
    return [
        tool_use_reply(("list_files", {"path": "."}), text="Let me look at the directory first."),
        tool_use_reply(("read_file", {"path": "README.md"})),
        text_reply("I listed the directory and read README.md. (This is a scripted demo answer.)"),
    ]


def _parse_reply(item: Any) -> Reply:
    if not isinstance(item, dict):
        raise ValueError(f"each reply must be a JSON object, got {item!r}")
    usage = Usage(**item["usage"]) if "usage" in item else None
    if "error" in item:
        return error_reply(int(item["error"]), item.get("type"), item.get("message"))
    if "tool_use" in item:
        calls: list[ToolCall] = []
        for call in item["tool_use"]:
            if "id" in call:
                calls.append((str(call["id"]), str(call["name"]), dict(call.get("input", {}))))
            else:
                calls.append((str(call["name"]), dict(call.get("input", {}))))
        return tool_use_reply(*calls, text=item.get("text"), usage=usage)
    if "text" in item:
        return text_reply(str(item["text"]), usage=usage)
    raise ValueError(f"a reply needs 'text', 'tool_use' or 'error': {item!r}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m prompt_composer.testserver",
        description=(
            "Serve scripted replies on 127.0.0.1, as the Anthropic Messages API (/v1/messages) "
            "and the OpenAI Chat Completions (/v1/chat/completions) and Responses (/v1/responses) APIs."
        ),
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--script",
        metavar="FILE.json",
        help=(
            'JSON list of replies: {"text"} | {"tool_use": [{"name", "input", "id"?}, ...], "text"?} '
            '| {"error": STATUS}; text and tool_use replies may add "usage": {"input_tokens", "output_tokens", ...}'
        ),
    )
    source.add_argument("--demo", action="store_true", help="list_files, read_file, then a final text answer")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: any free port)")
    parser.add_argument(
        "--linger", type=float, default=1.0, help="seconds to keep serving once the script is played out (default 1)"
    )
    args = parser.parse_args(argv)
    if args.demo:
        script = _demo_script()
    else:
        try:
            with open(args.script, encoding="utf-8") as fh:
                items = json.load(fh)
            if not isinstance(items, list):
                raise ValueError("the script must be a JSON list")
            script = [_parse_reply(item) for item in items]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            parser.error(f"bad script {args.script}: {exc}")
    with ScriptedMessagesServer(script, port=args.port) as server:
        print(f"READY {server.base_url}", flush=True)
        try:
            if not script:
                server._drained.set()
            server._drained.wait()
            threading.Event().wait(max(0.0, args.linger))
        except KeyboardInterrupt:
            pass
    return 0
