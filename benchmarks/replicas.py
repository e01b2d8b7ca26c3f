"""Several ``prompt-composer serve --transport http`` replicas behind HAProxy, sharing their tasks in Redis: what
tests/mcp/test_gateway_replicas.py and benchmarks/bench_replicas.py start (docs/gateway.md shows the same layout
as a compose file).

Everything listens on 127.0.0.1 on free ports: one ``redis-server`` (no persistence), ``count`` gateways serving
``mode`` of the shipped docs with ``--session-store`` and a workspace, and one ``haproxy`` in front (round robin,
session-era sessions stuck to their replica by ``Mcp-Session-Id``, a ``X-Served-By`` header naming the replica
that answered). Needs the ``haproxy`` and ``redis-server`` binaries (Debian's packages).

A task is a 2026-07-28 ``tools/call`` sequence carrying the ``Prompt-Composer-Task`` header; :func:`call` sends
one over plain HTTP (the SDK's wire format, so the client side costs little next to the servers).
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TASK_HEADER = "Prompt-Composer-Task"
TOKEN_VAR = "REPLICA_TOKEN"
TOKEN = "replica-token-" + "r" * 24


def missing() -> str | None:
    """Why a cluster cannot start here, or ``None``."""
    lacking = [name for name in ("haproxy", "redis-server") if shutil.which(name) is None]
    if lacking:
        return f"{' and '.join(lacking)} not on PATH (apt-get install haproxy redis-server; .ci/run does)"
    try:
        import redis  # noqa: F401
    except ImportError:
        return "the redis client is not installed (pip install 'prompt-composer-tooldocs[redis]')"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_port(port: int, process: subprocess.Popen[Any], what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start on port {port}") from None
            time.sleep(0.05)


HAPROXY_CFG = """\
global
    maxconn 4096
defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    # A connection a dead replica refused is sent to another one; a request a replica died in the middle of
    # is not replayed by the balancer (it may have run): the client sees 502 and retries.
    retries 2
    option redispatch
    retry-on conn-failure
frontend mcp
    bind 127.0.0.1:{port}
    default_backend gateways
backend gateways
    balance roundrobin
    # session-era clients: the replica that created a session answers its later requests
    stick-table type string len 64 size 100k expire 30m
    stick on req.hdr(mcp-session-id)
    stick store-response res.hdr(mcp-session-id)
    http-response set-header X-Served-By %s
    default-server check inter 200ms fall 1 rise 2
{servers}
"""


@dataclass
class Cluster:
    """``count`` replicas of ``mode`` behind HAProxy, tasks in Redis; a context manager that stops everything."""

    directory: Path
    count: int = 4
    mode: str = "code"
    token: str | None = TOKEN
    redis_port: int = field(default_factory=free_port)
    balancer_port: int = field(default_factory=free_port)
    replica_ports: list[int] = field(default_factory=list)
    processes: dict[str, subprocess.Popen[Any]] = field(default_factory=dict)

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.balancer_port}/mcp"

    def replica_url(self, index: int) -> str:
        return f"http://127.0.0.1:{self.replica_ports[index]}/mcp"

    def headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.token}"} if self.token else {}

    def __enter__(self) -> Cluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        workspace = self.directory / "workspace"
        workspace.mkdir(exist_ok=True)
        (workspace / "notes.txt").write_text("hello\n")
        (workspace / "src").mkdir(exist_ok=True)
        (workspace / "src" / "app.py").write_text("def main():\n    return 1\n")
        redis = subprocess.Popen(
            ["redis-server", "--bind", "127.0.0.1", "--port", str(self.redis_port), "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.processes["redis"] = redis
        wait_port(self.redis_port, redis, "redis-server")
        environ = {**os.environ, "PYTHONPATH": str(REPO)}
        auth: list[str] = []
        if self.token:
            environ[TOKEN_VAR] = self.token
            auth = ["--auth-token-env", f"{TOKEN_VAR}={self.mode}"]
        for index in range(self.count):
            port = free_port()
            self.replica_ports.append(port)
            log = (self.directory / f"replica-{index}.log").open("w")
            command = [sys.executable, "-m", "prompt_composer", "serve", "--mode", self.mode, "--transport", "http"]
            command += ["--port", str(port), "--workspace", str(workspace), "--session-store", self.redis_url]
            command += ["--public-url", self.url, *auth]
            self.processes[f"r{index}"] = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=log, env=environ, cwd=self.directory
            )
            log.close()
        for index in range(self.count):
            wait_port(self.replica_ports[index], self.processes[f"r{index}"], f"replica r{index}")
        servers = "\n".join(f"    server r{i} 127.0.0.1:{p}" for i, p in enumerate(self.replica_ports))
        config = self.directory / "haproxy.cfg"
        config.write_text(HAPROXY_CFG.format(port=self.balancer_port, servers=servers))
        haproxy = subprocess.Popen(
            ["haproxy", "-f", str(config), "-db"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self.processes["haproxy"] = haproxy
        wait_port(self.balancer_port, haproxy, "haproxy")
        time.sleep(0.5)  # the first health checks mark every replica up

    def kill(self, index: int) -> None:
        """SIGKILL replica ``index``: no chance to finish anything."""
        process = self.processes[f"r{index}"]
        process.send_signal(signal.SIGKILL)
        process.wait()

    def stop(self) -> None:
        for name, process in reversed(self.processes.items()):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            del name


@dataclass
class Answer:
    status: int
    served_by: str | None
    body: dict[str, Any] | None

    @property
    def ok(self) -> bool:
        return self.status == 200 and self.body is not None and "result" in self.body

    @property
    def text(self) -> str:
        result = (self.body or {}).get("result", {})
        return "\n".join(b.get("text", "") for b in result.get("content", []))


META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "replica-bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def call(url: str, task: str | None, tool: str, arguments: dict[str, Any], headers: dict[str, str]) -> Answer:
    """One 2026-07-28 ``tools/call`` of ``tool`` in ``task`` (a stand-alone request without it)."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": META},
    }
    sent = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": tool,
        **headers,
    }
    if task is not None:
        sent[TASK_HEADER] = task
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=sent, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            raw, status, served = response.read(), response.status, response.headers.get("x-served-by")
            kind = response.headers.get("content-type", "")
    except urllib.error.HTTPError as error:  # a JSON-RPC error can come with a 4xx status: keep its body
        try:
            answer: Any = json.loads(error.read() or b"null")
        except ValueError:
            answer = None
        return Answer(error.code, error.headers.get("x-served-by"), answer if isinstance(answer, dict) else None)
    except (urllib.error.URLError, http.client.HTTPException, ConnectionError, TimeoutError):
        # HTTPException: a replica killed after its headers went out (IncompleteRead), as the one killed here may be
        return Answer(0, None, None)
    text = raw.decode()
    if kind.startswith("text/event-stream"):  # the answer is the last data: line
        data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        text = data[-1] if data else "{}"
    try:
        return Answer(status, served, json.loads(text))
    except ValueError:
        return Answer(status, served, None)
