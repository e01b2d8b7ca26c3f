"""Importing Roo Code modes (.roomodes) and enforcing their fileRegex restrictions."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from prompt_composer import Composer, default_docs_dir, load_registry
from prompt_composer.cli import main
from prompt_composer.core.audit import run_audit
from prompt_composer.core.modes import FileRestriction
from prompt_composer.errors import ImporterError
from prompt_composer.importers.js_regex import js_file_regex
from prompt_composer.importers.roomodes import RooModesError, import_roomodes
from tests.helpers import CORPORA, DATA, snapshot

ROO_MODES = CORPORA / "roocode" / "modes.json"
# The .roomodes of Roo Code's own repository (tests/data/roomodes/SOURCE.md).
ROO_CODE_ROOMODES = DATA / "roomodes" / "roo-code.roomodes"


def roo_builtin_modes() -> list[dict[str, Any]]:
    """Roo Code's built-in modes as a user would write them in .roomodes (restrictions inside groups)."""
    if not ROO_MODES.is_file():
        pytest.skip("needs ../shared/corpora")
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


def roo_export(slug: str) -> dict[str, Any]:
    """A built-in Roo mode as Roo's "export mode" writes it: the mode, then ``source: project``."""
    return next(m for m in roo_builtin_modes() if m["slug"] == slug) | {"source": "project"}


def write_roomodes(path: Path, *modes: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump({"customModes": list(modes)}, allow_unicode=True, sort_keys=False))
    return path


@pytest.fixture
def shipped(tmp_path: Path) -> Path:
    """A copy of the shipped tool_docs/, modes included (code, architect, ask, debug, orchestrator: Roo's slugs)."""
    out = tmp_path / "shipped"
    shutil.copytree(default_docs_dir(), out)
    return out


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


# --- a .roomodes mode overrides the mode of the same slug, as in Roo Code ------------------------------------


def test_a_roomodes_mode_replaces_the_shipped_mode_of_the_same_slug(
    shipped: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_roomodes(tmp_path / ".roomodes", roo_export("code"), roo_export("architect"))
    untouched = {p: p.read_bytes() for p in (shipped / "modes").glob("*.yaml") if p.stem not in ("code", "architect")}
    assert main(["import", "roomodes", str(source), "--out", str(shipped)]) == 0
    stdout, err = capsys.readouterr()
    assert err == ""
    reason = "(the .roomodes mode overrides the built-in mode of the same slug, as in Roo Code)"
    assert f"replace   modes/code.yaml  {reason}" in stdout
    assert f"replace   modes/architect.yaml  {reason}" in stdout
    assert "kept" not in stdout and "edited" not in stdout
    assert "wrote 2 file(s)" in stdout

    registry = load_registry(shipped)
    assert registry.mode("code").config.role.startswith("You are Roo")
    assert registry.mode("architect").config.file_restrictions["edit"].description == "Markdown files only"
    assert {p: p.read_bytes() for p in untouched} == untouched  # ask, debug, orchestrator: as shipped
    assert main(["--docs", str(shipped), "audit", "--check"]) == 0
    capsys.readouterr()

    # Imported now: a second import regenerates them, nothing to replace.
    assert main(["import", "roomodes", str(source), "--out", str(shipped)]) == 0
    stdout = capsys.readouterr()[0]
    assert "unchanged modes/code.yaml" in stdout
    assert "unchanged modes/architect.yaml" in stdout


@pytest.mark.parametrize("who", ["hand_written", "edited_shipped"])
def test_a_mode_file_a_person_wrote_is_replaced_only_with_replace(
    who: str, shipped: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = shipped / "modes" / "code.yaml"
    text = code.read_text()
    if who == "hand_written":
        code.write_text(
            "slug: code\nname: Our Code\nrole: You write our code.\ngroups: [read, edit]\n"
            "recent_size: 2\nbudget_tokens: 20000\n"
        )
    else:
        code.write_text(re.sub(r"recent_size: \d+", "recent_size: 1", text))
    assert code.read_text() != text
    assert load_registry(shipped).mode("code")  # still a valid folder
    # One new mode and one clash: all or nothing, so nothing is written.
    source = write_roomodes(tmp_path / ".roomodes", roo_export("code"), roo_export("debug") | {"slug": "debug2"})
    before = snapshot(shipped)
    assert main(["import", "roomodes", str(source), "--out", str(shipped)]) == 2
    err = capsys.readouterr()[1].strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"error: {source}:2: modes/code.yaml exists (written by a person, not by the importer)")
    assert "Roo Code would use the .roomodes mode: pass --replace to replace the file with it" in err[0]
    assert snapshot(shipped) == before

    assert main(["import", "roomodes", str(source), "--out", str(shipped), "--replace"]) == 0
    stdout = capsys.readouterr()[0]
    assert "replace   modes/code.yaml  (written or edited by a person; replaced because of --replace" in stdout
    assert "add       modes/debug2.yaml" in stdout
    assert load_registry(shipped).mode("code").config.role.startswith("You are Roo")


def test_an_edited_import_is_kept_until_its_roomodes_entry_changes(
    tools_only: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_roomodes(tmp_path / ".roomodes", roo_export("code"))
    import_roomodes(source, tools_only)
    edited = tools_only / "modes" / "code.yaml"
    edited.write_text(edited.read_text().replace("recent_size: 6", "recent_size: 3"))
    # Same entry: the person's edit is the newer one.
    assert main(["import", "roomodes", str(source), "--out", str(tools_only)]) == 0
    assert (
        "kept      modes/code.yaml  (edited since the last import, and its .roomodes entry has not changed"
        in (capsys.readouterr()[0])
    )
    # The entry changed too: both sides changed, so the user decides.
    write_roomodes(source, roo_export("code") | {"customInstructions": "Run the tests before you finish."})
    before = snapshot(tools_only)
    assert main(["import", "roomodes", str(source), "--out", str(tools_only)]) == 2
    err = capsys.readouterr()[1]
    assert "modes/code.yaml exists (edited since the last import)" in err
    assert "pass --replace" in err
    assert snapshot(tools_only) == before
    assert main(["import", "roomodes", str(source), "--out", str(tools_only), "--replace"]) == 0
    config = load_registry(tools_only).mode("code").config
    assert (config.recent_size, config.custom_instructions) == (6, "Run the tests before you finish.")


def test_the_real_roo_code_roomodes_imports_into_the_shipped_docs(
    shipped: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", "roomodes", str(ROO_CODE_ROOMODES), "--out", str(shipped)]) == 0
    stdout, err = capsys.readouterr()
    assert err == ""
    slugs = ["translate", "issue-fixer", "pr-fixer", "merge-resolver", "docs-extractor", "issue-investigator"]
    for slug in [*slugs, "issue-writer"]:
        assert f"add       modes/{slug}.yaml" in stdout
    assert "ignored" not in stdout  # `source: project` is Roo's bookkeeping, not worth a line
    registry = load_registry(shipped)
    assert len(registry.modes) == 12
    translate = registry.mode("translate")
    assert translate.config.file_restrictions["edit"].file_regex == r"(.*\.(md|ts|tsx|js|jsx)$|.*\.json$)"
    write = registry.tools["write_to_file"]
    assert translate.check_paths(write, {"path": "src/i18n/locales/de/common.json", "content": "{}"}) is None
    assert translate.check_paths(write, {"path": "src/app.py", "content": ""}) is not None
    assert main(["--docs", str(shipped), "audit", "--check"]) == 0


# --- --permanent and --budget-tokens are checked --------------------------------------------------------------


def test_an_unknown_permanent_tool_and_a_budget_below_the_worst_case_are_refused(
    shipped: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_roomodes(tmp_path / ".roomodes", roo_export("code"), roo_export("ask"))
    before = snapshot(shipped)
    args = ["import", "roomodes", str(source), "--out", str(shipped), "--permanent", "read_fiel,write_to_file"]
    assert main([*args, "--budget-tokens", "10"]) == 2
    err = capsys.readouterr()[1].strip().splitlines()
    assert snapshot(shipped) == before
    assert err[0] == (
        "error: --permanent: unknown tool 'read_fiel' (did you mean 'read_file'?); the folder has no tool doc of "
        "that name"
    )
    assert len(err) == 3  # the tool, then the budget of each mode
    assert [line.split(" needs")[0].split(": ", 2)[2] for line in err[1:]] == [
        "--budget-tokens 10 is below what mode 'code'",
        "--budget-tokens 10 is below what mode 'ask'",
    ]

    # The tokens each mode needs are its worst case, as the audit computes it for the default budget.
    assert main(["import", "roomodes", str(source), "--out", str(shipped), "--permanent", "write_to_file"]) == 0
    capsys.readouterr()
    worst = {m.mode: m.worst_tokens for m in run_audit(Composer(load_registry(shipped))).modes}
    for slug, line in zip(("code", "ask"), err[1:], strict=True):
        assert f"needs: its worst case is {worst[slug]} tokens" in line
        assert f"pass at least {worst[slug]}, or leave --budget-tokens out" in line
    assert load_registry(shipped).mode("code").config.budget_tokens >= worst["code"]

    # A budget equal to the larger worst case fits both.
    budget = str(max(worst["code"], worst["ask"]))
    assert main(["import", "roomodes", str(source), "--out", str(shipped), "--budget-tokens", budget]) == 0
    assert main(["--docs", str(shipped), "audit", "--check"]) == 0


def test_bad_option_values_are_refused_one_line_each(
    tools_only: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_roomodes(tmp_path / ".roomodes", roo_export("code"))
    args = ["import", "roomodes", str(source), "--out", str(tools_only), "--recent-size", "-1"]
    assert main([*args, "--budget-tokens", "0", "--permanent", "teleport"]) == 2
    assert capsys.readouterr()[1].splitlines() == [
        "error: --permanent: unknown tool 'teleport'; the folder has no tool doc of that name",
        "error: --recent-size -1: must be 0 or more",
        "error: --budget-tokens 0: must be a positive number of tokens",
    ]
    assert not (tools_only / "modes").exists()


def test_a_permanent_tool_a_mode_does_not_allow_is_reported_not_forced(
    tools_only: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_roomodes(tmp_path / ".roomodes", roo_export("code"), roo_export("ask"))
    args = ["import", "roomodes", str(source), "--out", str(tools_only), "--permanent", "read_file,write_to_file"]
    assert main(args) == 0
    stdout = capsys.readouterr()[0]
    assert f"note      mode 'ask' ({source}:" in stdout
    assert "--permanent write_to_file not kept in full: the mode does not allow it" in stdout
    assert "mode 'code'" not in stdout
    registry = load_registry(tools_only)
    assert registry.mode("ask").config.permanent == ("read_file",)
    assert registry.mode("code").config.permanent == ("read_file", "write_to_file")


# --- fileRegex is a JavaScript pattern ------------------------------------------------------------------------

# (fileRegex, path, whether Roo Code's `new RegExp(fileRegex).test(path)` is true), checked with Node 22.
JS_REGEX_CASES = [
    (r"(?<ext>md|txt)\.\k<ext>$", "notes/md.md", True),
    (r"(?<ext>md|txt)\.\k<ext>$", "notes/md.txt", False),
    (r"^docs/(?<lang>[a-z]{2})/.*\.md$", "docs/en/guide.md", True),
    (r"^docs/(?<lang>[a-z]{2})/.*\.md$", "docs/eng/guide.md", False),
    (r"(?<!tests?/.*)\.py$", "src/app.py", True),  # variable-length lookbehind
    (r"(?<!tests?/.*)\.py$", "tests/unit/test_app.py", False),
    (r"^[^]*\.md$", "docs/a.md", True),  # [^]: any character
    (r"a[]b", "ab", False),  # []: matches nothing
    (r"\k<x>\.md$", "k<x>.md", True),  # no named groups: \k is the letter k
    (r"^\e\.md$", "e.md", True),  # identity escape
    (r"^\x41\u00e9\.md$", "Aé.md", True),
    (r"^\xZZ$", "xZZ", True),
    (r"^a{,2}$", "a{,2}", True),  # not a quantifier in JavaScript
    (r"\/docs\/.*\.mdx?$", "site/docs/intro.mdx", True),
    (r"(.*\.(md|ts|tsx|js|jsx)$|.*\.json$)", "src/i18n/locales/de/common.json", True),  # Roo's translate mode
    (r"^src/[\w/]+\.tsx?$", "src/ui/App.tsx", True),
]


@pytest.mark.parametrize(("pattern", "path", "matches"), JS_REGEX_CASES)
def test_a_file_regex_matches_as_roo_code_matches_it(pattern: str, path: str, matches: bool) -> None:
    translated, _ = js_file_regex(pattern)
    assert FileRestriction(file_regex=translated).allows(path) is matches


@pytest.mark.parametrize(
    "pattern", [r"\.md$", r"(?P<ext>md)\.(?P=ext)$", r"^(?:src|lib)/.+\.(?:c|h)pp$", r"[\]]\.md", r"\bdocs\b"]
)
def test_a_python_style_file_regex_is_left_as_it_is(pattern: str) -> None:
    assert js_file_regex(pattern) == (pattern, False)
    FileRestriction(file_regex=pattern)  # still valid


def test_javascript_only_file_regex_syntax_is_accepted_and_enforced(
    tools_only: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Roo's own translate mode, restricted to locale files with a named group and Unicode letters."""
    translate = yaml.safe_load(ROO_CODE_ROOMODES.read_text())["customModes"][0]
    assert translate["slug"] == "translate"
    pattern = r"^src/i18n/locales/(?<lang>[\p{L}-]+)/(?<ns>[\p{Ll}_]+)\.json$"
    translate["groups"][2][1]["fileRegex"] = pattern
    docs = roo_export("architect")
    docs["groups"][1][1]["fileRegex"] = r"^docs/(?<section>[\p{L}\d-]+)/.+\.(?<ext>md|mdx)$|\.\k<ext>\.bak$"
    source = write_roomodes(tmp_path / ".roomodes", translate, docs)
    assert main(["import", "roomodes", str(source), "--out", str(tools_only)]) == 0
    stdout, err = capsys.readouterr()
    assert err == ""
    assert f"note      mode 'translate' ({source}:2): fileRegex \\p{{…}} read as a Unicode property" in stdout

    registry = load_registry(tools_only)
    write = registry.tools["write_to_file"]
    mode = registry.mode("translate")
    assert mode.config.file_restrictions["edit"].file_regex == pattern  # valid as it is: stored unchanged
    for path in ("src/i18n/locales/pt-BR/common.json", "src/i18n/locales/français/réglages.json"):
        assert mode.check_paths(write, {"path": path, "content": "{}"}) is None
    for path in ("src/i18n/locales/de/Common.json", "src/app.ts", "src/i18n/locales/p{L}/common.json"):
        assert mode.check_paths(write, {"path": path, "content": "{}"}) is not None
    architect = registry.mode("architect")
    stored = architect.config.file_restrictions["edit"].file_regex
    assert stored == r"^docs/(?<section>[\p{L}\d-]+)/.+\.(?<ext>md|mdx)$|\.(?P=ext)\.bak$"  # \k<ext> translated
    assert architect.check_paths(write, {"path": "docs/überblick/plan.md", "content": ""}) is None
    assert architect.check_paths(write, {"path": "src/plan.md", "content": ""}) is not None


def test_a_file_regex_javascript_refuses_too_is_refused(tools_only: Path, tmp_path: Path) -> None:
    mode = roo_export("architect")
    mode["groups"][1][1]["fileRegex"] = r"(?<ext>md"
    source = write_roomodes(tmp_path / ".roomodes", mode)
    with pytest.raises(RooModesError, match=r"\.roomodes:\d+: file_regex '\(\?<ext>md' is not a valid regular"):
        import_roomodes(source, tools_only)


# --- keys Roo ignores are ignored, malformed entries are refused ----------------------------------------------


def test_keys_roo_code_ignores_are_ignored_and_named_once_per_mode(
    tools_only: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    architect = roo_export("architect")
    architect |= {
        "apiConfiguration": {"apiProvider": "openrouter", "openRouterModelId": "anthropic/claude-sonnet-4"},
        "iconName": "codicon-type-hierarchy-sub",  # Kilo Code's modes carry it
        "customInstruction": "a typo Roo would drop silently",
        "rulesFiles": [{"relativePath": "rules-architect/plan.md", "content": "Write plans to docs/plans/."}],
    }
    architect["groups"][1][1]["color"] = "blue"
    source = write_roomodes(tmp_path / ".roomodes", architect, roo_export("code"))
    assert main(["import", "roomodes", str(source), "--out", str(tools_only)]) == 0
    stdout, err = capsys.readouterr()
    assert err == ""
    ignored = [line for line in stdout.splitlines() if line.startswith("ignored")]
    assert ignored == [
        f"ignored   mode 'architect' ({source}:2): apiConfiguration, iconName, customInstruction (did you mean "
        "customInstructions?), groups[1].color (Roo Code ignores keys outside its mode schema)",
        f"ignored   mode 'architect' ({source}:2): rulesFiles (add their text to custom_instructions if the mode "
        "needs it)",
    ]
    assert "source" not in stdout
    assert load_registry(tools_only).mode("architect").config.file_restrictions["edit"].file_regex == r"\.md$"


def test_malformed_entries_are_refused_at_the_offending_key_one_line_each(
    tools_only: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / ".roomodes"
    source.write_text(
        "customModes:\n"
        "  - slug: reviewer\n"
        "    name: Reviewer\n"
        "    roleDefinition: You review code.\n"
        "    whenToUse: 5\n"  # line 5
        "    groups: [read]\n"
        "  - name: No Slug\n"  # line 7: the entry
        "    roleDefinition: R.\n"
        "    groups: [read, [edit, {fileRegex: 7}]]\n"  # line 9
        "  - slug: [a, b]\n"  # line 10
        "    name: Listed\n"
        "    roleDefinition: R.\n"
        "    groups: read\n"  # line 13
    )
    before = snapshot(tools_only)
    assert main(["import", "roomodes", str(source), "--out", str(tools_only)]) == 2
    assert capsys.readouterr()[1].splitlines() == [
        f"error: {source}:5: 'whenToUse' must be a string, not int",
        f"error: {source}:7: missing required key 'slug'",
        f"error: {source}:9: fileRegex and description of 'edit' must be strings",
        f"error: {source}:10: 'slug' must be a string, not list",
        f"error: {source}:13: 'groups' must be a list",
    ]
    assert snapshot(tools_only) == before


def test_group_options_without_a_file_regex_restrict_nothing_as_in_roo(tools_only: Path, tmp_path: Path) -> None:
    mode = roo_export("code")
    mode["groups"][1] = ["edit", {"description": "any file"}]
    import_roomodes(write_roomodes(tmp_path / ".roomodes", mode), tools_only)
    assert load_registry(tools_only).mode("code").config.file_restrictions == {}
