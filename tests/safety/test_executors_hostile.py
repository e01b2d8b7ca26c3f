"""The read-only executors against a hostile workspace or model: regexes that backtrack forever, special files that
block a reader, symlinks swapped while a call runs, trees too big to walk in time. Every call must return (a
result or an ExecutorError) in bounded time and never read outside the workspace. Nothing here asserts a
duration: each call runs in a thread that must finish within a generous bound."""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any, Unpack

import anthropic
import pytest

import prompt_composer.safety.workspace as workspace_module
from prompt_composer.agent.anthropic import wrap
from prompt_composer.errors import ExecutorError
from prompt_composer.safety.executors import workspace_executors
from prompt_composer.safety.workspace import Limits, Workspace
from prompt_composer.testing.replies import text_reply, tool_use_reply
from prompt_composer.testing.server import ScriptedMessagesServer
from tests.helpers import T
from tests.helpers import within as _within

BOUND = 60.0  # seconds a call may take before the test calls it stuck; generous, never expected to be reached
CATASTROPHIC = r"(a+)+$"
LONG_LINE = "a" * 100_000 + "!"  # the trailing ! makes every way of splitting the a's fail: exponential backtracking


def within(call: Callable[[], T], seconds: float = BOUND) -> T:
    return _within(call, seconds)


Tool = Callable[[Mapping[str, Any]], str]


def toolset(root: str | Path, **limits: Unpack[Limits]) -> dict[str, Tool]:
    """What ``workspace_executors`` gives, typed as the sync callables they are."""
    workspace = Workspace(root, **limits)
    return {
        "read_file": workspace.read_file,
        "list_files": workspace.list_files,
        "glob": workspace.glob,
        "search_files": workspace.search_files,
    }


def refusal(call: Callable[[], object]) -> str:
    """The message of the ExecutorError ``call`` raises (within the bound)."""
    with pytest.raises(ExecutorError) as caught:
        within(call)
    return str(caught.value)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def main():\n    return load_config(path)\n")
    (root / "big.txt").write_text(f"{LONG_LINE}\n")
    return root


# -- regexes -------------------------------------------------------------------------------------------


def test_a_catastrophic_regex_is_stopped_at_the_time_limit(ws: Path) -> None:
    tools = toolset(ws, timeout_s=0.5)
    message = refusal(lambda: tools["search_files"]({"path": ".", "regex": CATASTROPHIC}))
    assert message.startswith("search_files stopped: the regex '(a+)+$' ran past its time limit of 0.5 s")
    assert "big.txt line 1" in message
    # the same line is fine for a pattern that does not backtrack, and the pattern is fine on all a's
    assert within(lambda: tools["search_files"]({"path": ".", "regex": "a+!$"})).startswith("big.txt:1: aaaa")
    (ws / "big.txt").write_text("a" * 100_000 + "\n")
    assert within(lambda: tools["search_files"]({"path": ".", "regex": CATASTROPHIC})).startswith("big.txt:1: aaa")


def test_the_default_time_limit_is_ten_seconds(ws: Path) -> None:
    assert Workspace(ws).timeout_s == 10.0
    for bad in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="timeout_s"):
            Workspace(ws, timeout_s=bad)


def test_normal_regexes_work_and_bad_ones_are_clear_errors(ws: Path) -> None:
    search = Workspace(ws, timeout_s=5).search_files
    assert search({"path": ".", "regex": r"\bload_config\(", "file_pattern": "*.py"}) == (
        "src/app.py:2: return load_config(path)"
    )
    assert search({"path": "src", "regex": r"(?i)DEF\s+\w+\(\)"}) == "src/app.py:1: def main():"
    assert search({"path": ".", "regex": r"\d{3}-\d{4}"}) == r"no matches for '\\d{3}-\\d{4}'"
    assert refusal(lambda: search({"path": ".", "regex": "(unclosed"})).startswith("invalid regex '(unclosed':")
    assert refusal(lambda: search({"path": ".", "regex": "(" * 1000 + ")" * 1000})).startswith("invalid regex")
    assert "too long" in refusal(lambda: search({"path": ".", "regex": "x" * 5000}))
    # compiling unrolls counted repeats and has no timeout: nested large counts are refused before compiling
    for slow in ("(a{1000}){1000}", "((a{100}){100}){100}", "(?:[ab]{400}|c){400}", "(x{100}y){2000}"):
        assert "repeats too much" in refusal(partial(search, {"path": ".", "regex": slow}))
    for fine in (r"\d{4}-\d{2}-\d{2}", "a{1000}", "(?:ab){300}", r"[{(]{3}x", r"\{1000000\}"):
        within(partial(search, {"path": ".", "regex": fine}))


# -- special files -------------------------------------------------------------------------------------


def _walks_ignore(tools: dict[str, Tool], name: str) -> None:
    """search_files, glob and list_files return (within the bound) and do not show ``name``."""
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search_files", {"path": ".", "regex": "."}),
        ("glob", {"pattern": "**/*"}),
        ("list_files", {"path": ".", "recursive": True}),
        ("list_files", {"path": "."}),
    ]
    for tool, tool_input in calls:
        output = within(partial(tools[tool], tool_input))
        assert name not in output, (tool, output)
        assert "src/app.py" in output or (tool == "list_files" and "src/" in output)


def test_a_fifo_is_refused_and_skipped_never_opened(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    tools = toolset(ws, timeout_s=5)
    assert refusal(lambda: tools["read_file"]({"path": "pipe"})) == "pipe is a named pipe (FIFO), not a file"
    assert refusal(lambda: tools["search_files"]({"path": "pipe", "regex": "x"})) == (
        "pipe is a named pipe (FIFO), not a file or directory"
    )
    assert refusal(lambda: tools["list_files"]({"path": "pipe"})) == "pipe is a named pipe (FIFO), not a directory"
    _walks_ignore(tools, "pipe")


def test_a_symlink_to_dev_zero_is_refused_and_skipped(ws: Path) -> None:
    (ws / "zero").symlink_to("/dev/zero")
    (ws / "src" / "zero.txt").symlink_to("../../../../../../../../../../../../dev/zero")
    tools = toolset(ws, timeout_s=5)
    for path in ("zero", "src/zero.txt"):
        assert "resolves outside the workspace" in refusal(partial(tools["read_file"], {"path": path}))
    _walks_ignore(tools, "zero")


def test_a_device_node_inside_the_workspace_is_refused_and_skipped(ws: Path) -> None:
    try:
        os.mknod(ws / "zero", stat.S_IFCHR | 0o666, os.makedev(1, 5))  # what /dev/zero is
    except (PermissionError, AttributeError, OSError) as exc:
        pytest.skip(f"cannot make a device node here: {exc}")
    (ws / "link").symlink_to("zero")  # a symlink inside, to it
    tools = toolset(ws, timeout_s=5)
    assert refusal(lambda: tools["read_file"]({"path": "zero"})) == "zero is a character device, not a file"
    assert refusal(lambda: tools["read_file"]({"path": "link"})) == "link is a character device, not a file"
    _walks_ignore(tools, "zero")
    _walks_ignore(tools, "link")


def test_a_socket_is_refused_and_skipped(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ws)  # a relative name: the absolute one may be too long for a socket address
    with socket.socket(socket.AF_UNIX) as server:
        server.bind("sock")
        server.listen()
        tools = toolset(ws, timeout_s=5)
        assert refusal(lambda: tools["read_file"]({"path": "sock"})) == "sock is a socket, not a file"
        _walks_ignore(tools, "sock")


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs Linux /proc")
def test_proc_files_do_not_block() -> None:
    tools = toolset("/proc/self", timeout_s=3, max_bytes=4096)
    assert "Name:" in within(lambda: tools["read_file"]({"path": "status"}))
    # fd/0 is a link to a terminal, a pipe or /dev/null: outside, or not resolvable as a path
    assert refusal(lambda: tools["read_file"]({"path": "fd/0"}))
    assert refusal(lambda: tools["read_file"]({"path": "cwd"}))  # a link to the current directory: outside
    found = within(lambda: tools["search_files"]({"path": ".", "regex": "^Name:"}))
    assert "status:1: Name:" in found
    assert within(lambda: tools["list_files"]({"path": ".", "recursive": True}))
    assert within(lambda: tools["glob"]({"pattern": "**/status"}))


# -- races ---------------------------------------------------------------------------------------------


def _race(flip: Callable[[], None], call: Callable[[], str], times: int) -> Counter[str]:
    """Run ``call`` ``times`` times while another thread runs ``flip`` over and over: what each call gave (its
    output, or ``error: <message>``), counted. Fails if the whole race takes longer than the bound."""
    stop = threading.Event()
    flips = 0

    def flipper() -> None:
        nonlocal flips
        while not stop.is_set():
            flip()
            flips += 1

    def calls() -> Counter[str]:
        seen: Counter[str] = Counter()
        for _ in range(times):
            try:
                seen[call()] += 1
            except ExecutorError as exc:
                seen[f"error: {exc}"] += 1
        return seen

    thread = threading.Thread(target=flipper, daemon=True)
    thread.start()
    try:
        seen = within(calls, 120)
    finally:
        stop.set()
        thread.join(BOUND)
    assert flips > 10  # the flipper really ran alongside
    return seen


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("SECRET\n")
    return outside


def test_a_symlink_swapped_under_read_file_never_leaks(ws: Path, secret: Path) -> None:
    # "flip" is, atomically (rename), either a hard link to an inside file or a symlink to the secret
    (ws / "inside.txt").write_text("inside\n")
    os.link(ws / "inside.txt", ws / "flip")

    def flip() -> None:
        (ws / ".link").symlink_to(secret / "f.txt")
        os.rename(ws / ".link", ws / "flip")
        os.link(ws / "inside.txt", ws / ".file")
        os.rename(ws / ".file", ws / "flip")

    read = Workspace(ws).read_file
    started = time.perf_counter()
    seen = _race(flip, lambda: read({"path": "flip"}), 10_000)
    elapsed = time.perf_counter() - started
    print(f"\n10,000 read_file calls under a symlink swap: {elapsed:.2f} s; {dict(seen)}")
    assert not any("SECRET" in outcome for outcome in seen)
    assert set(seen) <= {"1 | inside", "error: path 'flip' resolves outside the workspace; access refused"}
    assert sum(seen.values()) == 10_000


def test_a_directory_swapped_under_read_file_never_leaks(ws: Path, secret: Path) -> None:
    # the middle of the path flips: "d" is a symlink to an inside directory, or to the outside one
    (ws / "real").mkdir()
    (ws / "real" / "f.txt").write_text("inside\n")
    (ws / "d").symlink_to("real")

    def flip() -> None:
        (ws / ".d").symlink_to(secret)
        os.rename(ws / ".d", ws / "d")
        (ws / ".d").symlink_to("real")
        os.rename(ws / ".d", ws / "d")

    read = Workspace(ws).read_file
    seen = _race(flip, lambda: read({"path": "d/f.txt"}), 10_000)
    assert set(seen) <= {"1 | inside", "error: path 'd/f.txt' resolves outside the workspace; access refused"}


def test_a_fifo_swapped_in_never_blocks(ws: Path) -> None:
    # "p" is a regular file or a FIFO: a reader that checked, then opened without O_NONBLOCK, would hang
    (ws / "file.txt").write_text("text\n")
    os.link(ws / "file.txt", ws / "p")

    def flip() -> None:
        os.mkfifo(ws / ".fifo")
        os.rename(ws / ".fifo", ws / "p")
        os.link(ws / "file.txt", ws / ".file")
        os.rename(ws / ".file", ws / "p")

    tools = toolset(ws, timeout_s=5)
    seen = _race(flip, lambda: tools["read_file"]({"path": "p"}), 3000)
    assert set(seen) <= {"1 | text", "error: p is a named pipe (FIFO), not a file"}
    found = _race(flip, lambda: tools["search_files"]({"path": ".", "regex": "text"}), 500)
    lines = {line for outcome in found for line in outcome.splitlines()}  # .file: the flipper's link, before its rename
    assert lines <= {"file.txt:1: text", "p:1: text", ".file:1: text"}


# -- walks that run out of time ------------------------------------------------------------------------


class _Clock:
    """A stand-in for the executors' ``time`` module whose clock jumps ``step`` seconds at every reading."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def monotonic(self) -> float:
        self.now += self.step
        return self.now


@pytest.fixture
def crowded(tmp_path: Path) -> Path:
    root = tmp_path / "crowded"
    for d in range(20):
        (root / f"d{d:02}").mkdir(parents=True)
        for f in range(50):
            (root / f"d{d:02}" / f"f{f:02}.txt").write_text(f"line {d} {f}\n")
    return root


def test_walks_stop_at_the_time_limit_and_say_so(crowded: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workspace_module, "time", _Clock(step=0.05))  # 10 s is 200 clock readings
    tools = toolset(crowded)
    listing = within(lambda: tools["list_files"]({"path": ".", "recursive": True})).splitlines()
    assert listing[0] == "d00/" and len(listing) < 1000
    assert listing[-1].startswith("[list_files stopped at its time limit of 10 s after looking at ")
    assert listing[-1].endswith(" entries; the result is incomplete]")
    matches = within(lambda: tools["glob"]({"pattern": "**/*.txt"})).splitlines()
    assert matches[0] == "d00/f00.txt" and matches[-1].startswith("[glob stopped at its time limit of 10 s")
    nothing = within(lambda: tools["glob"]({"pattern": "**/*.rs"})).splitlines()
    assert nothing[0] == "no files match '**/*.rs'" and nothing[1].startswith("[glob stopped at its time limit")
    found = within(lambda: tools["search_files"]({"path": ".", "regex": "line"})).splitlines()
    assert found[0] == "d00/f00.txt:1: line 0 0" and len(found) < 200
    assert found[-1].startswith("[search_files stopped at its time limit of 10 s after searching ")


def test_a_deep_tree_is_walked_to_a_bounded_depth(tmp_path: Path) -> None:
    root = tmp_path / "deep"
    deep = root.joinpath(*["d"] * 110)
    deep.mkdir(parents=True)
    (deep / "bottom.txt").write_text("x\n")
    listing = within(lambda: Workspace(root).list_files({"path": ".", "recursive": True})).splitlines()
    assert listing[-1] == "[1 directory not looked at in full: more than 100,000 entries, or deeper than 100 levels]"
    assert "bottom.txt" not in "\n".join(listing)


# -- the loop goes on ----------------------------------------------------------------------------------


def test_the_loop_turns_a_timed_out_search_into_an_error_result(ws: Path) -> None:
    script = [
        tool_use_reply(("c1", "search_files", {"path": ".", "regex": CATASTROPHIC})),
        text_reply("done"),
    ]
    with ScriptedMessagesServer(script) as server:
        sdk = anthropic.Anthropic(base_url=server.base_url, api_key="k", max_retries=0)
        client = wrap(sdk, mode="code", task_id="t")
        result = within(
            lambda: client.run("Find it.", model="m", max_tokens=100, executors=workspace_executors(ws, timeout_s=1))
        )
        sent = server.requests[-1].body["messages"][-1]["content"][0]
    assert result.text == "done"
    [call] = result.tool_calls
    assert call.name == "search_files" and call.is_error
    assert call.output.startswith("Error: search_files failed: search_files stopped: the regex '(a+)+$' ran past")
    assert "time limit of 1 s" in call.output
    assert sent["type"] == "tool_result" and sent["is_error"] is True
    assert "time limit of 1 s" in sent["content"][0]["text"]


# -- confinement, still ------------------------------------------------------------------------------


def test_symlinks_that_stay_inside_are_followed_by_walking_them(ws: Path, secret: Path) -> None:
    (ws / "lib").mkdir()
    (ws / "lib" / "src").symlink_to("../src", target_is_directory=True)  # relative, through ..
    (ws / "abs.py").symlink_to(ws / "src" / "app.py")  # absolute, inside
    (ws / "top.txt").write_text("top\n")
    (ws / "hop").symlink_to("lib/src/../top.txt")  # .. after a symlink goes up from where the link leads
    (ws / "out").symlink_to("lib/../../outside/f.txt")
    tools = toolset(ws, timeout_s=5)
    for path in ("lib/src/app.py", "abs.py", "lib/src/../src/app.py"):
        assert tools["read_file"]({"path": path, "end_line": 1}) == "1 | def main():", path
    assert tools["read_file"]({"path": "hop"}) == tools["read_file"]({"path": "lib/src/../top.txt"}) == "1 | top"
    assert "outside the workspace" in refusal(lambda: tools["read_file"]({"path": "out"}))
    assert "outside the workspace" in refusal(lambda: tools["read_file"]({"path": "lib/src/../../../outside/f.txt"}))
    # walks list a symlinked directory (it stays inside) but do not descend into it
    assert tools["list_files"]({"path": "lib", "recursive": True}) == "lib/src/"
    assert tools["list_files"]({"path": "lib/src"}) == "src/app.py"  # listed by its real path
    assert "abs.py:1: def main():" in tools["search_files"]({"path": ".", "regex": "main"})


def _fds() -> int:
    return len(os.listdir("/proc/self/fd")) if sys.platform == "linux" else 0


def test_no_descriptor_is_left_open(ws: Path, secret: Path) -> None:
    (ws / "out").symlink_to(secret)
    os.mkfifo(ws / "pipe")
    tools = toolset(ws, timeout_s=0.5, max_entries=1, max_matches=1)
    before = _fds()
    calls: Iterator[tuple[str, dict[str, Any]]] = iter(
        [
            ("read_file", {"path": "src/app.py"}),
            ("read_file", {"path": "out/f.txt"}),
            ("read_file", {"path": "pipe"}),
            ("read_file", {"path": "src"}),
            ("list_files", {"path": ".", "recursive": True}),
            ("glob", {"pattern": "**/*"}),
            ("search_files", {"path": ".", "regex": "a"}),
            ("search_files", {"path": ".", "regex": CATASTROPHIC}),
        ]
    )
    for tool, tool_input in calls:
        with contextlib.suppress(ExecutorError):
            within(partial(tools[tool], tool_input))
    assert _fds() == before
