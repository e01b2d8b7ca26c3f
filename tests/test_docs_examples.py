"""Every Python example in README.md and docs/*.md runs, offline, and does not raise.

Each fenced ``python`` block runs on its own, in a fresh interpreter, from an empty temporary working directory
(so examples that write files write them there). One scripted server on 127.0.0.1 stands in for both model APIs:
its script is a callable that answers every request with a short text reply, and the examples run with
``ANTHROPIC_BASE_URL`` / ``ANTHROPIC_API_KEY`` and ``OPENAI_BASE_URL`` (with ``/v1``) / ``OPENAI_API_KEY`` pointing
at it, so an example written as ``anthropic.Anthropic()`` or ``openai.OpenAI()`` talks to it. The user cache
(``PROMPT_COMPOSER_CACHE``) is a temporary folder too. Shell, YAML and text blocks are not run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from prompt_composer.testing import ScriptedMessagesServer, text_reply

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
OPENING = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\s`]*)[^`\n]*$")
RUNNABLE = {"python", "py", "python3"}  # every spelling runs: an example cannot opt out by its info string
TIMEOUT_S = 300  # a block that loads the embedding model for the first time takes a few seconds; none takes minutes


@dataclass(frozen=True)
class Example:
    page: Path
    line: int  # 1-based line of the block's first code line
    code: str

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def examples(page: Path) -> Iterator[Example]:
    """The runnable fenced blocks of one Markdown page, dedented (blocks may sit inside lists)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = OPENING.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        end = index + 1
        while end < len(lines) and not closing.match(lines[end]):
            end += 1
        if opening["info"].lower() in RUNNABLE:
            body = [
                line[len(indent) :] if line.startswith(indent) else line.lstrip() for line in lines[index + 1 : end]
            ]
            yield Example(page, index + 2, "\n".join(body) + "\n")
        index = end + 1


ALL = [example for page in PAGES for example in examples(page)]


def test_the_pages_have_examples() -> None:
    """The collector finds blocks (a broken pattern would make every example test vanish)."""
    assert len(ALL) >= 10, [example.id for example in ALL]
    assert all(page.exists() for page in PAGES)


@pytest.fixture(scope="module")
def model_api() -> Iterator[ScriptedMessagesServer]:
    """One scripted server for every example: each request, on either API, gets a short text answer."""

    def answer(_request: dict[str, Any]) -> Any:
        return text_reply("Done: this is the scripted test server's answer.")

    with ScriptedMessagesServer(answer) as server:
        yield server


@pytest.fixture(scope="module")
def example_env(model_api: ScriptedMessagesServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("ANTHROPIC_", "OPENAI_", "PROMPT_COMPOSER_"))
    }
    env.update(
        ANTHROPIC_BASE_URL=model_api.base_url,
        ANTHROPIC_API_KEY="test-key",
        OPENAI_BASE_URL=f"{model_api.base_url}/v1",
        OPENAI_API_KEY="test-key",
        PROMPT_COMPOSER_CACHE=str(tmp_path_factory.mktemp("user-cache")),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    return env


@pytest.mark.parametrize("example", ALL, ids=[example.id for example in ALL])
def test_example_runs(example: Example, example_env: dict[str, str], tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(example.code, encoding="utf-8")
    workdir = tmp_path / "work"
    workdir.mkdir()
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=workdir,
        env=example_env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, (
        f"the example at {example.id} failed (exit {done.returncode}); its line N is line "
        f"{example.line} + N - 1 of the page\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    )


def test_readmes_python_example_runs_as_written_without_a_key(tmp_path: Path) -> None:
    """README's "In Python" example, copied by a new user with no key and no server of their own: it starts the
    scripted server itself, so it runs offline and prints the composed tokens and the loop's answer."""
    (example,) = [e for e in ALL if e.page.name == "README.md"]
    assert "ScriptedMessagesServer(" in example.code
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "PROMPT_COMPOSER_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env["PROMPT_COMPOSER_CACHE"] = str(tmp_path / "cache")
    script = tmp_path / "example.py"
    script.write_text(example.code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert done.returncode == 0, done.stderr
    tokens, answer = done.stdout.strip().split(" ", 1)
    assert int(tokens) > 1000 and answer == "parse_args is defined in cli.py."
