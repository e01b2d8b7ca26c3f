"""The official MCP Inspector's CLI (npm ``@modelcontextprotocol/inspector-cli``, pinned in tests/npm/package.json) in
its non-interactive mode (``--cli --method ...``) lists, fetches and calls through ``prompt-composer serve``, over
HTTP and stdio. Each run is a connection of its own, from the TypeScript SDK (a 2025-11-25 client)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from prompt_composer import load_registry
from prompt_composer.core.fetch import fetch_tool_doc
from tests.helpers import npm_server
from tests.mcp.support import env, git_repo, http_gateway, serve_args


def _inspect(inspector: Path, *args: str) -> Any:
    """One ``mcp-inspector-cli --cli`` run; its JSON answer. It runs from its own build folder: 1.0.3 checks for
    ``../package.json`` relative to the working directory but imports it relative to itself, so anywhere else it
    fails with "Cannot find module …/@modelcontextprotocol/package.json"."""
    done = subprocess.run(
        [str(inspector), "--cli", *args],
        cwd=Path(os.path.realpath(inspector)).parent,
        capture_output=True,
        text=True,
        timeout=120,
        env=env(),
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _texts(result: dict[str, Any]) -> list[str]:
    return [block["text"] for block in result["content"] if block["type"] == "text"]


@pytest.mark.slow  # the MCP Inspector's CLI (npm) against `serve` and its upstreams
def test_the_inspector_lists_fetches_and_calls_through_serve(docs: Path, servers: Path, tmp_path: Path) -> None:
    inspector = npm_server("mcp-inspector-cli")
    registry = load_registry(docs)
    repo = git_repo(tmp_path)
    with http_gateway(docs, "gw-tier", servers) as url:
        http = (url, "--transport", "http")
        listed = _inspect(inspector, *http, "--method", "tools/list")["tools"]
        names = [tool["name"] for tool in listed]
        assert names[-3:] == ["tool_search", "fetch_tool_description", "call_tool"] and "convert_time" in names

        fetch = ("--method", "tools/call", "--tool-name", "fetch_tool_description", "--tool-arg", "name=convert_time")
        fetched = _inspect(inspector, *http, *fetch)
        assert not fetched.get("isError") and _texts(fetched) == [fetch_tool_doc(registry.tools["convert_time"])]

        convert = ("source_timezone=UTC", "time=12:00", "target_timezone=Asia/Tokyo")
        called = _inspect(
            inspector, *http, "--method", "tools/call", "--tool-name", "convert_time", "--tool-arg", *convert
        )
        assert not called.get("isError"), called
        assert json.loads(_texts(called)[0])["target"]["datetime"].endswith("T21:00:00+09:00")

        arguments = "arguments=" + json.dumps({"repo_path": str(repo)})
        routed = ("--method", "tools/call", "--tool-name", "call_tool", "--tool-arg", "name=git_status", arguments)
        status = _inspect(inspector, *http, *routed)
        assert not status.get("isError"), status
        assert "notes.txt" in _texts(status)[0]  # the real git server read the real repository

        assert _inspect(inspector, *http, "--method", "tools/list")["tools"] == listed  # nothing changed it

    # Over stdio the inspector starts the server itself: another start, the same list.
    command = serve_args(docs, "gw-tier", servers)
    over_stdio = _inspect(inspector, sys.executable, "--method", "tools/list", "--", *command)
    assert over_stdio["tools"] == listed


def test_the_inspector_gets_refusals_as_error_results(docs: Path, servers: Path) -> None:
    inspector = npm_server("mcp-inspector-cli")
    with http_gateway(docs, "gw", servers) as url:
        refused = _inspect(inspector, url, "--transport", "http", "--method", "tools/call", "--tool-name",
                           "debug_launch", "--tool-arg", "program=app.py")  # fmt: skip
        assert refused.get("isError") is True
        assert "no tool 'debug_launch' in mode 'gw'" in _texts(refused)[0]
