"""Settings from an untrusted checkout (issue 37): paths from a ``pyproject.toml`` or the environment stay inside the
project, a flag names anything, the event log is appended only to a file of its own, and every hostile pyproject
and ``init`` input is one line, exit 2, no traceback, nothing deleted."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from prompt_composer.cli import main
from prompt_composer.cli.settings import ENV, resolve
from prompt_composer.core.registry import default_docs_dir
from prompt_composer.learn.events import EventLog, JsonlSink

BASHRC = "alias ls='ls --color'\n"


def tree_hash(root: Path) -> str:
    """Every entry under ``root``, never following a symlink (see tests/cli/test_untrusted_checkout.py)."""
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


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp/home`` (a user's home with a ``.bashrc``) beside ``tmp/project`` (a checkout, the working directory),
    no setting from the environment, and the user's own folders under the home."""
    for variable in ENV.values():
        monkeypatch.delenv(variable, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text(BASHRC)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    return tmp_path


def pyproject(folder: Path, table: str) -> Path:
    path = folder / "pyproject.toml"
    path.write_text(f'[project]\nname = "demo"\n\n[tool.prompt-composer]\n{table}', encoding="utf-8")
    return path


def one_line_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


# --------------------------------------------------------------------------- paths stay inside the project


@pytest.mark.parametrize(
    ("key", "value", "flag"),
    [
        ("event-log", "../home/.bashrc", "--log"),
        ("event-log", "/tmp/../etc/cron.d/x", "--log"),
        ("overlay", "../home/overlay.yaml", "--overlay"),
        ("docs", "linked", "--docs"),  # a symlink inside the project to a folder outside it
    ],
)
def test_a_path_from_pyproject_outside_the_project_is_refused(
    world: Path, capsys: pytest.CaptureFixture[str], key: str, value: str, flag: str
) -> None:
    project = world / "project"
    (world / "elsewhere").mkdir()
    (project / "linked").symlink_to(world / "elsewhere")
    path = pyproject(project, f"{key} = {json.dumps(value)}\n")
    before = tree_hash(world)
    for argv in (["validate"], ["serve"], ["config"]):
        err = one_line_error(capsys, *argv)
        assert err.startswith(f"error: {path}: [tool.prompt-composer] {key}: {value!r} resolves to ")
        assert f"outside {project}; a path in pyproject.toml must stay inside its folder, symlinks resolved" in err
        assert f"or be given with {flag}" in err
    assert tree_hash(world) == before and (world / "home" / ".bashrc").read_text() == BASHRC


def test_a_flag_can_still_name_any_path(world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = world / "project"
    pyproject(project, 'default-mode = "code"\n')
    outside = world / "elsewhere"
    outside.mkdir()
    (outside / "overlay.yaml").write_text("code:\n  permanent: [read_file]\n")
    log = outside / "events.jsonl"
    log.write_text(json.dumps({"v": 1, "ts": 1.0, "event": "tool_call", "mode": "code", "tool": "glob"}) + "\n")
    settings = resolve({"docs": str(default_docs_dir()), "overlay": str(outside / "overlay.yaml"), "event_log": "x"})
    assert settings.docs.value == str(default_docs_dir()) and settings.docs.source == "flag --docs"
    assert main(["--docs", str(default_docs_dir()), "validate"]) == 0
    capsys.readouterr()
    assert main(["compose", "--overlay", str(outside / "overlay.yaml"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["full"] == ["read_file"]
    assert main(["stats", "--log", str(log), "--format", "json"]) == 0


def test_a_path_from_the_environment_stays_in_the_project_or_the_users_own_folders(
    world: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = world / "project"
    pyproject(project, 'default-mode = "code"\n')
    monkeypatch.setenv("PROMPT_COMPOSER_EVENT_LOG", "../home/.bashrc")  # a checkout's .env, say
    err = one_line_error(capsys, "config")
    assert err.startswith("error: env PROMPT_COMPOSER_EVENT_LOG: '../home/.bashrc' resolves to ")
    assert "a path from the environment must be inside the project or your own prompt-composer folders" in err
    assert "give it with --log instead" in err
    # inside the project, or in ~/.config/prompt-composer: taken
    monkeypatch.setenv("PROMPT_COMPOSER_EVENT_LOG", "logs/events.jsonl")
    assert resolve({}).event_log.value == str(project / "logs" / "events.jsonl")
    overlay = world / "home" / ".config" / "prompt-composer" / "overlay.yaml"
    overlay.parent.mkdir(parents=True)
    overlay.write_text("code:\n  permanent: [glob]\n")
    monkeypatch.setenv("PROMPT_COMPOSER_OVERLAY", str(overlay))
    capsys.readouterr()
    assert main(["compose", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["full"] == ["glob"]
    monkeypatch.setenv("PROMPT_COMPOSER_OVERLAY", str(world / "home" / "overlay.yaml"))
    assert "env PROMPT_COMPOSER_OVERLAY" in one_line_error(capsys, "compose")


# --------------------------------------------------------------------------- the event log is appended only to its own


def test_the_event_log_appends_only_to_a_file_of_its_own(world: Path) -> None:
    home = world / "home"
    with pytest.raises(OSError, match=r"\.bashrc exists and is not an event log"):
        JsonlSink(home / ".bashrc")
    (home / "link.jsonl").symlink_to(home / "events.jsonl")
    with pytest.raises(OSError, match="is a symlink: an event log is never appended to through one"):
        JsonlSink(home / "link.jsonl")
    assert not (home / "events.jsonl").exists()
    # its own: created, then appended to by the next run; an empty file too
    for _ in range(2):
        with EventLog(home / "events.jsonl") as log:
            log.emit("list", task="t", mode="code", tools=1, full=[])
    assert len((home / "events.jsonl").read_text().splitlines()) == 2
    (home / "empty.jsonl").touch()
    JsonlSink(home / "empty.jsonl").close()
    assert (home / ".bashrc").read_text() == BASHRC


def test_run_refuses_an_event_log_it_did_not_write(world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bashrc = world / "home" / ".bashrc"
    argv = ["run", "--mode", "code", "--task", "hi", "--base-url", "http://127.0.0.1:9", "--log", str(bashrc)]
    err = one_line_error(capsys, *argv)
    assert err == (
        f"error: cannot open the event log: {bashrc} exists and is not an event log (its first line is not an "
        "event): the log is appended only to a file it created or to an event log\n"
    )
    assert bashrc.read_text() == BASHRC


# --------------------------------------------------------------------------- hostile pyproject inputs, one table


def _loop(project: Path) -> str:
    (project / "loop").symlink_to("loop")
    return 'docs = "loop"\n'


def _deep_above(project: Path) -> None:
    """A deeply nested array in a pyproject *above* the working directory, one without the table."""
    (project / "pyproject.toml").write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    (project / "src").mkdir()
    os.chdir(project / "src")


PYPROJECTS: dict[str, tuple[Callable[[Path], str | None], str]] = {
    "docs is a symlink loop": (_loop, "docs: 'loop': Too many levels of symbolic links"),
    "docs is 5,000 characters": (
        lambda p: f'docs = "{"d" * 5000}"\n',
        "docs: is 5,000 characters long; a path here is at most 4,096",
    ),
    "docs holds a NUL": (lambda p: 'docs = "tool\\u0000docs"\n', "docs: holds a NUL character"),
    "docs has a 300-byte name": (lambda p: f'docs = "{"n" * 300}"\n', "docs: has a name longer than 255 bytes"),
    "docs is a file": (lambda p: 'docs = "f"\n' if (p / "f").write_text("") == 0 else None, "is not a folder"),
    "a deeply nested array above": (_deep_above, "not valid TOML: arrays or tables nested too deeply"),
    "a deeply nested table": (lambda p: "x = " + "{a = " * 50_000 + "1" + "}" * 50_000 + "\n", "nested too deeply"),
    "over the size cap": (lambda p: "#" * (2 * 1024 * 1024) + "\n", "bytes, over the limit of 1,048,576"),
    "not UTF-8": (lambda p: "\udcff", "not UTF-8 text"),
}


@pytest.mark.parametrize("case", list(PYPROJECTS))
def test_a_hostile_pyproject_is_one_line_naming_it(world: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    project = world / "project"
    build, expected = PYPROJECTS[case]
    table = build(project)
    path = project / "pyproject.toml"
    if table is not None:
        data = f'[project]\nname = "demo"\n\n[tool.prompt-composer]\n{table}'
        path.write_bytes(data.encode("utf-8", "surrogateescape"))
    before = tree_hash(world)
    for argv in (["validate"], ["audit", "--security"], ["config"]):
        err = one_line_error(capsys, *argv)
        assert err.startswith(f"error: {path}: "), err
        assert expected in err, err
    assert tree_hash(world) == before


# --------------------------------------------------------------------------- init


def _dangling(root: Path) -> str:
    (root / "dangling").symlink_to(root / "nowhere")
    return "dangling"


def _through_symlink(root: Path) -> str:
    (root / "empty").mkdir()
    (root / "link").symlink_to(root / "empty")
    return "link"


def _under_a_file(root: Path) -> str:
    (root / "a-file").write_text("x\n")
    return "a-file/docs"


INITS: dict[str, tuple[Callable[[Path], str], str]] = {
    "through a symlink": (_through_symlink, "link is a symlink; init writes a real folder"),
    "onto a dangling symlink": (_dangling, "dangling is a symlink; init writes a real folder"),
    "/proc/self/x": (lambda root: "/proc/self/x", "/proc/self/x: cannot write the starter docs: "),
    "a 300-character name": (lambda root: "d" * 300, "a folder name of 300 bytes; at most 255"),
    "under a file": (_under_a_file, "a-file/docs: cannot write the starter docs: Not a directory"),
}


@pytest.mark.parametrize("case", list(INITS))
def test_init_on_a_hostile_target_is_one_line_and_leaves_nothing(
    world: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    project = world / "project"
    build, expected = INITS[case]
    target = build(project)
    (project / ".docs.init-partial").mkdir()  # a folder of the user's that an old init would have removed
    (project / ".docs.init-partial" / "notes.md").write_text("mine\n")
    before = tree_hash(world)
    err = one_line_error(capsys, "init", target)
    assert err.startswith("error: ") and expected in err, err
    assert tree_hash(world) == before


def test_init_fills_an_empty_working_folder_and_deletes_nothing(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = world / "project"
    (project / ".docs.init-partial").mkdir()
    (project / ".docs.init-partial" / "notes.md").write_text("mine\n")
    (project / "docs").mkdir()
    os.chdir(project / "docs")
    inode = os.stat(".").st_ino
    capsys.readouterr()
    assert main(["init", "."]) == 0  # used to be a traceback
    assert 'docs = "."' in capsys.readouterr().out
    assert os.stat(".").st_ino == inode  # filled in place: a shell inside it stays in it
    assert sorted(p.name for p in Path(".").iterdir()) == [
        "modes",
        "read_file.yaml",
        "run_tests.yaml",
        "search_text.yaml",
    ]
    os.chdir(project)
    assert main(["init", "docs2"]) == 0
    assert (project / ".docs.init-partial" / "notes.md").read_text() == "mine\n"  # not its to delete
    assert main(["init", "nested/deeper/docs"]) == 0 and (project / "nested" / "deeper" / "docs" / "modes").is_dir()
