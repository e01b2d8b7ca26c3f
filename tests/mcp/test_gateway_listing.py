"""What ``prompt-composer serve`` lists, per MCP 2026-07-28: one ``tools/list`` for every connection, whatever it
searched, fetched or called; the same order on every start; ``ttlMs``/``cacheScope`` for 2026-07-28 clients; both
protocol eras of the official SDK's client (``initialize`` at 2025-11-25, and 2026-07-28); and ``list_changed``
only when a reload of the docs changed the list (``serve --watch``): ``notifications/tools/list_changed`` for the
session era, ``subscriptions/listen`` for 2026-07-28.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from prompt_composer import Composer, load_registry
from prompt_composer.core.fetch import fetch_tool_doc
from tests.mcp.support import (
    LEGACY,
    MODERN,
    Notes,
    env,
    git_repo,
    http_gateway,
    listing,
    settle,
    stdio_gateway,
    text,
)

BUILT_IN = ["tool_search", "fetch_tool_description", "call_tool"]
CONVERT = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}


def _expected(docs: Path, slug: str) -> list[str]:
    """The list's names in order: the mode's listed tools in the mode's order, then the built-in tools."""
    registry = load_registry(docs)
    mode = registry.mode(slug)
    if mode.config.discovery:
        return [n for n in mode.allowed if n in mode.permanent] + BUILT_IN
    tiers = Composer(registry).tiers(mode)
    if tiers is None:
        return [*mode.allowed, "fetch_tool_description"]
    assert tiers.brief and tiers.catalog, "gw-tier no longer splits its tools: adjust its context_tokens in conftest"
    return [n for n in mode.allowed if not tiers.unlisted(n)] + BUILT_IN


async def _call(client: Client, listed: list[str], name: str, arguments: dict[str, Any]) -> Any:
    """Call ``name`` directly when the list holds it, else through ``call_tool``; it must succeed."""
    if name in listed:
        result = await client.call_tool(name, arguments)
    else:
        result = await client.call_tool("call_tool", {"name": name, "arguments": arguments})
    assert not result.is_error, text(result)
    return result


async def _work(client: Client, repo: Path) -> None:
    """What a task does: search (where the mode can), fetch, and call routed tools (one twice)."""
    listed = [tool.name for tool in (await client.list_tools()).tools]
    if "tool_search" in listed:
        found = await client.call_tool("tool_search", {"query": "working tree status of a git repository"})
        assert not found.is_error and "git_status" in text(found)
    for name in ("convert_time", "git_status", "convert_time"):
        assert not (await client.call_tool("fetch_tool_description", {"name": name})).is_error
    await _call(client, listed, "convert_time", CONVERT)
    status = await _call(client, listed, "git_status", {"repo_path": str(repo)})
    assert "notes.txt" in text(status)
    await _call(client, listed, "convert_time", CONVERT)


@pytest.mark.parametrize(
    "slug",
    # each starts the gateway and its upstreams twice: the plain mode in the quick tier, the other two in CI's run
    ["gw", pytest.param("gw-find", marks=pytest.mark.slow), pytest.param("gw-tier", marks=pytest.mark.slow)],
)
def test_two_starts_and_both_eras_list_the_same_tools_in_the_same_order(
    docs: Path, servers: Path, tmp_path: Path, slug: str
) -> None:
    """Two server processes (other hash seeds), a 2025-11-25 client that works the tools and a fresh 2026-07-28
    one: the same list, byte for byte, in the mode's order."""
    repo = git_repo(tmp_path)

    async def scenario() -> tuple[list[Any], list[Any], list[Any]]:
        async with stdio_gateway(docs, slug, servers, era=LEGACY, environ=env(PYTHONHASHSEED="1")) as (one, notes):
            assert one.protocol_version == "2025-11-25"
            before = await listing(one)
            await _work(one, repo)
            after = await listing(one)
            await anyio.sleep(0.3)
            assert notes == []  # searches, fetches and calls announce nothing
        async with stdio_gateway(docs, slug, servers, era=MODERN, environ=env(PYTHONHASHSEED="2")) as (two, _):
            assert two.protocol_version == "2026-07-28"
            fresh = await listing(two)
        return before, after, fresh

    before, after, fresh = anyio.run(scenario)
    assert [tool["name"] for tool in before] == _expected(docs, slug)
    assert after == before
    assert fresh == before


def test_a_tiered_mode_lists_catalog_tools_in_call_tool(docs: Path, servers: Path) -> None:
    registry = load_registry(docs)
    mode = registry.mode("gw-tier")
    tiers = Composer(registry).tiers(mode)
    assert tiers is not None and tiers.catalog

    async def scenario() -> None:
        async with stdio_gateway(docs, "gw-tier", servers) as (client, _):
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert not set(tiers.catalog) & set(tools)
            routing = tools["call_tool"].description or ""
            for name in tiers.catalog:
                assert f"- {name}: " in routing, name
            for name in tiers.brief:
                assert tools[name].description == registry.tools[name].brief
            # A catalog tool's fetch says how to call it; its first call through call_tool carries its full text.
            catalog = tiers.catalog[0]
            fetched = await client.call_tool("fetch_tool_description", {"name": catalog})
            assert text(fetched).startswith(fetch_tool_doc(registry.tools[catalog]))
            assert f'is not in your tool list: call it through call_tool, {{"name": "{catalog}"' in text(fetched)

    anyio.run(scenario)


def test_every_connection_to_one_server_lists_the_same_tools_and_keeps_its_own_task(
    docs: Path, servers: Path, tmp_path: Path
) -> None:
    """Over HTTP: a 2025-11-25 connection that searched, fetched and called, a fresh one, and 2026-07-28 requests
    get one list; ``ttlMs``/``cacheScope`` go to 2026-07-28 clients only. Tasks stay apart: what one connection was
    shown is shown again to another."""
    registry = load_registry(docs)
    repo = git_repo(tmp_path)
    with http_gateway(docs, "gw-tier", servers) as url:

        async def scenario() -> None:
            notes = Notes()
            with anyio.fail_after(120):
                async with (
                    Client(url, mode=LEGACY, message_handler=notes.handler, cache=None) as a,
                    Client(url, mode=MODERN, cache=None) as modern,
                ):
                    first = await a.list_tools()
                    assert "ttl_ms" not in first.model_fields_set  # not in the 2025-11-25 revision
                    before = await listing(a)
                    await _work(a, repo)
                    assert await listing(a) == before
                    again = await a.call_tool("fetch_tool_description", {"name": "git_log"})
                    assert not again.is_error
                    assert text(await a.call_tool("fetch_tool_description", {"name": "git_log"})).startswith(
                        "git_log is already documented"
                    )
                    async with Client(url, mode=LEGACY, cache=None) as b:
                        assert await listing(b) == before
                        fetched = await b.call_tool("fetch_tool_description", {"name": "git_log"})
                        assert text(fetched).startswith(fetch_tool_doc(registry.tools["git_log"]))  # its own task
                    result = await modern.list_tools()
                    assert (result.ttl_ms, result.cache_scope) == (300_000, "public")
                    assert await listing(modern) == before
                    # A 2026-07-28 HTTP request stands alone: a fetch always has the full text, and a result never
                    # carries it unasked (nothing tells whether the model has it; every call would carry it).
                    for _ in range(2):
                        fetched = await modern.call_tool("fetch_tool_description", {"name": "git_log"})
                        assert text(fetched).startswith(fetch_tool_doc(registry.tools["git_log"]))
                        assert len((await modern.call_tool("convert_time", CONVERT)).content) == 1
                    await anyio.sleep(0.3)
                    assert notes == []

        anyio.run(scenario)


def _edit(path: Path, pattern: str, replacement: str) -> None:
    before = path.read_text(encoding="utf-8")
    after = re.sub(pattern, replacement, before, count=1, flags=re.MULTILINE)
    assert after != before, f"{pattern!r} not in {path}"
    path.write_text(after, encoding="utf-8")


async def _wait_for(path: Path, needle: str, count: int) -> None:
    with anyio.move_on_after(30):
        while path.read_text(encoding="utf-8").count(needle) < count:
            await anyio.sleep(0.05)


def test_a_reload_that_changes_the_list_is_announced_to_both_eras(docs: Path, servers: Path, tmp_path: Path) -> None:
    """``serve --watch``: an edit that leaves the mode's list as it was announces nothing; one that changes it is
    announced to a 2025-11-25 connection (notifications/tools/list_changed) and on a 2026-07-28 client's
    subscriptions/listen stream, and the list then has the new text, in the same order."""
    folder = tmp_path / "docs"
    shutil.copytree(docs, folder)
    stderr = tmp_path / "serve.err"
    with http_gateway(folder, "gw", servers, "--watch", "0.1", stderr=stderr) as url:

        async def scenario() -> None:
            notes = Notes()
            events: list[Any] = []
            with anyio.fail_after(120):
                async with (
                    Client(url, mode=LEGACY, message_handler=notes.handler, cache=None) as legacy,
                    Client(url, mode=MODERN, cache=None) as modern,
                    modern.listen(tools_list_changed=True) as subscription,
                    anyio.create_task_group() as group,
                ):
                    assert legacy.server_capabilities.tools is not None
                    assert legacy.server_capabilities.tools.list_changed is True

                    async def collect() -> None:
                        async for event in subscription:
                            events.append(event)

                    group.start_soon(collect)
                    before = await listing(legacy)
                    _edit(folder / "modes" / "gw-find.yaml", r"^role: .*$", "role: You find tools, then use them.")
                    await _wait_for(stderr, "docs reloaded", 1)
                    assert "unchanged (nothing announced)" in stderr.read_text()
                    await anyio.sleep(0.3)
                    assert (notes, events) == ([], [])

                    _edit(folder / "convert_time.yaml", r"^brief: .*$", "brief: Convert a time of day between zones.")
                    await settle(notes, 1, seconds=30)
                    with anyio.move_on_after(30):
                        while not events:
                            await anyio.sleep(0.02)
                    assert notes == ["notifications/tools/list_changed"]
                    assert [type(event).__name__ for event in events] == ["ToolsListChanged"]
                    after = await listing(modern)
                    assert [t["name"] for t in after] == [t["name"] for t in before]
                    changed = {t["name"]: t["description"] for t in after}
                    assert changed["convert_time"] == "Convert a time of day between zones."
                    assert await listing(legacy) == after
                    group.cancel_scope.cancel()

        anyio.run(scenario)
    assert "its tool list changed (announced)" in stderr.read_text()


def test_watch_refuses_an_overlay_it_could_not_follow(
    docs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from prompt_composer.cli import main

    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("gw:\n  recent_size: 1\n", encoding="utf-8")
    args = ["--docs", str(docs), "--overlay", str(overlay), "serve", "--mode", "gw", "--watch", "1"]
    assert main(args) == 2
    assert "cannot apply an overlay" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse: 0 is no poll interval
        main(["--docs", str(docs), "serve", "--mode", "gw", "--watch", "0"])
    assert "--watch: must be more than 0" in capsys.readouterr().err


def test_a_reload_is_announced_over_stdio_too(docs: Path, servers: Path, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    shutil.copytree(docs, folder)
    watch = ("--watch", "0.1")

    async def scenario() -> None:
        events: list[Any] = []
        async with (
            stdio_gateway(folder, "gw-find", servers, *watch, era=LEGACY) as (legacy, notes),
            stdio_gateway(folder, "gw-find", servers, *watch, era=MODERN) as (modern, _),
            modern.listen(tools_list_changed=True) as subscription,
            anyio.create_task_group() as group,
        ):

            async def collect() -> None:
                async for event in subscription:
                    events.append(event)

            group.start_soon(collect)
            before = await listing(modern)
            _edit(folder / "modes" / "gw-find.yaml", r"^permanent: \[\]$", "permanent: [get_current_time]")
            await settle(notes, 1, seconds=30)
            with anyio.move_on_after(30):
                while not events:
                    await anyio.sleep(0.02)
            assert notes == ["notifications/tools/list_changed"] and len(events) == 1
            after = await listing(legacy)
            assert [t["name"] for t in after] == ["get_current_time", *(t["name"] for t in before)]
            assert await listing(modern) == after
            group.cancel_scope.cancel()

    anyio.run(scenario)
