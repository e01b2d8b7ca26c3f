"""Imports are atomic under any signal: real ``prompt-composer import json`` processes killed with SIGKILL, SIGTERM
and SIGINT at seeded random moments leave the docs folder the old one or the new one, ``validate`` (the next
command) agrees and says which, and no staging folder survives it. And the journal's recovery, step by step."""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from prompt_composer.cli import main
from prompt_composer.core.registry import default_docs_dir, load_registry
from prompt_composer.shared.journal import COMMITTED, STAGING_PREFIX, recover, write_all
from tests.helpers import REPO, SHARED

LIVEMCPBENCH = SHARED / "corpora" / "livemcpbench" / "tools.jsonl"
TOOLS = 60  # an import of a second or two (most of it Python starting) on a quiet machine
RUNS = 20  # per signal


def tree_hash(folder: Path) -> str:
    """Every file under ``folder`` (hidden ones too), by relative path and bytes; ``-`` when there is no folder."""
    if not folder.exists():
        return "-"
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def visible_hash(folder: Path) -> str:
    """Like :func:`tree_hash`, leaving out staging folders: what a reader sees of the folder itself."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        relative = path.relative_to(folder)
        if not relative.parts[0].startswith(STAGING_PREFIX):
            digest.update(str(relative).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def tool_list(path: Path) -> Path:
    """A JSON tool list of real MCP tools (LiveMCPBench's servers), names made API-safe."""
    tools: dict[str, dict[str, object]] = {}
    for line in LIVEMCPBENCH.read_text(encoding="utf-8").splitlines():
        tool = json.loads(line)
        name = re.sub(r"[^a-zA-Z0-9_-]", "_", tool["name"].replace("::", "__"))[:64]
        tools.setdefault(name, {"name": name, "description": tool["description"], "input_schema": tool["input_schema"]})
        if len(tools) == TOOLS:
            break
    path.write_text(json.dumps(list(tools.values())), encoding="utf-8")
    return path


def start_import(listing: Path, out: Path) -> subprocess.Popen[bytes]:
    """The CLI in its own process (read its stderr with ``communicate``)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "prompt_composer", "import", "json", str(listing), "--out", str(out)]
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def validate(out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--docs", str(out), "validate"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.slow
@pytest.mark.skipif(not LIVEMCPBENCH.exists(), reason="needs ../shared/corpora/livemcpbench")
def test_imports_killed_at_random_points_leave_the_old_folder_or_the_new_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    listing = tool_list(tmp_path / "list.json")
    old = tmp_path / "old"
    shutil.copytree(default_docs_dir(), old)
    old_hash, old_tools = tree_hash(old), len(load_registry(old).tools)
    # The new folder: the same import, not killed. Its duration bounds the random delays.
    new = tmp_path / "new"
    shutil.copytree(old, new)
    start = time.monotonic()
    finished = start_import(listing, new)
    _, errors = finished.communicate(timeout=240)
    assert finished.returncode == 0, errors.decode()
    duration = time.monotonic() - start
    new_hash, new_tools = tree_hash(new), len(load_registry(new).tools)
    assert new_tools == old_tools + TOOLS and new_hash != old_hash

    rng = random.Random(34)
    seen: dict[str, set[str]] = {}
    for signum in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT):
        for run in range(RUNS):
            out = tmp_path / f"{signum.name}-{run}"
            shutil.copytree(old, out)
            process = start_import(listing, out)
            # from the start to a little past the unkilled run's end (a loaded machine runs some slower)
            time.sleep(rng.uniform(0.0, duration * 1.3))
            process.send_signal(signum)
            err = process.communicate(timeout=60)[1].decode()
            where = f"{signum.name} run {run}: {err[-400:]}"
            staged = [p for p in out.iterdir() if p.name.startswith(STAGING_PREFIX)]
            if not any((p / COMMITTED).exists() for p in staged):
                assert visible_hash(out) == old_hash or tree_hash(out) == new_hash, where  # untouched before commit
            if signum != signal.SIGKILL and process.returncode == 128 + signum:
                # stopped promptly with its one line, the folder as it was, no staging folder left behind
                assert f"interrupted by {signum.name}" in err and "Traceback" not in err, where
                assert not staged, where
            elif signum != signal.SIGKILL and process.returncode != 0:
                # the signal came before the CLI set its handlers (Python starting: nothing begun) or after it
                # restored them (the import done): the default action, with the folder old or new
                assert process.returncode == -signum and tree_hash(out) in (old_hash, new_hash), where
            code, stdout, stderr = validate(out, capsys)
            folder = tree_hash(out)
            assert folder in (old_hash, new_hash), where
            assert code == 0, where + stderr
            tools = old_tools if folder == old_hash else new_tools
            assert stdout.startswith(f"ok: {tools} tools, 5 modes"), where + stdout
            if "completed it" in stderr:
                assert folder == new_hash, where + stderr
            if "rolled it back" in stderr:
                assert folder == old_hash, where + stderr
            assert not [p for p in out.iterdir() if p.name.startswith(STAGING_PREFIX)], where
            seen.setdefault(signum.name, set()).add("old" if folder == old_hash else "new")
            shutil.rmtree(out)
    # the random points fell both before the commit and after it
    assert set().union(*seen.values()) == {"old", "new"}, seen


# --------------------------------------------------------------------------------------------- the journal itself


def staged_by_hand(folder: Path, files: dict[str, str], *, committed: bool, moved: int) -> Path:
    """A staging folder as a write killed after ``moved`` of its renames leaves it (the layout of the journal)."""
    staging = folder / f"{STAGING_PREFIX}deadbeef"
    for relative, text in files.items():
        (staging / "files" / relative).parent.mkdir(parents=True, exist_ok=True)
        (staging / "files" / relative).write_text(text)
    if committed:
        (staging / COMMITTED).touch()
    for relative in list(files)[:moved]:
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / "files" / relative, folder / relative)
    return staging


@pytest.mark.parametrize("moved", [0, 1, 3, 4])
def test_recovery_completes_a_committed_write_wherever_it_stopped(tmp_path: Path, moved: int) -> None:
    files = {"a.yaml": "new a\n", "b.yaml": "new b\n", "modes/m.yaml": "new m\n", ".import-state.json": "{}\n"}
    expected = tmp_path / "expected"
    write_all(expected, files)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.yaml").write_text("old a\n")
    staging = staged_by_hand(folder, files, committed=True, moved=moved)
    [recovery] = recover(folder)
    assert (recovery.outcome, recovery.files) == ("completed", len(files) - moved)
    assert tree_hash(folder) == tree_hash(expected) and not staging.exists()
    assert recover(folder) == []  # nothing left to do


def test_recovery_rolls_back_an_uncommitted_write(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.yaml").write_text("old a\n")
    before = tree_hash(folder)
    staged_by_hand(folder, {"a.yaml": "new a\n", "b.yaml": "new b\n"}, committed=False, moved=0)
    [recovery] = recover(folder)
    assert (recovery.outcome, recovery.files) == ("rolled back", 2)
    assert "the folder is as it was before it" in recovery.describe()
    assert tree_hash(folder) == before


def test_a_running_write_is_left_alone_and_the_cli_says_what_it_recovered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "docs"
    shutil.copytree(default_docs_dir(), folder)
    staging = staged_by_hand(folder, {"zz.yaml": "not a tool doc\n"}, committed=False, moved=0)
    # another process holding the folder's lock: a write still running, so recovery must not touch it
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); fcntl.flock(fd, fcntl.LOCK_EX); "
            "print('locked', flush=True); sys.stdin.read()",
            str(folder),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"locked\n"
        assert recover(folder) == [] and staging.exists()
    finally:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.close()
        holder.wait(timeout=30)
        holder.stdout.close()
    code, stdout, stderr = validate(folder, capsys)
    assert code == 0 and stdout.startswith("ok: 28 tools")
    said = "rolled it back (1 staged file(s) discarded); the folder is as it was before it; removed"
    assert f"{said} {staging.name}" in stderr
    assert not staging.exists()


def test_an_interrupted_write_into_a_new_folder_leaves_no_folder(tmp_path: Path) -> None:
    folder = tmp_path / "new"

    def stop(doing: str) -> None:
        if "1 of" in doing:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_all(folder, {"a.yaml": "a\n", "b.yaml": "b\n"}, check=stop)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.skipif(__import__("importlib").util.find_spec("mcp") is None, reason="needs the mcp SDK (the mcp extra)")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_an_mcp_server_is_listed_stops_the_import_not_its_timeout(
    tmp_path: Path, signum: signal.Signals
) -> None:
    out = tmp_path / "docs"
    shutil.copytree(default_docs_dir(), out)
    before = tree_hash(out)
    server = [sys.executable, str(REPO / "tests" / "data" / "mcp" / "many_tools_server.py"), "3000"]
    argv = [sys.executable, "-m", "prompt_composer", "import", "mcp", "--out", str(out), "--timeout", "300", "--"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen([*argv, *server], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
    while process.poll() is None and not children.read_text().split():
        time.sleep(0.05)  # until the server is started: the import is then listing it, inside the SDK's loop
    process.send_signal(signum)
    # Before, the signal was swallowed by the SDK's event loop and the import ran to its --timeout.
    err = process.communicate(timeout=240)[1].decode()
    assert process.returncode == 128 + signum, err
    assert err == f"interrupted by {signum.name}: nothing written; {out} is as it was\n"
    assert tree_hash(out) == before
