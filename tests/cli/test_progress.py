"""Progress on long work: a bar with counts and time left when stderr is a terminal (a real one, from ``pty``),
nothing but the plain lines when it is not."""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from prompt_composer.shared.progress import Progress, format_duration, render_bar
from prompt_composer.testing.replies import text_reply, tool_use_reply
from prompt_composer.testing.server import ScriptedMessagesServer
from tests.helpers import DATA, REPO

CLEAR = "\r\x1b[K"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_bar_shows_counts_share_and_time_left() -> None:
    assert render_bar("eval", 10, 40, 30.0) == f"eval [{'#' * 6}{'-' * 18}] 10/40 25% 1:30 left"
    assert render_bar("eval", 0, 40, 0.0).endswith("0/40 0% --:-- left")
    assert render_bar("tune", 3, None, 75.0, "round 3") == "tune 3 in 1:15  round 3"
    assert (format_duration(59.6), format_duration(3725)) == ("1:00", "1:02:05")


def test_on_a_terminal_the_bar_is_redrawn_in_place_and_lines_go_above_it() -> None:
    clock, out = Clock(), io.StringIO()
    with Progress("bench", 4, out, interactive=True, clock=clock) as progress:
        clock.now += 10
        progress.step("[static 1/2] a: glob ok")
        clock.now += 0.01  # within the redraw interval: not drawn
        progress.advance()
        clock.now += 10
        progress.line("warning: something")
        progress.advance(2)  # the last: always drawn
    text = out.getvalue()
    draws = text.split(CLEAR)[1:]
    assert draws[0] == f"bench [{'#' * 6}{'-' * 18}] 1/4 25% 0:30 left  [static 1/2] a: glob ok"
    assert draws[1] == "warning: something\n"  # the bar cleared, the line printed, then the bar again
    assert draws[2] == f"bench [{'#' * 12}{'-' * 12}] 2/4 50% 0:20 left  [static 1/2] a: glob ok"
    assert draws[-1].startswith(f"bench [{'#' * 24}] 4/4 100% 0:00 left") and text.endswith("\n")


def test_off_a_terminal_only_the_plain_lines() -> None:
    out = io.StringIO()  # not a tty
    with Progress("bench", 2, out) as progress:
        progress.advance()
        progress.step("[static 1/1] a: glob ok")
    assert out.getvalue() == "[static 1/1] a: glob ok\n"
    with Progress("eval", 40, out) as quiet:
        for _ in range(40):
            quiet.advance()
    assert out.getvalue() == "[static 1/1] a: glob ok\n"  # eval adds nothing to a log


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def _run_on_a_terminal(argv: list[str]) -> tuple[int, str, str]:
    """``prompt-composer argv`` with stderr on a real terminal (120 columns): exit code, stdout, the terminal."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    with subprocess.Popen(
        [sys.executable, "-m", "prompt_composer", *argv], stdout=subprocess.PIPE, stderr=slave, env=_env()
    ) as proc:
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(master)
        assert proc.stdout is not None
        stdout = proc.stdout.read().decode()
        code = proc.wait(timeout=240)
    return code, stdout, b"".join(chunks).decode()


EVAL = ["eval", "--mode", "code", "--queries", str(DATA / "shipped_queries.jsonl"), "--strategy", "keyword"]


@pytest.mark.slow
def test_eval_shows_a_bar_on_a_terminal_and_nothing_in_a_log() -> None:
    code, out, terminal = _run_on_a_terminal(EVAL)
    assert code == 0 and "recall@5" in out
    assert f"{CLEAR}eval [" in terminal
    last = terminal.rsplit(CLEAR, 1)[-1]
    assert last.startswith(f"eval [{'#' * 24}] 40/40 100% 0:00 left")
    done = subprocess.run([sys.executable, "-m", "prompt_composer", *EVAL], capture_output=True, text=True,
                          env=_env(), timeout=240, check=False)  # fmt: skip
    assert done.returncode == 0 and done.stdout == out
    assert done.stderr == ""  # CI logs stay clean


@pytest.mark.slow
def test_bench_shows_a_bar_on_a_terminal_and_a_line_a_task_in_a_log(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "modes").mkdir(parents=True)
    for name in ("read_file", "glob"):
        (docs / f"{name}.yaml").write_text((REPO / "tool_docs" / f"{name}.yaml").read_text())
    (docs / "modes" / "work.yaml").write_text(
        "slug: work\nname: Work\nrole: You read code.\ngroups: [read]\npermanent: [read_file]\n"
        "recent_size: 2\nbudget_tokens: 9000\n"
    )
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": i, "task": "list python files", "expect": ["glob"]}) + "\n"
                             for i in ("a", "b", "c")))  # fmt: skip
    script = [tool_use_reply(("glob", {"pattern": "*.py"})), text_reply("ok")] * 3
    argv = ["--docs", str(docs), "bench", "--tasks", str(tasks), "--mode", "work", "--variants", "composed"]
    with ScriptedMessagesServer(script) as server:
        code, out, terminal = _run_on_a_terminal([*argv, "--base-url", server.base_url])
    assert code == 0 and "composed" in out
    last = terminal.rsplit(CLEAR, 1)[-1]
    assert last.startswith(f"bench [{'#' * 24}] 3/3 100% 0:00 left  [composed 3/3] c: glob ok")
    with ScriptedMessagesServer(script) as server:
        done = subprocess.run([sys.executable, "-m", "prompt_composer", *argv, "--base-url", server.base_url],
                              capture_output=True, text=True, env=_env(), timeout=240, check=False)  # fmt: skip
    assert done.returncode == 0
    assert "\r" not in done.stderr and "\x1b" not in done.stderr
    lines = [ln.split(" (")[0] for ln in done.stderr.splitlines() if ln.startswith("[composed")]  # less the time
    assert lines == [f"[composed {n}/3] {t}: glob ok" for n, t in ((1, "a"), (2, "b"), (3, "c"))]
