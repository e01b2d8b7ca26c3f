"""Shared fixtures: a small in-memory registry and the shipped one."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from prompt_composer import Composer, Registry, load_registry
from prompt_composer.local.weights import model_path
from prompt_composer.shared import yamlfile, yamlparse
from prompt_composer.shared.cache_dir import CACHE_ENV, default_cache_dir
from tests.helpers import make_doc, make_mode

if TYPE_CHECKING:
    from benchmarks.agent_tasks import TaskSet

FAST_AGENT_VENV = "PROMPT_COMPOSER_FAST_AGENT_VENV"  # where tests/mcp/test_fast_agent.py finds its venv

# The MCP SDK's stdio_client takes `errlog=sys.stderr` as a default bound when mcp.client.stdio is first imported. A
# test running the CLI in-process (whose sys.stderr is then the command's MessageStream over a captured buffer) can
# be the first to import it, and every later test that starts a stdio server with the SDK's defaults fails on
# `stderr.fileno()`. Imported here, the default is the session's own stderr.
with contextlib.suppress(ImportError):  # the mcp extra is not installed: its tests skip
    import mcp.client.stdio  # noqa: F401


@pytest.fixture(scope="session", autouse=True)
def private_user_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The user cache (parsed docs, vectors, unpacked models) of this test session: a folder of its own, never
    the developer's ~/.cache, and never another session's (each pytest-xdist worker is a session). Subprocesses
    inherit it through the environment. What tests only read from the real cache, and is too large to copy, is
    linked: the local model's verified weights, and the fast-agent venv (through its own variable)."""
    weights = model_path()  # the developer's (or CI's) set-up model, if any: read before the cache moves
    venv = default_cache_dir() / "fast-agent-venv"
    with pytest.MonkeyPatch.context() as patch:
        cache = tmp_path_factory.mktemp("user-cache")
        patch.setenv(CACHE_ENV, str(cache))
        if not os.environ.get(FAST_AGENT_VENV) and venv.is_dir():
            patch.setenv(FAST_AGENT_VENV, str(venv))
        for source in (weights, weights.with_name(weights.name + ".sha256")):
            if source.is_file():
                (cache / "models").mkdir(exist_ok=True)
                (cache / "models" / source.name).symlink_to(source)
        yield cache


@pytest.fixture(scope="session")
def mini_registry() -> Registry:
    docs = [
        make_doc("read_file"),
        make_doc("list_files"),
        make_doc("glob"),
        make_doc("write_to_file", "edit"),
        make_doc("apply_diff", "edit"),
        make_doc("execute_command", "command", params={"command": {"type": "string", "description": "Shell."}}),
        make_doc("secret_tool", "admin", full="## secret_tool\nTOP SECRET INTERNALS of the admin tool."),
    ]
    modes = [
        make_mode("code", groups=["read", "edit", "command"]),
        make_mode("ask", groups=["read"], recent_size=1),
        make_mode("text", groups=["read", "edit"], tool_style="text"),
        make_mode("admin", groups=["admin", "read"], permanent=["secret_tool"], recent_size=0),
    ]
    return Registry.from_docs(docs, modes)


@pytest.fixture(scope="session")
def shipped() -> Registry:
    return load_registry()


@pytest.fixture(scope="session")
def shipped_composer(shipped: Registry) -> Composer:
    return Composer(shipped)


@pytest.fixture(scope="session")
def large_catalog(tmp_path_factory: pytest.TempPathFactory) -> TaskSet:
    """The large-catalog task set (benchmarks/large_catalog.py: the shipped docs and five real MCP catalogs
    imported, some 6 s of linting and writing YAML), built once a session into a folder of its own; the tests only
    read it, and take ``xdist_group(LARGE_CATALOG_GROUP)`` so one worker builds it. A test that asks for it checks
    first that ../shared/corpora is there (skipping otherwise), as each did before it was shared."""
    from benchmarks.large_catalog import build_large

    return build_large(tmp_path_factory.mktemp("large"))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace with a README, and a secret file just outside it."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text("# Demo\n")
    (tmp_path / "secret.txt").write_text("secret\n")
    return root


@pytest.fixture(autouse=True)
def journal_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where imports record their journals (shared/journal_records.py): a fresh folder per test, never the user's
    own state folder; subprocesses started with ``os.environ`` inherit it."""
    state = tmp_path_factory.mktemp("journal-state")
    monkeypatch.setenv("PROMPT_COMPOSER_STATE", str(state))
    return state


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("libyaml", marks=pytest.mark.skipif(yamlparse.CParser is None, reason="PyYAML without libyaml")),
        "python",
    ],
)
def yaml_parser(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each test of a module that uses it runs under both YAML parsers: libyaml's (the default where PyYAML has
    it) and the pure-Python one (the fallback)."""
    before = yamlfile.PARSER
    yamlfile.PARSER = request.param
    try:
        yield request.param
    finally:
        yamlfile.PARSER = before
