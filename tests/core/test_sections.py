"""Sections rendered without Jinja (prompt_composer.core.sections, .template_runtime): the shipped templates' code,
run by the package's small runtime, renders exactly what Jinja renders, on every shipped mode and the large real
catalog, with and without MCP servers, system information and a FIFO; whatever it cannot render is rendered by
Jinja, whose text or error is the answer; a user's templates are Jinja's alone."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import jinja2
import pytest

from prompt_composer import Composer, Registry, load_registry
from prompt_composer.core import precompiled, sections, template_runtime
from prompt_composer.core.prompt import SystemInfo
from prompt_composer.core.sections import Sections
from tests.helpers import LARGE_CATALOG_GROUP

PRECOMPILED = Path(precompiled.__file__).parent

MCP_SERVERS: list[Any] = [
    {
        "name": "github",
        "description": "Issues & pull requests <for> the user's repos",
        "tools": [
            {
                "name": "create_issue",
                "description": "Open an issue",
                "input_schema": {"type": "object", "b": "é'<&>", "a": [1]},
            },
            {"name": "no_schema", "description": ""},
            {"name": "bare"},
        ],
    },
    {"name": "memory"},
    {"name": "notes", "description": None, "tools": []},
]
CONTEXTS: dict[str, dict[str, Any]] = {
    "plain": {},
    "everything": {
        "mcp_servers": MCP_SERVERS,
        "system_info": SystemInfo(workspace="/work", os="Linux 6.1", shell="/bin/bash", date="2026-11-28"),
        "capabilities": "You can run {{ 7*7 }} commands.",
        "custom_instructions": "Prefer small diffs.\n\n- one\n- two",
    },
}


@pytest.fixture(scope="module")
def large(request: pytest.FixtureRequest) -> Registry:
    """The large catalog (the session's one build, tests/conftest.py's ``large_catalog``), loaded without the cache."""
    return load_registry(request.getfixturevalue("large_catalog").docs, cache=False)


def prompts(composer: Composer) -> list[str]:
    """Every mode's system prompt, empty FIFO and with two recent tools, and native where a mode has it."""
    out = []
    for slug, mode in composer.registry.modes.items():
        out.append(composer.compose(slug).system)
        out.append(composer.compose(slug, recent=mode.allowed[-2:]).system)
        if mode.config.tool_style != "text" and not mode.config.discovery:
            out.append(composer.compose_native(slug).system)
    return out


@pytest.mark.parametrize("context", sorted(CONTEXTS))
@pytest.mark.parametrize("catalog", ["shipped", "large"])
@pytest.mark.xdist_group(LARGE_CATALOG_GROUP)  # every case reads ``large``: one worker builds it
def test_every_mode_renders_without_jinja_what_jinja_renders(
    catalog: str, context: str, large: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = load_registry(cache=False) if catalog == "shipped" else large
    values = CONTEXTS[context]
    with_jinja = prompts(Composer(registry, templates=tmp_path, context=values))  # an empty folder: Jinja's path

    def no_jinja(self: Sections) -> Any:
        raise AssertionError("a shipped section fell back to Jinja")

    monkeypatch.setattr(Sections, "jinja", no_jinja)
    without = prompts(Composer(registry, context=values))
    assert without == with_jinja
    if context == "everything" and catalog == "shipped":  # the MCP and system sections were rendered at all
        joined = "\n".join(without)
        assert "MCP SERVERS" in joined and "Operating system: Linux 6.1" in joined
        assert '"b": "\\u00e9\\u0027\\u003c\\u0026\\u003e"' in joined  # tojson: sorted keys, escaped as Jinja does


def test_the_runtime_has_every_name_the_code_imports() -> None:
    for path in PRECOMPILED.glob("*_j2.py"):
        first = ast.parse(path.read_text()).body[0]
        assert isinstance(first, ast.ImportFrom) and first.module == "jinja2.runtime", path.name
        missing = [alias.name for alias in first.names if not hasattr(template_runtime, alias.name)]
        assert not missing, f"{path.name} imports {missing}"


def test_what_the_runtime_does_not_render_jinja_renders(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = load_registry(cache=False)
    expected = prompts(Composer(registry, context=CONTEXTS["everything"]))

    def refuse(root: Any, values: Any) -> str:
        raise template_runtime.Unsupported("test")

    monkeypatch.setattr(template_runtime, "render", refuse)
    assert prompts(Composer(registry, context=CONTEXTS["everything"])) == expected


def test_an_undefined_variable_is_jinjas_error() -> None:
    with pytest.raises(jinja2.UndefinedError, match="'tool_groups' is undefined"):
        Sections().render("guidelines.j2", {})


@pytest.mark.parametrize("value", [{"x": 1}, [1, 2], "text", 3])
def test_an_undefined_value_is_refused_whatever_is_done_with_it(value: Any) -> None:
    undefined = template_runtime.Undefined(name="x")
    for use in (str, bool, iter, len, hash, lambda u: u == value, lambda u: value in [u], lambda u: u.attr):
        with pytest.raises(template_runtime.Unsupported):
            use(undefined)


def test_code_for_another_text_is_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """A shipped template edited after its code was generated (or code naming no module) is Jinja's to render."""
    sections._shipped_root.cache_clear()
    monkeypatch.setitem(precompiled.TEMPLATES, "role.j2", ("0" * 40, "role_j2"))
    assert sections._shipped_root("role.j2") is None
    assert sections._shipped_root("rules.j2") is not None
    monkeypatch.setitem(precompiled.TEMPLATES, "rules.j2", (precompiled.TEMPLATES["rules.j2"][0], "missing"))
    sections._shipped_root.cache_clear()
    try:
        assert sections._shipped_root("rules.j2") is None
    finally:
        sections._shipped_root.cache_clear()  # the next test reads the package's code again


def test_a_users_folder_is_rendered_by_jinja_alone(tmp_path: Path) -> None:
    (tmp_path / "rules.j2").write_text("{% include 'objective.j2' %}")  # Jinja's loader finds the shipped one
    registry = load_registry(cache=False)
    prompt = Composer(registry, templates=tmp_path).compose("code")
    assert "====\nOBJECTIVE" in prompt.system and "====\nRULES" not in prompt.system
