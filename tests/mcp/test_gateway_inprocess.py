"""The gateway in this process, without a transport: its list and answers for a task, its events, and what a
reload of a :class:`LiveRegistry` announces."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from prompt_composer import default_docs_dir
from prompt_composer.core.builtins import FETCH_TOOL_NAME
from prompt_composer.core.live import LiveRegistry
from prompt_composer.core.promotion import inline_text
from prompt_composer.core.session import TaskSession
from prompt_composer.learn.events import EventLog
from prompt_composer.mcp.answers import ClientTask
from prompt_composer.mcp.gateway import Gateway
from tests.helpers import REG, echo


class ListSink:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def write(self, event: Mapping[str, Any]) -> None:
        self.events.append(dict(event))

    def close(self) -> None:
        pass


def _shape(event: Mapping[str, Any]) -> tuple[str, str | None, str | None]:
    return event["event"], event.get("tool"), event.get("outcome", event.get("kind"))


def _texts(content: list[Any]) -> list[str]:
    return [block.text for block in content]


def _session(mode: str) -> tuple[list[dict[str, Any]], list[list[str]], list[list[dict[str, Any]]]]:
    """A task's calls on a gateway over ``mode`` of the loop's registry: its events, results and lists."""
    sink = ListSink()
    results: list[list[str]] = []
    lists: list[list[dict[str, Any]]] = []
    with EventLog(sink, include_content=True) as log:
        gateway = Gateway(REG, mode, executors={"list_files": echo, "glob": echo}, events=log)
        client = ClientTask(TaskSession())

        async def run() -> None:
            lists.append(gateway.tool_list(client))
            for name, arguments in [
                (FETCH_TOOL_NAME, {"name": "glob"}),
                ("list_files", {"path": "src"}),
                ("list_files", {"path": "docs"}),
                ("glob", {"path": "x"}),
                ("list_files", {}),
            ]:
                content, _ = await gateway.answer(client, name, arguments)
                results.append(_texts(content))
            lists.append(gateway.tool_list(ClientTask(TaskSession())))

        asyncio.run(run())
    return sink.events, results, lists


def test_a_first_use_carries_the_full_text_once_and_the_list_stays() -> None:
    events, results, lists = _session("inline")
    assert lists[0] == lists[1]  # a fresh task's list is the one this task started with
    _fetched, first, second, glob, _wrong = results
    assert first == ["ran on src", inline_text(REG, "list_files")]
    assert second == ["ran on docs"]
    assert glob == ["ran on x"]  # fetched before its first use: its full text is in the conversation already
    assert [_shape(e) for e in events if e["event"] != "list"] == [
        ("fetch", "glob", "ok"),
        ("tool_call", FETCH_TOOL_NAME, "ok"),
        ("promotion", "list_files", "fifo"),
        ("promotion", "list_files", "inline"),
        ("tool_call", "list_files", "ok"),
        ("tool_call", "list_files", "ok"),
        ("promotion", "glob", "fifo"),
        ("tool_call", "glob", "ok"),
        ("refusal", "list_files", None),
        ("tool_call", "list_files", "refused"),
    ]
    expanded = [e["expanded"] for e in events if e["event"] == "tool_call" and e["tool"] == "list_files"]
    assert expanded == [True, False, False]


def test_a_wrong_call_before_the_first_use_gets_the_full_text() -> None:
    async def run() -> tuple[list[str], list[str]]:
        gateway = Gateway(REG, "inline", executors={"list_files": echo})
        client = ClientTask(TaskSession())
        wrong, error = await gateway.answer(client, "list_files", {})
        right, _ = await gateway.answer(client, "list_files", {"path": "src"})
        assert error
        return _texts(wrong), _texts(right)

    wrong, right = asyncio.run(run())
    assert "FULL TEXT OF LIST_FILES" in wrong[0] and "nothing was run" in wrong[0]
    assert right == ["ran on src"]  # its full text went out with the error already


def test_a_task_start_mode_keeps_results_as_they_are() -> None:
    events, results, _ = _session("code")
    assert results[1] == ["ran on src"]
    assert ("promotion", "list_files", "inline") not in [_shape(e) for e in events]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    target = tmp_path / "docs"
    shutil.copytree(default_docs_dir(), target)
    return target


def test_refresh_announces_only_a_reload_that_changed_the_list(folder: Path, caplog: pytest.LogCaptureFixture) -> None:
    live = LiveRegistry(folder)
    gateway = Gateway(live, "ask")
    before = gateway.tool_list(ClientTask(TaskSession()))

    async def reloaded() -> bool:
        assert live.reload().swapped
        return await gateway.refresh()

    code = folder / "modes" / "code.yaml"
    code.write_text(code.read_text().replace("recent_size: 5", "recent_size: 4"))
    assert not asyncio.run(reloaded())  # another mode changed: ask's list did not
    assert gateway.tool_list(ClientTask(TaskSession())) == before
    ask = folder / "modes" / "ask.yaml"
    brief = next(t["name"] for t in before if t["name"] not in live.current.mode("ask").permanent)
    ask.write_text(ask.read_text().replace("permanent: [", f"permanent: [{brief}, ", 1))
    assert asyncio.run(reloaded())
    after = gateway.tool_list(ClientTask(TaskSession()))
    assert sorted(t["name"] for t in after) == sorted(t["name"] for t in before)
    assert {t["name"]: t["description"] for t in after}[brief] == live.current.tools[brief].full  # now in full
    assert not asyncio.run(gateway.refresh())  # announced once

    ask.unlink()  # a version without the mode: the last one with it keeps serving
    live.reload()
    assert gateway.tool_list(ClientTask(TaskSession())) == after
    assert any("no mode 'ask'" in r.getMessage() and r.levelname == "WARNING" for r in caplog.records)


def test_a_reload_that_changes_a_cards_instructions_reaches_the_next_initialize(folder: Path) -> None:
    (folder / "put_note.yaml").write_text(
        "name: put_note\ngroup: mcp\nbrief: Save a note for the team.\nfull: Save a note for the team.\n"
        "origin: {server: notes, name: put_note}\ninput_schema: {type: object}\n",
        encoding="utf-8",
    )
    (folder / "modes" / "notes.yaml").write_text(
        "slug: notes\nname: notes\nrole: You keep the team's notes.\ninclude: [put_note]\npermanent: []\n"
        "recent_size: 2\nbudget_tokens: 100000\n",
        encoding="utf-8",
    )
    card = folder / "servers" / "notes.yaml"
    card.parent.mkdir(exist_ok=True)
    card.write_text(
        "name: notes\ndescription: The team's shared notes.\ninstructions: Look for a note before you write one.\n",
        encoding="utf-8",
    )
    live = LiveRegistry(folder)
    server = Gateway(live, "notes").server
    before = server.create_initialization_options().instructions
    assert before.endswith("Look for a note before you write one.")
    card.write_text(card.read_text().replace("Look for a note", "Search the notes"), encoding="utf-8")
    assert live.reload().swapped
    after = server.create_initialization_options().instructions
    assert after.endswith("Search the notes before you write one.")
    assert after.replace("Search the notes", "Look for a note") == before  # only the card's part changed
