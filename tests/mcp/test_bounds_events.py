"""The gateway's event log keeps a bounded tool name: a 5 MB name the model sent is logged cut, with the note."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

pytest.importorskip("mcp")

from prompt_composer import default_docs_dir, load_registry
from prompt_composer.core.bounds import MAX_ECHOED_NAME
from prompt_composer.core.session import TaskSession
from prompt_composer.learn.events import EventLog
from prompt_composer.mcp.answers import ClientTask
from prompt_composer.mcp.gateway import Gateway

BIG = 5_000_000


class ListSink:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def write(self, event: Mapping[str, Any]) -> None:
        self.events.append(dict(event))

    def close(self) -> None:
        pass


def test_a_5_mb_name_is_logged_cut_and_refused_short() -> None:
    sink = ListSink()
    with EventLog(sink, include_content=False) as log:
        gateway = Gateway(load_registry(default_docs_dir()), "code", events=log)
        client = ClientTask(TaskSession())
        content, is_error = asyncio.run(gateway.answer(client, "x" * BIG, {}))
        fetched, fetch_error = asyncio.run(gateway.answer(client, "fetch_tool_description", {"name": "y" * BIG}))
    assert is_error and fetch_error
    assert len(content[0].text) < 1_000 and len(fetched[0].text) < 1_000
    named = [e for e in sink.events if "tool" in e and e["event"] in ("refusal", "tool_call", "fetch")]
    assert {e["event"] for e in named} >= {"refusal", "tool_call", "fetch"}
    for event in named:
        if event["tool"] not in ("fetch_tool_description",):
            assert event["tool"].endswith(f"… (cut: {BIG:,} characters in all)"), event["event"]
            assert len(event["tool"]) < MAX_ECHOED_NAME + 50
