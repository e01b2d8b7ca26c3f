"""Raw JSON-RPC against ``prompt-composer serve``, run as a real process: every malformed message gets an error
answer (the right code, the request's id when it can be known, a bounded message) and the next valid request is
still answered, over stdio (raw lines) and Streamable HTTP (raw POSTs on 127.0.0.1), in both protocol eras
(the ``initialize`` handshake and stateless 2026-07-28 requests). Also the bounds: a 5 MB tool name or
``tool_search`` query gets a short answer, and a message over the size limit a short error naming the limit.

No SDK client here: the SDK's client would refuse to send most of these messages.
"""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from prompt_composer.mcp.framing import MAX_MESSAGE_BYTES, MAX_MESSAGE_DEPTH
from tests.helpers import REPO
from tests.mcp.support import env, serve_args

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}
FIND_MODE = (
    "slug: find\nname: Find\nrole: You find and read code.\ngroups: [read, edit]\npermanent: [read_file]\n"
    "recent_size: 2\nbudget_tokens: 100000\ndiscovery: true\n"
)
BIG = 5_000_000  # characters of the hostile name and query
REPLY_BOUND = 8_000  # bytes: any answer to a malformed or hostile message stays under this


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def call(ident: int, params: Any, era: str) -> dict[str, Any]:
    """A tools/call request; in the 2026-07-28 era, ``params`` (an object) carries the envelope."""
    if era == MODERN and isinstance(params, dict):
        params = {**params, "_meta": ENVELOPE}
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}


def malformed(era: str) -> list[tuple[str, bytes, int, int | None, str]]:
    """(case, raw message, expected error code, expected id, a phrase the error message holds)."""
    meta = json.dumps(ENVELOPE) if era == MODERN else "{}"
    return [
        ("not JSON", b"not json", -32700, None, "Parse error"),
        ("invalid UTF-8", b'\xff\xfe{"jsonrpc"', -32700, None, "Parse error"),
        ("NaN", b'{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"x":NaN}}', -32700, None, "Parse error"),
        ("params a string", json.dumps(call(4, "nope", era)).encode(), -32602, 4, "params must be an object"),
        ("params an array", json.dumps(call(5, [1, 2], era)).encode(), -32602, 5, "params must be an object"),
        (
            "arguments 1,000 deep",
            f'{{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"_meta":{meta},"name":"read_file",'
            f'"arguments":{{"a":{deep(1000)}}}}}}}'.encode(),
            -32600,
            6,
            f"{MAX_MESSAGE_DEPTH} levels",
        ),
        (
            "arguments 150 deep",
            json.dumps(call(7, {"name": "read_file", "arguments": {"a": json.loads(deep(150))}}, era)).encode(),
            -32600,
            7,
            f"{MAX_MESSAGE_DEPTH} levels",
        ),
        ("a batch", b'[{"jsonrpc":"2.0","id":8,"method":"tools/list"}]', -32600, None, "batch"),
        ("a number", b"42", -32600, None, "not an object"),
        ("jsonrpc 1.0", b'{"jsonrpc":"1.0","id":10,"method":"tools/list"}', -32600, 10, '"jsonrpc" must be "2.0"'),
        ("id an object", b'{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}', -32600, None, "id must be"),
        ("method a number", b'{"jsonrpc":"2.0","id":12,"method":7}', -32600, 12, "method must be a string"),
        ("no method, no result", b'{"jsonrpc":"2.0","id":13}', -32600, 13, "neither a request"),
        (
            "over the size limit",
            b'{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"'
            + b"x" * (MAX_MESSAGE_BYTES + 10)
            + b'"}}',
            -32600,
            14,
            f"{MAX_MESSAGE_BYTES:,} bytes",
        ),
        (
            "unknown method",
            json.dumps({"jsonrpc": "2.0", "id": 15, "method": "no/such", "params": {"_meta": ENVELOPE}}).encode()
            if era == MODERN
            else b'{"jsonrpc":"2.0","id":15,"method":"no/such"}',
            -32601,
            15,
            "",
        ),
        (
            "arguments not an object",
            json.dumps(call(16, {"name": "read_file", "arguments": [1]}, era)).encode(),
            -32602,
            16,
            "",
        ),
    ]


def tools_list(ident: int, era: str) -> dict[str, Any]:
    params = {"_meta": ENVELOPE} if era == MODERN else {}
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/list", "params": params}


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped docs plus ``find``, a discovery mode (it lists ``tool_search``)."""
    folder = tmp_path_factory.mktemp("robust") / "docs"
    shutil.copytree(REPO / "tool_docs", folder)
    (folder / "modes" / "find.yaml").write_text(FIND_MODE, encoding="utf-8")
    return folder


# -- stdio ------------------------------------------------------------------------------------------------------


class StdioServer:
    """``prompt-composer serve`` over stdio; lines written raw, answers read one JSON line at a time."""

    def __init__(self, docs: Path, mode: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, *serve_args(docs, mode, None)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env(),
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(b"")

    def send(self, raw: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(raw + b"\n")
        self.process.stdin.flush()

    def answer(self) -> tuple[dict[str, Any], int]:
        """The next answer and its size in bytes (a generous bound against a hang: a missing answer fails here)."""
        line = self.lines.get(timeout=120)
        assert line, "the server closed its output"
        return json.loads(line), len(line)

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        self.send(json.dumps(message).encode())
        return self.answer()[0]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)
        assert self.process.stdout is not None
        self.process.stdout.close()


@pytest.fixture(params=[LEGACY, MODERN], ids=["initialize", "2026-07-28"])
def stdio(request: pytest.FixtureRequest, docs: Path) -> Iterator[tuple[StdioServer, str]]:
    era = request.param
    server = StdioServer(docs, "find")
    try:
        if era == LEGACY:
            hello = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
            reply = server.ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
            assert reply["result"]["protocolVersion"] == LEGACY
            server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        yield server, era
    finally:
        server.close()


def test_stdio_every_malformed_line_is_answered_and_the_next_request_too(stdio: tuple[StdioServer, str]) -> None:
    server, era = stdio
    for number, (case, raw, code, ident, phrase) in enumerate(malformed(era)):
        server.send(raw)
        reply, size = server.answer()
        assert reply.get("id") == ident, case
        assert reply["error"]["code"] == code, (case, reply)
        assert phrase in reply["error"]["message"], (case, reply)
        assert size < REPLY_BOUND, case
        follow = server.ask(tools_list(1000 + number, era))
        assert follow["id"] == 1000 + number, case
        assert "read_file" in [tool["name"] for tool in follow["result"]["tools"]], case


def test_stdio_answers_every_request_sent_before_the_client_closed_its_end(docs: Path) -> None:
    """A client that writes its requests and closes stdin still gets every answer, the malformed ones included."""
    hello = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        call(4, "nope", LEGACY),
        tools_list(5, LEGACY),
    ]
    stdin = b"".join(json.dumps(line).encode() + b"\n" for line in lines) + b"not json\n"
    done = subprocess.run(
        [sys.executable, *serve_args(docs, "find", None)], input=stdin, capture_output=True, env=env(), timeout=120
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert sorted(str(a.get("id")) for a in answers) == ["1", "4", "5", "None"]


def test_stdio_a_5_mb_name_or_query_gets_a_short_answer(stdio: tuple[StdioServer, str]) -> None:
    server, era = stdio
    name = "x" * BIG
    for ident, params in (
        (20, {"name": name, "arguments": {}}),
        (21, {"name": "call_tool", "arguments": {"name": name, "arguments": {}}}),
        (22, {"name": "fetch_tool_description", "arguments": {"name": name}}),
    ):
        server.send(json.dumps(call(ident, params, era)).encode())
        reply, size = server.answer()
        assert reply["id"] == ident
        assert reply["result"]["isError"] is True
        text = reply["result"]["content"][0]["text"]
        assert f"(cut: {BIG:,} characters in all)" in text
        assert "Tools of this mode, closest first: " in text
        assert size < REPLY_BOUND
    query = " ".join(["where is the config file read"] * (BIG // 30))
    server.send(json.dumps(call(23, {"name": "tool_search", "arguments": {"query": query}}, era)).encode())
    reply, size = server.answer()
    assert reply["id"] == 23 and reply["result"].get("isError") is not True
    text = reply["result"]["content"][0]["text"]
    assert f"Your query was {len(query):,} characters long" in text
    assert size < 64_000  # the hits' full texts come with a search; the query is never echoed whole


# -- Streamable HTTP --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def http_url(docs: Path) -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, *serve_args(docs, "find", None, "--transport", "http", "--port", "0")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env(),
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        assert line.startswith("READY http://127.0.0.1:"), line
        yield line.split()[1]
    finally:
        process.terminate()
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any] | None, int, dict[str, str]]:
    """POST ``body``; the status, the JSON-RPC answer (from JSON or the first SSE event), its size, the headers."""
    request = urllib.request.Request(url, data=body, method="POST")
    request.add_header("Accept", "application/json, text/event-stream")
    request.add_header("Content-Type", "application/json")
    for key, value in headers.items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            status, raw, got = response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        status, raw, got = error.code, error.read(), dict(error.headers)
    text = raw.decode("utf-8")
    if "data:" in text and not text.lstrip().startswith("{"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    return status, json.loads(text) if text.strip() else None, len(raw), got


@pytest.fixture(params=[LEGACY, MODERN], ids=["initialize", "2026-07-28"])
def http(request: pytest.FixtureRequest, http_url: str) -> tuple[str, str, dict[str, str]]:
    """The URL, the era, and the headers every request of that era carries (a session, or the version)."""
    era = request.param
    if era == MODERN:
        return http_url, era, {"MCP-Protocol-Version": MODERN}
    hello = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}).encode()
    status, reply, _, headers = post(http_url, body, {})
    assert status == 200 and reply is not None and reply["result"]["protocolVersion"] == LEGACY
    session = {k.lower(): v for k, v in headers.items()}["mcp-session-id"]
    common = {"Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY}
    status, _, _, _ = post(http_url, b'{"jsonrpc":"2.0","method":"notifications/initialized"}', common)
    assert status == 202
    return http_url, era, common


def method_headers(era: str, method: str, name: str | None = None) -> dict[str, str]:
    """The routing headers a 2026-07-28 request carries (its method, and a called tool's name)."""
    if era != MODERN:
        return {}
    return {"Mcp-Method": method, **({"Mcp-Name": name} if name is not None else {})}


def test_http_every_malformed_body_is_answered_and_the_next_request_too(http: tuple[str, str, dict[str, str]]) -> None:
    url, era, common = http
    for number, (case, raw, code, ident, phrase) in enumerate(malformed(era)):
        method = "no/such" if code == -32601 else "tools/call"
        status, reply, size, _ = post(url, raw, {**common, **method_headers(era, method, "read_file")})
        assert reply is not None, case
        assert reply.get("id") == ident, (case, reply)
        assert reply["error"]["code"] == code, (case, reply)
        assert phrase in reply["error"]["message"], (case, reply)
        assert size < REPLY_BOUND, case
        if phrase:  # the gateway's own answer (the others are the SDK's, with the status it gives them)
            assert status == (413 if "size limit" in case else 400), case
        valid = json.dumps(tools_list(1000 + number, era)).encode()
        status, follow, _, _ = post(url, valid, {**common, **method_headers(era, "tools/list")})
        assert status == 200 and follow is not None, case
        assert "read_file" in [tool["name"] for tool in follow["result"]["tools"]], case


def test_http_a_5_mb_name_or_query_gets_a_short_answer(http: tuple[str, str, dict[str, str]]) -> None:
    url, era, common = http
    name = "x" * BIG
    body = json.dumps(call(20, {"name": "fetch_tool_description", "arguments": {"name": name}}, era)).encode()
    status, reply, size, _ = post(url, body, {**common, **method_headers(era, "tools/call", "fetch_tool_description")})
    assert status == 200 and reply is not None and reply["result"]["isError"] is True
    assert f"(cut: {BIG:,} characters in all)" in reply["result"]["content"][0]["text"]
    assert size < REPLY_BOUND
    query = " ".join(["where is the config file read"] * (BIG // 30))
    body = json.dumps(call(21, {"name": "tool_search", "arguments": {"query": query}}, era)).encode()
    status, reply, size, _ = post(url, body, {**common, **method_headers(era, "tools/call", "tool_search")})
    assert status == 200 and reply is not None
    assert f"Your query was {len(query):,} characters long" in reply["result"]["content"][0]["text"]
    assert size < 64_000
