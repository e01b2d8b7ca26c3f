"""``prompt-composer serve`` with real upstream MCP servers (PyPI mcp-server-time and mcp-server-git, npm
server-memory where node is installed), reached through the official MCP client SDK over stdio and HTTP.

The tool docs are imported from the running servers, as a user would, into a copy of the shipped folder; two
modes of our own pick the imported tools: ``gw`` (brief/full lists) and ``gw-find`` (discovery).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")
pytest.importorskip("mcp_server_time")
pytest.importorskip("mcp_server_git")

from mcp import Client, StdioServerParameters

from prompt_composer import load_registry
from prompt_composer.cli import main
from prompt_composer.core.fetch import fetch_tool_doc
from prompt_composer.importers.from_mcp import import_mcp
from prompt_composer.testing.replies import text_reply, tool_use_reply
from prompt_composer.testing.server import ScriptedMessagesServer
from tests.helpers import REPO, learned_use_log, npm_server

REPO = REPO
SLOW_SERVER = REPO / "tests" / "data" / "mcp" / "slow_server.py"
TIME = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
GIT = [sys.executable, "-m", "mcp_server_git"]
PERMANENT = "get_current_time"
INCLUDED = ["get_current_time", "convert_time", "git_status", "git_log", "git_add", "nap", "read_file"]


def _mode(slug: str, *, discovery: bool = False, permanent: tuple[str, ...] = (PERMANENT,)) -> str:
    return (
        f"slug: {slug}\nname: {slug}\nrole: You answer questions with the tools of connected MCP servers.\n"
        f"include: [{', '.join(INCLUDED)}]\npermanent: [{', '.join(permanent)}]\nrecent_size: 2\n"
        f"budget_tokens: 100000\ndiscovery: {'true' if discovery else 'false'}\n"
    )


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped docs plus the tools of the real time and git servers and the slow fixture, imported."""
    folder = tmp_path_factory.mktemp("gateway") / "docs"
    shutil.copytree(REPO / "tool_docs", folder)
    import_mcp(TIME, folder, server="time")
    import_mcp(GIT, folder, server="git")
    import_mcp([sys.executable, str(SLOW_SERVER)], folder, server="slow")
    (folder / "modes" / "gw.yaml").write_text(_mode("gw"), encoding="utf-8")
    (folder / "modes" / "gw-find.yaml").write_text(_mode("gw-find", discovery=True, permanent=()), encoding="utf-8")
    load_registry(folder)  # the folder loads: a broken import would fail here, not in a gateway test
    return folder


@pytest.fixture
def servers(tmp_path: Path) -> Path:
    """A servers file as MCP clients write it. The time server writes its pid first, so a test can kill it."""
    pidfile = tmp_path / "time.pid"
    command = f"echo $$ > {pidfile} && exec {' '.join(TIME)}"
    path = tmp_path / "servers.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "time": {"command": "sh", "args": ["-c", command], "alwaysAllow": []},
                    "git": {"command": GIT[0], "args": GIT[1:]},
                    "slow": {"command": sys.executable, "args": [str(SLOW_SERVER)]},
                }
            }
        ),
        encoding="utf-8",
    )
    return path


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


@asynccontextmanager
async def stdio_gateway(
    docs: Path, mode: str, servers: Path | None, *extra: str
) -> AsyncIterator[tuple[Client, list[str]]]:
    """`prompt-composer serve` over stdio, connected with the SDK's client; yields it and the notifications seen."""
    notes: list[str] = []

    async def on_message(message: Any) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if isinstance(method, str):
            notes.append(method)

    args = ["-m", "prompt_composer", "--docs", str(docs), "serve", "--mode", mode, *extra]
    if servers is not None:
        args += ["--servers", str(servers)]
    params = StdioServerParameters(command=sys.executable, args=args, env=_env())
    with anyio.fail_after(120):
        async with Client(params, message_handler=on_message, cache=None) as client:
            yield client, notes


async def _names(client: Client) -> list[str]:
    return [tool.name for tool in (await client.list_tools()).tools]


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")


async def _settle(notes: list[str], count: int) -> None:
    """Wait (bounded) until ``count`` notifications arrived; the assertion after it says whether they did."""
    with anyio.move_on_after(10):
        while len(notes) < count:
            await anyio.sleep(0.02)


def test_stdio_lists_briefs_fetches_routes_and_announces_list_changes(docs: Path, servers: Path) -> None:
    registry = load_registry(docs)
    mode = registry.mode("gw")

    async def scenario() -> None:
        async with stdio_gateway(docs, "gw", servers) as (client, notes):
            assert client.server_capabilities.tools is not None
            assert client.server_capabilities.tools.list_changed is True
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            # The mode's tools and fetch, nothing else: brief text except the permanent tool.
            assert set(tools) == {*mode.allowed, "fetch_tool_description"}
            assert tools[PERMANENT].description == registry.tools[PERMANENT].full
            for name in set(mode.allowed) - {PERMANENT}:
                assert tools[name].description == registry.tools[name].brief, name
                assert tools[name].input_schema["properties"].keys() == (
                    registry.tools[name].input_schema["properties"].keys()
                ), name
            first = [tool.name for tool in (await client.list_tools()).tools]

            fetched = await client.call_tool("fetch_tool_description", {"name": "convert_time"})
            assert not fetched.is_error
            assert _text(fetched) == fetch_tool_doc(registry.tools["convert_time"])
            assert notes == []  # a fetch changes nothing in the list

            # A routed call reaches the real server under the tool's original name and returns its real answer.
            answer = await client.call_tool("convert_time", {"source_timezone": "UTC", "time": "12:00",
                                                               "target_timezone": "Asia/Tokyo"})  # fmt: skip
            assert not answer.is_error, _text(answer)
            assert json.loads(_text(answer))["target"]["datetime"].endswith("T21:00:00+09:00")
            await _settle(notes, 1)
            assert notes == ["notifications/tools/list_changed"]
            after = {tool.name: tool for tool in (await client.list_tools()).tools}
            order = list(after)
            # convert_time is now recent (full text) and moved to the end; everything before it kept its place.
            assert after["convert_time"].description == registry.tools["convert_time"].full
            assert order[-1] == "convert_time"
            assert order[:-1] == [name for name in first if name != "convert_time"]

            # A permanent tool's use changes nothing: no notification.
            timed = await client.call_tool(PERMANENT, {"timezone": "Europe/Paris"})
            assert json.loads(_text(timed))["timezone"] == "Europe/Paris"
            await anyio.sleep(0.3)
            assert notes == ["notifications/tools/list_changed"]

    anyio.run(scenario)


def test_tools_of_other_modes_are_never_fetched_or_called(docs: Path, servers: Path) -> None:
    registry = load_registry(docs)
    foreign = "debug_launch"
    assert foreign in registry.tools and not registry.mode("gw").allows(foreign)

    async def scenario() -> None:
        async with stdio_gateway(docs, "gw", servers) as (client, _):
            assert foreign not in await _names(client)
            fetched = await client.call_tool("fetch_tool_description", {"name": foreign})
            assert fetched.is_error and registry.tools[foreign].full not in _text(fetched)
            called = await client.call_tool(foreign, {"program": "app.py"})
            assert called.is_error and f"no tool {foreign!r} in mode 'gw'" in _text(called)
            # A made-up name gets the same answers, its name aside: a refusal tells nothing of what exists.
            made_up = foreign + "x"
            assert made_up not in registry.tools
            fetched_twin = await client.call_tool("fetch_tool_description", {"name": made_up})
            called_twin = await client.call_tool(made_up, {"program": "app.py"})
            assert _text(fetched_twin).replace(made_up, "?") == _text(fetched).replace(foreign, "?")
            assert _text(called_twin).replace(made_up, "?") == _text(called).replace(foreign, "?")
            # A tool of the mode with neither an upstream nor an executor is refused, saying why.
            unrunnable = await client.call_tool("read_file", {"path": "README.md"})
            assert unrunnable.is_error and "no executor" in _text(unrunnable)
            # Arguments are checked against the schema before anything is sent upstream.
            wrong = await client.call_tool("convert_time", {"time": 12})
            assert wrong.is_error and "input schema" in _text(wrong)

    anyio.run(scenario)


def test_a_killed_upstream_gives_an_error_then_is_restarted(docs: Path, servers: Path) -> None:
    pidfile = servers.parent / "time.pid"

    async def scenario() -> None:
        async with stdio_gateway(docs, "gw", servers) as (client, _):
            first = await client.call_tool(PERMANENT, {"timezone": "UTC"})
            assert not first.is_error
            pid = int(pidfile.read_text())
            os.kill(pid, signal.SIGKILL)
            await anyio.sleep(0.3)
            lost = await client.call_tool(PERMANENT, {"timezone": "UTC"})
            assert lost.is_error and "'time'" in _text(lost) and "restarted" in _text(lost)
            again = await client.call_tool(PERMANENT, {"timezone": "Asia/Tokyo"})
            assert not again.is_error, _text(again)
            assert json.loads(_text(again))["timezone"] == "Asia/Tokyo"
            assert int(pidfile.read_text()) != pid  # a new server process answered

    anyio.run(scenario)


def test_a_hung_or_missing_upstream_is_an_error_result_naming_it(docs: Path, tmp_path: Path) -> None:
    only_slow = tmp_path / "servers.json"
    only_slow.write_text(json.dumps({"mcpServers": {"slow": {"command": sys.executable, "args": [str(SLOW_SERVER)]}}}))

    async def scenario() -> None:
        async with stdio_gateway(docs, "gw", only_slow, "--call-timeout", "2") as (client, _):
            quick = await client.call_tool("nap", {"seconds": 0})
            assert not quick.is_error and _text(quick) == "slept 0.0 s"
            hung = await client.call_tool("nap", {"seconds": 60})
            assert hung.is_error and "'slow'" in _text(hung) and "within 2 s" in _text(hung)
            missing = await client.call_tool("git_status", {"repo_path": str(tmp_path)})
            assert missing.is_error and "'git' is not in" in _text(missing) and str(only_slow) in _text(missing)
            assert not (await client.call_tool("nap", {"seconds": 0})).is_error  # the gateway is still serving

        async with stdio_gateway(docs, "gw", None) as (client, _):
            unrouted = await client.call_tool("nap", {"seconds": 0})
            assert unrouted.is_error and "--servers" in _text(unrouted)

    anyio.run(scenario)


def test_discovery_mode_search_adds_tools_and_call_tool_routes(docs: Path, servers: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "notes.txt").write_text("hello\n")

    async def scenario() -> None:
        async with stdio_gateway(docs, "gw-find", servers) as (client, notes):
            start = await _names(client)
            assert set(start) == {"tool_search", "fetch_tool_description", "call_tool"}
            found = await client.call_tool("tool_search", {"query": "show the working tree status of a git repo"})
            assert not found.is_error and "git_status" in _text(found)
            await _settle(notes, 1)
            assert notes == ["notifications/tools/list_changed"]
            listed = await _names(client)
            assert listed[: len(start)] == start and "git_status" in listed[len(start) :]
            status = await client.call_tool("call_tool", {"name": "git_status", "arguments": {"repo_path": str(repo)}})
            assert not status.is_error, _text(status)
            assert "notes.txt" in _text(status)  # the real git server read the real repository
            # Search never reaches beyond the mode, and call_tool is held to it too.
            outside = await client.call_tool("call_tool", {"name": "debug_launch", "arguments": {}})
            assert outside.is_error and "no tool 'debug_launch' in mode 'gw-find'" in _text(outside)

    anyio.run(scenario)


def test_serve_learns_search_phrasings_from_an_event_log(docs: Path, servers: Path, tmp_path: Path) -> None:
    """``serve --learn-from LOG``: a request that once led to a tool's use finds that tool; without the log it
    does not (nothing in the tool's docs says "oracle")."""
    log = learned_use_log(
        tmp_path / "events.jsonl", query="summon the oracle", tool="convert_time", mode="gw-find", provider="mcp"
    )

    async def search(*extra: str) -> tuple[str, list[str]]:
        async with stdio_gateway(docs, "gw-find", servers, *extra) as (client, _notes):
            found = await client.call_tool("tool_search", {"query": "summon the oracle"})
            assert not found.is_error, _text(found)
            return _text(found), await _names(client)

    plain, plain_list = anyio.run(search)
    assert plain.startswith("No tool of") and "convert_time" not in plain_list  # an explained miss
    learned, learned_list = anyio.run(search, "--learn-from", str(log))
    assert not learned.startswith("No tool of") and "convert_time" in learned
    assert "convert_time" in learned_list  # found, so it joined the list
    missing = tmp_path / "nope.jsonl"
    assert main(["--docs", str(docs), "serve", "--mode", "gw-find", "--learn-from", str(missing)]) == 2


def _start_http(docs: Path, servers: Path) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "prompt_composer", "--docs", str(docs), "serve", "--mode", "gw",
         "--servers", str(servers), "--transport", "http", "--port", "0"],
        stdout=subprocess.PIPE, text=True, env=_env(),
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    assert line.startswith("READY http://127.0.0.1:"), line
    return process, line.split()[1]


def test_http_gives_each_mcp_session_its_own_task(docs: Path, servers: Path) -> None:
    registry = load_registry(docs)
    process, url = _start_http(docs, servers)
    try:

        async def scenario() -> None:
            notes: list[str] = []

            async def on_message(message: Any) -> None:
                method = getattr(getattr(message, "root", message), "method", None)
                if isinstance(method, str):
                    notes.append(method)

            with anyio.fail_after(120):
                async with Client(url, message_handler=on_message, cache=None) as a, Client(url, cache=None) as b:
                    first_a, first_b = await _names(a), await _names(b)
                    assert first_a == first_b
                    used = await a.call_tool("git_log", {"repo_path": str(REPO), "max_count": 1})
                    assert not used.is_error, _text(used)
                    assert "Commit" in _text(used) or "commit" in _text(used)
                    await _settle(notes, 1)
                    assert notes == ["notifications/tools/list_changed"]
                    tools_a = {tool.name: tool for tool in (await a.list_tools()).tools}
                    assert tools_a["git_log"].description == registry.tools["git_log"].full
                    assert await _names(b) == first_b  # b's task never used git_log
                    refused = await b.call_tool("debug_launch", {})
                    assert refused.is_error

        anyio.run(scenario)
    finally:
        process.terminate()
        process.wait(timeout=30)
        assert process.stdout is not None
        process.stdout.close()


def test_node_memory_server_is_routed(tmp_path: Path) -> None:
    memory = npm_server("mcp-server-memory")
    folder = tmp_path / "docs"
    shutil.copytree(REPO / "tool_docs", folder)
    import_mcp([str(memory)], folder, server="memory")
    (folder / "modes" / "mem.yaml").write_text(
        "slug: mem\nname: Memory\nrole: You keep notes in a knowledge graph.\n"
        "include: [create_entities, read_graph, search_nodes]\npermanent: []\nrecent_size: 2\nbudget_tokens: 100000\n"
    )
    servers = tmp_path / "servers.json"
    graph = tmp_path / "graph.jsonl"
    servers.write_text(json.dumps({"mcpServers": {"memory": {"command": str(memory),
                                                             "env": {"MEMORY_FILE_PATH": str(graph)}}}}))  # fmt: skip

    async def scenario() -> None:
        async with stdio_gateway(folder, "mem", servers) as (client, _):
            entity = {"name": "prompt-composer", "entityType": "project", "observations": ["serves modes over MCP"]}
            created = await client.call_tool("create_entities", {"entities": [entity]})
            assert not created.is_error, _text(created)
            read = await client.call_tool("read_graph", {})
            assert "serves modes over MCP" in _text(read)

    anyio.run(scenario)
    assert "prompt-composer" in graph.read_text()  # the real server wrote its real file


def test_run_calls_an_imported_tool_through_the_routing(
    docs: Path, servers: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    script = [
        tool_use_reply(
            ("c1", "convert_time", {"source_timezone": "UTC", "time": "08:30", "target_timezone": "EST5EDT"})
        ),
        tool_use_reply(("c2", "nap", {"seconds": 0})),
        text_reply("It is 03:30 or 04:30 in New York, depending on the date."),
    ]
    with ScriptedMessagesServer(script) as server:
        code = main(
            ["--docs", str(docs), "run", "--mode", "gw", "--task", "What time is 08:30 UTC in New York?",
             "--base-url", server.base_url, "--servers", str(servers), "--format", "json"]
        )  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [(c["name"], c["is_error"]) for c in out["tool_calls"]] == [("convert_time", False), ("nap", False)]
    sent = server.requests[1].body["messages"]
    results = [block["content"] for m in sent if isinstance(m["content"], list)
               for block in m["content"] if block.get("type") == "tool_result"]  # fmt: skip
    text = results[0] if isinstance(results[0], str) else results[0][0]["text"]
    assert json.loads(text)["target"]["timezone"] == "EST5EDT"


def test_a_bad_servers_file_is_named_and_nothing_starts(
    docs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad_json = tmp_path / "broken.json"
    bad_json.write_text('{"mcpServers": {\n  "time": {"command": "x",}\n}}')
    assert main(["--docs", str(docs), "serve", "--mode", "gw", "--servers", str(bad_json)]) == 2
    assert f"{bad_json}:2: not JSON" in capsys.readouterr().err

    no_transport = tmp_path / "servers.json"
    no_transport.write_text(json.dumps({"mcpServers": {"git": {"args": ["x"]}, "time": {"command": 3}}}))
    assert main(["--docs", str(docs), "serve", "--mode", "gw", "--servers", str(no_transport)]) == 2
    err = capsys.readouterr().err
    assert f"{no_transport}: mcpServers.git: " in err and '"command"' in err
    assert f"{no_transport}: mcpServers.time.command: " in err


def test_workspace_runs_the_built_in_read_tools(docs: Path, tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("the gateway read this\n")

    async def scenario() -> None:
        async with stdio_gateway(docs, "gw", None, "--workspace", str(tmp_path)) as (client, _):
            read = await client.call_tool("read_file", {"path": "notes.md"})
            assert not read.is_error and "the gateway read this" in _text(read)
            outside = await client.call_tool("read_file", {"path": "../secret.txt"})
            assert outside.is_error

    anyio.run(scenario)


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start_http_upstream(port: int) -> subprocess.Popen[bytes]:
    import socket
    import time

    process = subprocess.Popen(
        [sys.executable, str(SLOW_SERVER), "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    for _ in range(600):  # bounded wait for the port to open (not a timing assertion)
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return process
        time.sleep(0.05)
    process.kill()
    pytest.fail("the HTTP upstream did not open its port")


def test_an_http_upstream_is_routed_and_reconnected_after_it_restarts(docs: Path, tmp_path: Path) -> None:
    port = _free_port()
    servers = tmp_path / "servers.json"
    url = f"http://127.0.0.1:{port}/mcp"
    servers.write_text(json.dumps({"mcpServers": {"slow": {"url": url, "headers": {"X-Client": "gateway-test"}}}}))
    upstream = _start_http_upstream(port)
    try:

        async def scenario() -> None:
            nonlocal upstream
            async with stdio_gateway(docs, "gw", servers) as (client, _):
                first = await client.call_tool("nap", {"seconds": 0})
                assert not first.is_error and _text(first) == "slept 0.0 s"
                upstream.kill()
                upstream.wait(timeout=30)
                lost = await client.call_tool("nap", {"seconds": 0})
                assert lost.is_error and "'slow'" in _text(lost)
                upstream = _start_http_upstream(port)
                again = await client.call_tool("nap", {"seconds": 0})
                assert not again.is_error and _text(again) == "slept 0.0 s"

        anyio.run(scenario)
    finally:
        upstream.kill()
        upstream.wait(timeout=30)


def test_mcp_executors_route_calls_of_the_async_and_the_sync_loop(docs: Path, servers: Path) -> None:
    """The library path (``mcp_executors``): the same executors serve ``AsyncAnthropic`` and ``Anthropic``; one
    upstream process answers both loops' calls, since the connection lives on the executors' own thread."""
    import asyncio

    import anthropic

    from prompt_composer import mcp_executors, wrap

    registry = load_registry(docs)
    script = [tool_use_reply(("c1", PERMANENT, {"timezone": "Asia/Tokyo"})), text_reply("done")]
    with mcp_executors(registry, servers) as executors:
        assert {"get_current_time", "git_status", "nap"} <= set(executors)

        async def main(url: str) -> Any:
            async with wrap(anthropic.AsyncAnthropic(base_url=url, api_key="k", max_retries=0),
                            registry=registry, mode="gw", task_id="async") as client:  # fmt: skip
                return await client.run("time?", model="m", max_tokens=50, executors=executors)

        with ScriptedMessagesServer(list(script)) as server:
            result = asyncio.run(main(server.base_url))
        with ScriptedMessagesServer(list(script)) as server:
            client = wrap(anthropic.Anthropic(base_url=server.base_url, api_key="k", max_retries=0),
                          registry=registry, mode="gw", task_id="sync")  # fmt: skip
            sync_result = client.run("time?", model="m", max_tokens=50, executors=executors)
        for run in (result, sync_result):
            (call,) = run.tool_calls
            assert call.executed and json.loads(call.output)["timezone"] == "Asia/Tokyo"
        assert executors.upstreams.starts == {"time": 1}
