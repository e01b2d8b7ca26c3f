"""The installed (non-editable) package finds its shipped docs from any working directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_wheel_ships_tool_docs_and_templates(tmp_path: Path) -> None:
    pytest.importorskip("hatchling")
    wheel_dir = tmp_path / "wheel"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheel_dir),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheel_dir.glob("prompt_composer-*.whl")
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    probe = (
        "import prompt_composer as pc; d = pc.default_docs_dir(); r = pc.load_registry();"
        "print(d); print(len(r.tools), len(r.modes)); print(pc.Composer(r).compose('code').tokens.total > 0);"
        "from prompt_composer.local.server import chat_template;"
        "print('```json' in chat_template('qwen2.5-json-tools'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=elsewhere, env=env, check=True, capture_output=True, text=True
    ).stdout.splitlines()
    assert Path(out[0]).is_relative_to(site), out[0]  # the wheel's copy, not the checkout's
    n_tools, n_modes = map(int, out[1].split())
    assert n_tools == len(list((ROOT / "tool_docs").glob("*.yaml")))
    assert n_modes == len(list((ROOT / "tool_docs" / "modes").glob("*.yaml")))
    assert out[2] == "True"
    assert out[3] == "True"  # the chat template the local model needs ships in the wheel
    cli = subprocess.run(
        [sys.executable, "-m", "prompt_composer", "validate"], cwd=elsewhere, env=env, capture_output=True, text=True
    )
    assert cli.returncode == 0, cli.stderr


def test_ci_runs_exactly_readmes_test_command() -> None:
    """`.ci/run` installs what it needs and runs the test command README gives, not a private variant."""
    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text(encoding="utf-8")
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [line for line in quick_start.splitlines() if line.startswith("python3 -m pip install '.[dev]'")]
    assert len(commands) == 1
    ci = (root / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == commands[0] and commands[0].endswith("python3 -m pytest -q")
