"""Running on an untrusted checkout (issue 37): a hostile repository, cloned as a CI job clones a pull request, whose
``pyproject.toml`` names its docs folder and whose docs folder holds a committed import journal and symlinks out of
it. Every command that takes a docs folder says there is an interrupted import it will not touch, exits 2, and
creates, changes and moves nothing: the clone (its ``.git`` included) and a sibling victim folder hash the same
before and after. ``import`` and ``import --recover`` refuse the foreign journal; ``--discard`` removes only it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from prompt_composer.cli import main
from prompt_composer.core.registry import default_docs_dir
from tests.helpers import REPO, SHARED

STAGING = ".import-staging-0badc0de"
PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nnot a real key\n"
HOOK = "#!/bin/sh\necho pwned > /tmp/pwned\n"
TRACES = SHARED / "traces" / "traces.jsonl"  # one real trace: replay gets as far as the docs folder
GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(GIT is None, reason="needs git")


def tree_hash(root: Path) -> str:
    """Every entry under ``root`` (hidden ones and ``.git`` too), never following a symlink: its path, its kind and
    mode, and its bytes or its link text. Whatever is created, changed, moved or removed changes the hash."""
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted([*dirs, *files]):
            path = Path(folder) / name
            info = path.lstat()
            digest.update(f"{path.relative_to(root)}\0{stat.filemode(info.st_mode)}\0".encode())
            if stat.S_ISLNK(info.st_mode):
                digest.update(os.readlink(path).encode())
            elif stat.S_ISREG(info.st_mode):
                digest.update(path.read_bytes())
    return digest.hexdigest()


def build_hooks(docs: Path) -> None:
    """The attack of the issue: ``h -> ../.git/hooks`` and a committed ``files/h/pre-commit``."""
    (docs / "h").symlink_to("../.git/hooks")
    staged = docs / STAGING / "files" / "h" / "pre-commit"
    staged.parent.mkdir(parents=True)
    staged.write_text(HOOK)
    staged.chmod(0o755)


def build_files_symlink(docs: Path) -> None:
    """The staging folder's ``files`` is a symlink to the victim folder: recovery would *move* its files in."""
    (docs / STAGING).mkdir()
    (docs / STAGING / "files").symlink_to("../../../victim")


def build_subfolder(docs: Path) -> None:
    """A symlinked subfolder of the docs folder: a staged file would be written through it into the victim."""
    (docs / "sub").symlink_to("../../victim")
    staged = docs / STAGING / "files" / "sub" / "id_rsa"
    staged.parent.mkdir(parents=True)
    staged.write_text("overwritten\n")


def build_staging_symlink(docs: Path) -> None:
    """The staging folder itself is a symlink (to a folder holding COMMITTED and files/)."""
    (docs / "elsewhere" / "files").mkdir(parents=True)
    (docs / "elsewhere" / "files" / "x.yaml").write_text("name: x\n")
    (docs / "elsewhere" / "COMMITTED").touch()
    (docs / STAGING).symlink_to("elsewhere")


CASES: dict[str, Callable[[Path], None]] = {
    "hooks": build_hooks,
    "files-symlink": build_files_symlink,
    "subfolder": build_subfolder,
    "staging-symlink": build_staging_symlink,
}


def git(*argv: str, cwd: Path) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd)}
    subprocess.run(
        [GIT or "git", "-c", "user.name=a", "-c", "user.email=a@b", *argv],
        cwd=cwd,
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )


def hostile_clone(tmp_path: Path, build: Callable[[Path], None], *, committed: bool = True) -> Path:
    """A repository built by ``build``, committed, and cloned beside a victim folder; the clone's path."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "id_rsa").write_text(PRIVATE_KEY)
    origin = tmp_path / "origin"
    origin.mkdir()
    git("init", "-q", cwd=origin)
    (origin / "pyproject.toml").write_text(
        '[project]\nname = "innocent"\n\n[tool.prompt-composer]\ndocs = "tool_docs"\ndefault-mode = "code"\n'
    )
    shutil.copytree(default_docs_dir(), origin / "tool_docs")
    build(origin / "tool_docs")
    marker = origin / "tool_docs" / STAGING / "COMMITTED"
    if committed and not marker.parent.is_symlink():
        marker.touch()
    git("add", "-A", cwd=origin)
    git("commit", "-qm", "add docs", cwd=origin)
    git("clone", "-q", str(origin), "clone", cwd=tmp_path)
    clone = tmp_path / "clone"
    assert os.path.lexists(clone / "tool_docs" / STAGING)
    return clone


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, str]:
    """The other inputs the commands need, outside the clone (valid, so each gets as far as the docs folder)."""
    folder = tmp_path / "inputs"
    folder.mkdir()
    queries = folder / "queries.jsonl"
    queries.write_text(json.dumps({"query": "read a file", "tools": ["read_file"]}) + "\n")
    log = folder / "events.jsonl"
    event = {"v": 1, "ts": 1.0, "event": "tool_call", "task": "t", "mode": "code", "tool": "read_file", "outcome": "ok"}
    log.write_text(json.dumps(event) + "\n")
    traces = folder / "traces.jsonl"
    if not TRACES.exists():
        pytest.skip("needs ../shared/traces")
    traces.write_text(TRACES.read_text().splitlines()[0] + "\n")
    tasks = folder / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "a", "task": "Read the README", "expect": ["read_file"]}) + "\n")
    listing = folder / "list.json"
    listing.write_text(json.dumps([{"name": "t1", "description": "A tool.", "input_schema": {"type": "object"}}]))
    return {"queries": str(queries), "log": str(log), "traces": str(traces), "tasks": str(tasks), "list": str(listing)}


def readers(inputs: dict[str, str]) -> list[list[str]]:
    """Every command that takes a docs folder, as a CI job would run it (the docs folder from pyproject.toml)."""
    offline = ["--base-url", "http://127.0.0.1:9"]
    return [
        ["validate"],
        ["modes"],
        ["tools"],
        ["compose"],
        ["fetch", "read_file"],
        ["audit"],
        ["audit", "--check"],
        ["audit", "--security"],
        ["audit", "--security", "--format", "github"],
        ["audit", "--security", "--format", "sarif"],
        ["search", "read a file"],
        ["eval", "--queries", inputs["queries"]],
        ["stats", inputs["log"]],
        ["tune", "--log", inputs["log"]],
        ["replay", "--traces", inputs["traces"]],
        ["bench", "--tasks", inputs["tasks"], *offline],
        ["run", "--task", "Read the README", *offline],
    ]


def run_cli(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "prompt_composer", *argv],
        cwd=cwd,
        env=full,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("case", list(CASES))
def test_every_reader_refuses_a_committed_foreign_journal_and_touches_nothing(
    tmp_path: Path,
    case: str,
    inputs: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clone = hostile_clone(tmp_path, CASES[case])
    monkeypatch.chdir(clone)
    monkeypatch.setenv("PROMPT_COMPOSER_CACHE", str(tmp_path / "cache"))
    before = (tree_hash(clone), tree_hash(tmp_path / "victim"))
    for argv in readers(inputs):
        capsys.readouterr()
        code = main(argv)
        err = capsys.readouterr().err
        where = f"{case}: {' '.join(argv)}: {err}"
        assert code == 2, where
        assert "Traceback" not in err, where
        if "github" in argv:  # the same message as a workflow annotation on the staging folder
            assert f"{STAGING},line=1::an interrupted import" in err, where
        else:
            assert f"{STAGING}:1: an interrupted import" in err, where
        assert "left untouched" in err, where
        assert (tree_hash(clone), tree_hash(tmp_path / "victim")) == before, where
    assert not (clone / ".git" / "hooks" / "pre-commit").exists()
    assert (tmp_path / "victim" / "id_rsa").read_text() == PRIVATE_KEY


def test_the_ci_gate_in_its_own_process_writes_no_hook(tmp_path: Path) -> None:
    """The exact job of the issue: ``prompt-composer audit --security`` after ``git clone``, and ``serve``."""
    clone = hostile_clone(tmp_path, build_hooks)
    before = (tree_hash(clone), tree_hash(tmp_path / "victim"))
    done = run_cli(["audit", "--security"], clone)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"{clone / 'tool_docs' / STAGING}:1: an interrupted import (committed, 1 staged ")
    assert "that prompt-composer has no record of writing" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1 and done.stdout == ""
    served = run_cli(["serve"], clone)  # stdio: it would wait for a client if it started
    assert served.returncode == 2 and "left untouched" in served.stderr, served.stderr
    assert (tree_hash(clone), tree_hash(tmp_path / "victim")) == before
    assert not (clone / ".git" / "hooks" / "pre-commit").exists()


def test_an_uncommitted_foreign_journal_is_read_past_with_a_warning(tmp_path: Path) -> None:
    """Without COMMITTED the folder is the old one, intact: readers read it, say what is there, touch nothing."""
    clone = hostile_clone(tmp_path, build_hooks, committed=False)
    before = (tree_hash(clone), tree_hash(tmp_path / "victim"))
    done = run_cli(["validate"], clone)
    assert done.returncode == 0 and done.stdout.startswith("ok: 28 tools"), done.stderr
    said = "an interrupted import (not committed, 1 staged file(s); recovery refuses it) that prompt-composer has no"
    assert said in done.stderr and "left untouched and never applied; besides, h is a symlink" in done.stderr
    assert "the folder is as it was before it and is read as it is" in done.stderr
    assert (tree_hash(clone), tree_hash(tmp_path / "victim")) == before


@pytest.mark.parametrize("case", list(CASES))
def test_import_and_recover_refuse_a_foreign_journal_and_discard_removes_only_it(
    tmp_path: Path,
    case: str,
    inputs: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clone = hostile_clone(tmp_path, CASES[case])
    monkeypatch.chdir(clone)
    before = (tree_hash(clone), tree_hash(tmp_path / "victim"))
    said = []
    for argv in (
        ["import", "--recover", "--docs", "tool_docs"],
        ["import", "json", inputs["list"], "--out", "tool_docs"],
        ["import", "json", inputs["list"], "--out", "tool_docs", "--dry-run"],
    ):
        capsys.readouterr()
        code = main(argv)
        err = capsys.readouterr().err
        where = f"{case}: {' '.join(argv)}: {err}"
        assert code == 2 and "Traceback" not in err, where
        assert "interrupted import" in err, where
        assert (tree_hash(clone), tree_hash(tmp_path / "victim")) == before, where
        said.append(err)
    assert said[0].startswith(f"error: tool_docs/{STAGING}: an interrupted import's staging folder that ")
    assert "no record of writing here" in said[0] and "nothing was changed" in said[0]
    # --discard removes the staging folder (or, when it is a symlink, the link) and nothing else.
    links = {p.name: os.readlink(p) for p in (clone / "tool_docs").iterdir() if p.is_symlink() and p.name != STAGING}
    capsys.readouterr()
    assert main(["import", "--recover", "--discard", "--docs", "tool_docs"]) == 0
    err = capsys.readouterr().err
    assert f"discarded {STAGING} without applying it" in err
    assert not os.path.lexists(clone / "tool_docs" / STAGING)
    assert {p.name: os.readlink(p) for p in (clone / "tool_docs").iterdir() if p.is_symlink()} == links
    assert tree_hash(tmp_path / "victim") == before[1]
    assert (tmp_path / "victim" / "id_rsa").read_text() == PRIVATE_KEY
    assert not (clone / ".git" / "hooks" / "pre-commit").exists()
    assert main(["validate"]) == 0  # the docs folder itself loads now
