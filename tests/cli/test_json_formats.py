"""`--format json` of validate, modes, tools and the import reports: the keys and types a script may rely on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prompt_composer import load_registry
from prompt_composer.cli import main

# Per document: each key and its type. Keys may be added later, never removed or retyped (the module's promise).
VALIDATE = {"command": str, "ok": bool, "tools": int, "modes": int, "quarantined": list, "fingerprint": str}
PROBLEM = {"path": str, "line": int, "message": str}
MODE = {
    "slug": str,
    "name": str,
    "tools": list,
    "permanent": list,
    "recent_size": int,
    "budget_tokens": int,
    "tool_style": str,
}
TOOL = {"name": str, "group": str, "brief": str, "quarantine": list}
TOOL_IMPORT = {
    "command": str,
    "dry_run": bool,
    "out": str,
    "server": str,
    "changes": list,
    "vanished": list,
    "card": dict,
    "files": list,
    "report": list,
}
TOOL_CHANGE = {
    "name": str,
    "origin": str,
    "action": str,
    "updated": list,
    "kept": list,
    "group": str,
    "modes": list,
    "quarantine": list,
}
MODE_IMPORT = {
    "command": str,
    "dry_run": bool,
    "out": str,
    "changes": list,
    "notes": list,
    "files": list,
    "report": list,
}


def conforms(document: dict[str, Any], schema: dict[str, type]) -> None:
    assert set(schema) <= set(document), f"missing keys: {set(schema) - set(document)}"
    for key, kind in schema.items():
        assert isinstance(document[key], kind), (key, document[key])


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code = main(list(argv))
    out, _ = capsys.readouterr()
    return code, json.loads(out)


def test_validate_json_ok_and_failing(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, data = run_json(capsys, "validate", "--format", "json")
    assert code == 0
    conforms(data, {**VALIDATE, "problems": list})
    shipped = load_registry()
    assert (data["command"], data["ok"], data["tools"], data["modes"], data["problems"]) == (
        "validate",
        True,
        len(shipped.tools),
        len(shipped.modes),
        [],
    )
    assert data["fingerprint"] == shipped.fingerprint
    (tmp_path / "broken.yaml").write_text("name: broken\n", encoding="utf-8")
    code, data = run_json(capsys, "--docs", str(tmp_path), "validate", "--format", "json")
    assert code == 2
    assert (data["command"], data["ok"]) == ("validate", False)
    assert data["problems"], data
    for problem in data["problems"]:
        conforms(problem, PROBLEM)
    assert {"path": str(tmp_path / "broken.yaml"), "line": 1, "message": "missing required key 'full'"} in data[
        "problems"
    ]


def test_modes_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = run_json(capsys, "modes", "--format", "json")
    assert code == 0 and data["command"] == "modes"
    shipped = load_registry()
    assert [m["slug"] for m in data["modes"]] == list(shipped.modes)
    for mode in data["modes"]:
        conforms(mode, MODE)
        assert mode["tools"] == list(shipped.mode(mode["slug"]).allowed)
        assert set(mode["permanent"]) <= set(mode["tools"])


def test_tools_json_all_and_of_a_mode(capsys: pytest.CaptureFixture[str]) -> None:
    code, data = run_json(capsys, "tools", "--format", "json")
    assert code == 0 and data["command"] == "tools" and data["mode"] is None
    shipped = load_registry()
    assert [t["name"] for t in data["tools"]] == list(shipped.tools)
    for tool in data["tools"]:
        conforms(tool, TOOL)
        assert tool["brief"] == shipped.tools[tool["name"]].brief
    code, data = run_json(capsys, "tools", "--mode", "ask", "--format", "json")
    assert data["mode"] == "ask"
    assert [t["name"] for t in data["tools"]] == list(shipped.mode("ask").allowed)


def test_import_json_report_as_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    tools = tmp_path / "clock.json"
    tools.write_text(
        json.dumps(
            [
                {
                    "name": "get_time",
                    "description": "Get the current time in a time zone.",
                    "input_schema": {"type": "object", "properties": {"tz": {"type": "string"}}},
                }
            ]
        ),
        encoding="utf-8",
    )
    out = tmp_path / "docs"
    code, data = run_json(capsys, "import", "json", str(tools), "--out", str(out), "--dry-run", "--format", "json")
    assert code == 0
    conforms(data, TOOL_IMPORT)
    assert (data["command"], data["dry_run"], data["server"]) == ("import json", True, "clock")
    assert not out.exists()  # a dry run writes nothing, in either format
    (change,) = data["changes"]
    conforms(change, TOOL_CHANGE)
    assert (change["name"], change["action"], change["quarantine"]) == ("get_time", "add", [])
    assert data["files"] == ["get_time.yaml", "servers/clock.yaml"]  # the tool, and its server's card
    assert (data["card"]["path"], data["card"]["action"], data["card"]["source"]) == (
        "servers/clock.yaml",
        "add",
        "drafted",
    )
    code, data = run_json(capsys, "import", "json", str(tools), "--out", str(out), "--format", "json")
    assert code == 0 and data["dry_run"] is False
    assert (out / "get_time.yaml").is_file()
    code, data = run_json(capsys, "import", "json", str(tools), "--out", str(out), "--format", "json")
    assert [c["action"] for c in data["changes"]] == ["unchanged"] and data["files"] == []


def test_import_roomodes_report_as_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "docs"
    assert main(["init", str(out)]) == 0
    capsys.readouterr()
    roomodes = tmp_path / ".roomodes"
    roomodes.write_text(
        json.dumps(
            {
                "customModes": [
                    {
                        "slug": "reviewer",
                        "name": "Reviewer",
                        "roleDefinition": "You review code and point out problems.",
                        "groups": ["read"],
                    }
                ]
            }
        ),
        encoding="utf-8",
    )
    code, data = run_json(capsys, "import", "roomodes", str(roomodes), "--out", str(out), "--format", "json")
    assert code == 0, data
    conforms(data, MODE_IMPORT)
    assert data["command"] == "import roomodes"
    assert [(c["slug"], c["action"]) for c in data["changes"]] == [("reviewer", "add")]
    assert data["files"] == ["modes/reviewer.yaml"]
    assert "reviewer" in load_registry(out).modes
