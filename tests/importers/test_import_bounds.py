"""The import's schema bounds against a live server: a tool whose input schema nests 300 levels fails the import
at once, naming the tool, though the SDK's client cannot even parse the server's reply (it used to wait out the
whole ``--timeout`` and then blame the server). Deeper still, the error says why, and the folder is untouched."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from prompt_composer.cli import main
from prompt_composer.core.bounds import MAX_SCHEMA_DEPTH
from tests.helpers import DATA, snapshot

DEEP_SERVER = DATA / "mcp" / "deep_schema_server.py"


@pytest.mark.parametrize(
    ("depth", "message"),
    [
        (80, f"tool #2 ('nest_deep'): the input schema is nested more than {MAX_SCHEMA_DEPTH} levels deep"),
        (300, f"tool #2 ('nest_deep'): the input schema is nested more than {MAX_SCHEMA_DEPTH} levels deep"),
        (600, "its reply is nested too deeply to read"),
    ],
)
def test_a_deep_schema_fails_the_import_naming_the_tool_not_the_timeout(
    depth: int, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "docs"
    # A timeout far beyond the test's run: the error must come from the reply, not from the clock.
    argv = ["import", "mcp", "--out", str(out), "--timeout", "600", "--", sys.executable, str(DEEP_SERVER), str(depth)]
    assert main(argv) == 2
    stdout, err = capsys.readouterr()
    assert stdout == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("error: MCP server")
    assert message in err
    assert "did not list its tools" not in err
    assert snapshot(out) == {}
