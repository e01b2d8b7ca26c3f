"""fetch_tool_description: full text for the mode's tools, readable refusals that leak nothing."""

from __future__ import annotations

import json

import pytest

from prompt_composer import Registry, TaskSession, handle_fetch


def test_fetch_returns_full_text_then_schema(mini_registry: Registry) -> None:
    result = handle_fetch(mini_registry, mini_registry.mode("code"), {"name": "glob"})
    assert not result.is_error
    doc = mini_registry.tools["glob"]
    full, _, schema = result.content.partition("\n\nInput schema (JSON):\n")
    assert full == doc.full
    assert json.loads(schema) == doc.input_schema


@pytest.mark.parametrize(
    ("mode", "name", "reason"),
    [
        ("code", "secret_tool", "there is no tool 'secret_tool' in mode 'code'"),
        ("ask", "apply_diff", "there is no tool 'apply_diff' in mode 'ask'"),
        ("code", "no_such_tool", "there is no tool 'no_such_tool' in mode 'code'"),
    ],
)
def test_refusals_say_why_and_leak_no_text(mini_registry: Registry, mode: str, name: str, reason: str) -> None:
    result = handle_fetch(mini_registry, mini_registry.mode(mode), {"name": name})
    assert result.is_error
    assert reason in result.content
    if name in mini_registry.tools:
        doc = mini_registry.tools[name]
        assert doc.full not in result.content
        assert doc.brief not in result.content
        assert "TOP SECRET" not in result.content
        assert "FULL TEXT" not in result.content
    # Suggestions are names the mode allows, and only those.
    suggested = result.content.split("closest first: ")[1].rstrip(".").split(", ")
    assert suggested and all(mini_registry.mode(mode).allows(s) for s in suggested)


def test_refusal_suggests_close_names(mini_registry: Registry) -> None:
    result = handle_fetch(mini_registry, mini_registry.mode("code"), {"name": "read_files"})
    assert result.is_error
    assert result.content.split("closest first: ")[1].startswith("read_file")


@pytest.mark.parametrize("tool_input", [{}, {"name": ""}, {"name": "  "}, {"name": 3}, {"tool": "glob"}, "glob", None])
def test_malformed_input_is_an_error_result(mini_registry: Registry, tool_input: object) -> None:
    result = handle_fetch(mini_registry, mini_registry.mode("code"), tool_input)
    assert result.is_error
    assert result.content.startswith('Error: fetch_tool_description needs {"name": "<tool name>"}')
    assert result.content.endswith(f"Tools of mode 'code': {', '.join(mini_registry.mode('code').allowed)}.")


@pytest.mark.parametrize(
    "tool_input", [{}, {"name": 3}, None, {"name": "no_such_tool"}, {"name": "secret_tool"}, {"name": "read_files"}]
)
def test_every_refusal_starts_with_error(mini_registry: Registry, tool_input: object) -> None:
    result = handle_fetch(mini_registry, mini_registry.mode("code"), tool_input)
    assert result.is_error
    assert result.content.startswith("Error: ")


def test_promotion_is_opt_in(mini_registry: Registry) -> None:
    mode = mini_registry.mode("code")
    session = TaskSession("t")
    handle_fetch(mini_registry, mode, {"name": "glob"}, session=session)
    assert session.history() == ()
    handle_fetch(mini_registry, mode, {"name": "glob"}, session=session, promote=True)
    assert session.history() == ("glob",)
    handle_fetch(mini_registry, mode, {"name": "secret_tool"}, session=session, promote=True)
    assert session.history() == ("glob",)
