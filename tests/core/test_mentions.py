"""Mode-clean prompts: the audit reports every text shown in a mode that names a tool the mode does not allow."""

from __future__ import annotations

import pytest

from prompt_composer import Composer, Registry, run_audit
from prompt_composer.cli import main
from prompt_composer.core.docs import GroupDoc
from prompt_composer.core.mentions import foreign_mentions, named_tools
from tests.helpers import make_doc, make_mode


def registry() -> Registry:
    docs = [
        make_doc("read_file", brief="Read a file. Search first with `search_files` when unsure."),
        make_doc("search_files", full="## search_files\nThen open the hit with read_file."),
        make_doc("run_cmd", "command", hint="Prefer apply_diff_tool over sed."),
        make_doc("apply_diff_tool", "edit"),
        make_doc("glob", "read"),
    ]
    modes = [
        make_mode("code", groups=["read", "edit", "command"]),
        make_mode("reader", groups=[], include=["read_file", "run_cmd"], permanent=["read_file"]),
    ]
    groups = [GroupDoc(name="command", workflow="Run one command at a time; edit files with apply_diff_tool.")]
    return Registry.from_docs(docs, modes, groups=groups)


def test_a_text_shown_in_a_mode_that_names_a_tool_outside_it_is_reported() -> None:
    composer = Composer(registry())
    found = {(m.where, m.tool) for m in foreign_mentions(composer, composer.registry.mode("reader"))}
    assert found == {
        ("read_file's brief", "search_files"),
        ("run_cmd's hint", "apply_diff_tool"),
        ("the command group's workflow", "apply_diff_tool"),
    }
    assert foreign_mentions(composer, composer.registry.mode("code")) == []  # it allows every tool named


def test_plain_words_count_only_in_backticks() -> None:
    names = ["glob", "search_files", "browser-navigate"]
    assert named_tools("Use a glob pattern; browser-navigate first, then search_files.", names) == {
        "search_files",
        "browser-navigate",
    }
    assert named_tools("Prefer `glob` here.", names) == {"glob"}
    assert named_tools("research_files and search_filesystem are other words", names) == set()


def test_audit_warns_on_a_mode_that_is_not_clean() -> None:
    report = run_audit(Composer(registry()))
    assert [m.mode for m in report.unclean] == ["reader"]
    assert any("reader" in w and "apply_diff_tool" in w for w in report.warnings)
    assert report.modes[1].as_dict()["foreign_mentions"]


def test_no_shipped_mode_shows_text_naming_a_tool_it_does_not_allow(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "--check"]) == 0
    assert "does not allow" not in capsys.readouterr().err
