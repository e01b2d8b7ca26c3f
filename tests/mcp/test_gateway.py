"""``prompt-composer serve`` with real upstream MCP servers (PyPI mcp-server-time and mcp-server-git, npm
server-memory where node is installed), reached through the official MCP client SDK over stdio and HTTP: what
calls answer, and where they are routed. What is listed, to whom and in which order: test_gateway_listing.py.

The tool docs are imported from the running servers, as a user would (see conftest.py).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from prompt_composer import load_registry
from prompt_composer.cli import main
from prompt_composer.core.fetch import fetch_tool_doc
from prompt_composer.importers.from_mcp import import_mcp
from prompt_composer.testing.replies import text_reply, tool_use_reply
from prompt_composer.testing.server import ScriptedMessagesServer
from tests.helpers import REPO, learned_use_log, npm_server
from tests.mcp.support import (
    LEGACY,
    MODERN,
    PERMANENT,
    SLOW_SERVER,
    VERSION_OF,
    blocks,
    git_repo,
    listing,
    names,
    stdio_gateway,
    text,
)


# The older protocol era is run by CI, the current one by the quick tier too (-m "not slow")
@pytest.mark.parametrize("era", [pytest.param(LEGACY, marks=pytest.mark.slow), MODERN])
def test_stdio_lists_briefs_fetches_once_routes_and_promotes_in_results(docs: Path, servers: Path, era: str) -> None:
    """Both protocol eras: brief and full texts as configured; a fetch gives the full text once, then one line; a
    routed call returns the real server's answer, with the tool's full text after its first use; the list never
    changes and nothing is announced."""
    registry = load_registry(docs)
    mode = registry.mode("gw")

    async def scenario() -> None:
        async with stdio_gateway(docs, "gw", servers, era=era) as (client, notes):
            assert client.protocol_version == VERSION_OF[era]
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            # The mode's tools and fetch, nothing else: brief text except the permanent tool.
            assert set(tools) == {*mode.allowed, "fetch_tool_description"}
            assert tools[PERMANENT].description == registry.tools[PERMANENT].full
            for name in set(mode.allowed) - {PERMANENT}:
                assert tools[name].description == registry.tools[name].brief, name
                assert tools[name].input_schema["properties"].keys() == (
                    registry.tools[name].input_schema["properties"].keys()
                ), name
            first = await listing(client)

            fetched = await client.call_tool("fetch_tool_description", {"name": "git_log"})
            assert not fetched.is_error and text(fetched) == fetch_tool_doc(registry.tools["git_log"])
            again = await client.call_tool("fetch_tool_description", {"name": "git_log"})
            assert not again.is_error and text(again).startswith("git_log is already documented in full above")

            # A routed call reaches the real server under the tool's original name and returns its real answer;
            # the model had only the brief, so the tool's full text follows its first result, once.
            convert = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
            answer = await client.call_tool("convert_time", convert)
            assert not answer.is_error, text(answer)
            result, promoted = blocks(answer)
            assert json.loads(result)["target"]["datetime"].endswith("T21:00:00+09:00")
            assert fetch_tool_doc(registry.tools["convert_time"]) in promoted
            assert blocks(await client.call_tool("convert_time", convert)) == [result]
            # A permanent tool is listed in full: its results come alone.
            timed = await client.call_tool(PERMANENT, {"timezone": "Europe/Paris"})
            assert [json.loads(b)["timezone"] for b in blocks(timed)] == ["Europe/Paris"]

            assert await listing(client) == first
            await anyio.sleep(0.3)
            assert notes == []  # nothing changed, so nothing was announced

    anyio.run(scenario)


def test_a_wrong_call_of_a_brief_tool_gets_its_full_text_once(docs: Path, servers: Path) -> None:
    registry = load_registry(docs)

    async def scenario() -> None:
        async with stdio_gateway(docs, "gw", servers) as (client, _):
            wrong = await client.call_tool("convert_time", {"time": "12:00"})
            assert wrong.is_error and "nothing was run" in text(wrong)
            assert fetch_tool_doc(registry.tools["convert_time"]) in text(wrong)
            twice = await client.call_tool("convert_time", {"time": "12:00"})
            assert twice.is_error and "input schema" in text(twice)
            assert registry.tools["convert_time"].full not in text(twice)  # shown once is enough

    anyio.run(scenario)


def test_a_task_start_mode_promotes_nothing(docs: Path, servers: Path) -> None:
    async def scenario() -> None:
        async with stdio_gateway(docs, "gw-lean", servers) as (client, _):
            convert = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
            assert len(blocks(await client.call_tool("convert_time", convert))) == 1

    anyio.run(scenario)


def test_tools_of_other_modes_are_never_fetched_or_called(docs: Path, servers: Path) -> None:
    registry = load_registry(docs)
    foreign = "debug_launch"
    assert foreign in registry.tools and not registry.mode("gw").allows(foreign)

    async def scenario() -> None:
        async with stdio_gateway(docs, "gw", servers) as (client, _):
            assert foreign not in await names(client)
            fetched = await client.call_tool("fetch_tool_description", {"name": foreign})
            assert fetched.is_error and registry.tools[foreign].full not in text(fetched)
            called = await client.call_tool(foreign, {"program": "app.py"})
            assert called.is_error and f"no tool {foreign!r} in mode 'gw'" in text(called)
            # A made-up name gets the same answers, its name aside: a refusal tells nothing of what exists.
            made_up = foreign + "x"
            assert made_up not in registry.tools
            fetched_twin = await client.call_tool("fetch_tool_description", {"name": made_up})
            called_twin = await client.call_tool(made_up, {"program": "app.py"})
            assert text(fetched_twin).replace(made_up, "?") == text(fetched).replace(foreign, "?")
            assert text(called_twin).replace(made_up, "?") == text(called).replace(foreign, "?")
            # A tool of the mode with neither an upstream nor an executor is refused, saying why.
            unrunnable = await client.call_tool("read_file", {"path": "README.md"})
            assert unrunnable.is_error and "no executor" in text(unrunnable)
            # Arguments are checked against the schema before anything is sent upstream.
            wrong = await client.call_tool("convert_time", {"time": 12})
            assert wrong.is_error and "input schema" in text(wrong)

    anyio.run(scenario)


def test_a_read_only_call_whose_upstream_died_is_made_again_on_the_restarted_server(docs: Path, servers: Path) -> None:
    """The time server declares get_current_time read-only: the call that finds the server dead is answered by a new
    server process, with no error for the model to recover from."""
    pidfile = servers.parent / "time.pid"

    async def scenario() -> None:
        async with stdio_gateway(docs, "gw", servers) as (client, _):
            first = await client.call_tool(PERMANENT, {"timezone": "UTC"})
            assert not first.is_error
            pid = int(pidfile.read_text())
            os.kill(pid, signal.SIGKILL)
            await anyio.sleep(0.3)
            again = await client.call_tool(PERMANENT, {"timezone": "Asia/Tokyo"})
            assert not again.is_error, text(again)
            assert json.loads(text(again))["timezone"] == "Asia/Tokyo"
            assert int(pidfile.read_text()) != pid  # a new server process answered

    anyio.run(scenario)


def test_a_writing_call_whose_upstream_died_is_an_error_and_the_next_call_restarts_it(
    docs: Path, servers: Path, tmp_path: Path
) -> None:
    """git_add writes: it is never made twice. The call that finds the server dead is an error result naming the
    server; the model's next call starts it again."""
    pidfile = servers.parent / "git.pid"
    repo = git_repo(tmp_path)

    async def scenario() -> None:
        async with stdio_gateway(docs, "gw", servers) as (client, _):
            status = await client.call_tool("git_status", {"repo_path": str(repo)})
            assert not status.is_error, text(status)
            pid = int(pidfile.read_text())
            os.kill(pid, signal.SIGKILL)
            await anyio.sleep(0.3)
            lost = await client.call_tool("git_add", {"repo_path": str(repo), "files": ["notes.txt"]})
            assert lost.is_error and "'git'" in text(lost) and "restarted on the next call" in text(lost)
            assert int(pidfile.read_text()) == pid  # nothing was started to run it again
            added = await client.call_tool("git_add", {"repo_path": str(repo), "files": ["notes.txt"]})
            assert not added.is_error, text(added)
            assert int(pidfile.read_text()) != pid

    anyio.run(scenario)


@pytest.mark.slow  # waits out a hung upstream's call timeout
def test_a_hung_or_missing_upstream_is_an_error_result_naming_it(docs: Path, tmp_path: Path) -> None:
    only_slow = tmp_path / "servers.json"
    only_slow.write_text(json.dumps({"mcpServers": {"slow": {"command": sys.executable, "args": [str(SLOW_SERVER)]}}}))

    async def scenario() -> None:
        async with stdio_gateway(docs, "gw", only_slow, "--call-timeout", "2") as (client, _):
            quick = await client.call_tool("nap", {"seconds": 0})
            assert not quick.is_error and blocks(quick)[0] == "slept 0.0 s"
            hung = await client.call_tool("nap", {"seconds": 60})
            assert hung.is_error and "'slow'" in text(hung) and "within 2 s" in text(hung)
            missing = await client.call_tool("git_status", {"repo_path": str(tmp_path)})
            assert missing.is_error and "'git' is not in" in text(missing) and str(only_slow) in text(missing)
            assert not (await client.call_tool("nap", {"seconds": 0})).is_error  # the gateway is still serving

        async with stdio_gateway(docs, "gw", None) as (client, _):
            unrouted = await client.call_tool("nap", {"seconds": 0})
            assert unrouted.is_error and "--servers" in text(unrouted)

    anyio.run(scenario)


def test_discovery_mode_search_answers_with_the_tools_and_call_tool_routes(
    docs: Path, servers: Path, tmp_path: Path
) -> None:
    registry = load_registry(docs)
    repo = git_repo(tmp_path)

    async def scenario() -> None:
        async with stdio_gateway(docs, "gw-find", servers) as (client, notes):
            first = await listing(client)
            assert [tool["name"] for tool in first] == ["tool_search", "fetch_tool_description", "call_tool"]
            found = await client.call_tool("tool_search", {"query": "show the working tree status of a git repo"})
            assert not found.is_error and "git_status" in text(found)
            # The found tools come with their full text and how to call them; the list does not change.
            assert fetch_tool_doc(registry.tools["git_status"]) in text(found)
            assert 'call_tool, {"name": ' in text(found)
            again = await client.call_tool("tool_search", {"query": "show the working tree status of a git repo"})
            assert "Documented above in this conversation: " in text(again) and "## git_status" not in text(again)
            status = await client.call_tool("call_tool", {"name": "git_status", "arguments": {"repo_path": str(repo)}})
            assert not status.is_error, text(status)
            assert "notes.txt" in text(status)  # the real git server read the real repository
            assert len(blocks(status)) == 1  # its full text came with the search already
            # Search never reaches beyond the mode, and call_tool is held to it too.
            outside = await client.call_tool("call_tool", {"name": "debug_launch", "arguments": {}})
            assert outside.is_error and "no tool 'debug_launch' in mode 'gw-find'" in text(outside)
            nameless = await client.call_tool("call_tool", {"arguments": {}})
            assert nameless.is_error and "call_tool needs" in text(nameless)
            assert await listing(client) == first
            await anyio.sleep(0.3)
            assert notes == []

    anyio.run(scenario)


def test_serve_learns_search_phrasings_from_an_event_log(docs: Path, servers: Path, tmp_path: Path) -> None:
    """``serve --learn-from LOG``: a request that once led to a tool's use finds that tool; without the log it
    does not (nothing in the tool's docs says "oracle")."""
    log = learned_use_log(
        tmp_path / "events.jsonl", query="summon the oracle", tool="convert_time", mode="gw-find", provider="mcp"
    )

    async def search(*extra: str) -> str:
        async with stdio_gateway(docs, "gw-find", servers, *extra) as (client, _notes):
            found = await client.call_tool("tool_search", {"query": "summon the oracle"})
            assert not found.is_error, text(found)
            return text(found)

    plain = anyio.run(search)
    assert plain.startswith("No tool of") and "## convert_time" not in plain  # an explained miss
    learned = anyio.run(search, "--learn-from", str(log))
    assert not learned.startswith("No tool of") and "## convert_time" in learned
    missing = tmp_path / "nope.jsonl"
    assert main(["--docs", str(docs), "serve", "--mode", "gw-find", "--learn-from", str(missing)]) == 2


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
            assert not created.is_error, text(created)
            read = await client.call_tool("read_graph", {})
            assert "serves modes over MCP" in text(read)

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
            assert not read.is_error and "the gateway read this" in text(read)
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
                assert not first.is_error and blocks(first)[0] == "slept 0.0 s"
                upstream.kill()
                upstream.wait(timeout=30)
                lost = await client.call_tool("nap", {"seconds": 0})
                assert lost.is_error and "'slow'" in text(lost)
                upstream = _start_http_upstream(port)
                again = await client.call_tool("nap", {"seconds": 0})
                assert not again.is_error and text(again) == "slept 0.0 s"

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
