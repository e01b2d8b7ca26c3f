"""Every fenced shell block of README.md and docs/ runs as written, or says why not.

A block runs in ``bash -e`` from an empty folder (``q.jsonl`` beside it: the shipped docs' retrieval queries),
with ``prompt-composer`` this checkout's and the model APIs a scripted server on 127.0.0.1 (so a ``run`` line
that would need a key talks to it). A block that cannot run here is marked on the line before it:

- ``<!-- not run: REASON -->``: it needs a key, the network, a model download, a server that runs until stopped,
  or is a synopsis;
- ``<!-- run by: PATH -->``: a test elsewhere runs it (PATH is that test).

docs/cli.md is generated from the parser: each of its examples is parsed by tests/cli/test_help.py.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from prompt_composer.testing import ScriptedMessagesServer, text_reply
from tests.helpers import DATA, REPO

pytestmark = pytest.mark.slow

PAGES = [REPO / "README.md", *sorted(p for p in (REPO / "docs").glob("*.md") if p.name != "cli.md")]
SHELL = {"sh", "bash", "shell", "console"}
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<info>[^\s`]*)[^`\n]*$")
MARK = re.compile(r"^<!-- (?P<kind>not run|run by): (?P<why>.+?) -->$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based, the block's first line
    code: str
    mark: tuple[str, str] | None  # ("not run" | "run by", the reason or the test)

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def blocks(page: Path) -> Iterator[Block]:
    lines = page.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None or not opening["info"]:
            index += 1
            continue
        end = next(i for i in range(index + 1, len(lines)) if lines[i].strip().startswith("```"))
        if opening["info"].lower() in SHELL:
            before = next((lines[i].strip() for i in range(index - 1, -1, -1) if lines[i].strip()), "")
            mark = MARK.match(before)
            code = "\n".join(line[len(opening["indent"]) :] for line in lines[index + 1 : end]) + "\n"
            yield Block(page, index + 2, code, (mark["kind"], mark["why"]) if mark else None)
        index = end + 1


ALL = [block for page in PAGES for block in blocks(page)]
RUN = [block for block in ALL if block.mark is None]


def test_every_shell_block_runs_or_says_why_not() -> None:
    assert len(ALL) >= 20, [b.id for b in ALL]  # the collector still finds the blocks
    assert len(RUN) >= 4, [b.id for b in RUN]
    for block in ALL:
        if block.mark is not None and block.mark[0] == "run by":
            test = REPO / block.mark[1]
            assert test.is_file(), block.id
            assert block.page.name in test.read_text(encoding="utf-8"), f"{test} does not name {block.page.name}"


@pytest.fixture(scope="module")
def model_api() -> Iterator[ScriptedMessagesServer]:
    def answer(_request: dict[str, Any]) -> Any:
        return text_reply("Done: the scripted test server's answer.")

    with ScriptedMessagesServer(answer) as server:
        yield server


def shell_env(tmp_path: Path, model_api: ScriptedMessagesServer | None = None) -> dict[str, str]:
    """PATH with a ``prompt-composer`` (and ``python``) that run this checkout's code; no key of the user's."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "prompt-composer"
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m prompt_composer "$@"\n')
    script.chmod(0o755)
    for name in ("python", "python3"):
        (bin_dir / name).unlink(missing_ok=True)
        (bin_dir / name).symlink_to(sys.executable)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "PROMPT_COMPOSER_"))}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    env["PROMPT_COMPOSER_CACHE"] = str(tmp_path / "cache")
    if model_api is not None:
        env.update(
            ANTHROPIC_BASE_URL=model_api.base_url,
            ANTHROPIC_API_KEY="test-key",
            OPENAI_BASE_URL=f"{model_api.base_url}/v1",
            OPENAI_API_KEY="test-key",
        )
    return env


@pytest.mark.parametrize("block", RUN, ids=[block.id for block in RUN])
def test_the_block_runs(block: Block, model_api: ScriptedMessagesServer, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(DATA / "shipped_queries.jsonl", work / "q.jsonl")
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block.code],
        cwd=work,
        env=shell_env(tmp_path, model_api),
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, (
        f"{block.id}\n{block.code}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
    )


def test_the_demo_server_serves_every_run_until_stopped(tmp_path: Path) -> None:
    """docs/agent-loop.md's demo block: the server in the background, then each of its ``run`` lines, PORT being
    the port it printed; both conversations get the demo's answer, and the server is still up afterwards."""
    (block,) = [b for b in ALL if b.page.name == "agent-loop.md" and "--demo" in b.code]
    start, *runs = [line.split("  #")[0].strip() for line in block.code.splitlines() if line.strip()]
    assert start.endswith("&") and len(runs) >= 2
    env = shell_env(tmp_path)  # no key at all: the demo needs none
    server = subprocess.Popen(
        shlex.split(start.rstrip("&")), cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True
    )  # fmt: skip
    try:
        assert server.stdout is not None
        ready = server.stdout.readline().split()
        assert ready[0] == "READY", ready
        port = ready[1].rsplit(":", 1)[1]
        for line in [*runs, *runs]:  # each line twice: the server keeps answering
            done = subprocess.run(
                ["bash", "-e", "-c", line.replace("PORT", port)],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, (line, done.stderr)
            assert "scripted demo answer" in done.stdout, done.stdout
        time.sleep(0.2)
        assert server.poll() is None  # still serving
    finally:
        server.terminate()
        server.wait(timeout=30)
        if server.stdout is not None:
            server.stdout.close()
