"""Server cards in imports, per path: a real stdio MCP server's ``initialize`` (title, description, instructions),
``import json --server-description``, an MCP registry ``server.json`` (``--server-card``), a drafted card when
nothing says what the server is for, and every server of a client's config (``import mcp --servers``, stdio and
Streamable HTTP) in one write. A card a person reviewed survives a re-import; a malformed one is refused with a
clear error, and nothing is written."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from prompt_composer import default_docs_dir, load_registry
from prompt_composer.importers import import_json
from tests.helpers import DATA, run_cli, snapshot, write_json

CARD_SERVER = DATA / "mcp" / "card_server.py"
NOTES = [sys.executable, str(CARD_SERVER)]
DESCRIPTION = (
    "Persistent notes that let the assistant remember facts about the team across conversations. "
    "Recall them later by keyword."
)
INSTRUCTIONS = "Store one fact per note. Before answering a question about the team, look for notes on it first."
TOOLS = {
    "tools": [
        {"name": "git_log", "description": "Shows the commit logs.", "inputSchema": {"type": "object"}},
        {"name": "git_status", "description": "Shows the working tree status.", "inputSchema": {"type": "object"}},
    ]
}
mcp_sdk = pytest.mark.skipif(not shutil.which(sys.executable), reason="no interpreter")


@pytest.fixture
def out(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    shutil.copytree(default_docs_dir(), folder)
    return folder


def card(out: Path, stem: str) -> dict[str, object]:
    data = yaml.safe_load((out / "servers" / f"{stem}.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


# --- import json -------------------------------------------------------------------------------------------------


def test_json_with_server_description_writes_a_human_card_that_a_reimport_keeps(
    out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_json(tmp_path / "git.json", TOOLS)
    code, stdout, err = run_cli(
        capsys, "import", "json", str(source), "--out", str(out), "--server-description",
        "Reads and changes the local Git repository.", "--server-title", "Git",
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert "card      servers/git.yaml  (human: given with --server-description)" in stdout
    assert card(out, "git") == {
        "name": "git",
        "title": "Git",
        "source": "human",
        "description": "Reads and changes the local Git repository.",
    }
    assert load_registry(out).card_of("git_log") is not None
    # A plain re-import (nothing says what the server is for) keeps the person's card as it is.
    before = snapshot(out)
    code, stdout, _ = run_cli(capsys, "import", "json", str(source), "--out", str(out))
    assert code == 0 and snapshot(out) == before
    assert "kept      servers/git.yaml" in stdout
    # A new --server-description is the person's newer word: it replaces the card.
    code, _, _ = run_cli(
        capsys, "import", "json", str(source), "--out", str(out), "--server-description", "The Git server."
    )
    assert code == 0 and card(out, "git")["description"] == "The Git server."


def test_a_card_drafted_from_the_tool_names_follows_upstream_until_a_person_reviews_it(
    out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_json(tmp_path / "git.json", TOOLS)
    assert run_cli(capsys, "import", "json", str(source), "--out", str(out))[0] == 0
    drafted = card(out, "git")
    assert drafted["source"] == "drafted"
    assert drafted["description"] == "2 tools of the git MCP server, for log."  # ("status" reads as a verb)
    code, stdout, _ = run_cli(capsys, "--docs", str(out), "audit")
    assert code == 0 and "retrieval risk" not in stdout
    # Upstream adds a tool: the drafted card follows.
    more = {"tools": [*TOOLS["tools"], {"name": "git_branch", "description": "Lists branches.", "inputSchema": {}}]}
    write_json(source, more)
    assert run_cli(capsys, "import", "json", str(source), "--out", str(out))[0] == 0
    assert card(out, "git")["description"] == "3 tools of the git MCP server, for log and branch."
    # A person reviews it (edits the description): re-imports keep it, even when upstream changes again.
    path = out / "servers" / "git.yaml"
    path.write_text(path.read_text().replace("3 tools of the git MCP server, for", "The local repository, its"))
    write_json(source, TOOLS)
    code, stdout, _ = run_cli(capsys, "import", "json", str(source), "--out", str(out))
    assert code == 0 and "kept      servers/git.yaml" in stdout
    assert card(out, "git")["description"] == "The local repository, its log and branch."


def test_a_registry_server_json_makes_the_card(out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_json(tmp_path / "git.json", TOOLS)
    entry = {
        "$schema": "https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json",
        "name": "io.github.modelcontextprotocol/server-git",
        "title": "Git",
        "description": "Tools to read, search, and manipulate Git repositories.",
        "version": "1.0.0",
        "repository": {"url": "https://github.com/modelcontextprotocol/servers", "source": "github"},
    }
    server_json = write_json(tmp_path / "server.json", {"server": entry, "_meta": {}})  # as the registry API has it
    code, _, err = run_cli(capsys, "import", "json", str(source), "--out", str(out), "--server-card", str(server_json))
    assert (code, err) == (0, "")
    assert card(out, "git") == {
        "name": "git",
        "title": "Git",
        "source": "imported",
        "reference": "MCP registry server.json: io.github.modelcontextprotocol/server-git "
        "https://github.com/modelcontextprotocol/servers",
        "description": "Tools to read, search, and manipulate Git repositories.",
    }
    # Reviewed (edited by a person): the registry entry no longer replaces it.
    path = out / "servers" / "git.yaml"
    path.write_text(path.read_text().replace("Tools to read", "Our tools to read"), encoding="utf-8")
    before = snapshot(out)
    code, stdout, _ = run_cli(
        capsys, "import", "json", str(source), "--out", str(out), "--server-card", str(server_json)
    )
    assert code == 0 and "kept      servers/git.yaml" in stdout and snapshot(out) == before


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.write_text('{"name": "x",\n "description": 3}'), "server.json: 'description' must be a string"),
        (lambda p: p.write_text('{"name": "x"}'), "server.json: not a server.json: it has no 'description'"),
        (lambda p: p.write_text('{"name": "x",\n "title": }'), "server.json:2:11: invalid JSON"),
    ],
)
def test_a_malformed_server_json_is_refused_and_nothing_is_written(
    out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], make: object, message: str
) -> None:
    source = write_json(tmp_path / "git.json", TOOLS)
    server_json = tmp_path / "server.json"
    make(server_json)  # type: ignore[operator]
    before = snapshot(out)
    code, _, err = run_cli(capsys, "import", "json", str(source), "--out", str(out), "--server-card", str(server_json))
    assert code == 2 and message in err, err
    assert snapshot(out) == before


def test_a_description_outside_the_limits_is_refused(
    out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_json(tmp_path / "git.json", TOOLS)
    before = snapshot(out)
    code, _, err = run_cli(
        capsys, "import", "json", str(source), "--out", str(out), "--server-description", "One. Two. Three. Four."
    )
    assert code == 2
    assert "--server-description: description: description has 4 sentences; 1 to 3 allowed" in err
    assert snapshot(out) == before


def test_a_malformed_card_in_the_folder_stops_the_import_at_its_line(
    out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_json(tmp_path / "git.json", TOOLS)
    (out / "servers").mkdir()
    (out / "servers" / "git.yaml").write_text("name: git\ndescriptoin: The Git server.\n", encoding="utf-8")
    before = snapshot(out)
    code, _, err = run_cli(capsys, "import", "json", str(source), "--out", str(out))
    assert code == 2
    assert f"{out / 'servers' / 'git.yaml'}:1: missing required key 'description' (and 1 more)" in err
    assert snapshot(out) == before


# --- import mcp: a real server's initialize ----------------------------------------------------------------------


@pytest.mark.slow
def test_a_real_servers_initialize_makes_the_card_and_a_reviewed_one_survives(
    out: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("mcp")
    code, stdout, err = run_cli(capsys, "import", "mcp", "--out", str(out), "--", *NOTES)
    assert (code, err) == (0, "")
    assert "card      servers/notes-fixture.yaml  (imported: initialize of notes-fixture 1.0" in stdout
    assert card(out, "notes-fixture") == {
        "name": "notes-fixture",
        "title": "Team Notes",
        "source": "imported",
        "reference": "initialize of notes-fixture 1.0",
        "description": DESCRIPTION,
        "instructions": INSTRUCTIONS,
    }
    # Reviewed: source human. The next import keeps it whole.
    path = out / "servers" / "notes-fixture.yaml"
    path.write_text(path.read_text().replace("source: imported", "source: human"))
    before = snapshot(out)
    code, stdout, _ = run_cli(capsys, "import", "mcp", "--out", str(out), "--", *NOTES)
    assert code == 0 and "kept      servers/notes-fixture.yaml" in stdout
    assert snapshot(out) == before
    # A description outside a card's limits is refused before anything is written.
    code, _, err = run_cli(
        capsys, "import", "mcp", "--out", str(out), "--server-description", "One. Two. Three. Four.", "--", *NOTES
    )
    assert code == 2 and "description has 4 sentences; 1 to 3 allowed" in err
    assert snapshot(out) == before


@pytest.mark.slow
def test_instructions_the_lint_flags_are_not_passed_on(out: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("mcp")
    code, stdout, _ = run_cli(capsys, "import", "mcp", "--out", str(out), "--", *NOTES, "--poisoned")
    assert code == 0
    assert "(imported: initialize of notes-fixture 1.0 (title, description))" in stdout
    assert "note      instructions left out: the security lint flags them" in stdout
    assert "instructions" not in card(out, "notes-fixture")
    # Instructions without a description: the card is drafted from the tools, and keeps them.
    argv = ["import", "mcp", "--out", str(out), "--server", "bare", "--prefix", "bare_", "--", *NOTES, "--bare"]
    code, stdout, _ = run_cli(capsys, *argv)
    assert code == 0 and card(out, "bare")["source"] == "drafted"
    assert card(out, "bare")["instructions"] == INSTRUCTIONS


# --- import mcp --servers: a client's config ---------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def http_notes(name: str) -> Iterator[str]:
    """The card server over Streamable HTTP, on a free port of 127.0.0.1: its URL."""
    port = _free_port()
    argv = [*NOTES, "--name", name, "--http", str(port)]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60  # a hang guard: it listens within a second or two
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the card server did not start")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["mcpServers", "vscode"])
def test_every_server_of_a_client_config_is_imported_at_once_with_its_card(
    out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], layout: str
) -> None:
    pytest.importorskip("mcp")
    with http_notes("remote-notes") as url:
        servers = {
            "notes": {"command": NOTES[0], "args": [*NOTES[1:], "--name", "${NOTES_NAME:-local-notes}"]},
            "remote": {"type": "http", "url": url},
            "off": {"command": "no-such-command", "disabled": True},
        }
        config = {"mcpServers": servers} if layout == "mcpServers" else {"servers": servers, "inputs": []}
        path = write_json(tmp_path / ("mcp.json" if layout == "vscode" else ".mcp.json"), config)
        code, stdout, err = run_cli(
            capsys, "import", "mcp", "--out", str(out), "--servers", str(path), "--prefix", "{server}_"
        )
    assert (code, err) == (0, ""), err
    assert "== notes (" in stdout and f"== remote ({url})" in stdout
    assert stdout.splitlines()[-1] == f"wrote 6 file(s) to {out}"  # 2 servers × (2 docs + a card)
    registry = load_registry(out)
    assert {n: d.origin.server for n, d in registry.tools.items() if d.origin} == {
        "notes_put_note": "notes",
        "notes_find_notes": "notes",
        "remote_put_note": "remote",
        "remote_find_notes": "remote",
    }
    assert card(out, "notes")["reference"] == "initialize of local-notes 1.0"  # ${VAR:-default} expanded
    assert card(out, "remote")["reference"] == "initialize of remote-notes 1.0"
    assert registry.servers["remote"].description == DESCRIPTION


@pytest.mark.slow
def test_one_server_that_fails_writes_nothing_and_names_it(
    out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("mcp")
    servers = {"notes": {"command": NOTES[0], "args": NOTES[1:]}, "broken": {"command": "no-such-command-xyz"}}
    path = write_json(tmp_path / ".mcp.json", {"mcpServers": servers})
    before = snapshot(out)
    code, _, err = run_cli(capsys, "import", "mcp", "--out", str(out), "--servers", str(path))
    assert code == 2 and "server 'broken': cannot start MCP server 'no-such-command-xyz'" in err, err
    assert snapshot(out) == before


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        ({"a": {"type": "sse", "url": "http://127.0.0.1:1/sse"}}, 'type "sse" is the deprecated HTTP+SSE transport'),
        (
            {"a": {"command": "x", "env": {"TOKEN": "${input:token}"}}},
            "server 'a': ${input:token} asks the user in VS Code",
        ),
        ({"a": {"command": "x", "args": ["${NOT_SET_ANYWHERE_38}"]}}, "'NOT_SET_ANYWHERE_38' is not set"),
        ({"a": {"command": "x", "disabled": True}}, "no enabled server in it"),
    ],
)
def test_a_config_the_import_cannot_follow_is_refused_before_anything_starts(
    out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], servers: dict[str, object], message: str
) -> None:
    path = write_json(tmp_path / ".mcp.json", {"mcpServers": servers})
    before = snapshot(out)
    code, _, err = run_cli(capsys, "import", "mcp", "--out", str(out), "--servers", str(path))
    assert code == 2 and message in err, err
    assert snapshot(out) == before


def test_servers_takes_no_command_or_single_server_options(
    out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_json(tmp_path / ".mcp.json", {"mcpServers": {"a": {"command": "x"}}})
    code, _, err = run_cli(capsys, "import", "mcp", "--out", str(out), "--servers", str(path), "--server", "b")
    assert code == 2 and "--servers imports each server of the file under its own name and card: drop --server" in err


def test_import_json_reports_its_card_in_json(out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_json(tmp_path / "git.json", TOOLS)
    code, stdout, _ = run_cli(
        capsys, "import", "json", str(source), "--out", str(out), "--format", "json", "--server-description", "Git."
    )
    data = json.loads(stdout)
    assert code == 0 and data["card"] == {
        "path": "servers/git.yaml",
        "action": "add",
        "source": "human",
        "title": "",
        "description": "Git.",
        "instructions": False,
        "notes": [],
    }
    assert import_json(source, out).card is not None
