"""Imports are atomic under any signal: real ``prompt-composer import json`` processes killed with SIGKILL, SIGTERM
and SIGINT at seeded random moments leave the docs folder the old one or the new one once ``import --recover`` has
run (it says which, and ``validate`` agrees), and no staging folder survives it. And the journal's recovery, step by
step, on journals left by writes killed after each rename."""

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
from prompt_composer.errors import LoadError
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


def recover_cli(out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``prompt-composer import --recover --docs OUT``: its exit code and stderr."""
    capsys.readouterr()
    code = main(["import", "--recover", "--docs", str(out)])
    return code, capsys.readouterr().err


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
            if any((p / COMMITTED).exists() for p in staged):  # a reader refuses a possible mix, and changes nothing
                code, stdout, stderr = validate(out, capsys)
                assert code == 2 and "an interrupted import, committed" in stderr, where + stderr
            code, said = recover_cli(out, capsys)
            assert code == 0, where + said
            folder = tree_hash(out)
            assert folder in (old_hash, new_hash), where
            if "completed it" in said:
                assert folder == new_hash, where + said
            if "rolled it back" in said:
                assert folder == old_hash, where + said
            code, stdout, stderr = validate(out, capsys)
            assert code == 0, where + stderr
            tools = old_tools if folder == old_hash else new_tools
            assert stdout.startswith(f"ok: {tools} tools, 5 modes"), where + stdout
            assert not [p for p in out.iterdir() if p.name.startswith(STAGING_PREFIX)], where
            seen.setdefault(signum.name, set()).add("old" if folder == old_hash else "new")
            shutil.rmtree(out)
    # the random points fell both before the commit and after it
    assert set().union(*seen.values()) == {"old", "new"}, seen


# --------------------------------------------------------------------------------------------- the journal itself


KILLED_WRITE = """
import os, signal, sys, json
from prompt_composer.shared import journal
from prompt_composer.shared.journal import write_all
folder, files, moved = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
renames = []
move_file = journal.move_file
def counted(*args):
    if len(renames) == moved:
        os.kill(os.getpid(), signal.SIGKILL)
    renames.append(args)
    move_file(*args)
journal.move_file = counted
remove_entry = journal.remove_entry
def removing(*args):
    if moved >= 0 and len(renames) == moved:  # every file moved: killed before the staging folder goes
        os.kill(os.getpid(), signal.SIGKILL)
    remove_entry(*args)
journal.remove_entry = removing
def check(doing):
    if moved < 0 and doing.startswith("moving"):
        os.kill(os.getpid(), signal.SIGKILL)
write_all(__import__("pathlib").Path(folder), files, check=check)
"""


def killed_write(folder: Path, files: dict[str, str], *, committed: bool, moved: int = 0) -> Path:
    """The journal a real write leaves when SIGKILL stops it: before the commit (every file staged), or after it
    and ``moved`` of its renames."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-c", KILLED_WRITE, str(folder), json.dumps(files), str(moved if committed else -1)]
    done = subprocess.run(argv, env=env, capture_output=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    [staging] = [p for p in folder.iterdir() if p.name.startswith(STAGING_PREFIX)]
    assert (staging / COMMITTED).exists() == committed
    return staging


@pytest.mark.parametrize("moved", [0, 1, 3, 4])
def test_recovery_completes_a_committed_write_wherever_it_stopped(
    tmp_path: Path, moved: int, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {"a.yaml": "new a\n", "b.yaml": "new b\n", "modes/m.yaml": "new m\n", ".import-state.json": "{}\n"}
    expected = tmp_path / "expected"
    write_all(expected, files)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.yaml").write_text("old a\n")
    staging = killed_write(folder, files, committed=True, moved=moved)
    # A reader refuses the folder (it may be a mix), says what recovery would do, and changes nothing.
    before = tree_hash(folder)
    with pytest.raises(LoadError, match=f"committed: recovery would apply {len(files) - moved} staged file"):
        load_registry(folder)
    assert tree_hash(folder) == before
    [recovery] = recover(folder)
    assert (recovery.outcome, recovery.files) == ("completed", len(files) - moved)
    assert tree_hash(folder) == tree_hash(expected) and not staging.exists()
    assert recover(folder) == []  # nothing left to do


def test_recovery_rolls_back_an_uncommitted_write(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = tmp_path / "docs"
    shutil.copytree(default_docs_dir(), folder)
    before = visible_hash(folder)
    staging = killed_write(folder, {"a.yaml": "new a\n", "b.yaml": "new b\n"}, committed=False)
    # Not committed: the folder is the old one, so a reader reads it, warns, and leaves the journal alone.
    assert len(load_registry(folder).tools) == 28 and staging.exists()
    assert "not committed: the folder is as it was before it and is read as it is" in caplog.text
    [recovery] = recover(folder)
    assert (recovery.outcome, recovery.files) == ("rolled back", 2)
    assert "the folder is as it was before it" in recovery.describe()
    assert visible_hash(folder) == before and not staging.exists()


def test_a_running_write_is_left_alone_and_import_recover_says_what_it_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "docs"
    shutil.copytree(default_docs_dir(), folder)
    staging = killed_write(folder, {"zz.yaml": "not a tool doc\n"}, committed=False)
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
        code, stdout, _ = validate(folder, capsys)  # a write in progress that has not committed: read as is
        assert code == 0 and stdout.startswith("ok: 28 tools") and "interrupted" not in caplog.text
    finally:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.close()
        holder.wait(timeout=30)
        holder.stdout.close()
    caplog.clear()
    code, stdout, _ = validate(folder, capsys)  # the writer is gone: the reader says so, and still reads
    assert code == 0 and stdout.startswith("ok: 28 tools") and staging.exists()
    assert f"{staging}: an interrupted import, not committed" in caplog.text
    code, said = recover_cli(folder, capsys)
    assert code == 0
    assert said == (
        f"# {folder}: an interrupted import had not committed; rolled it back (1 staged file(s) discarded); the "
        f"folder is as it was before it; removed {staging.name}\n"
    )
    assert not staging.exists()
    code, said = recover_cli(folder, capsys)
    assert (code, said) == (0, f"{folder}: no interrupted import to recover\n")


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
    try:
        err = process.communicate(timeout=240)[1].decode()
    except subprocess.TimeoutExpired:
        process.kill()  # not left running into the next test
        process.communicate()
        raise
    assert process.returncode == 128 + signum, err
    assert err == f"interrupted by {signum.name}: nothing written; {out} is as it was\n"
    assert tree_hash(out) == before


def test_an_interrupt_python_swallows_prints_no_traceback_and_other_unraisable_errors_still_reach_the_hook() -> None:
    """A signal landing in a weakref callback (an import lock's, mid-import) had its Interrupted printed as
    "Exception ignored in …" with a traceback before the one line; the run's checkpoints raise it again."""
    import weakref

    from prompt_composer.cli.interop import _signals_raise
    from prompt_composer.shared.journal import Interrupted, clear_interrupted

    class Thing:
        pass

    def swallowed(error: BaseException) -> None:
        thing = Thing()
        ref = weakref.ref(thing, lambda _ref: (_ for _ in ()).throw(error))
        del thing  # the callback runs now; what it raises goes to sys.unraisablehook
        assert ref() is None

    seen: list[BaseException | None] = []
    outer = sys.unraisablehook
    sys.unraisablehook = lambda info: seen.append(info.exc_value)
    try:
        with _signals_raise():
            swallowed(Interrupted(signal.SIGINT))
            swallowed(ValueError("a real bug"))
        swallowed(Interrupted(signal.SIGTERM))  # outside an import: the hook it found is back
    finally:
        sys.unraisablehook = outer
        clear_interrupted()
    assert [type(e).__name__ for e in seen] == ["ValueError", "Interrupted"]
