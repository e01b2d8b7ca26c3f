"""The prompt-composer command on the shipped docs and on small folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prompt_composer.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_validate_shipped(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "validate")
    assert code == 0, err
    assert out.startswith("ok: ")


def test_modes_and_tools_listings(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "modes")
    assert code == 0
    assert [line.split("\t")[0] for line in out.splitlines()] == ["architect", "ask", "code", "debug", "orchestrator"]
    code, out, _ = run(capsys, "tools", "--mode", "ask")
    assert code == 0
    listed = [line.split("\t")[0] for line in out.splitlines()]
    assert "read_file" in listed and "write_to_file" not in listed


def test_compose_json_has_the_contract_keys(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "compose", "--mode", "code", "--recent", "glob,list_files", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert {"mode", "fingerprint", "full", "brief", "system", "tools", "tokens"} <= data.keys()
    assert data["mode"] == "code"
    assert {"glob", "list_files"} <= set(data["full"])
    assert set(data["tokens"]) >= {"system", "tools", "total"}
    assert data["tokens"]["total"] == data["tokens"]["system"] + data["tokens"]["tools"]
    assert data["tools"][-1]["name"] == "fetch_tool_description"


def test_compose_is_deterministic_and_detects_no_system_information(capsys: pytest.CaptureFixture[str]) -> None:
    first = run(capsys, "compose", "--mode", "code")
    assert first[0] == 0
    assert run(capsys, "compose", "--mode", "code") == first
    assert "SYSTEM INFORMATION" not in first[1]


def test_compose_recent_may_name_a_tool_the_mode_does_not_allow(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "compose", "--mode", "ask", "--recent", "write_to_file,glob", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert "write_to_file" not in data["full"] + data["brief"]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["compose", "--mode", "nope"], "available modes: architect, ask, code, debug, orchestrator"),
        (["compose", "--mode", "code", "--recent", "glob,nope"], "unknown tool 'nope'; available tools:"),
        (["tools", "--mode", "nope"], "unknown mode 'nope'"),
        (["fetch", "glob", "--mode", "nope"], "unknown mode 'nope'"),
    ],
)
def test_bad_names_exit_2_with_the_available_names(
    capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert needle in err
    assert "Traceback" not in err and out == ""
    assert len(err.strip().splitlines()) == 1


def test_fetch_prints_full_text_or_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "fetch", "glob", "--mode", "code")
    assert code == 0
    assert out.startswith("## glob")
    assert "Input schema (JSON):" in out
    code, out, err = run(capsys, "fetch", "debug_launch", "--mode", "ask")
    assert code == 1
    assert out == ""
    assert "not available in mode 'ask'" in err
    code, _, err = run(capsys, "fetch", "nonexistent_tool", "--mode", "ask")
    assert code == 1
    assert "no tool named 'nonexistent_tool'" in err


def test_audit_formats(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "audit", "--format", "json", "--check")
    assert code == 0
    data = json.loads(out)
    for mode in data["modes"]:
        assert {"mode", "baseline_tokens", "composed_tokens", "worst_tokens", "budget_tokens", "saving"} <= mode.keys()
    for tool in data["tools"]:
        assert {"name", "brief_tokens", "full_tokens", "brief_words"} <= tool.keys()
    code, out, _ = run(capsys, "audit", "--format", "markdown")
    assert code == 0 and out.startswith("## Modes") and "| mode |" in out
    code, out, _ = run(capsys, "audit")
    assert code == 0 and "baseline" in out.splitlines()[2]


def _copy_docs_with_budget(tmp_path: Path, mode: str, budget: int) -> Path:
    import shutil

    from prompt_composer import default_docs_dir

    target = tmp_path / "docs"
    shutil.copytree(default_docs_dir(), target)
    path = target / "modes" / f"{mode}.yaml"
    lines = [
        f"budget_tokens: {budget}" if ln.startswith("budget_tokens:") else ln for ln in path.read_text().splitlines()
    ]
    path.write_text("\n".join(lines) + "\n")
    return target


def test_audit_check_fails_on_a_budget_breach(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    docs = _copy_docs_with_budget(tmp_path, "code", 100)
    code, _, err = run(capsys, "--docs", str(docs), "audit", "--check")
    assert code == 1
    assert "mode 'code' worst case" in err and "over its budget 100" in err
    code, _, _ = run(capsys, "--docs", str(docs), "audit")
    assert code == 0  # without --check the report is informational


def test_bad_folder_refuses_every_command(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text("name: broken\ngroup: read\nbrief: ok.\n")
    for argv in (
        ["validate"],
        ["modes"],
        ["tools"],
        ["compose", "--mode", "x"],
        ["audit"],
        ["fetch", "a", "--mode", "x"],
    ):
        code, out, err = run(capsys, "--docs", str(tmp_path), *argv)
        assert code == 2, argv
        assert out == ""
        assert f"{tmp_path / 'broken.yaml'}:1: missing required key 'full'" in err
        assert "Traceback" not in err
