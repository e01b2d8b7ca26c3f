"""What the gateway tests share: the real upstream commands, mode files, and ``prompt-composer serve`` started
over stdio or HTTP and reached with the official MCP client SDK, pinned to a protocol era when asked."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from tests.helpers import REPO

SLOW_SERVER = REPO / "tests" / "data" / "mcp" / "slow_server.py"
TIME = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
GIT = [sys.executable, "-m", "mcp_server_git"]
PERMANENT = "get_current_time"
INCLUDED = ["get_current_time", "convert_time", "git_status", "git_log", "git_add", "nap", "read_file"]
LEGACY = "legacy"  # the SDK client's initialize handshake (it offers 2025-11-25)
MODERN = "2026-07-28"  # the SDK client adopting 2026-07-28 directly: no handshake, an envelope on every request
VERSION_OF = {LEGACY: "2025-11-25", MODERN: "2026-07-28", "auto": "2026-07-28"}


def mode_yaml(
    slug: str,
    *,
    discovery: bool = False,
    permanent: tuple[str, ...] = (PERMANENT,),
    tiers: str | None = None,
    promotion: str | None = None,
) -> str:
    text = (
        f"slug: {slug}\nname: {slug}\nrole: You answer questions with the tools of connected MCP servers.\n"
        f"include: [{', '.join(INCLUDED)}]\npermanent: [{', '.join(permanent)}]\nrecent_size: 2\n"
        f"budget_tokens: 100000\ndiscovery: {'true' if discovery else 'false'}\n"
    )
    if tiers is not None:
        text += f"tiers: {tiers}\n"
    if promotion is not None:
        text += f"promotion: {promotion}\n"
    return text


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), **extra}


def serve_args(docs: Path, mode: str, servers: Path | None, *extra: str) -> list[str]:
    args = ["-m", "prompt_composer", "--docs", str(docs), "serve", "--mode", mode, *extra]
    return args + (["--servers", str(servers)] if servers is not None else [])


class Notes(list[str]):
    """The methods of the notifications a client received, in order."""

    async def handler(self, message: Any) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if isinstance(method, str):
            self.append(method)


@asynccontextmanager
async def stdio_gateway(
    docs: Path, mode: str, servers: Path | None, *extra: str, era: str = "auto", environ: dict[str, str] | None = None
) -> AsyncIterator[tuple[Client, Notes]]:
    """`prompt-composer serve` over stdio, connected with the SDK's client in ``era`` (``auto``, ``legacy`` or
    ``2026-07-28``); yields it and the notifications it received."""
    notes = Notes()
    params = StdioServerParameters(
        command=sys.executable, args=serve_args(docs, mode, servers, *extra), env=environ or env()
    )
    with anyio.fail_after(120):
        async with Client(params, message_handler=notes.handler, cache=None, mode=era) as client:
            yield client, notes


@contextmanager
def http_gateway(docs: Path, mode: str, servers: Path | None, *extra: str, stderr: Path | None = None) -> Iterator[str]:
    """`prompt-composer serve --transport http --port 0` in a process of its own (its stderr into ``stderr`` when
    given); yields its URL."""
    err = stderr.open("w", encoding="utf-8") if stderr is not None else None
    process = subprocess.Popen(
        [sys.executable, *serve_args(docs, mode, servers, "--transport", "http", "--port", "0", *extra)],
        stdout=subprocess.PIPE,
        stderr=err,
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
        if err is not None:
            err.close()


async def names(client: Client) -> list[str]:
    return [tool.name for tool in (await client.list_tools()).tools]


async def listing(client: Client) -> list[dict[str, Any]]:
    """The whole list as JSON (names, descriptions, schemas), in list order."""
    return [tool.model_dump(mode="json", exclude_none=True) for tool in (await client.list_tools()).tools]


def git_repo(tmp_path: Path) -> Path:
    """A git repository with one untracked file, ``notes.txt``."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "notes.txt").write_text("hello\n")
    return repo


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")


def blocks(result: Any) -> list[str]:
    return [block.text for block in result.content if getattr(block, "type", "") == "text"]


async def settle(notes: list[str], count: int, *, seconds: float = 10) -> None:
    """Wait (bounded) until ``count`` notifications arrived; the assertion after it says whether they did."""
    with anyio.move_on_after(seconds):
        while len(notes) < count:
            await anyio.sleep(0.02)
