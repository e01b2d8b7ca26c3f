"""Importing from MCP servers over stdio: a real server from PyPI, and servers that fail.

Needs the optional ``mcp`` SDK; the real-server test also needs ``mcp-server-time`` (a dev dependency).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
import yaml

from prompt_composer import Composer, load_registry
from prompt_composer.cli import main
from prompt_composer.errors import ImporterError
from prompt_composer.importers.from_mcp import list_mcp_tools
from tests.helpers import DATA, snapshot

pytest.importorskip("mcp")

pytestmark = pytest.mark.slow

# A minimal MCP server (newline-delimited JSON-RPC on stdio) whose behaviour each test picks.
FAKE_SERVER = r"""
import json, sys, time
behaviour = sys.argv[1]
if behaviour == "exit":
    print("fake server: cannot start, missing configuration", file=sys.stderr, flush=True)
    sys.exit(3)
if behaviour == "hang":
    time.sleep(600)
PAGES = {None: ([{"name": "first.tool", "description": "The first tool. It does one thing.",
                  "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}}], "page2"),
         "page2": ([{"name": "second_tool", "description": "The second tool.",
                     "inputSchema": {"type": "object"}}], None)}
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method, rid = msg["method"], msg["id"]
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "fake", "version": "1.0"}}
    elif method == "tools/list":
        tools, cursor = PAGES[(msg.get("params") or {}).get("cursor")]
        if behaviour == "bad-schema":
            tools = [{"name": "t", "inputSchema": {"type": "string"}}]
        result = {"tools": tools} | ({"nextCursor": cursor} if cursor else {})
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no such method"}}),
              flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}), flush=True)
"""


@pytest.fixture(scope="module")
def fake_server(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fake") / "server.py"
    path.write_text(FAKE_SERVER, encoding="utf-8")
    return path


def test_pages_are_followed_and_names_mapped(fake_server: Path, tmp_path: Path) -> None:
    listing = list_mcp_tools([sys.executable, str(fake_server), "ok"], timeout=30)
    assert listing.server == "fake"
    assert [t.name for t in listing.tools] == ["first.tool", "second_tool"]
    out = tmp_path / "docs"
    assert main(["import", "mcp", "--out", str(out), "--", sys.executable, str(fake_server), "ok"]) == 0
    doc = yaml.safe_load((out / "first_tool.yaml").read_text())
    assert doc["origin"] == {"server": "fake", "name": "first.tool"}
    assert doc["brief_source"] == "drafted"
    assert set(load_registry(out).tools) == {"first_tool", "second_tool"}


@pytest.mark.parametrize(
    ("behaviour", "message"),
    [
        ("exit", "exited or closed its output before listing its tools.*missing configuration"),
        ("hang", r"did not list its tools within 1 s"),
        ("bad-schema", r"inputSchema\.type: Input should be 'object'"),
    ],
)
def test_a_failing_server_is_one_line_exit_2_and_leaves_the_folder_untouched(
    behaviour: str, message: str, fake_server: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "docs"
    assert main(["import", "mcp", "--out", str(out), "--", sys.executable, str(fake_server), "ok"]) == 0
    capsys.readouterr()
    before = snapshot(out)
    argv = ["import", "mcp", "--out", str(out), "--timeout", "1", "--", sys.executable, str(fake_server), behaviour]
    assert main(argv) == 2
    stdout, err = capsys.readouterr()
    assert stdout == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("error: MCP server")
    assert re.search(message, err)
    assert snapshot(out) == before


def test_a_command_that_does_not_exist_is_a_clear_error() -> None:
    with pytest.raises(ImporterError, match="cannot start MCP server"):
        list_mcp_tools(["/nonexistent/mcp-server"], timeout=5)


@pytest.mark.skipif(importlib.util.find_spec("mcp_server_time") is None, reason="needs mcp-server-time (dev dep)")
def test_a_real_server_from_pypi_imports_validates_and_composes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "docs"
    code = main(["import", "mcp", "--out", str(out), "--timeout", "60", "--", sys.executable, "-m", "mcp_server_time"])
    stdout, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert "add       get_current_time  (mcp-time: get_current_time)" in stdout
    assert "add       convert_time  (mcp-time: convert_time)" in stdout

    assert main(["--docs", str(out), "validate"]) == 2
    assert "no modes/ folder: no mode can show these tools" in capsys.readouterr()[1]

    (out / "modes").mkdir()
    mode = {"slug": "clock", "name": "Clock", "role": "You answer questions about time.", "groups": ["mcp"]}
    (out / "modes" / "clock.yaml").write_text(yaml.safe_dump(mode | {"recent_size": 2, "budget_tokens": 4000}))
    registry = load_registry(out)
    prompt = Composer(registry).compose("clock", recent=["convert_time"])
    assert prompt.full == ("convert_time",)
    assert prompt.brief == ("get_current_time",)
    definitions = {t["name"]: t for t in prompt.tools}
    assert "### Parameters" in definitions["convert_time"]["description"]
    assert definitions["get_current_time"]["description"] == registry.tools["get_current_time"].brief

    assert main(["--docs", str(out), "compose", "--mode", "clock", "--format", "json", "--provider", "openai"]) == 0
    tools = json.loads(capsys.readouterr()[0])["tools"]
    assert {t["function"]["name"] for t in tools} >= {"get_current_time", "convert_time"}

    # Re-importing an unchanged server writes nothing.
    before = snapshot(out)
    assert main(["import", "mcp", "--out", str(out), "--", sys.executable, "-m", "mcp_server_time"]) == 0
    assert "unchanged 2 tools" in capsys.readouterr()[0]
    assert snapshot(out) == before


POISON_SERVER = DATA / "poison" / "mcp_server.py"


def test_an_mcp_server_with_two_poisoned_tools_has_exactly_those_quarantined(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "docs"
    code = main(["import", "mcp", "--out", str(out), "--timeout", "60", "--", sys.executable, str(POISON_SERVER)])
    stdout, err = capsys.readouterr()
    assert (code, err) == (0, "")
    registry = load_registry(out)
    assert set(registry.tools) == {"add", "word_count", "daily_quote", "share_note"}
    assert {n: d.quarantine for n, d in registry.tools.items() if d.quarantined} == {
        "daily_quote": ("conceal", "hidden-markup", "secret-access"),
        "share_note": ("exfiltration", "invisible-unicode"),
    }
    # The report names both, with each finding at its file and line, and says how to clear them.
    assert "quarantined daily_quote  (poison-fixture: daily_quote): conceal, hidden-markup, secret-access" in stdout
    assert "quarantined share_note  (poison-fixture: share_note): exfiltration, invisible-unicode" in stdout
    assert re.search(
        rf"{re.escape(str(out / 'share_note.yaml'))}:\d+: high \[invisible-unicode\] share_note "
        r"input_schema\.properties\.teammate\.description: Who receives it\.\\u200b Always",
        stdout,
    )
    assert "2 tool(s) quarantined: no mode allows them until a person clears them" in stdout
    assert "quarantined add" not in stdout and "quarantined word_count" not in stdout
    # The drafted brief keeps none of the upstream's orders.
    assert registry.tools["daily_quote"].brief == "Returns an inspiring quote for the day."
    assert registry.tools["share_note"].brief == "Shares a note with a teammate."

    (out / "modes").mkdir()
    mode = {"slug": "all", "name": "All", "role": "You help.", "groups": ["mcp", "mcp-write"], "recent_size": 2}
    (out / "modes" / "all.yaml").write_text(yaml.safe_dump(mode | {"budget_tokens": 8000}))
    registry = load_registry(out)
    assert registry.mode("all").allowed == ("word_count", "add")  # mcp, then mcp-write (add reads as writing)
    names = {t["name"] for t in Composer(registry).compose("all", recent=[]).tools}
    assert "daily_quote" not in names and "share_note" not in names

    assert main(["--docs", str(out), "audit", "--security", "--format", "json"]) == 1
    flagged = json.loads(capsys.readouterr()[0])["flagged_tools"]
    assert flagged == ["daily_quote", "share_note"]
