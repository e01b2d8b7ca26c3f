"""The shipped pre-commit hooks and the GitHub Actions example, run as they are written: each hook's ``entry`` and
each workflow step's ``run`` line, in a shell, with ``prompt-composer`` resolving to this checkout."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from prompt_composer import default_docs_dir
from tests.helpers import DATA, REPO

pytestmark = pytest.mark.slow

HOOKS = REPO / ".pre-commit-hooks.yaml"
WORKFLOW = REPO / "docs" / "examples" / "github-actions.yml"


@pytest.fixture
def shell_env(tmp_path: Path) -> dict[str, str]:
    """PATH with a ``prompt-composer`` that runs this checkout's code (not whatever an earlier install left)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "prompt-composer"
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m prompt_composer "$@"\n')
    script.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def _sh(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # GitHub's default shell on Linux runners: bash -e {0}
    return subprocess.run(
        ["bash", "-e", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=240, check=False
    )


def _hooks() -> list[dict[str, Any]]:
    hooks: list[dict[str, Any]] = yaml.safe_load(HOOKS.read_text(encoding="utf-8"))
    return hooks


def test_the_hooks_are_validate_audit_check_and_the_lint() -> None:
    entries = {h["id"]: h["entry"] for h in _hooks()}
    assert entries == {
        "prompt-composer-validate": "prompt-composer validate",
        "prompt-composer-audit": "prompt-composer audit --check",
        "prompt-composer-lint": "prompt-composer audit --security",
    }
    for hook in _hooks():
        # pre-commit's required keys, and a docs folder is never a list of changed files
        assert {"id", "name", "entry", "language"} <= hook.keys() and hook["pass_filenames"] is False


def test_each_hook_passes_the_shipped_docs(shell_env: dict[str, str], tmp_path: Path) -> None:
    for hook in _hooks():
        done = _sh(hook["entry"], tmp_path, shell_env)
        assert done.returncode == 0, (hook["id"], done.stdout[-2000:], done.stderr[-2000:])


def test_the_hooks_fail_what_they_are_for(shell_env: dict[str, str], tmp_path: Path) -> None:
    entries = {h["id"]: h["entry"] for h in _hooks()}
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "bad.yaml").write_text("name: bad\ngroup: read\nbrief: ok.\n")
    done = _sh(f"{entries['prompt-composer-validate']} --docs {broken}", tmp_path, shell_env)
    assert done.returncode == 2 and "bad.yaml:1: missing required key 'full'" in done.stderr

    over = tmp_path / "over"
    shutil.copytree(default_docs_dir(), over)
    mode = over / "modes" / "code.yaml"
    mode.write_text(
        "\n".join(
            "budget_tokens: 100" if ln.startswith("budget_tokens:") else ln for ln in mode.read_text().splitlines()
        )
    )
    done = _sh(f"{entries['prompt-composer-audit']} --docs {over}", tmp_path, shell_env)
    assert done.returncode == 1 and "over its budget 100" in done.stderr

    done = _sh(f"{entries['prompt-composer-lint']} --docs {DATA / 'poison' / 'docs'}", tmp_path, shell_env)
    assert done.returncode == 1 and "high [" in done.stdout


def _workflow_runs() -> list[dict[str, Any]]:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    steps: list[dict[str, Any]] = workflow["jobs"]["gates"]["steps"]
    return steps


def test_the_github_actions_example_runs(shell_env: dict[str, str], tmp_path: Path) -> None:
    """Every ``run`` line but the install, in a repository laid out as the example expects: tool_docs/ and
    queries.jsonl at its root."""
    shutil.copytree(default_docs_dir(), tmp_path / "tool_docs")
    shutil.copy(DATA / "shipped_queries.jsonl", tmp_path / "queries.jsonl")
    steps = _workflow_runs()
    runs = [s["run"] for s in steps if "run" in s and "pip install" not in s["run"]]
    assert len(runs) == 5
    for command in runs:
        done = _sh(command, tmp_path, shell_env)
        assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
    upload = next(s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif"))
    log = json.loads((tmp_path / upload["with"]["sarif_file"]).read_text(encoding="utf-8"))
    assert log["version"] == "2.1.0" and log["runs"][0]["tool"]["driver"]["name"] == "prompt-composer"


def test_the_ci_page_shows_the_example_as_shipped() -> None:
    page = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    assert WORKFLOW.read_text(encoding="utf-8").strip() in page
