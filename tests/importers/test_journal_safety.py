"""The journal on a folder someone else shaped: recovery acts only on a staging folder this tool recorded, never
follows a symlink, moves only regular files, and says how to get out of a journal that cannot complete."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from prompt_composer.cli import main
from prompt_composer.core.registry import load_registry
from prompt_composer.errors import ImporterError, LoadError
from prompt_composer.shared import journal_records
from prompt_composer.shared.journal import COMMITTED, STAGING_PREFIX, discard, recover, write_all
from prompt_composer.shared.journal_state import pending
from tests.helpers import REPO

KILL_AFTER_COMMIT = """
import os, signal, sys, json, pathlib
from prompt_composer.shared import journal
def killed(*args):
    os.kill(os.getpid(), signal.SIGKILL)
journal.move_file = killed
journal.write_all(pathlib.Path(sys.argv[1]), json.loads(sys.argv[2]))
"""


def committed_journal(folder: Path, files: dict[str, str]) -> Path:
    """A journal of this tool, committed, none of its files moved: a real write killed right after its commit."""
    import json

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-c", KILL_AFTER_COMMIT, str(folder), json.dumps(files)]
    done = subprocess.run(argv, env=env, capture_output=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    [staging] = [p for p in folder.iterdir() if p.name.startswith(STAGING_PREFIX)]
    assert (staging / COMMITTED).is_file()
    return staging


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.yaml").write_text("old a\n")
    (tmp_path / "outside").mkdir()
    return folder


def test_a_journal_of_this_tool_is_recognised_and_completed(docs: Path) -> None:
    staging = committed_journal(docs, {"a.yaml": "new a\n", "modes/m.yaml": "m\n"})
    [found] = pending(docs)
    assert (found.ours, found.committed, found.files, found.blocker) == (True, True, 2, None)
    assert "recovery would apply 2 staged file(s)" in found.describe()
    [done] = recover(docs)
    assert (done.outcome, done.files) == ("completed", 2)
    assert (docs / "a.yaml").read_text() == "new a\n" and (docs / "modes" / "m.yaml").read_text() == "m\n"
    assert not staging.exists() and not list(journal_records.journals_dir().iterdir())  # the record went too


def test_a_copy_of_a_journal_is_not_this_tools(docs: Path) -> None:
    """Same name, same files, same nonce, but another inode: a copy (a checkout of one) is refused."""
    staging = committed_journal(docs, {"a.yaml": "new a\n"})
    copy = docs.parent / "copy"
    shutil.copytree(staging, copy, symlinks=True)
    shutil.rmtree(staging)
    copy.rename(staging)
    assert [p.ours for p in pending(docs)] == [False]
    with pytest.raises(ImporterError, match="no record of writing here"):
        recover(docs)
    assert (docs / "a.yaml").read_text() == "old a\n" and staging.exists()


def test_a_journal_whose_files_became_a_symlink_is_refused(docs: Path) -> None:
    staging = committed_journal(docs, {"a.yaml": "new a\n"})
    (docs.parent / "outside" / "secret").write_text("private\n")
    shutil.rmtree(staging / "files")
    (staging / "files").symlink_to(docs.parent / "outside")
    with pytest.raises(ImporterError, match=r"files: it is a symlink, not a folder\), e\.g\."):
        recover(docs)
    assert (docs.parent / "outside" / "secret").read_text() == "private\n"
    assert not (docs / "secret").exists() and (docs / "a.yaml").read_text() == "old a\n"


def test_a_staged_symlink_is_never_moved(docs: Path) -> None:
    staging = committed_journal(docs, {"a.yaml": "new a\n", "b.yaml": "b\n"})
    (staging / "files" / "b.yaml").unlink()
    (staging / "files" / "b.yaml").symlink_to("/etc/passwd")
    with pytest.raises(ImporterError, match=r"files/b\.yaml: it is a symlink"):
        recover(docs)
    assert not os.path.lexists(docs / "b.yaml") and (docs / "a.yaml").read_text() == "old a\n"


def test_a_symlinked_subfolder_of_the_docs_folder_is_never_written_through(docs: Path) -> None:
    staging = committed_journal(docs, {"modes/m.yaml": "m\n"})
    shutil.rmtree(docs / "modes", ignore_errors=True)
    (docs / "modes").symlink_to(docs.parent / "outside")
    with pytest.raises(ImporterError, match="cannot be completed: modes is a symlink"):
        recover(docs)
    assert list((docs.parent / "outside").iterdir()) == [] and staging.exists()
    # An import into such a folder stops before it stages anything.
    shutil.rmtree(staging)
    refused = "cannot write there: modes is a symlink, not a folder; nothing was written"
    with pytest.raises(ImporterError, match=refused):
        write_all(docs, {"modes/x.yaml": "x\n"})
    assert list((docs.parent / "outside").iterdir()) == []
    assert not [p for p in docs.iterdir() if p.name.startswith(STAGING_PREFIX)]


def test_a_committed_file_landing_on_a_folder_is_a_clear_error_with_the_way_out(
    docs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Why 8 of issue 37: the folder used to block every command until someone found the staging folder."""
    staging = committed_journal(docs, {"a.yaml": "new a\n", "b.yaml": "new b\n"})
    (docs / "b.yaml").mkdir()
    (docs / "b.yaml" / "notes.txt").write_text("mine\n")
    with pytest.raises(LoadError) as caught:
        load_registry(docs)
    [problem] = caught.value.problems
    assert problem.path == staging and "recovery cannot complete: b.yaml is a folder, where a file must go" in str(
        problem
    )
    assert "move that away and run `prompt-composer import --recover --docs" in str(problem)
    capsys.readouterr()
    assert main(["import", "--recover", "--docs", str(docs)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "b.yaml is a folder, where a file must go; nothing was moved" in err
    assert (docs / "a.yaml").read_text() == "old a\n"  # nothing moved, not even the file that could have
    shutil.move(docs / "b.yaml", docs.parent / "b-notes")
    assert main(["import", "--recover", "--docs", str(docs)]) == 0
    assert "completed it (2 file(s) moved into place)" in capsys.readouterr().err
    assert (docs / "b.yaml").read_text() == "new b\n" and (docs.parent / "b-notes" / "notes.txt").exists()


def test_discard_gives_up_an_own_journal_and_says_what_may_be_mixed(
    docs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    staging = committed_journal(docs, {"a.yaml": "new a\n"})
    [done] = discard(docs)
    assert (done.outcome, done.files, done.committed) == ("discarded", 1, True)
    assert "the folder may hold a mix of old and new files" in done.describe()
    assert not staging.exists() and (docs / "a.yaml").read_text() == "old a\n"
    assert not list(journal_records.journals_dir().iterdir())


def test_records_in_a_folder_others_can_write_are_not_trusted(
    docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROMPT_COMPOSER_STATE", str(tmp_path / "state"))
    committed_journal(docs, {"a.yaml": "new a\n"})
    assert (tmp_path / "state" / "journals").stat().st_mode & 0o777 == 0o700
    (tmp_path / "state" / "journals").chmod(0o777)
    assert [p.ours for p in pending(docs)] == [False]
    with pytest.raises(ImporterError, match="no record of writing here"):
        recover(docs)
    with pytest.raises(ImporterError, match="no one else can write"):
        write_all(tmp_path / "other", {"x.yaml": "x\n"})
    assert not (tmp_path / "other").exists()


def test_an_import_that_cannot_record_its_journal_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "state").write_text("a file, not a folder\n")
    monkeypatch.setenv("PROMPT_COMPOSER_STATE", str(tmp_path / "state"))
    folder = tmp_path / "docs"
    folder.mkdir()
    with pytest.raises(ImporterError, match=r"cannot record the import's journal there: .*; nothing was written"):
        write_all(folder, {"x.yaml": "x\n"})
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("relative", ["../x.yaml", "/etc/x.yaml", "a/../../x.yaml", "a//b.yaml", ""])
def test_a_staged_path_that_leaves_the_folder_is_refused(tmp_path: Path, relative: str) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    with pytest.raises(ImporterError, match="not a plain relative path; nothing was written"):
        write_all(folder, {relative: "x\n"})
    assert list(folder.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["docs"]


KILL_BEFORE_COMMIT = """
import os, signal, sys, json, pathlib
from prompt_composer.shared import journal
def check(doing):
    if doing.startswith("moving"):
        os.kill(os.getpid(), signal.SIGKILL)
journal.write_all(pathlib.Path(sys.argv[1]), json.loads(sys.argv[2]), check=check)
"""


def test_a_killed_write_that_created_the_folder_is_undone_to_no_folder_or_into_the_next_write(
    tmp_path: Path,
) -> None:
    import json

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for folder in (tmp_path / "recovered", tmp_path / "written"):
        argv = [sys.executable, "-c", KILL_BEFORE_COMMIT, str(folder), json.dumps({"a.yaml": "a\n"})]
        assert subprocess.run(argv, env=env, capture_output=True, timeout=60).returncode == -signal.SIGKILL
        assert [p.name.startswith(STAGING_PREFIX) for p in folder.iterdir()] == [True]
    [done] = recover(tmp_path / "recovered")
    assert done.outcome == "rolled back" and not (tmp_path / "recovered").exists()  # as it was: no folder
    [done] = write_all(tmp_path / "written", {"b.yaml": "b\n"})  # the next write rolls it back and goes on
    assert done.outcome == "rolled back"
    assert sorted(p.name for p in (tmp_path / "written").iterdir()) == ["b.yaml"]
