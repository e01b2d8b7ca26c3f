"""Shared fixtures: a small in-memory registry and the shipped one."""

from __future__ import annotations

from pathlib import Path

import pytest

from prompt_composer import Composer, Registry, load_registry
from tests.helpers import make_doc, make_mode


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
