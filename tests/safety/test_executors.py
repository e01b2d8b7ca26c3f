"""The built-in read-only executors: what they return, and that nothing outside the workspace is reachable."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from prompt_composer.errors import ExecutorError
from prompt_composer.safety.executors import READ_ONLY_TOOLS, workspace_executors
from prompt_composer.safety.workspace import Workspace


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "a.py").write_text("import os\n\ndef main():\n    return os.getcwd()\n")
    (root / "src" / "b.txt").write_text("hello\nworld\n")
    (root / "README.md").write_text("# Title\nmain entry\n")
    (root / "blob.bin").write_bytes(b"\x00\x01\x02")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("main = secret\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("main secret\n")
    (root / "escape").symlink_to(outside, target_is_directory=True)
    (root / "escape.txt").symlink_to(outside / "secret.txt")
    (root / "inner.txt").symlink_to(root / "src" / "b.txt")
    return root


def test_the_four_read_only_tools(tree: Path) -> None:
    assert set(workspace_executors(tree)) == set(READ_ONLY_TOOLS)


def test_read_file_numbers_lines_and_honours_ranges(tree: Path) -> None:
    ws = Workspace(tree)
    assert ws.read_file({"path": "src/pkg/a.py"}) == "1 | import os\n2 | \n3 | def main():\n4 |     return os.getcwd()"
    assert ws.read_file({"path": "src/pkg/a.py", "start_line": 3, "end_line": 3}) == "3 | def main():"
    assert ws.read_file({"path": "inner.txt"}) == "1 | hello\n2 | world"  # a symlink that stays inside
    assert ws.read_file({"path": "src/../README.md"}) == "1 | # Title\n2 | main entry"


@pytest.mark.parametrize(
    ("tool_input", "message"),
    [
        ({"path": "../outside/secret.txt"}, "outside the workspace"),
        ({"path": "/etc/passwd"}, "absolute"),
        ({"path": "escape.txt"}, "outside the workspace"),
        ({"path": "escape/secret.txt"}, "outside the workspace"),
        ({"path": "missing.txt"}, "no such file: missing.txt"),
        ({"path": "src"}, "src is a directory, not a file"),
        ({"path": "blob.bin"}, "blob.bin is a binary file"),
        ({"path": ""}, "required"),
        ({"path": "README.md", "start_line": 0}, "integer"),
        ({"path": "README.md", "start_line": 2, "end_line": 1}, "before start_line"),
    ],
)
def test_read_file_refusals(tree: Path, tool_input: dict[str, object], message: str) -> None:
    with pytest.raises(ExecutorError, match=message):
        Workspace(tree).read_file(tool_input)


def test_list_files_marks_directories_and_skips_links_that_leave(tree: Path) -> None:
    ws = Workspace(tree)
    top = ws.list_files({"path": "."}).splitlines()
    assert top == [".git/", "README.md", "blob.bin", "inner.txt", "src/"]
    deep = ws.list_files({"path": "src", "recursive": True}).splitlines()
    assert deep == ["src/b.txt", "src/pkg/", "src/pkg/a.py"]
    everything = ws.list_files({"path": ".", "recursive": True})
    assert "secret" not in everything
    assert ".git/config" not in everything
    with pytest.raises(ExecutorError, match="outside"):
        ws.list_files({"path": "escape"})
    with pytest.raises(ExecutorError, match="outside"):
        ws.list_files({"path": ".."})


def test_glob_matches_inside_only(tree: Path) -> None:
    ws = Workspace(tree)
    assert ws.glob({"pattern": "**/*.py"}) == "src/pkg/a.py"
    assert ws.glob({"pattern": "*.txt", "path": "src"}) == "src/b.txt"
    assert "secret" not in ws.glob({"pattern": "**/*.txt"})
    assert ws.glob({"pattern": "*.rs"}) == "no files match '*.rs'"
    with pytest.raises(ExecutorError, match="must not contain"):
        ws.glob({"pattern": "../outside/*"})
    with pytest.raises(ExecutorError, match="must be relative"):
        ws.glob({"pattern": "/etc/*"})


def test_search_files_finds_lines_and_stays_inside(tree: Path) -> None:
    ws = Workspace(tree)
    found = ws.search_files({"path": ".", "regex": "main"}).splitlines()
    assert found == ["README.md:2: main entry", "src/pkg/a.py:3: def main():"]
    assert (
        ws.search_files({"path": ".", "regex": "(?i)HELLO", "file_pattern": "*.txt"})
        == "inner.txt:1: hello\nsrc/b.txt:1: hello"
    )
    assert ws.search_files({"path": "src/pkg/a.py", "regex": "os"}).count("\n") == 1
    assert ws.search_files({"path": ".", "regex": "zzz"}) == "no matches for 'zzz'"
    with pytest.raises(ExecutorError, match="invalid regex"):
        ws.search_files({"path": ".", "regex": "("})
    with pytest.raises(ExecutorError, match="outside"):
        ws.search_files({"path": "escape", "regex": "main"})


def test_limits_are_stated_in_the_output(tree: Path) -> None:
    ws = Workspace(tree, max_entries=2, max_matches=1, max_bytes=10)
    assert ws.list_files({"path": "."}).endswith("[stopped after 2 entries]")
    assert ws.search_files({"path": ".", "regex": "o"}).endswith("[stopped after 1 match]")
    assert ws.read_file({"path": "src/b.txt"}).endswith("[truncated: the file is larger than 10 bytes]")


def test_limits_of_one_are_singular(tree: Path) -> None:
    ws = Workspace(tree, max_entries=1, max_bytes=1)
    assert ws.list_files({"path": "."}).endswith("[stopped after 1 entry]")
    assert ws.glob({"pattern": "**/*"}).endswith("[stopped after 1 match]")
    assert ws.read_file({"path": "README.md"}).endswith("[truncated: the file is larger than 1 byte]")


@pytest.mark.parametrize(
    ("tool", "tool_input", "message"),
    [
        # The path as the model wrote it (not normalised, not resolved), so it can tell which call failed.
        ("read_file", {"path": "src/x.py"}, "no such file: src/x.py"),
        ("read_file", {"path": "src/../nope/x.py"}, "no such file: src/../nope/x.py"),
        ("read_file", {"path": "src/pkg"}, "src/pkg is a directory, not a file"),
        ("read_file", {"path": "inner.txt", "start_line": 5}, "start_line 5 is past the end of inner.txt (2 lines)"),
        ("list_files", {"path": "src/nope"}, "no such directory: src/nope"),
        ("list_files", {"path": "src/b.txt"}, "src/b.txt is a file, not a directory"),
        ("glob", {"pattern": "*.py", "path": "lib"}, "no such directory: lib"),
        ("glob", {"pattern": "*.py", "path": "README.md"}, "README.md is a file, not a directory"),
        ("search_files", {"path": "src/nope", "regex": "x"}, "no such file or directory: src/nope"),
    ],
)
def test_refusals_name_the_path_as_given(tree: Path, tool: str, tool_input: dict[str, object], message: str) -> None:
    with pytest.raises(ExecutorError, match=f"^{re.escape(message)}$"):
        workspace_executors(tree)[tool](tool_input)


def test_past_the_end_of_a_one_line_file_is_singular(tree: Path) -> None:
    (tree / "one.txt").write_text("only\n")
    with pytest.raises(ExecutorError, match=re.escape("past the end of one.txt (1 line)")):
        Workspace(tree).read_file({"path": "one.txt", "start_line": 2})


def test_an_unreadable_file_is_refused_by_its_given_path(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Simulated: the tests may run as root, who reads a mode-0 file anyway.
    real_open = os.open

    def refusing_open(path: Any, *args: Any, **kwargs: Any) -> int:
        if path == "b.txt":
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)
    with pytest.raises(ExecutorError, match=r"^cannot read src/\.\./src/b\.txt: Permission denied$") as caught:
        Workspace(tree).read_file({"path": "src/../src/b.txt"})
    assert str(tree) not in str(caught.value)  # no absolute path in what the model reads


def test_workspace_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ExecutorError, match="not a directory"):
        Workspace(tmp_path / "nope")


def test_a_symlink_loop_is_skipped_by_walks_and_refused_by_reads(tree: Path) -> None:
    (tree / "loop").symlink_to("loop")
    tools = workspace_executors(tree)
    assert "loop" not in str(tools["list_files"]({"path": ".", "recursive": True}))
    assert "loop" not in str(tools["glob"]({"pattern": "*"}))
    tools["search_files"]({"path": ".", "regex": "x"})  # does not raise
    with pytest.raises(ExecutorError, match="cannot be resolved"):
        tools["read_file"]({"path": "loop"})
    with pytest.raises(ExecutorError, match="cannot be resolved"):
        tools["read_file"]({"path": "a\0b"})


@pytest.mark.parametrize(
    "pattern", ["*", "**/*.py", "src/*", "*/*.txt", "src/**", "**/pkg/*", "s?c/[a-c].[tx]xt", "**/*", "*/**/*.py"]
)
def test_glob_matches_what_pathlib_matches(tree: Path, pattern: str) -> None:
    # The walk is the executors' own (bounded, confined), the matching pathlib's: the same paths, minus the
    # skipped folders and the links that leave.
    left_out = {".git", "escape", "escape.txt"}
    expected = [
        p.relative_to(tree).as_posix() + ("/" if p.is_dir() else "")
        for p in sorted(tree.glob(pattern))
        if not left_out & set(p.relative_to(tree).parts)
    ]
    assert Workspace(tree).glob({"pattern": pattern}).splitlines() == expected


def test_a_final_double_star_matches_directories_only(tree: Path) -> None:
    assert Workspace(tree).glob({"pattern": "**"}) == "src/\nsrc/pkg/"
    with pytest.raises(ExecutorError, match="names no files"):
        Workspace(tree).glob({"pattern": "./"})


def test_every_output_is_bounded_by_max_chars(tree: Path) -> None:
    (tree / "many.txt").write_text("x\n" * 1000)
    ws = Workspace(tree, max_chars=100)
    lines = ws.read_file({"path": "many.txt"}).splitlines()
    assert lines[-2:] == [
        "  11 | x",
        "[cut after 11 lines: output is limited to 100 characters; read on with start_line 12]",
    ]
    assert ws.read_file({"path": "many.txt", "start_line": 12}).startswith("  12 | x\n  13 | x\n")
    ws = Workspace(tree, max_chars=20)
    assert ws.list_files({"path": ".", "recursive": True}) == (
        "README.md\nblob.bin\n[cut after 2 lines: output is limited to 20 characters]"
    )
    assert Workspace(tree, max_chars=30).search_files({"path": ".", "regex": "main"}) == (
        "README.md:2: main entry\n[cut after 1 line: output is limited to 30 characters]"
    )
