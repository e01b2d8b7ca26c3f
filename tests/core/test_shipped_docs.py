"""The shipped tool_docs: complete, within budget, and worth it; golden prompts for every mode."""

from __future__ import annotations

import json
import os
import re

import pytest

from prompt_composer import Composer, Registry, run_audit
from prompt_composer.core.audit import brief_parameter_mentions
from tests.helpers import GOLDEN

GOLDEN = GOLDEN
SEED_PERMANENT = {
    "glob",
    "search_files",
    "list_files",
    "read_file",
    "write_to_file",
    "apply_diff",
    "execute_command",
    "subagent",
    "update_todo_list",
    "attempt_completion",
}
DEBUGGER = {"launch", "breakpoint", "step", "continue", "evaluate", "stack", "variables"}


def test_tool_set_is_complete(shipped: Registry) -> None:
    assert len(shipped.tools) >= 24
    assert set(shipped.tools) >= SEED_PERMANENT
    groups = {doc.group for doc in shipped.tools.values()}
    assert {"read", "edit", "command", "browser", "mcp", "modes", "debug"} <= groups
    debug_names = " ".join(n for n, d in shipped.tools.items() if d.group == "debug")
    assert all(word in debug_names for word in DEBUGGER)
    assert set(shipped.modes) >= {"code", "architect", "ask", "debug", "orchestrator"}


def test_every_full_form_documents_every_parameter_and_has_an_example(shipped: Registry) -> None:
    for name, doc in shipped.tools.items():
        for param in doc.parameters:
            assert re.search(rf"\b{re.escape(param)}\b", doc.full), f"{name}: full does not document {param!r}"
            assert doc.input_schema["properties"][param].get("description"), f"{name}.{param} has no description"
        assert "example" in doc.full.lower(), f"{name}: full has no example"


def test_briefs_do_not_name_parameters(shipped: Registry) -> None:
    assert {n: brief_parameter_mentions(d) for n, d in shipped.tools.items() if brief_parameter_mentions(d)} == {}


def test_every_mode_within_budget_and_code_mode_halves_the_prompt(shipped_composer: Composer) -> None:
    report = run_audit(shipped_composer)
    assert report.over_budget == ()
    code = next(m for m in report.modes if m.mode == "code")
    assert code.composed_tokens <= 0.5 * code.baseline_tokens, code
    for mode in report.modes:
        assert mode.composed_tokens < mode.baseline_tokens, mode
        assert mode.composed_tokens <= mode.worst_tokens <= mode.budget_tokens, mode


@pytest.mark.parametrize("slug", ["architect", "ask", "code", "debug", "orchestrator"])
def test_golden_prompts(shipped: Registry, shipped_composer: Composer, slug: str) -> None:
    """Rendered prompts are reviewed files; set UPDATE_GOLDEN=1 to rewrite them, then read the diff."""
    mode = shipped.mode(slug)
    candidates = [n for n in mode.allowed if n not in mode.permanent]
    cases = {"empty": [], "recent": candidates[:2]}
    for case, recent in cases.items():
        prompt = shipped_composer.compose(slug, recent=recent)
        tools = json.dumps(list(prompt.tools), indent=2, ensure_ascii=False)
        rendered = (
            f"# mode: {slug}  full: {', '.join(prompt.full)}\n"
            f"# tokens: {prompt.tokens.as_dict()}\n"
            f"==== SYSTEM\n{prompt.system}\n==== TOOLS\n{tools}\n"
        )
        path = GOLDEN / f"{slug}.{case}.txt"
        if os.environ.get("UPDATE_GOLDEN"):
            path.parent.mkdir(exist_ok=True)
            path.write_text(rendered, encoding="utf-8")
        assert path.exists(), f"missing golden file {path}; run with UPDATE_GOLDEN=1 and review it"
        assert rendered == path.read_text(encoding="utf-8"), f"{path} differs"


# Section headers a tool doc may point at ("the Modes section"), keyed by the words before "section".
SECTION_HEADERS = {"modes": "MODES", "mcp servers": "MCP SERVERS", "system information": "SYSTEM INFORMATION"}


@pytest.mark.parametrize("slug", ["architect", "ask", "code", "debug", "orchestrator"])
def test_every_section_a_tool_doc_points_at_is_in_that_modes_prompt(
    shipped: Registry, shipped_composer: Composer, slug: str
) -> None:
    """A doc may say "see the X section" only where the X section is rendered, or say it may be absent."""
    system = shipped_composer.compose(slug).system
    for name in shipped.mode(slug).allowed:
        doc = shipped.tools[name]
        text = " ".join(f"{doc.brief} {doc.full} {doc.hint or ''}".split())
        for match in re.finditer(r"\b(\w+(?: \w+)?) section\b", text):
            words = match.group(1).lower()
            header = next((h for key, h in SECTION_HEADERS.items() if words.endswith(key)), None)
            assert header is not None, f"{name}: unknown section {match.group(0)!r}"
            if "when this prompt has one" in text[match.end() : match.end() + 40]:
                continue
            assert f"====\n{header}\n" in system, f"{name} points at the {header} section, absent in {slug}"


def test_each_mode_prompt_says_only_what_holds_in_that_mode(shipped: Registry, shipped_composer: Composer) -> None:
    smallest, shell = "Make the smallest change", "Prefer the dedicated tool over a shell command"
    edits, shells = set(), set()
    for slug, mode in shipped.modes.items():
        system = shipped_composer.compose(slug).system
        groups = {shipped.tools[n].group for n in mode.allowed}
        if smallest in system:
            edits.add(slug)
            assert "edit" in groups and "edit" not in mode.config.file_restrictions, slug
        if shell in system:
            shells.add(slug)
            assert "command" in groups, slug
        assert "one tool call at a time" not in system and "one tool per message" not in system, slug
        assert "USER'S CUSTOM INSTRUCTIONS" not in system, slug  # the shipped text is the mode's, not the user's
        assert f"====\nMODE INSTRUCTIONS\n\n{mode.config.custom_instructions}" in system, slug
    assert edits == shells == {"code", "debug"}
    architect = shipped_composer.compose("architect").system
    assert (
        "- In this mode you may create and edit only files matching `\\.md$` (Markdown planning documents only); "
        "an edit to any other file is refused."
    ) in architect
    ask = shipped_composer.compose("ask").system  # text style: several tool_call blocks per message
    assert "a message may hold several blocks, and they run in order" in ask
