"""Shared fixtures: a small in-memory registry and the shipped one."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anthropic
import pytest

from prompt_composer import Composer, ModeConfig, Registry, ToolDoc, load_registry
from prompt_composer.testing.server import Reply, ScriptedMessagesServer


def make_doc(name: str, group: str = "read", *, params: dict[str, Any] | None = None, **kw: Any) -> ToolDoc:
    params = params if params is not None else {"path": {"type": "string", "description": f"Where {name} looks."}}
    return ToolDoc(
        name=name,
        group=group,
        brief=kw.pop("brief", f"Brief text of {name}. Use it for {group} work."),
        full=kw.pop("full", f"## {name}\nFULL TEXT OF {name.upper()}. Parameters: {', '.join(params)}."),
        input_schema={"type": "object", "properties": params, "required": list(params)[:1]},
        **kw,
    )


def make_mode(slug: str, **kw: Any) -> ModeConfig:
    values: dict[str, Any] = {
        "slug": slug,
        "name": slug.title(),
        "role": f"You are the {slug} agent.",
        "groups": ["read", "edit"],
        "permanent": ["read_file"],
        "recent_size": 2,
        "budget_tokens": 100_000,
    }
    values.update(kw)
    return ModeConfig(**values)


@pytest.fixture(scope="session")
def mini_registry() -> Registry:
    docs = [
        make_doc("read_file"),
        make_doc("list_files"),
        make_doc("glob"),
        make_doc("write_to_file", "edit"),
        make_doc("apply_diff", "edit"),
        make_doc("execute_command", "command", params={"command": {"type": "string", "description": "Shell."}}),
        make_doc("secret_tool", "admin", full="## secret_tool\nTOP SECRET INTERNALS of the admin tool."),
    ]
    modes = [
        make_mode("code", groups=["read", "edit", "command"]),
        make_mode("ask", groups=["read"], recent_size=1),
        make_mode("text", groups=["read", "edit"], tool_style="text"),
        make_mode("admin", groups=["admin", "read"], permanent=["secret_tool"], recent_size=0),
    ]
    return Registry.from_docs(docs, modes)


@pytest.fixture(scope="session")
def shipped() -> Registry:
    return load_registry()


@pytest.fixture(scope="session")
def shipped_composer(shipped: Registry) -> Composer:
    return Composer(shipped)


@contextmanager
def served(
    script: Sequence[Reply], *, max_retries: int = 0
) -> Iterator[tuple[ScriptedMessagesServer, anthropic.Anthropic]]:
    """The scripted Messages API server and a real SDK client pointed at it."""
    with ScriptedMessagesServer(script) as server:
        client = anthropic.Anthropic(base_url=server.base_url, api_key="test-key", max_retries=max_retries)
        try:
            yield server, client
        finally:
            client.close()


def bodies(server: ScriptedMessagesServer) -> list[dict[str, Any]]:
    """The JSON bodies of the Messages API requests the server received, in order."""
    return [r.body for r in server.requests if r.path.split("?")[0] == "/v1/messages"]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace with a README, and a secret file just outside it."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text("# Demo\n")
    (tmp_path / "secret.txt").write_text("secret\n")
    return root


NPM_BIN = Path(__file__).resolve().parent / "npm" / "node_modules" / ".bin"


def npm_server(name: str) -> Path:
    """A real MCP server from the npm registry (pinned in tests/npm/package.json, installed by .ci/run).

    Skips where node is not installed. Where it is but the servers are not, the test skips locally (run
    ``npm install --prefix tests/npm``) and fails under CI, where .ci/run has installed them."""
    import os
    import shutil

    path = NPM_BIN / name
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    if not path.exists():
        missing = f"{path} is missing: run `npm install --prefix tests/npm`"
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    return path


def learned_use_log(path: Path, *, query: str, tool: str, mode: str, provider: str) -> Path:
    """An event log (format 1) in which a search for ``query`` found ``tool`` and the task then used it: what
    ``--learn-from`` turns into a phrasing of ``tool``."""
    import json

    base = {"v": 1, "ts": 0.0, "task": "t1", "mode": mode, "provider": provider}
    events = [
        {**base, "event": "search", "query": query, "hits": [tool]},
        {**base, "event": "tool_call", "tool": tool, "outcome": "ok"},
    ]
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path
