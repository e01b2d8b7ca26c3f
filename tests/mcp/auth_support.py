"""What the tests of the HTTP gateway's authorization share: ``serve --transport http`` started in a process of its
own, raw HTTP requests (to read statuses and headers), static tokens, and an identity provider's key pair with its
public JWKS file and the JWTs it signs."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from prompt_composer.shared.net import netloc
from tests.mcp.support import env

CODE_TOKEN = "code-token-" + "c" * 24
ASK_TOKEN = "ask-token-" + "a" * 24
ISSUER = "https://id.example.test"
AUDIENCE = "https://gateway.example.test/mcp"
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


@contextmanager
def gateway(
    tmp_path: Path,
    *extra: str,
    mode: str = "code",
    environ: dict[str, str] | None = None,
    host: str | None = None,
    url_host: str = "127.0.0.1",
) -> Iterator[str]:
    """``serve --transport http --port 0`` of the shipped docs with a workspace (``--host host`` when given); yields
    its URL, after checking that the READY line names it with ``url_host`` as a URL writes it."""
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "notes.txt").write_text("hello\n")
    args = [sys.executable, "-m", "prompt_composer", "serve", "--mode", mode, "--transport", "http", "--port", "0"]
    if host is not None:
        args += ["--host", host]
    process = subprocess.Popen(
        [*args, "--workspace", str(workspace), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environ or env(CODE=CODE_TOKEN, ASK=ASK_TOKEN),
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        expected = "READY http://" + netloc(url_host, 0).removesuffix("0")
        assert line.startswith(expected), (line, expected, process.stderr.read() if process.stderr else "")
        yield line.split()[1]
    finally:
        process.terminate()
        process.communicate(timeout=30)


def post(url: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """A raw POST: status, headers (lower-case names), body."""
    data = json.dumps(body).encode()
    base = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    request = urllib.request.Request(url, data=data, headers={**base, **(headers or {})}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def post_headers(url: str, body: Any, headers: list[tuple[str, str]]) -> tuple[int, bytes]:
    """A raw POST whose headers may repeat a name (urllib keeps one value a name): status and body."""
    data = json.dumps(body).encode()
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    try:
        connection.putrequest("POST", parts.path)
        sent = [("content-type", "application/json"), ("accept", "application/json, text/event-stream"), *headers]
        for name, value in [*sent, ("content-length", str(len(data)))]:
            connection.putheader(name, value)
        connection.endheaders(data)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def write_jwks(path: Path, *keys: Any) -> Path:
    """The provider's public JWKS file, as its ``jwks_uri`` serves it."""
    path.write_text(json.dumps({"keys": [key.as_dict(private=False) for key in keys]}))
    return path


def token(key: Any, **claims: Any) -> str:
    """A JWT signed by ``key``: for ISSUER and AUDIENCE, user alice, mode code, valid 10 minutes; ``claims``
    override those, and a claim given as ``None`` is left out."""
    from joserfc import jwt

    now = int(time.time())
    base = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": now + 600, "iat": now, "scope": "mode:code"}
    merged = {name: value for name, value in {**base, **claims}.items() if value is not None}
    return jwt.encode({"alg": "RS256", "kid": key.kid or "idp-1"}, merged, key)
