"""The installed (non-editable) package finds its shipped docs from any working directory."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def built_wheel(tmp_path: Path) -> Path:
    """The checkout built into a wheel under ``tmp_path`` (no build isolation: no network in tests)."""
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
    return wheel


@pytest.mark.slow
def test_wheel_ships_tool_docs_and_templates(tmp_path: Path) -> None:
    pytest.importorskip("hatchling")
    wheel = built_wheel(tmp_path)
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


USER_SCRIPT = """\
from prompt_composer import Composer, load_registry


def tokens_of(mode: str) -> int:
    composer = Composer(load_registry())
    prompt = composer.compose(mode)
    return prompt.tokens.total


print(tokens_of("helper"))
"""


@pytest.mark.slow
def test_fresh_venv_init_then_audit_and_compose_without_docs_and_the_package_is_typed(tmp_path: Path) -> None:
    """README's path for a new user, on the built wheel in a fresh venv: `init my_docs`, the printed lines in a
    pyproject.toml, then `audit` and `compose` from a folder below it with no --docs and no --mode; and a user's
    `mypy --strict` sees the package as typed (py.typed is in the wheel)."""
    pytest.importorskip("hatchling")
    pytest.importorskip("mypy")
    wheel = built_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert "prompt_composer/py.typed" in names
    assert "prompt_composer/cli/starter/modes/helper.yaml" in names
    # A fresh venv; the runtime dependencies come from this interpreter's site-packages (no network in tests).
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    # --ignore-installed: the interpreter running the tests may have prompt-composer installed already (CI
    # installs it); pip would call the wheel "already satisfied" and leave the venv without its own copy.
    subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--ignore-installed", "-q", str(wheel)],
        check=True,
        capture_output=True,
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("PROMPT_COMPOSER_")}
    command = str(venv / "bin" / "prompt-composer")
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)

    def cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([command, *argv], cwd=cwd, env=env, capture_output=True, text=True)

    where = subprocess.run(
        [str(python), "-c", "import prompt_composer; print(prompt_composer.__file__)"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout  # the wheel's copy, not a checkout's
    init = cli("init", "my_docs", cwd=project)
    assert init.returncode == 0, init.stderr
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\n\n' + init.stdout, encoding="utf-8")
    audit = cli("audit", cwd=project / "src")
    assert audit.returncode == 0, audit.stderr
    assert "helper" in audit.stdout and "ok" in audit.stdout
    compose = cli("compose", "--mode", "helper", cwd=project / "src")
    assert compose.returncode == 0, compose.stderr
    assert "read_file" in compose.stdout and "# mode helper:" in compose.stderr
    assert cli("compose", cwd=project / "src").stdout == compose.stdout  # default-mode fills --mode
    version = cli("--version", cwd=project)
    assert version.stdout.startswith("prompt-composer ") and version.returncode == 0

    # A user's script, checked by mypy --strict against the venv: typed, so clean, and a wrong type is caught.
    script = project / "use.py"
    script.write_text(USER_SCRIPT, encoding="utf-8")
    mypy = [sys.executable, "-m", "mypy", "--strict", "--python-executable", str(python), "--no-incremental"]
    clean = subprocess.run([*mypy, str(script)], cwd=project, env=env, capture_output=True, text=True)
    assert clean.returncode == 0, clean.stdout
    assert "py.typed" not in clean.stdout
    script.write_text(USER_SCRIPT.replace("-> int:", "-> str:"), encoding="utf-8")
    wrong = subprocess.run([*mypy, str(script)], cwd=project, env=env, capture_output=True, text=True)
    assert wrong.returncode == 1
    assert 'Incompatible return value type (got "int", expected "str")' in wrong.stdout
