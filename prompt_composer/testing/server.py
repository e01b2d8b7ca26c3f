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

What each route answers, and how errors and an exhausted script look: docs/agent-loop.md, "The scripted
server, route by route".

The reply model is in :mod:`.replies`, the wire encodings in :mod:`.wire`, the command line in :mod:`.cli`.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from .replies import Reply
from .responses_api import response_events, responses_problem, script_problem
from .rules import messages_problem
from .scripted import openai_error
from .wire import chat_completion_chunks, chunk_frames, sse_events, sse_frames

Script = Sequence[Reply] | Callable[[dict[str, Any]], Reply]

# OpenAI clients are often given a base_url without /v1, so both spellings are served.
_OPENAI_ROUTES = {
    "/v1/chat/completions": "chat",
    "/chat/completions": "chat",
    "/v1/responses": "responses",
    "/responses": "responses",
}


@dataclass
class RecordedRequest:
    """A request as received: ``headers`` keys are lower-cased; ``path`` keeps
    the query string; ``body`` is the parsed JSON object (``{}`` when empty,
    ``{"_raw": text}`` when not a JSON object)."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def _parse_body(raw: bytes) -> tuple[dict[str, Any], bool]:
    """``(body, valid)``: the JSON object (``{}`` when empty), or ``{"_raw": text}`` and False when the body is
    not a JSON object."""
    try:
        parsed = json.loads(raw) if raw.strip() else {}
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return parsed, True
    return {"_raw": raw.decode("utf-8", "replace")}, False


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
        body, valid = _parse_body(self._read_body())
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
        elif (problem := messages_problem(body)) is not None:  # the real API's 400: no reply is used up
            self._send_error(400, "invalid_request_error", problem)
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
            self._send_stream(sse_frames(sse_events(reply, msg_id=msg_id, model=model)), headers)
        else:
            self._send_json(200, reply.message(msg_id=msg_id, model=model), headers)

    def _dispatch_openai(self, api: str, route: str, body: dict[str, Any], valid: bool) -> None:
        if self.command != "POST":
            self._send_openai_error(405, "invalid_request_error", f"{self.command} not allowed on {route}")
        elif not valid:
            self._send_openai_error(400, "invalid_request_error", "request body is not a JSON object")
        elif api == "responses" and (problem := responses_problem(body)) is not None:  # a 400: no reply used up
            self._send_openai_error(400, "invalid_request_error", problem)
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
            self._respond(reply, body, number, model, headers)
            return
        completion_id = f"chatcmpl_test_{number:04d}"
        if body.get("stream") is True:
            options = body.get("stream_options")
            include_usage = isinstance(options, dict) and options.get("include_usage") is True
            chunks = chat_completion_chunks(
                reply, completion_id=completion_id, model=model, include_usage=include_usage
            )
            self._send_stream(chunk_frames(chunks), headers)
        else:
            self._send_json(200, reply.chat_completion(completion_id=completion_id, model=model), headers)

    def _respond(self, reply: Reply, body: dict[str, Any], number: int, model: str, headers: dict[str, str]) -> None:
        """A Responses API answer (JSON or server-sent events), or a 500 naming what no model could have answered."""
        mistake = script_problem(reply, body)
        if mistake is not None:
            message = f"scripted test server: {mistake}"
            self._send_openai_error(500, "server_error", message, {**headers, "x-should-retry": "false"})
            return
        response_id = f"resp_test_{number:04d}"
        if body.get("stream") is True:
            events = response_events(reply, response_id=response_id, model=model, request=body)
            self._send_stream(sse_frames(events), headers)
        else:
            self._send_json(200, reply.response(response_id=response_id, model=model, request=body), headers)

    def _send_openai_error(
        self,
        status: int,
        etype: str,
        message: str,
        headers: Mapping[str, str] | None = None,
        *,
        param: str | None = None,
    ) -> None:
        self._send_json(status, openai_error(etype, message, param), headers)

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

    def wait_drained(self, timeout: float | None = None) -> bool:
        """Block until every queued reply has been played and written (or ``timeout`` seconds); whether it was."""
        return self._drained.wait(timeout)

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
        # "Server disconnected without sending a response" in tests/testing/test_testserver.py).
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
