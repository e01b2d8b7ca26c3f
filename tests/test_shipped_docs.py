"""The shipped tool_docs: complete, within budget, and worth it; golden prompts for every mode."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from prompt_composer import Composer, Registry, run_audit
from prompt_composer.audit import brief_parameter_mentions

GOLDEN = Path(__file__).parent / "golden"
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
