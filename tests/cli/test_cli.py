"""The prompt-composer command on the shipped docs and on small folders."""

from __future__ import annotations

import argparse
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
    # the operator is told which mode has it (the model's refusal would not say: tests/core/test_fetch.py)
    assert "mode 'ask' has no tool 'debug_launch'; mode 'debug' has it: prompt-composer fetch debug_launch" in err
    code, _, err = run(capsys, "fetch", "nonexistent_tool", "--mode", "ask")
    assert code == 1
    assert "there is no tool 'nonexistent_tool' in mode 'ask'" in err


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


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from prompt_composer import __version__

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"prompt-composer {__version__}\n"


# Each subcommand that loads a registry, with the arguments it needs to get as far as loading it.
REGISTRY_ARGV = {
    "validate": ["validate"],
    "modes": ["modes"],
    "tools": ["tools"],
    "compose": ["compose", "--mode", "x"],
    "fetch": ["fetch", "a", "--mode", "x"],
    "audit": ["audit"],
    "search": ["search", "a query", "--mode", "x"],
    "eval": ["eval", "--queries", "q.jsonl", "--mode", "x"],
    "run": [
        "run",
        "--mode",
        "x",
        "--task",
        "t",
        "--base-url",
        "http://127.0.0.1:9",
    ],  # no key needed: it is checked first
    "replay": ["replay"],
    "bench": ["bench", "--tasks", "t.jsonl", "--mode", "x", "--base-url", "http://127.0.0.1:9"],
    "serve": ["serve", "--mode", "x"],
    "stats": ["stats", "--log", "events.jsonl"],
    "tune": ["tune", "--mode", "x", "--traces", "t.jsonl"],
}


def test_every_registry_command_is_covered() -> None:
    from prompt_composer.cli import REGISTRY_COMMANDS, build_parser

    assert set(REGISTRY_ARGV) == REGISTRY_COMMANDS
    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    # A new subcommand must be sorted: it loads a registry (REGISTRY_COMMANDS), or it does not.
    assert set(subparsers.choices) - REGISTRY_COMMANDS == {"config", "init", "import", "model"}


@pytest.mark.parametrize("command", sorted(REGISTRY_ARGV))
def test_docs_is_accepted_after_the_subcommand(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    (tmp_path / "broken.yaml").write_text("name: broken\ngroup: read\nbrief: ok.\n")
    code, out, err = run(capsys, *REGISTRY_ARGV[command], "--docs", str(tmp_path))
    assert code == 2, err
    assert out == ""
    assert f"{tmp_path / 'broken.yaml'}:1: missing required key 'full'" in err  # the folder given was loaded


def test_docs_after_the_subcommand_wins(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from prompt_composer import default_docs_dir

    (tmp_path / "broken.yaml").write_text("name: broken\ngroup: read\nbrief: ok.\n")
    shipped, broken = str(default_docs_dir()), str(tmp_path)
    assert run(capsys, "--docs", broken, "validate", "--docs", shipped)[0] == 0
    assert run(capsys, "--docs", shipped, "validate", "--docs", broken)[0] == 2
    assert run(capsys, "--docs", broken, "validate")[0] == 2  # the top-level value alone still counts
    code, out, _ = run(capsys, "audit", "--docs", shipped, "--format", "json")
    assert code == 0 and json.loads(out)["modes"]


@pytest.mark.parametrize("argv", [["--help"], ["audit", "--help"], ["search", "--help"], ["run", "--help"]])
def test_help_shows_docs(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 0
    assert "--docs DIR" in capsys.readouterr().out


def _one_tool_docs(tmp_path: Path) -> Path:
    import shutil

    from prompt_composer import default_docs_dir

    docs = tmp_path / "solo"
    (docs / "modes").mkdir(parents=True)
    shutil.copy(default_docs_dir() / "glob.yaml", docs / "glob.yaml")
    (docs / "modes" / "solo.yaml").write_text(
        "slug: solo\nname: Solo\nrole: You find files.\ngroups: [read]\npermanent: [glob]\n"
        "recent_size: 1\nbudget_tokens: 5000\n"
    )
    return docs


def test_counts_of_one_are_singular(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    docs = str(_one_tool_docs(tmp_path))
    code, out, err = run(capsys, "--docs", docs, "validate")
    assert code == 0, err
    assert out.startswith("ok: 1 tool, 1 mode (fingerprint ")
    code, out, _ = run(capsys, "--docs", docs, "modes")
    assert code == 0
    assert out == "solo\tSolo\t1 tool, 1 permanent, recent 1, budget 5000, native\n"
    code, out, _ = run(capsys, "validate")
    assert code == 0 and " tools, " in out and " modes (" in out  # and plural otherwise


def test_search_leaves_the_callers_logging_as_it_was(capsys: pytest.CaptureFixture[str]) -> None:
    """`search` quiets the search logger while it prints its own warnings, then restores it: a caller running the
    CLI in-process (as these tests do) still sees the library's warnings afterwards."""
    import logging

    logger = logging.getLogger("prompt_composer.discovery.search")
    before = logger.level
    run(capsys, "search", "grep the codebase", "--mode", "code", "--strategy", "keyword")
    assert logger.level == before
