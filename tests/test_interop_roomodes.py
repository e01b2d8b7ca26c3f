"""Importing Roo Code modes (.roomodes) and enforcing their fileRegex restrictions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from prompt_composer import Composer, default_docs_dir, load_registry
from prompt_composer.cli import main
from prompt_composer.errors import ImporterError
from prompt_composer.roomodes import import_roomodes

from .test_interop import CORPORA, snapshot

ROO_MODES = CORPORA / "roocode" / "modes.json"
pytestmark = pytest.mark.skipif(not ROO_MODES.is_file(), reason="needs ../shared/corpora")


def roo_builtin_modes() -> list[dict[str, Any]]:
    """Roo Code's built-in modes as a user would write them in .roomodes (restrictions inside groups)."""
    modes = []
    for mode in json.loads(ROO_MODES.read_text())["modes"]:
        options = mode.get("group_options", {})
        groups = [[g, options[g]] if g in options else g for g in mode["groups"]]
        entry = {k: mode[k] for k in ("slug", "name", "roleDefinition", "whenToUse", "description") if k in mode}
        entry["groups"] = groups
        if mode.get("customInstructions"):
            entry["customInstructions"] = mode["customInstructions"]
        modes.append(entry)
    return modes


@pytest.fixture
def tools_only(tmp_path: Path) -> Path:
    """The shipped tool docs without their modes (Roo's built-in modes share their slugs)."""
    out = tmp_path / "docs"
    out.mkdir()
    for path in default_docs_dir().glob("*.yaml"):
        shutil.copy(path, out)
    return out


@pytest.mark.parametrize("syntax", ["yaml", "json"])
def test_roo_builtin_modes_import_and_validate_against_the_shipped_tools(
    syntax: str, tools_only: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / ".roomodes"
    data = {"customModes": roo_builtin_modes()}
    source.write_text(yaml.safe_dump(data, allow_unicode=True) if syntax == "yaml" else json.dumps(data, indent=2))
    code = main(["import", "roomodes", str(source), "--out", str(tools_only), "--permanent", "read_file,write_to_file"])
    stdout, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert "add       modes/architect.yaml" in stdout
    assert main(["--docs", str(tools_only), "validate"]) == 0
    assert "5 modes" in capsys.readouterr()[0]

    registry = load_registry(tools_only)
    assert set(registry.modes) == {"architect", "code", "ask", "debug", "orchestrator"}
    code_mode = registry.mode("code").config
    assert code_mode.groups == ("read", "edit", "browser", "command", "mcp", "workflow", "modes")
    assert code_mode.permanent == ("read_file", "write_to_file")
    assert registry.mode("ask").config.permanent == ("read_file",)  # ask may not write
    orchestrator = registry.mode("orchestrator")
    assert {registry.tools[n].group for n in orchestrator.allowed} == {"workflow", "modes"}
    assert "attempt_completion" in orchestrator.allowed
    assert "read_file" not in orchestrator.allowed
    architect = registry.mode("architect").config
    assert architect.role.startswith("You are Roo")
    assert architect.file_restrictions["edit"].file_regex == r"\.md$"
    # The budget defaults to the worst case rounded up, so the audit passes out of the box.
    assert main(["--docs", str(tools_only), "audit", "--check"]) == 0


def test_a_file_regex_restriction_refuses_an_edit_outside_it(tools_only: Path, tmp_path: Path) -> None:
    source = tmp_path / ".roomodes"
    source.write_text(yaml.safe_dump({"customModes": roo_builtin_modes()}, allow_unicode=True))
    import_roomodes(source, tools_only)
    registry = load_registry(tools_only)
    architect, code = registry.mode("architect"), registry.mode("code")
    write = registry.tools["write_to_file"]
    assert architect.allows("write_to_file")

    refusal = architect.check_paths(write, {"path": "src/app.py", "content": "print(1)"})
    assert refusal is not None
    assert "'src/app.py' does not match" in refusal
    assert r"\.md$" in refusal
    assert "Markdown files only" in refusal
    assert architect.check_paths(write, {"path": "docs/plan.md", "content": "# Plan"}) is None
    assert architect.check_paths(registry.tools["apply_diff"], {"path": "./README.md", "diff": "x"}) is None
    assert architect.check_paths(registry.tools["read_file"], {"path": "src/app.py"}) is None  # read: unrestricted
    assert code.check_paths(write, {"path": "src/app.py", "content": "x"}) is None


def test_a_file_regex_restriction_is_said_in_the_prompt_of_its_mode(tools_only: Path, tmp_path: Path) -> None:
    docs_writer = {
        "slug": "docs-writer",
        "name": "Docs Writer",
        "roleDefinition": "You write documentation.",
        "groups": ["read", ["edit", {"fileRegex": r"\.md$", "description": "Markdown files"}], "command"],
    }
    source = tmp_path / ".roomodes"
    source.write_text(json.dumps({"customModes": [docs_writer, _roo(groups=["read", "edit"])["customModes"][0]]}))
    import_roomodes(source, tools_only)
    composer = Composer(load_registry(tools_only))
    system = composer.compose("docs-writer").system
    assert (
        "In this mode you may create and edit only files matching `\\.md$` (Markdown files); an edit to any other "
        "file is refused."
    ) in system
    assert "Make the smallest change" not in system
    assert "only files matching" not in composer.compose("x").system  # the unrestricted mode says nothing


def test_reimport_keeps_an_edited_mode_and_dry_run_writes_nothing(
    tools_only: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / ".roomodes"
    source.write_text(yaml.safe_dump({"customModes": roo_builtin_modes()[:2]}, allow_unicode=True))
    import_roomodes(source, tools_only)
    edited = tools_only / "modes" / "code.yaml"
    edited.write_text(edited.read_text().replace("recent_size: 6", "recent_size: 3"))
    before = snapshot(tools_only)
    assert main(["import", "roomodes", str(source), "--out", str(tools_only), "--dry-run"]) == 0
    stdout = capsys.readouterr()[0]
    assert "kept      modes/code.yaml" in stdout
    assert "unchanged modes/architect.yaml" in stdout
    assert snapshot(tools_only) == before
    assert main(["import", "roomodes", str(source), "--out", str(tools_only)]) == 0
    assert load_registry(tools_only).mode("code").recent_size == 3


def _roo(**mode: Any) -> dict[str, Any]:
    return {"customModes": [{"slug": "x", "name": "X", "roleDefinition": "R."} | mode]}


BAD_ROOMODES = {
    "bad_regex": (_roo(groups=["read", ["edit", {"fileRegex": "(*.md"}]]), "not a valid regular expression"),
    "unknown_group": (_roo(groups=["teleport"]), "unknown Roo tool group 'teleport'"),
    "no_role": (_roo(roleDefinition=""), "missing required key 'roleDefinition'"),
    "not_modes": ({"modes": 1}, "expected a 'customModes' list"),
    "duplicate": ({"customModes": _roo()["customModes"] * 2}, "duplicate mode slug 'x'"),
}


@pytest.mark.parametrize("case", sorted(BAD_ROOMODES))
def test_bad_roomodes_are_refused_with_file_and_line(
    case: str, tools_only: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, message = BAD_ROOMODES[case]
    source = tmp_path / ".roomodes"
    source.write_text(yaml.safe_dump(data, sort_keys=False))
    before = snapshot(tools_only)
    assert main(["import", "roomodes", str(source), "--out", str(tools_only)]) == 2
    err = capsys.readouterr()[1]
    assert len(err.strip().splitlines()) == 1
    assert message in err
    assert f"{source}:" in err
    assert snapshot(tools_only) == before


def test_a_restriction_on_a_group_the_mode_lacks_is_a_load_error(tools_only: Path) -> None:
    modes = tools_only / "modes"
    modes.mkdir()
    mode = {"slug": "m", "name": "M", "role": "R.", "groups": ["read"], "recent_size": 1, "budget_tokens": 9000}
    mode["file_restrictions"] = {"edti": {"file_regex": r"\.md$"}}
    (modes / "m.yaml").write_text(yaml.safe_dump(mode, sort_keys=False))
    with pytest.raises(Exception, match=r"m\.yaml:\d+: file_restrictions: .*not in groups: edti"):
        load_registry(tools_only)


def test_importing_into_a_missing_folder_is_refused(tmp_path: Path) -> None:
    source = tmp_path / ".roomodes"
    source.write_text(yaml.safe_dump({"customModes": roo_builtin_modes()}))
    with pytest.raises(ImporterError, match="no such tool docs folder"):
        import_roomodes(source, tmp_path / "missing")
