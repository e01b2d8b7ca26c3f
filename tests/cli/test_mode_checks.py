"""Modes cannot show what they lack: a text naming a tool outside the mode is a ``validate`` error of that mode
and every command composing the mode refuses it; a missing ``modes/`` (or one that is a file) is an error; and
composing over budget is a warning on stderr in every command that composes, naming mode, tokens and budget."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from prompt_composer.cli import main
from prompt_composer.core.registry import default_docs_dir
from prompt_composer.testing.replies import text_reply
from prompt_composer.testing.server import ScriptedMessagesServer
from tests.helpers import REPO

READ_AND_DEBUG = """\
slug: rd
name: Read and debug
role: You investigate bugs without changing anything.
when_to_use: Pick this mode to inspect a running program.
groups: [read, debug]
permanent: [read_file]
recent_size: 3
budget_tokens: 20000
"""


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    shutil.copytree(default_docs_dir(), folder)
    return folder


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_mode_showing_a_tool_it_lacks_is_a_validate_error_and_no_command_composes_it(
    docs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (docs / "modes" / "rd.yaml").write_text(READ_AND_DEBUG)
    code, out, err = run(["--docs", str(docs), "validate"], capsys)
    assert code == 2 and out == ""
    mode_file = docs / "modes" / "rd.yaml"
    for tool in ("debug_launch", "debug_continue"):  # their full texts say "run it with execute_command"
        assert (
            f"{mode_file}:1: mode 'rd' shows {tool}'s full text, which names 'execute_command', a tool the mode does "
            f"not allow: add 'execute_command' to the mode (include:), or remove the mention from the text"
        ) in err.splitlines()
    assert "mode 'code'" not in err  # only the mode at fault
    for argv in (["compose", "--mode", "rd"], ["fetch", "debug_launch", "--mode", "rd"], ["serve", "--mode", "rd"]):
        code, out, err = run(["--docs", str(docs), *argv], capsys)
        assert code == 2 and out == "" and "names 'execute_command'" in err, argv
    # the other modes of the same folder still compose
    code, out, _ = run(["--docs", str(docs), "fetch", "debug_launch", "--mode", "debug"], capsys)
    assert code == 0 and "execute_command" in out
    # the two ways out: allow the tool, or take the mention out of the text
    (docs / "modes" / "rd.yaml").write_text(
        READ_AND_DEBUG.replace("permanent:", "include: [execute_command]\npermanent:")
    )
    assert run(["--docs", str(docs), "validate"], capsys)[0] == 0


def test_a_missing_modes_folder_or_a_file_in_its_place_is_an_error(
    docs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.rmtree(docs / "modes")
    code, out, err = run(["--docs", str(docs), "validate"], capsys)
    assert code == 2 and out == ""
    assert err == (
        f"{docs / 'modes'}:1: no modes/ folder: no mode can show these tools; add modes/<slug>.yaml (as shipped), "
        f"or let `prompt-composer init {docs} --add-mode NAME` write one allowing every group here\n"
    )
    assert run(["--docs", str(docs), "tools"], capsys)[0] == 0  # a tool-only folder still lists and searches
    (docs / "modes").write_text("slug: code\n")
    for argv in (["validate"], ["tools"], ["modes"]):
        code, out, err = run(["--docs", str(docs), *argv], capsys)
        assert code == 2 and out == ""
        assert err == f"{docs / 'modes'}:1: modes is not a folder: mode files go in modes/<slug>.yaml\n", argv


def over_budget(docs: Path) -> Path:
    """The shipped code mode with a budget its prompt cannot meet."""
    code = docs / "modes" / "code.yaml"
    text = code.read_text()
    assert "budget_tokens: 8900" in text
    code.write_text(text.replace("budget_tokens: 8900", "budget_tokens: 500"))
    return code


WARNING = r"warning: mode 'code' composes to [\d,]+ tokens, over its budget of 500 \(prompt-composer audit shows where"


def test_composing_over_budget_warns_in_every_command_that_composes(
    docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    before = run(["--docs", str(docs), "compose", "--mode", "code"], capsys)
    assert before[0] == 0 and "warning" not in before[2]  # within budget: no line
    over_budget(docs)
    code, out, err = run(["--docs", str(docs), "compose", "--mode", "code", "--recent", "list_files"], capsys)
    assert code == 0 and out  # still composes
    assert re.search(WARNING, err), err
    tokens = int(re.search(r"composes to ([\d,]+) tokens", err).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert f"= {tokens}\n" in err  # the tokens of what this command composed
    code, out, err = run(["--docs", str(docs), "fetch", "read_file", "--mode", "code"], capsys)
    assert code == 0 and out and re.search(WARNING, err), err
    # run: the warning comes before the first request
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with ScriptedMessagesServer([text_reply("done")]) as server:
        code, out, err = run(
            ["--docs", str(docs), "run", "--mode", "code", "--task", "t", "--base-url", server.base_url,
             "--workspace", str(workspace)],
            capsys,
        )  # fmt: skip
    assert code == 0 and re.search(WARNING, err), err
    # bench: before the tasks are read
    code, out, err = run(
        ["--docs", str(docs), "bench", "--mode", "code", "--tasks", str(tmp_path / "none.jsonl"), "--base-url",
         "http://127.0.0.1:9"],
        capsys,
    )  # fmt: skip
    assert re.search(WARNING, err), err


@pytest.mark.slow
def test_serve_warns_over_budget_before_it_starts(docs: Path) -> None:
    over_budget(docs)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "prompt_composer", "--docs", str(docs), "serve", "--mode", "code"],
        stdin=subprocess.DEVNULL,  # end of input: the stdio gateway stops
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert re.search(WARNING, done.stderr), done.stderr


def test_serve_refuses_a_bad_option_before_it_imports_the_mcp_sdk(docs: Path) -> None:
    """A mistake is said at once: the SDK (about a second to import) loads only once every option has been checked."""
    probe = (
        "import sys\n"
        "from prompt_composer.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "print(code, 'mcp' in sys.modules, 'anyio' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for argv in (["serve", "--mode", "nope"], ["serve", "--mode", "code", "--transport", "http", "--host", ""]):
        done = subprocess.run(
            [sys.executable, "-c", probe, "--docs", str(docs), *argv],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.stdout.split() == ["2", "False", "False"], (argv, done.stdout, done.stderr)
        assert "error:" in done.stderr
