"""Every JSON-RPC message the gateway receives gets an answer: a check in front of the SDK's transports.

The SDK drops what it cannot parse. Over stdio its reader turns a line that is not a JSON-RPC message (not JSON,
``params`` that is not an object, nesting deeper than its parser's recursion limit) into an exception the server
only logs, so the client waits forever for an answer; over HTTP it answers most of them, but without the request's
id, with ``-32600`` where the params were at fault, and with a plain-text ``413`` past its body limit.

:func:`check_message` reads each message first and answers what is wrong with it, as JSON-RPC 2.0 says:

- not JSON: ``-32700`` (id null);
- larger than :data:`MAX_MESSAGE_BYTES` or nested deeper than :data:`MAX_MESSAGE_DEPTH`: ``-32600`` naming the
  limit, without parsing the rest (the id when it leads the message, else null);
- not one request, notification or response (a batch, a scalar, a bad ``jsonrpc``, ``id`` or ``method``):
  ``-32600``;
- a request whose ``params`` is not an object: ``-32602``.

What passes is exactly what the SDK's own parser accepts, so nothing that passes can be dropped after. Unknown
methods and bad params of a known method are the SDK's to answer (``-32601``, ``-32602``), and it does. The reply
never echoes the message: it stays short whatever was sent. The connection stays up.

:func:`framed_stdio` is the SDK's ``stdio_server`` with this check on its input lines (read in chunks, so an
over-long line is dropped as it arrives rather than held); :class:`FramedHTTP` is an ASGI layer in front of the
Streamable HTTP app that checks each POSTed body, for both protocol eras.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from ..core.bounds import json_depth

# The largest message taken (stdio line or HTTP body): twice the SDK's HTTP default, so a large file written through
# a tool still fits; the same on both transports.
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
# The deepest message taken, in nested objects and arrays: the envelope takes 3 (message, params, arguments), the
# SDK's own parser stops near 200, and real tool arguments nest a few levels.
MAX_MESSAGE_DEPTH = 100

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

_CHUNK = 1 << 16
# The id of a message that cannot be parsed, when it is the top-level "id" member: only members with plain string
# values ("jsonrpc", "method") may come before it, so an "id" nested in params is never taken for it.
_LEADING_ID = re.compile(
    rb'\A\s*\{\s*(?:"(?:jsonrpc|method)"\s*:\s*"[^"\\]{0,200}"\s*,\s*){0,2}"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,200}")'
)


@dataclass(frozen=True)
class Accepted:
    """A message the SDK takes: as decoded JSON (``value``) and as the SDK's model (``message``)."""

    value: dict[str, Any]
    message: Any


@dataclass(frozen=True)
class Rejection:
    """The error answer to a message: its id (``None`` when it cannot be known), code and message."""

    id: str | int | None
    code: int
    message: str

    def reply(self) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": self.id, "error": {"code": self.code, "message": self.message}}


def check_message(raw: bytes) -> Rejection | Accepted:
    """What is wrong with one JSON-RPC message (a stdio line or an HTTP body), or the message when the SDK takes
    it. Time and memory are bounded by :data:`MAX_MESSAGE_BYTES`."""
    if len(raw) > MAX_MESSAGE_BYTES:
        return too_large(len(raw), raw)
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        return Rejection(_leading_id(raw), INVALID_REQUEST, _too_deep())
    except ValueError as exc:  # not JSON, not UTF-8, NaN/Infinity, an integer too long to convert
        return Rejection(None, PARSE_ERROR, f"Parse error: {_reason(exc)}")
    if not isinstance(value, dict):
        what = "a batch (an array); send one message at a time" if isinstance(value, list) else "not an object"
        return Rejection(None, INVALID_REQUEST, f"Invalid Request: the message is {what}")
    ident = value.get("id")
    if "id" in value and (isinstance(ident, bool) or not isinstance(ident, str | int)):
        return Rejection(None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
    # Fewer brackets than the limit cannot nest past it: counting them (in C) spares most messages the walk.
    brackets = raw.count(b"[") + raw.count(b"{")
    if brackets > MAX_MESSAGE_DEPTH and json_depth(value, MAX_MESSAGE_DEPTH) > MAX_MESSAGE_DEPTH:
        return Rejection(ident, INVALID_REQUEST, _too_deep())
    if value.get("jsonrpc") != "2.0":
        return Rejection(ident, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    if "method" in value:
        if not isinstance(value["method"], str):
            return Rejection(ident, INVALID_REQUEST, "Invalid Request: method must be a string")
        if value.get("params") is not None and not isinstance(value["params"], dict):
            # A notification is never answered, but one that is no valid message is an invalid request (id null).
            code = INVALID_PARAMS if "id" in value else INVALID_REQUEST
            return Rejection(ident, code, f"Invalid params: params must be an object (got {_kind(value['params'])})")
    elif "id" not in value or ("result" not in value and "error" not in value):
        return Rejection(ident, INVALID_REQUEST, "Invalid Request: neither a request, a notification nor a response")
    import mcp_types as types
    from pydantic import ValidationError

    try:
        message = types.jsonrpc_message_adapter.validate_json(raw, by_name=False)
    except ValidationError as exc:
        errors = exc.errors()
        where = ".".join(str(part) for part in errors[0]["loc"][1:])[:200] if errors else ""
        detail = f" at {where}" if where else ""
        return Rejection(ident, INVALID_REQUEST, f"Invalid Request: not a JSON-RPC 2.0 message{detail}")
    return Accepted(value, message)


def too_large(size: int, head: bytes) -> Rejection:
    """The answer to a message of ``size`` bytes over the limit; ``head`` is what was kept of its start."""
    message = f"Invalid Request: the message is {size:,} bytes, over the limit of {MAX_MESSAGE_BYTES:,} bytes"
    return Rejection(_leading_id(head), INVALID_REQUEST, message)


def _too_deep() -> str:
    return f"Invalid Request: the message is nested more than {MAX_MESSAGE_DEPTH} levels deep (the limit)"


def _leading_id(raw: bytes) -> str | int | None:
    match = _LEADING_ID.match(raw[:1024])
    if match is None:
        return None
    token = match.group(1)
    return token[1:-1].decode("utf-8", "replace") if token.startswith(b'"') else int(token)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _reason(exc: ValueError) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def _kind(value: Any) -> str:
    return {str: "a string", list: "an array", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )


# -- stdio -----------------------------------------------------------------------------------------------------


@asynccontextmanager
async def framed_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """The server's read and write streams over stdin and stdout, like the SDK's ``stdio_server``, with every input
    line checked first (see :func:`check_message`): a line that fails gets its error answer, and the server never
    sees it. Like the SDK's, it points fd 0 at the null device and fd 1 at stderr while serving, so a child process
    cannot read the client's messages nor a stray print corrupt the answers.

    When the client closes stdin, the requests it sent are still answered (for up to :data:`DRAIN_SECONDS`), and
    every answer is written before this exits: a client that writes its requests and closes its end gets them all."""
    import anyio
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter

    wire_in, wire_out = _claim(0, os.devnull, os.O_RDONLY), _claim(1, None, 0)
    to_server, from_client = anyio.create_memory_object_stream[Any](0)
    answers, to_client = anyio.create_memory_object_stream[Any](0)
    outbound = _Outbound(answers.clone())

    async def read() -> None:
        async with to_server, answers:
            async for line in _lines(wire_in):
                checked = too_large(*line) if isinstance(line, tuple) else check_message(line)
                if isinstance(checked, Rejection):
                    reply = jsonrpc_message_adapter.validate_python(checked.reply(), by_name=False)
                    await answers.send(SessionMessage(reply))
                    continue
                if "method" in checked.value and "id" in checked.value and checked.value["method"] not in _STREAMS:
                    outbound.pending.add(checked.value["id"])
                await to_server.send(SessionMessage(checked.message))
            with anyio.move_on_after(DRAIN_SECONDS):
                while outbound.pending:
                    await anyio.sleep(0.01)

    written = anyio.Event()  # every answer sent has been written (all senders closed)

    async def write() -> None:
        try:
            async with to_client:
                async for message in to_client:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await anyio.to_thread.run_sync(_write_all, wire_out, data.encode("utf-8"))
        finally:
            written.set()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(read)
            group.start_soon(write)
            try:
                yield from_client, outbound
            finally:
                await outbound.aclose()
                with anyio.move_on_after(DRAIN_SECONDS):
                    await written.wait()
                group.cancel_scope.cancel()
    finally:
        # A reading thread may still block on the wire's descriptor: it is never closed, only fd 0 and 1 restored.
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)


# The most of an over-limit HTTP body read (and dropped) before it is answered.
_MAX_DRAINED = 8 * MAX_MESSAGE_BYTES
# How long requests still in flight are waited for once the client closed stdin.
DRAIN_SECONDS = 10.0
# Requests whose answer is a stream that lasts as long as the connection: never waited for.
_STREAMS = frozenset({"subscriptions/listen"})


def _claim(fd: int, diversion: str | None, flags: int) -> int:
    """A private duplicate of ``fd`` (the wire), with ``fd`` pointed at ``diversion`` (a path; ``None``: stderr)."""
    wire = os.dup(fd)
    other = os.open(diversion, flags) if diversion is not None else os.dup(2)
    os.dup2(other, fd)
    os.close(other)
    return wire


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class _Outbound:
    """The server's write stream: notes which requests have been answered, for the drain at end of input."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.pending: set[str | int] = set()

    async def send(self, item: Any, /) -> None:
        await self.stream.send(item)  # handed to the writer: only now is the request answered
        ident = getattr(item.message, "id", None)
        if ident is not None and not hasattr(item.message, "method"):
            self.pending.discard(ident)

    async def aclose(self) -> None:
        await self.stream.aclose()

    async def __aenter__(self) -> _Outbound:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def _lines(fd: int) -> AsyncIterator[bytes | tuple[int, bytes]]:
    """The non-blank lines read from ``fd``, each without its newline; a line over :data:`MAX_MESSAGE_BYTES` is
    dropped as it arrives and comes out as its size and first kilobyte, so memory stays bounded."""
    import anyio

    kept = bytearray()
    dropped = 0  # bytes of an over-long line dropped so far
    head = b""  # the start of the line being dropped (where its id is)
    while True:
        chunk = await anyio.to_thread.run_sync(os.read, fd, _CHUNK, abandon_on_cancel=True)
        if not chunk:
            break
        while chunk:
            end = chunk.find(b"\n")
            part, chunk = (chunk, b"") if end < 0 else (chunk[:end], chunk[end + 1 :])
            if dropped:
                dropped += len(part)
            elif len(kept) + len(part) > MAX_MESSAGE_BYTES:
                head = bytes((kept + part[:1024])[:1024])
                dropped, kept = len(kept) + len(part), bytearray()
            else:
                kept += part
            if end < 0:
                break
            if dropped:
                yield dropped, head
            elif kept.strip():
                yield bytes(kept)
            kept, dropped = bytearray(), 0
    if dropped:
        yield dropped, head
    elif kept.strip():
        yield bytes(kept)


# -- Streamable HTTP -------------------------------------------------------------------------------------------


class FramedHTTP:
    """An ASGI layer in front of the Streamable HTTP app: each POST to ``path`` is read (up to
    :data:`MAX_MESSAGE_BYTES`) and checked (:func:`check_message`); what fails gets its JSON-RPC error, with the HTTP
    status the SDK gives that code, and what passes goes on to ``app`` unchanged."""

    def __init__(self, app: Any, *, path: str = "/mcp") -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"].rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return
        body = bytearray()
        head = b""  # the start of a body over the limit (where its id is)
        size = 0  # a body over the limit: its size, read and dropped as it arrives
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            if size:
                size += len(chunk)
            elif len(body) + len(chunk) > MAX_MESSAGE_BYTES:
                head, size, body = bytes((body + chunk[:1024])[:1024]), len(body) + len(chunk), bytearray()
            else:
                body += chunk
            # Read to the end (an answer before it would reset the connection under the client's upload), up to a
            # point: past _MAX_DRAINED the answer goes at once and the connection closes.
            if not message.get("more_body", False) or size > _MAX_DRAINED:
                break
        checked = too_large(size, head) if size else check_message(bytes(body))
        if isinstance(checked, Rejection):
            rejection = checked
            from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS

            status = 413 if size else ERROR_CODE_HTTP_STATUS.get(rejection.code, 400)
            payload = json.dumps(rejection.reply(), separators=(",", ":")).encode()
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": payload})
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
