"""The installed (non-editable) package finds its shipped docs from any working directory; README's install and
test commands work in a virtual environment as well as outside one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTION = "prompt-composer-tooldocs"


def running_environment_paths() -> list[str]:
    """The package folders of the interpreter running the tests: its venv's site-packages when it runs in one
    (and whatever that venv's own .pth files added), else the base interpreter's. Not the checkout: a venv built
    on these must import prompt_composer from its own install."""
    found: list[str] = []
    for entry in sys.path:
        path = Path(entry or ".").resolve()
        if not path.is_dir() or path == ROOT or not {"site-packages", "dist-packages"} & set(path.parts):
            continue
        if str(path) not in found:
            found.append(str(path))
    return found


def venv_on_this_environment(venv: Path, *, base: str = sys.executable, with_pip: bool = False) -> Path:
    """A new venv (its python returned) that sees the running environment's packages after its own, through a
    .pth file: its own installs come first, and a dependency it lacks comes from the environment the tests run in,
    so nothing is fetched. Not ``--system-site-packages``: from a venv's python that exposes the base interpreter's
    packages, not the venv's."""
    subprocess.run(
        [base, "-m", "venv", *([] if with_pip else ["--without-pip"]), str(venv)], check=True, capture_output=True
    )
    return see_this_environment(venv)


def see_this_environment(venv: Path) -> Path:
    """Add the running environment's package folders to ``venv`` (after its own) with a .pth file; its python."""
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(purelib) / "zz-running-environment.pth").write_text(
        "".join(f"{path}\n" for path in running_environment_paths()), encoding="utf-8"
    )
    return python


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
    (wheel,) = wheel_dir.glob("prompt_composer_tooldocs-*.whl")
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
    assert ci[-1] == commands[0] and commands[0].endswith("python3 -m pytest -q -n auto --dist loadgroup")


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
    # A fresh venv; the runtime dependencies come from the running environment's packages (no network in tests),
    # whether the tests run in a venv or not.
    venv = tmp_path / "venv"
    python = venv_on_this_environment(venv)
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


def readme_block(heading: str) -> list[str]:
    """The lines of the first ``sh`` block under README's ``heading`` (a ``## `` or ``### `` title)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split(f"{heading}\n", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def another_base_interpreter() -> str:
    """A Python of the same version whose own packages lack the runtime dependencies (Debian's, here), so a venv
    built on it sees them only through the environment the tests run in: what broke the fresh-venv test when
    it used ``--system-site-packages``. The running interpreter when there is no such Python."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if not Path(candidate).exists() or Path(candidate).resolve() == Path(sys.executable).resolve():
            continue
        probe = subprocess.run(
            [
                candidate,
                "-c",
                "import sys, importlib.util as u; print(sys.version_info[:2], u.find_spec('cachetools'))",
            ],
            capture_output=True,
            text=True,
        )
        if probe.returncode == 0 and probe.stdout.strip() == f"{tuple(sys.version_info[:2])} None":
            return candidate
    return sys.executable


COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "__pycache__", "*.pyc", ".*_cache", ".hypothesis", "node_modules", "site", "build", "dist"
)


@pytest.mark.slow
def test_readme_install_in_a_venv_then_the_fresh_venv_test_and_version(tmp_path: Path) -> None:
    """README's Quick start in a new venv, in a copy of the checkout: its install line (pip kept offline: the
    dependencies come from the environment running the tests, through a .pth file), then, inside that venv, the
    suite's fresh-venv test and ``prompt-composer --version``; and an extra's install line, as the errors give
    it, resolves to this installed project without fetching it."""
    pytest.importorskip("hatchling")
    pytest.importorskip("mypy")
    checkout = tmp_path / "prompt-composer"
    shutil.copytree(ROOT, checkout, ignore=COPY_IGNORE)
    quick_start = readme_block("## Quick start")
    venv_lines = [line for line in quick_start if line.startswith("python3 -m venv .venv")]
    install = next(line for line in quick_start if line.startswith("python3 -m pip install ."))
    # README's venv line, with `python3` a Python whose own packages lack the dependencies (see
    # another_base_interpreter); the venv's pip is its own (ensurepip), the dependencies come through the .pth.
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "python3").symlink_to(another_base_interpreter())
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("PROMPT_COMPOSER_")}
    env.update(PATH=f"{shim}{os.pathsep}{env['PATH']}", PIP_NO_INDEX="1", PIP_NO_BUILD_ISOLATION="0")
    make_venv = venv_lines[0].split("&&")[0] if venv_lines else "python3 -m venv .venv"
    done = subprocess.run(["bash", "-e", "-c", make_venv], cwd=checkout, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    venv = checkout / ".venv"
    python = see_this_environment(venv)
    # Activated as README says; `prompt-composer audit` at the end of the install line runs from the venv.
    activated = {**env, "PATH": f"{venv / 'bin'}{os.pathsep}{env['PATH']}", "VIRTUAL_ENV": str(venv)}
    done = subprocess.run(["bash", "-e", "-c", install], cwd=checkout, env=activated, capture_output=True, text=True)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    assert "code" in done.stdout and "ok" in done.stdout  # the audit's table
    where = subprocess.run(
        [str(python), "-c", "import prompt_composer, importlib.metadata as m; print(prompt_composer.__file__);"
         f"print(m.version({DISTRIBUTION!r}))"],
        cwd=tmp_path, env=activated, capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    assert Path(where[0]).is_relative_to(venv), where
    version = subprocess.run(["prompt-composer", "--version"], env=activated, capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.split() == ["prompt-composer", where[1]], version

    # The suite's fresh-venv test, run by the venv's python from the copy: it builds its own venv from that one.
    inner = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
         "tests/test_install.py::test_fresh_venv_init_then_audit_and_compose_without_docs_and_the_package_is_typed"],
        cwd=checkout, env=activated, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert inner.returncode == 0, inner.stdout[-4000:]
    assert "1 passed" in inner.stdout

    # An extra's install line, as every missing-extra error gives it: pip takes the project from what is installed
    # (nothing fetched: --no-index), so the line works whether it came from a checkout, a wheel or a git URL.
    extra = subprocess.run(
        [str(python), "-m", "pip", "install", f"{DISTRIBUTION}[auth]"], env=activated, capture_output=True, text=True
    )
    assert extra.returncode == 0, extra.stderr
    assert f"Requirement already satisfied: {DISTRIBUTION}[auth]" in extra.stdout
    # The CI example's line, `NAME @ URL`, with the URL this copy: pip installs this project under that name, and
    # refuses the same URL under the registry's other name.
    named = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--force-reinstall",
         f"{DISTRIBUTION} @ {checkout.as_uri()}"],
        env=activated, capture_output=True, text=True,
    )  # fmt: skip
    assert named.returncode == 0, named.stderr
    other = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", f"prompt-composer @ {checkout.as_uri()}"],
        env=activated, capture_output=True, text=True,
    )  # fmt: skip
    said = ("inconsistent name", f"produced metadata for project name {DISTRIBUTION}")  # pip's two wordings
    assert other.returncode != 0 and any(words in other.stderr for words in said), other.stderr
